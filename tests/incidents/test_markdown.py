"""Markdown is rendered and sanitised in one place; nothing executable survives it.

Besides substring checks, every output is parsed and checked structurally: only
allow-listed tags, no event-handler or style attributes, only http/https/mailto links.
"""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urlparse

import pytest
from django.template import Context, Template
from hypothesis import given, settings
from hypothesis import strategies as st

from incidents.markdown import ALLOWED_ATTRIBUTES, ALLOWED_TAGS, render_markdown, sanitize_html

PAYLOADS = [
    "<script>alert(1)</script>",
    "<SCRIPT SRC=//evil.example/x.js></SCRIPT>",
    "<scr<script>ipt>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "<svg/onload=alert(1)>",
    '<a href="javascript:alert(1)">x</a>',
    "<iframe src=javascript:alert(1)></iframe>",
    '<div style="background:url(javascript:alert(1))">x</div>',
    "<style>body{display:none}</style>",
    "<!-- <script>alert(1)</script> -->",
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](  javascript:alert(1))",
    "[click](&#106;avascript:alert(1))",
    "[click](&#x6A;avascript&#58;alert(1))",
    "[click](java&#x09;script:alert(1))",
    "[click](vbscript:msgbox(1))",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "![x](javascript:alert(1))",
    '![x](x.png "onerror=alert(1)")',
    "[ref][r]\n\n[r]: javascript:alert(1)",
    "<javascript:alert(1)>",
    "&lt;script&gt;alert(1)&lt;/script&gt;",
    "&#60;script&#62;alert(1)&#60;/script&#62;",
    '<div markdown="1"><script>alert(1)</script></div>',
    "<details open ontoggle=alert(1)>",
    '[x](http://example.com "a\\" onmouseover=\\"alert(1)")',
    "`<script>alert(1)</script>`",
    "    <script>alert(1)</script>",
    "{{ settings.SECRET_KEY }} {% load static %}",
]


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.comments: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)


def assert_harmless(html: str) -> None:
    parser = _Collector()
    parser.feed(html)
    parser.close()
    assert parser.comments == []
    for tag, attrs in parser.tags:
        assert tag in ALLOWED_TAGS, html
        for name, value in attrs:
            assert name in ALLOWED_ATTRIBUTES.get(tag, set()) | ({"rel"} if tag == "a" else set()), html
            if name == "href":
                # The parser has decoded entities, as a browser would.
                assert urlparse((value or "").strip()).scheme in {"http", "https", "mailto", ""}, html
    # Whatever is left of a payload is text: no raw '<' survives outside a real tag.
    text_only = html
    for tag, _ in parser.tags:
        text_only = text_only.replace(f"<{tag}", "").replace(f"</{tag}>", "")
    assert "<" not in text_only, html


@pytest.mark.parametrize("payload", PAYLOADS)
def test_it_never_lets_anything_executable_through(payload: str) -> None:
    html = render_markdown(payload)

    assert_harmless(html)
    # Sanitising is idempotent: clean output stays exactly as it is.
    assert sanitize_html(html) == html


@pytest.mark.parametrize("payload", PAYLOADS)
def test_it_sanitises_raw_html_too(payload: str) -> None:
    html = sanitize_html(payload)

    assert_harmless(html)
    assert sanitize_html(html) == html


def test_it_shows_raw_html_as_text() -> None:
    assert render_markdown("Use <b>bold</b> here") == "<p>Use &lt;b&gt;bold&lt;/b&gt; here</p>"
    assert render_markdown("<script>alert(1)</script>") == "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>"


def test_it_drops_dangerous_links_but_keeps_the_text() -> None:
    assert (
        render_markdown("[click](javascript:alert(1))")
        == '<p><a rel="noopener noreferrer nofollow">click</a></p>'
    )
    html = render_markdown("[x](data:text/html;base64,PHNjcmlwdD4=)")
    assert "href" not in html and ">x</a>" in html


def test_it_renders_ordinary_markdown() -> None:
    text = (
        "## Root cause\n\n"
        "The **request routers** were *overloaded*; see [the report](https://status.example.com/r).\n\n"
        "* one\n* two\n\n"
        "1. first\n2. second\n\n"
        "`code` and\n\n    block\n\n"
        "> quoted\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n"
        "Mail <ops@example.com>."
    )
    html = render_markdown(text)

    assert "<h2>Root cause</h2>" in html
    assert "<strong>request routers</strong>" in html and "<em>overloaded</em>" in html
    assert '<a href="https://status.example.com/r" rel="noopener noreferrer nofollow">the report</a>' in html
    assert "<ul>\n<li>one</li>" in html and "<ol>\n<li>first</li>" in html
    assert "<code>code</code>" in html and "<pre><code>block" in html
    assert "<blockquote>" in html and "<table>" in html and "<td>1</td>" in html
    assert 'href="mailto:' in html
    assert_harmless(html)
    assert sanitize_html(html) == html


def test_it_renders_template_syntax_literally() -> None:
    html = render_markdown("{{ settings.SECRET_KEY }} {% load static %}")
    assert html == "<p>{{ settings.SECRET_KEY }} {% load static %}</p>"


def test_it_renders_nothing_for_empty_text() -> None:
    assert render_markdown("") == ""


def test_the_template_filter_uses_the_same_sanitiser() -> None:
    template = Template("{% load statuspage_tags %}{{ text|markdown }}|{{ gap|duration }}")
    from datetime import timedelta

    out = template.render(
        Context({"text": "**hi** <script>alert(1)</script>", "gap": timedelta(hours=18, minutes=11)})
    )

    assert out == "<p><strong>hi</strong> &lt;script&gt;alert(1)&lt;/script&gt;</p>|18 h 11 min"


# Fragments that, shuffled together, make tags, attributes, entities and links.
SOUP = [
    *"<>&#;\"'=()[]!`*\n :/",
    "script", "img", "onerror", "javascript", "data", "href", "a", "x", "&#106;", "&lt;", "svg",
]  # fmt: skip


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(SOUP), max_size=40).map("".join))
def test_it_stays_harmless_and_idempotent_for_any_soup(text: str) -> None:
    html = render_markdown(text)
    assert_harmless(html)
    assert sanitize_html(html) == html
