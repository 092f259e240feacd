"""Markdown bodies for the bounded-rendering tests and bench/markdown_bench.py.

PATHOLOGICAL: 64 KB shapes that are, or are shaped like, ones that took seconds to minutes
in Python-Markdown (quadratic bracket, emphasis and block handling) or raised
RecursionError: nesting, brackets, emphasis runs, backticks, headings, tables, HTML-like
tags, abbreviations, link references, footnotes, long lines, many short lines and
mixes. Each must render fast or be refused with a clear message.

ORDINARY: long posts staff really write (incident-report prose, timelines as lists,
impact tables). Each must render.

PROSE: 64 KB of plain paragraphs, the reference the bench measures the others against.
"""

from __future__ import annotations

N = 65536  # incidents.markdown.MARKDOWN_MAX_BYTES; kept literal so the bench needs no Django


def _fill(unit: str, size: int = N) -> str:
    """`unit` repeated to exactly `size` characters (all ASCII, so bytes too)."""
    return (unit * (size // len(unit) + 1))[:size]


def _lines(make: object, size: int = N) -> str:
    """Numbered lines from `make(i)` until `size` characters, cut at a line end."""
    out: list[str] = []
    total = 0
    i = 0
    while True:
        line = make(i)  # type: ignore[operator]
        if total + len(line) > size:
            break
        out.append(line)
        total += len(line)
        i += 1
    return "".join(out)


_SENTENCES = [
    "Between 14:02 and 15:40 UTC, writes to Cloud Storage buckets in us-central1 returned elevated errors.",
    "A configuration change to the request routers reduced the capacity of the metadata service.",
    "Engineers were paged by the latency alert at 14:06 and declared an incident at 14:11.",
    "The change was rolled back zone by zone, and error rates returned to normal by 15:40.",
    "Reads were not affected, and no data was lost; retried writes succeeded.",
    "Customers using the JSON API saw HTTP 503 responses with a Retry-After header.",
    "We are adding a canary stage that holds a configuration change in one zone for an hour.",
    "The dashboards that would have shown the drop in capacity were not paged on.",
]

PROSE = _lines(lambda i: " ".join(_SENTENCES[(i + k) % 8] for k in range(5)) + "\n\n")

_REPORT_SECTIONS = """\
## Summary

On Tuesday 8 October, from 14:02 to 15:40 UTC, {n} percent of writes to Cloud Storage
buckets in us-central1 failed or took longer than 10 seconds. Reads were not affected.
We apologise: we know you rely on Cloud Storage for your own service, and we fell short.

## Root cause

A configuration change to the request routers (change {n}) lowered the number of
connections each router keeps to the metadata service. Under the afternoon peak the
routers queued requests instead of opening connections, and writes timed out. The change
had passed review and its tests, which ran at a fraction of production load.

## Remediation and prevention

- Roll back change {n} in every zone *(done, 15:40 UTC)*.
- Add a canary stage that holds a router change in one zone for an hour **(in progress)**.
- Page on metadata connection saturation, not only on latency.
- Load-test router changes at production peak; see [the tracker](https://example.com/issues/{n}).

## Detailed description of impact

| Product | Location | Level | Start (UTC) | End (UTC) |
|---|---|---|---|---|
| Cloud Storage | us-central1 | Major outage | 14:02 | 15:40 |
| Cloud Storage | us-east1 | Degraded performance | 14:20 | 14:55 |
| Compute Engine | us-central1 | Partial outage | 14:10 | 15:05 |

1. 14:02 - error rate on writes rises above 5 percent.
2. 14:06 - the latency alert pages the on-call engineer.
3. 14:11 - incident declared; first public update at 14:15.
4. 15:40 - rollback complete; error rates back to normal.

> Customers who retried with exponential backoff saw most writes succeed within two
> minutes; `gsutil` retries by default.

"""

ORDINARY = {
    # A full report, repeated as the timelines of a long multi-day incident would be.
    "full-report": _lines(lambda i: _REPORT_SECTIONS.format(n=i + 1), 32000),
    # An update thread pasted as one body: short paragraphs with times in bold.
    "update-thread": _lines(
        lambda i: f"**{i // 60:02d}:{i % 60:02d} UTC** - {_SENTENCES[i % 8]} {_SENTENCES[(i + 3) % 8]}\n\n",
        40000,
    ),
    # A long timeline as a flat list with links and code.
    "timeline-list": _lines(
        lambda i: (
            f"- {i // 60:02d}:{i % 60:02d} `router-{i % 40}`: {_SENTENCES[i % 8]} "
            f"([log](https://example.com/logs/{i}))\n"
        ),
        32000,
    ),
    # The impact of a big incident, product by product and zone by zone.
    "impact-table": "| Product | Location | Level | Minutes |\n|---|---|---|---:|\n"
    + _lines(lambda i: f"| Product {i % 90} | zone-{i % 30}-a | Partial outage | {i * 7 % 600} |\n", 12000),
    # Action items, nested one level, with emphasis.
    "action-items": _lines(
        lambda i: (
            f"{i + 1}. *{_SENTENCES[i % 8]}*\n    - owner: team {i % 12}, due in {i % 9 + 1} weeks\n"
            f"    - **priority P{i % 3}**: {_SENTENCES[(i + 5) % 8]}\n"
        ),
        32000,
    ),
    # Plain prose in paragraphs with a few headings, as a long postmortem is written.
    "postmortem-prose": _lines(
        lambda i: (
            (f"### Phase {i // 6 + 1}\n\n" if i % 6 == 0 else "")
            + " ".join(_SENTENCES[(i + k) % 8] for k in range(4))
            + "\n\n"
        ),
        64000,
    ),
}

PATHOLOGICAL = {
    # Brackets and parentheses: quadratic in open ones.
    "open-brackets": "[" * N,
    "nested-brackets": _fill("[" * 30 + "a" + "]" * 30 + " "),
    "closed-brackets": _fill("[a] "),
    "open-links": _fill("[a]("),
    "inline-links": _fill("[a](b) "),
    "open-images": _fill("![a]("),
    "nested-parentheses": _fill("[a](" + "(" * 29 + ")" * 30 + " "),
    "reference-links": "".join(f"[r{i}]: https://example.com/{i}\n" for i in range(50))
    + _fill("[a][r1] ", N - 1700),
    "link-definitions": "".join(f"[r{i}]: https://example.com/{i}\n" for i in range(3000))[:N],
    "autolinks": _fill("<https://a "),
    # Abbreviations and footnotes: definitions scanned against the whole text.
    "abbreviations": "".join(f"*[A{i}]: x\n" for i in range(2000))[:N],
    "abbreviation-uses": "".join(f"*[A{i}]: x\n" for i in range(50)) + _fill("A1 A2 A3 ", N - 500),
    "footnotes": "".join(f"[^{i}]: x\n" for i in range(40)) + _fill("[^1]")[: N - 400],
    "footnote-definitions": "".join(f"[^{i}]: x\n" for i in range(5000))[:N],
    "open-footnotes": _fill("[^"),
    # Blocks: Python-Markdown is quadratic in blocks in places.
    "headings": _fill("# a\n"),
    "setext-headings": _fill("a\n=\n"),
    "heading-attributes": _fill("# a {: #b .c}\n"),
    "hash-runs": _fill("###### "),
    "fences": _fill("```\n"),
    "tilde-fences": _fill("~~~\n"),
    "open-fence": "```\n" + _fill("a\n", N - 4),
    "indented-code": _fill("    a\n"),
    "horizontal-rules": _fill("---\n"),
    "star-rules": _fill("* * *\n"),
    "short-lines": _fill("a\n"),
    "blank-lines": "\n" * N,
    "paragraphs": _fill("a\n\n"),
    "definition-lists": _fill("a\n: b\n"),
    "hard-breaks": _fill("a  \n"),
    # Lists and quotes: recursion per nesting level.
    "deep-list": "- " * 600 + "x",
    "deep-quote": "> " * 600 + "x",
    "deep-ordered": "1. " * 600 + "x",
    "list-markers": _fill("- " * 15 + "a\n"),
    "nested-quotes": _fill("> " * 15 + "a\n"),
    "quote-then-list": _fill("> " * 8 + "- " * 7 + "a\n"),
    "indented-lists": _lines(lambda i: " " * (4 * (i % 16)) + "- a\n"),
    "tab-nesting": _lines(lambda i: "\t" * (i % 16) + "- a\n"),
    "flat-list": _fill("- a\n"),
    "ordered-list": _lines(lambda i: f"{i + 1}. a\n"),
    "lazy-list": _fill("- a\nb\n"),
    # Tables.
    "wide-tables": ("|a" * 1000 + "\n" + "|-" * 1000 + "\n") * 16,
    "tall-table": "|a|b|\n|-|-|\n" + _fill("|x|y|\n", N - 12),
    "pipes": _fill("|"),
    # Emphasis and code spans.
    "emphasis": _fill("**_a"),
    "stars": "*" * N,
    "underscores": "_" * N,
    "open-emphasis": _fill("*a "),
    "strong-runs": _fill("**a** "),
    "nested-emphasis": _fill("*a **b _c __d "),
    "backticks": _fill("`a"),
    "backtick-runs": _lines(lambda i: "`" * (i % 30 + 1) + " a "),
    "backslashes": _fill("\\*"),
    # HTML-like text (shown as text, but still scanned).
    "html-tags": _fill("<div>"),
    "open-tags": _fill("<a "),
    "html-comments": _fill("<!--"),
    "html-blocks": _fill('<div markdown="1">\n'),
    "entities": _fill("&#"),
    # One huge line, and mixes.
    "long-line": "a" * N,
    "long-word-line": _fill("word "),
    "mixed-blocks": _fill("# a\n- b\n> c\n`d`\n*e*\n[f]\n| g |\n"),
    "mixed-inline": _fill("*a* [b] `c` <d> **e** _f_ &g; \\h "),
    "over-64KB": "x" * (N + 1),
}
