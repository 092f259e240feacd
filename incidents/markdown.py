"""The one place Markdown becomes HTML.

User text is stored raw and rendered here, then sanitised with nh3 (an allow-list, so
anything not listed - <script>, event handlers, style, javascript:/data: URLs - is
dropped). It is rendered once, when it is written (the services store the result beside
the source, in a `*_html` field); pages, feeds, API HTML fields and emails read the
stored HTML through `stored_html`, so a reader never runs Markdown.

Rendering is bounded before Python-Markdown sees the text: Python-Markdown recurses once
per nesting level (a 500-deep list raised RecursionError) and its link, footnote and
abbreviation handling is quadratic in unclosed brackets and parentheses (8 KB of `[`
took 15 s). `markdown_problem` refuses what would be deep or slow with a clear message:
over 64 KB, nesting deeper than MAX_NESTING, brackets or parentheses open deeper than
MAX_BRACKET_DEPTH, more than MAX_DEFINITIONS abbreviation/footnote definitions.

The checks cannot list every slow shape (16,000 one-line headings took 27 s, a page of
footnote references minutes: Python-Markdown is quadratic in blocks in places), so
anything longer than INLINE_LIMIT is rendered in a forked child with a deadline
(settings.MARKDOWN_RENDER_TIMEOUT) and refused if it does not finish. This happens only
when staff write, never on a page view.
"""

from __future__ import annotations

import multiprocessing
import re
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
_LINE_PREFIX = re.compile(r"[ \t]*(?:(?:>|[*+-]|\d{1,9}[.)])(?:[ \t]+|$))*")
_MARKER = re.compile(r"(?:>|[*+-]|\d{1,9}[.)])(?=[ \t]|$)")
_DEFINITION = re.compile(r"^[ ]{0,3}\*?\[\^?[^\]\n]*\]:", re.MULTILINE)


def _nesting_of(line: str) -> int:
    prefix = _LINE_PREFIX.match(line)
    text = prefix.group(0) if prefix else ""
    indent = 0
    for char in text:
        if char == " ":
            indent += 1
        elif char == "\t":
            indent += 4 - indent % 4
        else:
            break
    return indent // 4 + len(_MARKER.findall(text))


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


def markdown_problem(text: str) -> str | None:
    """Why this text will not be rendered, or None if it renders in bounded time."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MARKDOWN_MAX_BYTES:
        return f"Too long: {size} bytes, at most {MARKDOWN_MAX_BYTES} (64 KB)."
    if any(_nesting_of(line) > MAX_NESTING for line in text.split("\n")):
        return f"Lists, quotes or indentation nested more than {MAX_NESTING} levels deep."
    if ("[" in text or "(" in text) and _open_depth(text) > MAX_BRACKET_DEPTH:
        return f"More than {MAX_BRACKET_DEPTH} brackets or parentheses open at once; close them."
    if len(_DEFINITION.findall(text)) > MAX_DEFINITIONS:
        return f"More than {MAX_DEFINITIONS} link, footnote or abbreviation definitions."
    return None


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


def _child(text: str, out: Connection) -> None:
    try:
        out.send((True, _convert(text)))
    except RecursionError:
        out.send((False, "This text is nested too deeply to render."))
    except Exception as exc:  # noqa: BLE001 - any failure is reported; the parent refuses the text
        out.send((False, f"This text could not be rendered ({type(exc).__name__})."))


def _convert_with_deadline(text: str, timeout: float) -> str:
    try:
        ctx = multiprocessing.get_context("fork")
    except ValueError:  # no fork on this platform: the checks above are all we have
        return _convert(text)
    receiver, sender = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_child, args=(text, sender), daemon=True)
    process.start()
    sender.close()
    try:
        if not receiver.poll(timeout):
            raise ValueError("This text takes too long to render; simplify its formatting or split it.")
        ok, result = receiver.recv()
    except EOFError:
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
    return _convert_with_deadline(text, float(getattr(settings, "MARKDOWN_RENDER_TIMEOUT", 1.0)))


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
