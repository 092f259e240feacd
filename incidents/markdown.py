"""The one place Markdown becomes HTML: rendered once when written, sanitised with nh3,
stored beside the source (`*_html`) and read through `stored_html`.

Text that would render deep or slow is refused first (`markdown_problem`, `render_cost`),
and a long text renders in a forked child with a CPU-time deadline. The bounds and why:
docs/adr/0004-markdown-bounds.md.
"""

from __future__ import annotations

import gc
import math
import multiprocessing
import re
import resource
import signal
from collections import Counter
from dataclasses import dataclass
from multiprocessing.connection import Connection

import markdown as md
import nh3
from django.conf import settings
from django.core.exceptions import ValidationError

ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "del", "em", "h2", "h3", "h4", "h5",
    "h6", "hr", "i", "li", "ol", "p", "pre", "strong", "sub", "sup", "table", "tbody",
    "td", "th", "thead", "tr", "ul",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "abbr": {"title"}, "td": {"align"}, "th": {"align"}}
ALLOWED_URL_SCHEMES = {"http", "https", "mailto"}
_EXTENSIONS = ["extra", "sane_lists"]

MARKDOWN_MAX_BYTES = 65536
MAX_NESTING = 16
MAX_BRACKET_DEPTH = 32
MAX_DEFINITIONS = 50
# Below this size every shape that passes the checks renders in a few milliseconds, so
# no child process is worth its cost (a fork is ~5-10 ms).
INLINE_LIMIT = 2048

# The containers that nest at the start of a line: indentation (4 columns a level),
# blockquote markers and list markers, possibly several on one line ("> > - - x").
_MARKER = re.compile(r"(?:>|[*+-]|\d{1,9}[.)])(?=[ \t]|$)")
_DEFINITION = re.compile(r"\n[ ]{0,3}\*?\[\^?[^\]\n]*\]:")


def _indent_of(prefix: str) -> int:
    """Columns of leading indentation (a tab to the next multiple of 4)."""
    indent = 0
    for char in prefix:
        if char == " ":
            indent += 1
        elif char == "\t":
            indent += 4 - indent % 4
        else:
            break
    return indent


def _open_depth(text: str) -> int:
    """The deepest run of open `[` or `(`, counting unclosed ones (which cost the most)."""
    deepest = square = round_ = 0
    for char in text:
        if char == "[":
            square += 1
            deepest = max(deepest, square)
        elif char == "]":
            square = max(0, square - 1)
        elif char == "(":
            round_ += 1
            deepest = max(deepest, round_)
        elif char == ")":
            round_ = max(0, round_ - 1)
    return deepest


# --- The cost estimate ----------------------------------------------------------------------
# Python-Markdown's time is close to a sum of per-construct costs: every block, list item,
# table cell, heading, link, emphasis run or code span becomes an element that each inline
# pattern is tried on, and a heading, rule or fence line inside a block splits the block
# and re-scans the rest of it (quadratic in lines without a blank line between them).
# `render_cost` counts those constructs in one linear pass and prices them in microseconds
# of CPU, measured with our extensions on a warm process (see bench/markdown_bench.py
# --calibrate, and bench/README.md for the figures). A text whose estimate is over
# RENDER_BUDGET_MS is refused before it is rendered, naming what costs the most. The
# prices are on the high side for every pathological shape measured; nested lists with
# emphasis run up to a third over (bench/README.md), which the child's CPU deadline
# (twice the budget) absorbs, and a shape nobody measured meets that deadline.

RENDER_BUDGET_MS = 100.0
# Limits that are not about time: definition lists recurse once per consecutive `: `
# line (about 340 raised RecursionError), and many references to one footnote are
# quadratic (400 took 330 ms).
MAX_DEFINITION_LINES = 100
MAX_FOOTNOTE_REFERENCES = 200

_US_PER: dict[str, float] = {
    "bytes": 0.7,
    "lines": 0.5,
    "line breaks": 32.0,
    "indentation levels": 5.0,
    "blocks": 70.0,
    "headings": 60.0,
    "rules": 50.0,
    "fences": 55.0,
    "definition lines": 300.0,
    "list items": 70.0,
    "quote markers": 5.0,
    "table cells": 50.0,
    "brackets": 13.0,
    "links": 75.0,
    "footnote references": 250.0,
    "emphasis markers": 40.0,
    "code spans": 26.0,
    "backslash escapes": 46.0,
    "HTML-like tags and entities": 4.0,
    "attribute lists": 80.0,
    "abbreviation uses": 20.0,
}
# A block-splitting line (heading, rule, fence, definition) re-scans the rest of its
# block: this many microseconds per such line per byte of the block.
_US_PER_SPLIT_BYTE = 0.025
_SPLITTING_LINES = "headings, rules or fences with no blank line between them"

