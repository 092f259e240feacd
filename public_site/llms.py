"""`/llms.txt` (llmstxt.org): the page, its feeds and its APIs, for language models.

Built from the URL configuration and the public catalogue at request time, so it names
the addresses that answer, never a copy that could drift; cached like the feeds.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import reverse

from core.text import site_title
from incidents.selectors import products_public


def _link(name: str, path: str, what: str) -> str:
    return f"- [{name}]({settings.SITE_URL}{path}): {what}"


def _sections() -> list[tuple[str, list[str]]]:
    products = list(products_public().values_list("slug", "name"))
    pages = [
        _link("Status page", reverse("public:index"), "current status of every product, open incidents"),
        _link("History", reverse("public:history"), "past incidents and maintenance, month by month"),
    ]
    pages += [
        _link(name, reverse("public:product", args=[slug]), f"{name}: status by location, 90-day uptime")
        for slug, name in products
    ]
    feeds = [
        _link(
            "Atom feed",
            reverse("feeds:history-atom"),
            "every incident, latest state (WebSub when a hub is set)",
        ),
        _link("RSS feed", reverse("feeds:history-rss"), "the same entries in RSS 2.0"),
        _link("JSON feed", reverse("feeds:history-json"), "the same entries in JSON Feed"),
    ]
    feeds += [
        _link(f"{name} Atom feed", reverse("feeds:product-history-atom", args=[slug]), f"incidents of {name}")
        for slug, name in products
    ]
    apis = [
        _link(
            "MCP server",
            reverse("mcp"),
            "Model Context Protocol, streamable HTTP: status, incidents, reports, uptime",
        ),
        _link(
            "Overall status", reverse("api-status"), "REST v1: the page indicator and each product's status"
        ),
        _link("Incidents", reverse("incident-list"), "REST v1: incidents, filter by product and start time"),
        _link("OpenAPI schema", reverse("api-schema"), "every REST endpoint, OpenAPI 3.1"),
        _link("Statuspage summary", reverse("v2-summary"), "Statuspage-compatible v2 summary"),
        _link(
            "Google-style incidents", reverse("google-incidents"), "incidents.json in the Google Cloud format"
        ),
    ]
    apis += [
        _link(
            f"{name} uptime", reverse("api-product-uptime", args=[slug]), f"REST v1: monthly uptime of {name}"
        )
        for slug, name in products
    ]
    return [("Pages", pages), ("Feeds", feeds), ("APIs", apis)]


def llms_txt(request: HttpRequest) -> HttpResponse:
    lines = [
        f"# {site_title(settings.SITE_NAME)}",
        "",
        "> The public status page: current status of each product by location, incidents "
        "with their timelines and reports, maintenance, and uptime. Reads need no key; the "
        "API and the MCP server take staff API keys (`Authorization: Bearer <key>`) for staff "
        "data and writes.",
    ]
    for title, links in _sections():
        lines += ["", f"## {title}", "", *links]
    response = HttpResponse("\n".join(lines) + "\n", content_type="text/plain; charset=utf-8")
    return response
