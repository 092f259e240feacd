"""Every feed, checked the way outside readers check it.

The feeds are found the way a reader finds them, from the <link rel="alternate"> of the
pages in both languages (the site's and each product's: Atom, RSS and JSON Feed; the
feeds have one address whatever the page's language). Each must parse with feedparser
without a bozo flag; Atom must follow RFC 4287 as the W3C validator reads it (an author,
unique and stable entry ids, no date in the future); JSON Feed must pass the strict 1.1
checker in tests/public/jsonfeed.py.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from datetime import datetime, timedelta
from email.utils import parsedate_to_datetime
from html.parser import HTMLParser
from urllib.parse import urlsplit

import feedparser
import pytest
from django.conf import settings
from django.test import Client
from freezegun import freeze_time

from incidents import services
from incidents.models import ImpactWindow, Incident
from tests.builders import make_incident, make_product, utc
from tests.public import jsonfeed

pytestmark = pytest.mark.django_db


def _xml(body: bytes) -> ET.Element:
    return ET.fromstring(body)  # noqa: S314 - our own response, parsed to check it


NOW = utc(2026, 11, 29, 20, 0)
ANNOUNCED = NOW - timedelta(days=2)
ATOM = "{http://www.w3.org/2005/Atom}"
FEED_TYPES = {
    "application/atom+xml": "atom",
    "application/rss+xml": "rss",
    "application/feed+json": "json",
}


@pytest.fixture
def history():  # type: ignore[no-untyped-def]
    with freeze_time(ANNOUNCED):
        gmail = make_product("Gmail", position=0)
        drive = make_product("Google Drive", slug="drive", position=1)
        hidden = make_product("Internal Billing", slug="billing", is_public=False)
        old = make_incident(
            title="Gmail web interface unavailable",
            product=gmail,
            start=utc(2009, 9, 1, 19, 45),
            end=utc(2009, 9, 1, 21, 15),
        )
        # Planned three days ahead and announced now: its start is in the future.
        maintenance = services.incident_open(
            title="Drive storage upgrade",
            kind=Incident.Kind.MAINTENANCE,
            impact=Incident.Impact.NONE,
            scheduled_for=NOW + timedelta(days=3),
            scheduled_until=NOW + timedelta(days=3, hours=2),
            windows=[
                services.WindowSpec(
                    product=drive,
                    level=ImpactWindow.Level.UNDER_MAINTENANCE,
                    started_at=NOW + timedelta(days=3),
                )
            ],
        )
        make_incident(
            title="Staff only", product=gmail, start=ANNOUNCED - timedelta(hours=1), is_public=False
        )
        make_incident(title="Billing export", product=hidden, start=ANNOUNCED - timedelta(hours=2))
    with freeze_time(NOW - timedelta(minutes=40)):
        ongoing = make_incident(
            title="Mail delays & <bounces>", product=gmail, start=NOW - timedelta(hours=2)
        )
        services.incident_post_update(
            incident=ongoing, status="identified", body="Found it.", display_at=NOW - timedelta(minutes=50)
        )
    return {"old": old, "maintenance": maintenance, "ongoing": ongoing, "gmail": gmail, "drive": drive}


class _Alternates(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.feeds: set[tuple[str, str]] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "link" and a.get("rel") == "alternate" and a.get("type") in FEED_TYPES:
            self.feeds.add((FEED_TYPES[a["type"] or ""], a["href"] or ""))


def _discovered(client: Client, path: str) -> set[tuple[str, str]]:
    response = client.get(path)
    assert response.status_code == 200, path
    parser = _Alternates()
    parser.feed(response.content.decode())
    return parser.feeds


def _every_feed(client: Client) -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for slug in ("gmail", "drive"):
        for path in (f"/products/{slug}/", f"/fr/products/{slug}/"):
            found |= _discovered(client, path)
    english, french = _discovered(client, "/"), _discovered(client, "/fr/")
    assert english == french, "both languages link the same feeds"
    return found | english


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _check_atom(body: bytes, url: str) -> list[str]:
    root = _xml(body)
    author = root.find(f"{ATOM}author")
    assert author is not None, f"{url}: RFC 4287 needs an author (feed or every entry)"
    assert (author.findtext(f"{ATOM}name") or "").strip() == settings.SITE_NAME
    assert author.findtext(f"{ATOM}uri") == f"{settings.SITE_URL}/"
    assert root.findtext(f"{ATOM}id"), url
    self_links = [link.get("href") for link in root.findall(f"{ATOM}link") if link.get("rel") == "self"]
    assert self_links == [f"{settings.SITE_URL}{url}"], url
    subtitle = root.findtext(f"{ATOM}subtitle") or ""
    assert "status status" not in subtitle.lower(), subtitle
    entries = root.findall(f"{ATOM}entry")
    assert entries, url
    ids = [entry.findtext(f"{ATOM}id") or "" for entry in entries]
    assert len(ids) == len(set(ids)), f"{url}: entry ids repeat"
    assert all(urlsplit(i).scheme for i in ids), f"{url}: an entry id is not an absolute IRI"
    updated = [_when(entry.findtext(f"{ATOM}updated") or "") for entry in entries]
    published = [_when(entry.findtext(f"{ATOM}published") or "") for entry in entries]
    feed_updated = _when(root.findtext(f"{ATOM}updated") or "")
    assert max([feed_updated, *updated, *published]) <= NOW, f"{url}: a date in the future"
    assert all(p <= u for p, u in zip(published, updated, strict=True)), f"{url}: updated before published"
    assert feed_updated == max(updated), f"{url}: the feed's updated is its newest entry's"
    return ids


def _check_rss(body: bytes, url: str) -> list[str]:
    parsed = feedparser.parse(body)
    assert parsed.version == "rss20", url
    channel = _xml(body).find("channel")
    assert channel is not None
    dates = [parsedate_to_datetime(item.findtext("pubDate") or "") for item in channel.iter("item")]
    dates.append(parsedate_to_datetime(channel.findtext("lastBuildDate") or ""))
    assert max(dates) <= NOW, f"{url}: a date in the future"
    assert "status status" not in (channel.findtext("description") or "").lower()
    guids = [item.findtext("guid") or "" for item in channel.iter("item")]
    assert len(guids) == len(set(guids)), url
    return guids


def _check_json(body: bytes, url: str) -> list[str]:
    document = json.loads(body)
    assert jsonfeed.problems(document) == [], url
    assert document["feed_url"] == f"{settings.SITE_URL}{url}"
    dates = [_when(item[key]) for item in document["items"] for key in ("date_published", "date_modified")]
    assert max(dates) <= NOW, f"{url}: a date in the future"
    assert "status status" not in document["description"].lower()
    return [item["id"] for item in document["items"]]


CHECKS = {"atom": _check_atom, "rss": _check_rss, "json": _check_json}


def _read_all(client: Client, feeds: set[tuple[str, str]]) -> dict[tuple[str, str], list[str]]:
    ids = {}
    for kind, url in sorted(feeds):
        response = client.get(url)
        assert response.status_code == 200, url
        if kind != "json":
            parsed = feedparser.parse(response.content)
            assert parsed.bozo == 0, (url, parsed.get("bozo_exception"))
            assert parsed.entries, url
        ids[(kind, url)] = CHECKS[kind](response.content, url)
    return ids


def test_every_linked_feed_passes_the_readers_checks(client: Client, history) -> None:  # type: ignore[no-untyped-def]
    with freeze_time(NOW):
        feeds = _every_feed(client)
        assert {url for _kind, url in feeds} == {
            f"/{prefix}history.{ext}"
            for prefix in ("", "products/gmail/", "products/drive/")
            for ext in ("atom", "rss", "json")
        }
        ids = _read_all(client, feeds)
    maintenance = f"incident:{history['maintenance'].public_id}"
    ongoing = f"incident:{history['ongoing'].public_id}"
    old = f"incident:{history['old'].public_id}"
    for kind in ("atom", "rss", "json"):
        # Newest start first: the maintenance ahead, then what happened.
        assert ids[(kind, f"/history.{kind}")] == [maintenance, ongoing, old]
        assert ids[(kind, f"/products/gmail/history.{kind}")] == [ongoing, old]
        assert ids[(kind, f"/products/drive/history.{kind}")] == [maintenance]


def test_a_maintenance_is_dated_when_announced_not_when_it_starts(client: Client, history) -> None:  # type: ignore[no-untyped-def]
    with freeze_time(NOW):
        atom = _xml(client.get("/products/drive/history.atom").content)
        document = client.get("/products/drive/history.json").json()
    entry = atom.find(f"{ATOM}entry")
    assert entry is not None
    assert _when(entry.findtext(f"{ATOM}published") or "") == ANNOUNCED
    assert _when(entry.findtext(f"{ATOM}updated") or "") == ANNOUNCED
    assert _when(document["items"][0]["date_published"]) == ANNOUNCED
    # The ongoing incident: published when it started, updated when the update was shown.
    with freeze_time(NOW):
        item = client.get("/products/gmail/history.json").json()["items"][0]
    assert _when(item["date_published"]) == NOW - timedelta(hours=2)
    assert _when(item["date_modified"]) == NOW - timedelta(minutes=50)


def test_a_corrected_update_moves_the_entrys_modified_date(
    client: Client,
    history,
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    update = history["ongoing"].updates.order_by("-display_at").first()
    with freeze_time(NOW + timedelta(minutes=7)), django_capture_on_commit_callbacks(execute=True):
        services.incident_update_edit(update=update, body="Corrected: mail is delayed, not lost.")
    with freeze_time(NOW + timedelta(minutes=8)):
        item = client.get("/products/gmail/history.json").json()["items"][0]
        atom = _xml(client.get("/products/gmail/history.atom").content)
    assert _when(item["date_modified"]) == NOW + timedelta(minutes=7)
    entry = atom.find(f"{ATOM}entry")
    assert entry is not None
    assert _when(entry.findtext(f"{ATOM}updated") or "") == NOW + timedelta(minutes=7)


def test_entry_ids_are_stable_across_changes_and_formats(
    client: Client,
    history,
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    with freeze_time(NOW):
        before = _read_all(client, _every_feed(client))
    with freeze_time(NOW + timedelta(minutes=5)), django_capture_on_commit_callbacks(execute=True):
        services.incident_resolve(incident=history["ongoing"], body="Fixed.")
    with freeze_time(NOW + timedelta(minutes=6)):
        after = client.get("/history.atom").content
    assert b"Resolved: Mail delays" in after  # the change is in the feed...
    atom_ids = [e.findtext(f"{ATOM}id") for e in _xml(after).findall(f"{ATOM}entry")]
    assert atom_ids == before[("atom", "/history.atom")]  # ...under the same ids
    # One incident has one id in every format and in the site's and its products' feeds.
    assert len({tuple(ids) for (kind, url), ids in before.items() if url.startswith("/history.")}) == 1


def test_the_feeds_name_the_site_by_the_page_rule(client: Client, history, settings) -> None:  # type: ignore[no-untyped-def]
    settings.SITE_NAME = "Acme"
    with freeze_time(NOW):
        atom = _xml(client.get("/products/gmail/history.atom").content)
        rss = _xml(client.get("/history.rss").content)
        document = client.get("/history.json").json()
    assert atom.findtext(f"{ATOM}subtitle") == (
        "Incidents and scheduled maintenance of Gmail on the Acme status page, newest first."
    )
    assert atom.findtext(f"{ATOM}title") == "Gmail incident history · Acme status"
    assert atom.findtext(f"{ATOM}author/{ATOM}name") == "Acme"
    assert rss.findtext("channel/description") == (
        "Incidents and scheduled maintenance on the Acme status page, newest first."
    )
    assert document["authors"] == [{"name": "Acme", "url": f"{settings.SITE_URL}/"}]


def test_the_feeds_do_not_depend_on_the_readers_language(client: Client, history) -> None:  # type: ignore[no-untyped-def]
    with freeze_time(NOW):
        for url in ("/history.atom", "/products/gmail/history.rss", "/products/gmail/history.json"):
            plain = client.get(url)
            french = client.get(url, HTTP_ACCEPT_LANGUAGE="fr-FR,fr", HTTP_COOKIE="django_language=fr")
            assert french.content == plain.content, url
            for response in (plain, french):
                vary = response.get("Vary", "")
                assert "Cookie" not in vary and "Accept-Language" not in vary, (url, vary)


def test_a_product_feed_of_an_unknown_or_hidden_product_is_404(client: Client, history) -> None:  # type: ignore[no-untyped-def]
    for url in (
        "/products/nope/history.atom",
        "/products/billing/history.rss",
        "/products/billing/history.json",
    ):
        assert client.get(url).status_code == 404, url


# --- The JSON Feed checker can fail --------------------------------------------------------


def _minimal() -> dict:  # type: ignore[type-arg]
    return {
        "version": jsonfeed.VERSION,
        "title": "T",
        "items": [{"id": "1", "content_text": "x", "date_published": "2026-11-29T20:00:00+00:00"}],
    }


def test_the_json_feed_checker_accepts_a_minimal_feed() -> None:
    assert jsonfeed.problems(_minimal()) == []
    assert jsonfeed.problems({**_minimal(), "_ext": {"anything": 1}}) == []


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"version": "https://jsonfeed.org/version/1"}, "`version` must be"),
        ({"title": None}, "`title` is required"),
        ({"title": 5}, "feed.title: must be a string"),
        ({"home_page_url": "/relative/"}, "absolute http(s) URL"),
        ({"author": {"name": "old"}}, "`author` is not a JSON Feed 1.1 field"),
        ({"authors": [{}]}, "an author needs a name, url or avatar"),
        ({"expired": "no"}, "must be true or false"),
        ({"language": "english language"}, "RFC 5646"),
        ({"hubs": [{"type": "WebSub"}]}, "`url` is required"),
        ({"items": [{"id": 1, "content_text": "x"}]}, "items[0].id: must be a string"),
        ({"items": [{"id": "1"}]}, "needs content_html or content_text"),
        ({"items": [{"id": "1", "content_text": "x", "date_modified": "2026-11-29 20:00"}]}, "RFC 3339"),
        ({"items": [{"id": "1", "content_text": "x", "tags": ["a", 2]}]}, "array of strings"),
        (
            {"items": [{"id": "1", "content_text": "x", "attachments": [{"url": "https://x.test/a"}]}]},
            "mime_type",
        ),
        ({"items": [{"id": "1", "content_text": "x"}, {"id": "1", "content_text": "y"}]}, "not unique"),
    ],
)
def test_the_json_feed_checker_refuses_what_the_spec_refuses(change: dict, problem: str) -> None:  # type: ignore[type-arg]
    # None removes the field.
    document = {key: value for key, value in {**_minimal(), **change}.items() if value is not None}
    found = jsonfeed.problems(document)
    assert any(problem in p for p in found), found