_BLANK_LINES = re.compile(r"\n(?:[ \t]*\n)+")
# Lines that start with indentation or a container marker ("    ", "> ", "- ", "1. "),
# with the markers counted for the nesting check and the cost.
_PREFIXED_LINE = re.compile(
    r"\n([ \t]+(?:(?:>|[*+-]|\d{1,9}[.)])(?:[ \t]+|(?=\n|\Z)))*|(?:(?:>|[*+-]|\d{1,9}[.)])(?:[ \t]+|(?=\n|\Z)))+)"
)
_HEADING = re.compile(r"\n[ ]{0,3}(?:#{1,6}(?:[ \t]|(?=\n|\Z))|(?:=+|-+)[ \t]*(?=\n|\Z))")
_RULE = re.compile(r"\n[ ]{0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})(?=\n|\Z)")
_FENCE = re.compile(r"\n[ ]{0,3}(?:`{3,}|~{3,})")
_DEFINITION_LINE = re.compile(r"\n[ ]{0,3}:[ \t]")
# What splits a block and re-scans the rest of it: the four above.
_SPLITTER = re.compile(
    r"\n[ ]{0,3}(?:#{1,6}(?:[ \t]|(?=\n|\Z))|(?:=+|-+)[ \t]*(?=\n|\Z)|(?:[-*_][ \t]*){3,}(?=\n|\Z)|`{3,}|~{3,}|:[ \t])"
)
_TABLE_DELIMITER = re.compile(r"\n[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*(?=\n|\Z)")
# A run of * or _ next to a letter or digit can open or close emphasis (a run alone costs
# nothing). Matched only from the start of a run, possessively: no backtracking, linear.
_EMPHASIS_RUN = re.compile(r"(?<![*_])(?:(?<=[^\W_])[*_]+|[*_]++(?=[^\W_]))")
_CODE = re.compile(r"`+")
_ESCAPE = re.compile(r"\\[!-/:-@\[-`{-~]")
_TAGLIKE = re.compile(r"[<&]")
_ABBREVIATION_DEF = re.compile(r"\n[ ]{0,3}\*\[([^\]\n]+)\]:")
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class RenderCost:
    """What a text costs to render, by construct, in microseconds of CPU."""

    counts: dict[str, int]
    micros: dict[str, float]
    # The deepest nesting of lists, quotes and indentation on one line.
    deepest: int

    @property
    def total_ms(self) -> float:
        return sum(self.micros.values()) / 1000

    def problem(self) -> str | None:
        """Why the text is refused, naming the costliest construct, or None."""
        definitions = self.counts.get("definition lines", 0)
        if definitions > MAX_DEFINITION_LINES:
            return f"Too many definition-list lines ({definitions:,}; at most {MAX_DEFINITION_LINES})."
        footnotes = self.counts.get("footnote references", 0)
        if footnotes > MAX_FOOTNOTE_REFERENCES:
            return f"Too many footnote references ({footnotes:,}; at most {MAX_FOOTNOTE_REFERENCES})."
        if self.total_ms <= RENDER_BUDGET_MS:
            return None
        worst = max(self.micros, key=lambda name: self.micros[name])
        if worst == _SPLITTING_LINES:
            count = sum(self.counts[name] for name in ("headings", "rules", "fences", "definition lines"))
            cause = f"too many {worst} ({count:,}); separate them with blank lines"
        elif worst == "bytes":
            cause = "too long for its formatting; split it"
        else:
            count = self.counts[worst]
            at_most = int(RENDER_BUDGET_MS * 1000 / _US_PER[worst])
            if count > at_most:
                cause = f"too many {worst} ({count:,}; at most about {at_most:,})"
            else:  # no single construct is over its share: the sum is
                cause = f"too much formatting in all, the most of it {worst} ({count:,}); split it"
        return (
            f"This text would take too long to render (about {self.total_ms:,.0f} ms, at most "
            f"{RENDER_BUDGET_MS:.0f} ms): {cause}."
        )


