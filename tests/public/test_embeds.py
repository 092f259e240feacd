"""Embeds: SVG badges, JSON Feed 1.1 and the live page's version document.

The JSON Feed checks are written from the version 1.1 specification
(https://www.jsonfeed.org/version/1.1/): `version` is the 1.1 URL, `title` and `items`
are required, every item has a unique string `id` and `content_html` or `content_text`,
URLs are absolute, dates are RFC 3339, and any key the spec does not define starts with
an underscore (extensions).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.test import Client
from freezegun import freeze_time

from incidents import services
from tests.builders import make_incident, make_product, utc

pytestmark = pytest.mark.django_db

NOW = utc(2026, 11, 29, 20, 0)
SVG = "{http://www.w3.org/2000/svg}"

FEED_KEYS = {
    "version", "title", "home_page_url", "feed_url", "description", "user_comment", "next_url",
    "icon", "favicon", "authors", "language", "expired", "hubs", "items",
}  # fmt: skip
ITEM_KEYS = {
    "id", "url", "external_url", "title", "content_html", "content_text", "summary", "image",
    "banner_image", "date_published", "date_modified", "authors", "tags", "language", "attachments",
}  # fmt: skip


def _absolute(url: Any) -> bool:
    parts = urlsplit(url) if isinstance(url, str) else None
    return parts is not None and parts.scheme in ("http", "https") and bool(parts.netloc)


def _rfc3339(value: Any) -> bool:
    if not isinstance(value, str) or "T" not in value:
        return False
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return parsed.tzinfo is not None


def json_feed_problems(feed: Any) -> list[str]:
    """Everything in `feed` that breaks the JSON Feed 1.1 rules (empty: valid)."""
    problems: list[str] = []
    if not isinstance(feed, dict):
        return ["the feed is not an object"]
    if feed.get("version") != "https://jsonfeed.org/version/1.1":
        problems.append("version must be https://jsonfeed.org/version/1.1")
    if not isinstance(feed.get("title"), str) or not feed["title"]:
        problems.append("title is required")
    for key in ("home_page_url", "feed_url", "next_url", "icon", "favicon"):
        if key in feed and not _absolute(feed[key]):
            problems.append(f"{key} must be an absolute URL")
    for key in set(feed) - FEED_KEYS:
        if not key.startswith("_"):
            problems.append(f"unknown top-level key {key!r} (extensions start with _)")
    if "author" in feed:
        problems.append("author is deprecated in 1.1: use authors")
    items = feed.get("items")
    if not isinstance(items, list):
        return [*problems, "items is required and must be an array"]
    ids = []
    for n, item in enumerate(items):
        where = f"items[{n}]"
        if not isinstance(item, dict):
            problems.append(f"{where} is not an object")
            continue
        if not isinstance(item.get("id"), str) or not item["id"]:
            problems.append(f"{where}.id must be a non-empty string")
        ids.append(item.get("id"))
        if not any(isinstance(item.get(k), str) for k in ("content_html", "content_text")):
            problems.append(f"{where} needs content_html or content_text")
        for key in ("url", "external_url", "image", "banner_image"):
            if key in item and not _absolute(item[key]):
                problems.append(f"{where}.{key} must be an absolute URL")
        for key in ("date_published", "date_modified"):
            if key in item and not _rfc3339(item[key]):
                problems.append(f"{where}.{key} must be an RFC 3339 date")
        if "tags" in item and not (
            isinstance(item["tags"], list) and all(isinstance(t, str) for t in item["tags"])
        ):
            problems.append(f"{where}.tags must be an array of strings")
        for key in set(item) - ITEM_KEYS:
            if not key.startswith("_"):
                problems.append(f"{where}: unknown key {key!r}")
    if len(set(ids)) != len(ids):
        problems.append("item ids must be unique")
    return problems


@pytest.fixture
def data() -> dict[str, Any]:
    with freeze_time(NOW):
        gmail = make_product("Gmail")
        drive = make_product("Drive", position=1)
        odd = make_product('Calendar <&> "quotes"', slug="calendar", position=2)
        make_product("Internal Billing", is_public=False)
        resolved = make_incident(
            title="Drive sync stalls", product=drive, start=utc(2026, 11, 20, 9), end=utc(2026, 11, 20, 10)
        )
        ongoing = make_incident(
            title="Gmail delivery <delays>", product=gmail, start=NOW - timedelta(hours=1), impact="critical"
        )
        services.incident_post_update(
            incident=ongoing, status="identified", body="Found it. <script>alert(1)</script>"
        )
    return {"gmail": gmail, "drive": drive, "odd": odd, "resolved": resolved, "ongoing": ongoing}


def _get(client: Client, url: str, **headers: Any) -> Any:
    with freeze_time(NOW):
        return client.get(url, **headers)


def _svg(response: Any) -> ET.Element:
    assert response.status_code == 200
    assert response["Content-Type"].startswith("image/svg+xml")
    root = ET.fromstring(response.content)  # noqa: S314 - our own response, parsed to check it
    assert root.tag == f"{SVG}svg"
    return root


def _check_badge(root: ET.Element, text: str) -> None:
    width = int(root.get("width", "0"))
    assert width > 0 and root.get("height") == "20"
    assert root.get("viewBox") == f"0 0 {width} 20"
    # Screen readers: an image with a name, and the name as <title>.
    assert root.get("role") == "img"
    assert root.get("aria-label") == text
    title = root.find(f"{SVG}title")
    assert title is not None and title.text == text
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert texts == text.split(": ", 1)
    rects = list(root.iter(f"{SVG}rect"))
    assert len(rects) >= 2
    # Every rect fits the badge.
    for rect in rects:
        assert int(rect.get("x", "0")) + int(rect.get("width", "0")) <= width


def test_it_draws_a_valid_svg_badge_for_the_page(client: Client, data: dict[str, Any]) -> None:
    response = _get(client, "/badge.svg")
    root = _svg(response)
    _check_badge(root, "Status: Major System Outage")
    fills = {r.get("fill") for r in root.iter(f"{SVG}rect")}
    assert "#c5221f" in fills  # the major-outage red
    # Cacheable like every public read: validators, public caching, no cookies, 304.
    assert response["ETag"] and response["Cache-Control"].startswith("public")
    assert not response.cookies
    again = _get(client, "/badge.svg", HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304


def test_it_draws_a_badge_per_product_with_escaped_names(client: Client, data: dict[str, Any]) -> None:
    _check_badge(_svg(_get(client, "/products/gmail/badge.svg")), "Gmail: Major outage")
    _check_badge(_svg(_get(client, "/products/drive/badge.svg")), "Drive: Operational")
    _check_badge(_svg(_get(client, "/products/calendar/badge.svg")), 'Calendar <&> "quotes": Operational')
    assert _get(client, "/products/internal-billing/badge.svg").status_code == 404
    assert _get(client, "/products/nope/badge.svg").status_code == 404


def test_it_lets_other_origins_read_embeds(client: Client, data: dict[str, Any]) -> None:
    for url in ("/badge.svg", "/history.json", "/products/gmail/history.json", "/live/version.json"):
        response = _get(client, url, HTTP_ORIGIN="https://intranet.example.org")
        assert response.status_code == 200, url
        assert response["Access-Control-Allow-Origin"] == "*", url


def test_it_serves_a_valid_json_feed(client: Client, data: dict[str, Any], settings: Any) -> None:
    settings.SITE_URL = "https://status.example.com"  # links come from it, not the Host
    response = _get(client, "/history.json")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/feed+json; charset=utf-8"
    assert response["ETag"] and not response.cookies
    feed = json.loads(response.content)
    assert json_feed_problems(feed) == []
    assert feed["feed_url"] == "https://status.example.com/history.json"
    titles = [item["title"] for item in feed["items"]]
    assert titles == ["Identified: Gmail delivery <delays>", "Resolved: Drive sync stalls"]
    first = feed["items"][0]
    assert first["id"] == f"incident:{data['ongoing'].public_id}"
    assert first["url"] == f"https://status.example.com/incidents/{data['ongoing'].public_id}/"
    # User Markdown went through the one sanitiser.
    assert "<script>" not in first["content_html"]
    assert "Found it." in first["content_html"]
    assert _get(client, "/history.json", HTTP_IF_NONE_MATCH=response["ETag"]).status_code == 304


def test_it_serves_a_json_feed_per_product(client: Client, data: dict[str, Any], settings: Any) -> None:
    settings.SITE_URL = "https://status.example.com"
    feed = json.loads(_get(client, "/products/drive/history.json").content)
    assert json_feed_problems(feed) == []
    assert [item["title"] for item in feed["items"]] == ["Resolved: Drive sync stalls"]
    assert feed["home_page_url"] == "https://status.example.com/products/drive/"
    assert _get(client, "/products/internal-billing/history.json").status_code == 404


def test_the_feed_checks_catch_broken_feeds() -> None:
    assert json_feed_problems({"version": "https://jsonfeed.org/version/1", "items": [{}]}) == [
        "version must be https://jsonfeed.org/version/1.1",
        "title is required",
        "items[0].id must be a non-empty string",
        "items[0] needs content_html or content_text",
    ]


def test_the_version_document_is_tiny_changes_on_writes_and_answers_304(
    client: Client, data: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    first = client.get("/live/version.json")
    assert first.status_code == 200
    assert len(first.content) < 120
    assert not first.cookies
    assert client.get("/live/version.json", HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304
    with django_capture_on_commit_callbacks(execute=True):
        services.incident_resolve(incident=data["ongoing"], body="Fixed.")
    second = client.get("/live/version.json", HTTP_IF_NONE_MATCH=first["ETag"])
    assert second.status_code == 200
    assert json.loads(second.content)["version"] != json.loads(first.content)["version"]
