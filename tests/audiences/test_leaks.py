"""No leaks: what an anonymous visitor gets from every public address is the same bytes
whether or not private pages, the private words of updates and internal notes exist, and
no private title shows anywhere."""

from __future__ import annotations

import re

from django.core.cache import cache
from django.test import Client
from freezegun import freeze_time

from audiences import services
from edge import page_cache, version
from incidents.models import IncidentNote
from tests.audiences.conftest import World, make_pages
from tests.builders import make_incident, utc
from tests.public_urls import public_urls

NOW = "2026-12-01T12:00:00Z"
# What the public site serves beyond the list every public test walks.
EXTRA_URLS = [
    "/fr/",
    "/history.json",
    "/badge.svg",
    "/sitemap.xml",
    "/robots.txt",
    "/live/version.json",
    "/products/cloud-storage/",
    "/fr/history/",
]
COMPARED_HEADERS = ("Content-Type", "ETag", "Last-Modified", "Cache-Control", "Vary", "Content-Length")
# A form's CSRF token is new on every response, private pages or not.
CSRF_TOKEN = re.compile(rb'name="csrfmiddlewaretoken" value="[^"]*"')
PRIVATE_WORDS = (
    "Secret internal page",
    "Tailspin private page",
    "Dear Tailspin",
    "Shard seven",
    "Pager duty",
)


def _fresh() -> None:
    """Every page rendered again, under the same public-state stamp (a flushed cache mints
    a new one): a private write that moved the stamp would still show as a difference."""
    stamp = version.public_state_version()
    cache.clear()
    page_cache._memo.clear()
    page_cache._memo_last.clear()
    cache.set(version.VERSION_KEY, stamp, timeout=None)


def _snapshot(world: World) -> dict[str, tuple[int, bytes, tuple[str | None, ...]]]:
    _fresh()
    client = Client()
    urls = public_urls(incident_id=world.storage_incident.public_id, product_slug="gmail") + EXTRA_URLS
    urls += [f"/incidents/{world.gmail_incident.public_id}/"]
    out = {}
    for url in urls:
        response = client.get(url)
        content = CSRF_TOKEN.sub(b'name="csrfmiddlewaretoken"', response.content)
        out[url] = (response.status_code, content, tuple(response.get(h) for h in COMPARED_HEADERS))
    return out


@freeze_time(NOW)
def test_it_answers_anonymous_the_same_bytes_with_or_without_private_things(
    world: World, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    before = _snapshot(world)
    with django_capture_on_commit_callbacks(execute=True):
        make_pages(world)
        update = world.storage_incident.updates.order_by("display_at").first()
        assert update is not None
        services.update_words_set(
            actor=None, update=update, audience_message="Dear Tailspin", internal_note="Shard seven"
        )
        IncidentNote.objects.create(
            incident=world.gmail_incident, body="Pager duty", at=utc(2026, 11, 20, 10, 5)
        )
    after = _snapshot(world)
    assert before.keys() == after.keys()
    for url in before:
        assert before[url][0] == 200, url
        assert before[url] == after[url], url
        for word in PRIVATE_WORDS:
            assert word.encode() not in after[url][1], (url, word)


@freeze_time(NOW)
def test_it_never_names_an_incident_of_a_staff_only_product_anonymously(
    world: World, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True):
        make_pages(world)
        hidden = make_incident(
            title="Corporate VPN concentrator down", product=world.vpn, start=utc(2026, 11, 25, 8)
        )
    snapshot = _snapshot(world)
    for url, (_status, content, _headers) in snapshot.items():
        assert b"Corporate VPN" not in content, url
    response = Client().get(f"/incidents/{hidden.public_id}/")
    assert response.status_code == 404 and b"Corporate VPN" not in response.content