def render_cost(text: str) -> RenderCost:
    """Estimate the render cost of `text` in linear time (regular expressions without
    backtracking over the text, no Markdown parsing): a few milliseconds for 64 KB."""
    counts = dict.fromkeys(_US_PER, 0)
    counts["bytes"] = len(text)
    counts["lines"] = text.count("\n") + 1
    counts["line breaks"] = text.count("  \n")
    deepest = 0
    # Prefixes repeat (a list is "- " a thousand times): look at each distinct one once.
    lines = "\n" + text  # the line patterns start with "\n": a fast literal scan, unlike "^"
    for prefix, times in Counter(_PREFIXED_LINE.findall(lines)).items():
        markers = _MARKER.findall(prefix)
        quotes = markers.count(">")
        counts["quote markers"] += quotes * times
        counts["list items"] += (len(markers) - quotes) * times
        indent = _indent_of(prefix)
        if markers:  # a nested list item costs more the deeper it is; indented code does not
            counts["indentation levels"] += indent // 4 * times
        deepest = max(deepest, indent // 4 + len(markers))
    # Each scan only when its characters occur at all: on 64 KB of short lines a scan is
    # a few ms, and the estimate is paid on every write.
    if "#" in text or "=" in text or "-" in text:
        counts["headings"] = len(_HEADING.findall(lines))
    if "-" in text or "*" in text or "_" in text:
        counts["rules"] = len(_RULE.findall(lines))
    if "```" in text or "~~~" in text:
        counts["fences"] = len(_FENCE.findall(lines))
    if ":" in text:
        counts["definition lines"] = len(_DEFINITION_LINE.findall(lines))
    # With at most one splitting line in the whole text nothing is re-scanned.
    may_split = sum(counts[name] for name in ("headings", "rules", "fences", "definition lines")) > 1

    split_cost = 0.0
    for block in _BLANK_LINES.split(text):
        if not block or block.isspace():
            continue
        counts["blocks"] += 1
        if may_split and "\n" in block:
            # Each splitting line re-scans what follows it in the block.
            splits = len(_SPLITTER.findall("\n" + block))
            if splits > 1:
                split_cost += splits * len(block) * _US_PER_SPLIT_BYTE
        if "|" in block and _TABLE_DELIMITER.search("\n" + block):
            counts["table cells"] += block.count("|")

    counts["brackets"] = text.count("[")
    counts["links"] = text.count("](") + text.count("][")
    counts["footnote references"] = text.count("[^")
    if "*" in text or "_" in text:
        counts["emphasis markers"] = len(_EMPHASIS_RUN.findall(text))
    counts["code spans"] = len(_CODE.findall(text))
    counts["backslash escapes"] = len(_ESCAPE.findall(text))
    counts["HTML-like tags and entities"] = len(_TAGLIKE.findall(text))
    counts["attribute lists"] = text.count("{:")
    abbreviations = set(_ABBREVIATION_DEF.findall(lines)) if "*[" in text else set()
    if abbreviations:
        counts["abbreviation uses"] = sum(1 for word in _WORD.findall(text) if word in abbreviations)

    micros = {name: count * _US_PER[name] for name, count in counts.items()}
    micros[_SPLITTING_LINES] = split_cost
    return RenderCost(counts=counts, micros=micros, deepest=deepest)


def markdown_problem(text: str) -> str | None:
    """Why this text will not be rendered, or None if it renders in bounded time."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MARKDOWN_MAX_BYTES:
        return f"Too long: {size:,} bytes, at most {MARKDOWN_MAX_BYTES:,} (64 KB)."
    cost = render_cost(text)
    if cost.deepest > MAX_NESTING:
        return f"Lists, quotes or indentation nested more than {MAX_NESTING} levels deep."
    if ("[" in text or "(" in text) and _open_depth(text) > MAX_BRACKET_DEPTH:
        return f"More than {MAX_BRACKET_DEPTH} brackets or parentheses open at once; close them."
    if "]:" in text and len(_DEFINITION.findall("\n" + text)) > MAX_DEFINITIONS:
        return f"More than {MAX_DEFINITIONS} link, footnote or abbreviation definitions."
    return cost.problem()


def sanitize_html(html: str) -> str:
    """Clean HTML against the allow-list. Idempotent: cleaning clean HTML changes nothing."""
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=ALLOWED_URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )


def _convert(text: str) -> str:
    converter = md.Markdown(extensions=_EXTENSIONS, output_format="html")
    # Drop the raw-HTML pass-through: `<b>` typed by a user shows as text. nh3 below is
    # the real guarantee; this keeps harmless tags from appearing to "work" by accident.
    converter.preprocessors.deregister("html_block")
    converter.inlinePatterns.deregister("html")
    return sanitize_html(converter.convert(text))


class _OverCpuBudget(Exception):
    pass


def _on_cpu_budget(signum: int, frame: object) -> None:
    raise _OverCpuBudget


def _child(text: str, out: Connection, cpu_seconds: float) -> None:
    # The deadline is CPU time of this process, not wall time: on a loaded machine the
    # child waits for a core without spending its budget, so an ordinary post is not
    # refused because other work ran. ITIMER_PROF counts user + system time and raises at
    # the next bytecode; RLIMIT_CPU (whole seconds) kills the child should it be stuck in
    # one C call (a regular expression) that never returns to Python.
    # No garbage collection in the child: a collection walks every object inherited
    # from the parent (a web worker holds millions), writing to each one's header and so
    # copying every page it sits on. Reference counting frees what a render drops, and
    # the child exits right after.
    gc.disable()
    signal.signal(signal.SIGPROF, _on_cpu_budget)
    signal.setitimer(signal.ITIMER_PROF, cpu_seconds)
    hard_stop = math.ceil(cpu_seconds) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (hard_stop, hard_stop + 1))
    try:
        html = _convert(text)
        signal.setitimer(signal.ITIMER_PROF, 0)
        out.send((True, html))
    except _OverCpuBudget:
        out.send((False, _too_slow(cpu_seconds)))
    except RecursionError:
        out.send((False, "This text is nested too deeply to render."))
    except Exception as exc:  # noqa: BLE001 - any failure is reported; the parent refuses the text
        out.send((False, f"This text could not be rendered ({type(exc).__name__})."))


def _too_slow(cpu_seconds: float) -> str:
    return (
        f"This text takes too long to render (over {cpu_seconds * 1000:.0f} ms); "
        "simplify its formatting or split it."
    )


_warmed = False


def _warm_up() -> None:
    """Render once in this process before the first fork: Python-Markdown imports its
    extensions and compiles its patterns on first use (~80 ms), and a forked child
    inherits them instead of paying that out of its CPU budget every time."""
    global _warmed
    if not _warmed:
        _convert("# a\n\n*b* [c](https://example.com) `d`\n\n- e\n\n| f |\n|---|\n| g |\n")
        _warmed = True


def _convert_with_deadline(text: str, *, cpu_seconds: float, wall_seconds: float) -> str:
    try:
        ctx = multiprocessing.get_context("fork")
    except ValueError:  # no fork on this platform: the checks above are all we have
        return _convert(text)
    _warm_up()
    receiver, sender = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_child, args=(text, sender, cpu_seconds), daemon=True)
    # Frozen objects are skipped by collections, so a collection that starts in the child
    # before it disables them does not touch (and copy) the parent's heap; unfrozen
    # again at once, as the parent still collects them.
    gc.freeze()
    try:
        process.start()
    finally:
        gc.unfreeze()
    sender.close()
    try:
        # The wall clock is only a backstop (a child starved of CPU for seconds, or
        # stopped): the CPU deadline inside the child is what refuses slow text.
        if not receiver.poll(wall_seconds):
            raise ValueError("This text could not be rendered in time (the server is busy); try again.")
        ok, result = receiver.recv()
    except EOFError:
        process.join()
        if process.exitcode in (-signal.SIGXCPU, -signal.SIGKILL):
            raise ValueError(_too_slow(cpu_seconds)) from None
        raise ValueError("This text could not be rendered.") from None
    finally:
        receiver.close()
        if process.is_alive():
            process.kill()
        process.join()
    if not ok:
        raise ValueError(result)
    return str(result)


def render_markdown(text: str) -> str:
    """Markdown to sanitised HTML, or ValueError when the text is outside the bounds.

    Writers call `render_for_storage` (which turns the refusal into a form error);
    this is also what previews of text not stored yet use.
    """
    if not text:
        return ""
    problem = markdown_problem(text)
    if problem is not None:
        raise ValueError(problem)
    if len(text) <= INLINE_LIMIT:
        return _convert(text)
    return _convert_with_deadline(
        text,
        cpu_seconds=float(settings.MARKDOWN_RENDER_CPU_SECONDS),
        wall_seconds=float(settings.MARKDOWN_RENDER_TIMEOUT),
    )


def render_for_storage(text: str, *, field: str) -> str:
    """The HTML to store beside `text`, or a ValidationError on `field` saying why not."""
    try:
        return render_markdown(text)
    except ValueError as exc:
        raise ValidationError({field: str(exc)}) from None
    except RecursionError:
        # Not expected past the nesting check; refused rather than stored unrenderable.
        raise ValidationError({field: "This text is nested too deeply to render."}) from None


def stored_html(html: str | None) -> str:
    """What a reader emits for stored HTML: sanitised again (cheap, linear, idempotent),
    so a row written around the services still cannot put script on a page."""
    return sanitize_html(html) if html else ""
