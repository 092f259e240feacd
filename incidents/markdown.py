"""The one place Markdown becomes HTML.

User text is stored raw and rendered here, then sanitised with nh3 (an allow-list, so
anything not listed - <script>, event handlers, style, javascript:/data: URLs - is
dropped). Pages, feeds, API HTML fields and emails all call `render_markdown`; no
template marks user text safe any other way.
"""

from __future__ import annotations

import markdown as md
import nh3

ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "del", "em", "h2", "h3", "h4", "h5",
    "h6", "hr", "i", "li", "ol", "p", "pre", "strong", "sub", "sup", "table", "tbody",
    "td", "th", "thead", "tr", "ul",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "abbr": {"title"}, "td": {"align"}, "th": {"align"}}
ALLOWED_URL_SCHEMES = {"http", "https", "mailto"}
_EXTENSIONS = ["extra", "sane_lists"]


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


def render_markdown(text: str) -> str:
    """Markdown to sanitised HTML. Raw HTML in the source is escaped, never passed on."""
    if not text:
        return ""
    converter = md.Markdown(extensions=_EXTENSIONS, output_format="html")
    # Drop the raw-HTML pass-through: `<b>` typed by a user shows as text. nh3 below is
    # the real guarantee; this keeps harmless tags from appearing to "work" by accident.
    converter.preprocessors.deregister("html_block")
    converter.inlinePatterns.deregister("html")
    return sanitize_html(converter.convert(text))
