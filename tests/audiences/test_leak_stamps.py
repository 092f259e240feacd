"""No leaks through validators: a write only private readers see (an incident on a
staff-only product, its updates, a draft, an internal note, the private words of an
update) leaves every public address's bytes, ETag and Last-Modified as they were, without
pinning the public-state stamp; private pages still show the change on the next request."""

from __future__ import annotations

from django.test import Client
from freezegun import freeze_time

from audiences import services as audience_services
from edge import version
from incidents import services
from incidents.models import ImpactWindow, Incident
from incidents.selectors import incident_shown_publicly
from tests.audiences.conftest import World, make_pages
from tests.audiences.test_leaks import COMPARED_HEADERS, CSRF_TOKEN, EXTRA_URLS, _fresh
from tests.builders import make_incident, utc
from tests.public_urls import public_urls

NOW = "2026-12-01T12:00:00Z"


def _snapshot(world: World) -> dict[str, tuple[int, bytes, tuple[str | None, ...]]]:
    """Every address rendered again under the stamp the last write left (a bump by a
    private write shows as a difference)."""
    _fresh()
    client = Client()
    urls = public_urls(incident_id=world.storage_incident.public_id, product_slug="gmail") + EXTRA_URLS
    urls += [f"/incidents/{world.gmail_incident.public_id}/", "/products/vpn/"]
    out = {}
    for url in urls:
        response = client.get(url)
        content = CSRF_TOKEN.sub(b'name="csrfmiddlewaretoken"', response.content)
        out[url] = (response.status_code, content, tuple(response.get(h) for h in COMPARED_HEADERS))
    return out


def _private_writes(world: World, *, open_public: Incident) -> Incident:
    hidden = make_incident(
        title="Corporate VPN concentrator down", product=world.vpn, start=utc(2026, 11, 30, 8)
    )
    services.incident_post_update(
        incident=hidden, status=Incident.Status.IDENTIFIED, body="Shard seven is the cause."
    )
    services.incident_edit(incident=hidden, changes={"title": "Corporate VPN concentrator replaced"})
    draft = make_incident(
        title="Draft about Gmail", product=world.gmail, is_public=False, start=utc(2026, 11, 30, 9)
    )
    services.incident_post_update(incident=draft, status=Incident.Status.IDENTIFIED, body="Still a draft.")
    services.incident_levels_change(incident=open_public, levels=[], note="Pager duty")
    update = world.storage_incident.updates.order_by("display_at").first()
    assert update is not None
    audience_services.update_words_set(
        actor=None, update=update, audience_message="Dear Tailspin", internal_note="Shard seven"
    )
    return hidden


@freeze_time(NOW)
def test_private_writes_move_no_public_byte_etag_or_time(
    world: World, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True):
        pages = make_pages(world)
        open_public = make_incident(title="Gmail slow", product=world.gmail, start=utc(2026, 12, 1, 11))
    staff = Client()
    staff.force_login(_staff())
    assert b"concentrator" not in staff.get("/p/internal/").content
    before = _snapshot(world)
    stamp = version.public_state_version()
    with django_capture_on_commit_callbacks(execute=True):
        hidden = _private_writes(world, open_public=open_public)
    assert version.public_state_version() == stamp
    after = _snapshot(world)
    for url in before:
        assert before[url][0] == (404 if url == "/products/vpn/" else 200), url
        assert before[url] == after[url], url
        assert b"concentrator" not in after[url][1], url
    # The private page has its own stamp: it shows the change at once.
    assert pages.internal.slug == "internal"
    assert b"Corporate VPN concentrator replaced" in staff.get("/p/internal/").content
    assert not incident_shown_publicly(hidden)


@freeze_time(NOW)
def test_a_write_the_public_sees_still_moves_the_stamp(
    world: World, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    stamp = version.public_state_version()
    with django_capture_on_commit_callbacks(execute=True):
        services.incident_edit(incident=world.gmail_incident, changes={"title": "Gmail delays (corrected)"})
    assert version.public_state_version() != stamp


@freeze_time(NOW)
def test_hiding_an_incident_moves_the_stamp(world: World, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    """Shown before, not after: the public must see it vanish."""
    bare = make_incident(title="No windows yet", start=utc(2026, 11, 30, 8))
    assert incident_shown_publicly(bare)
    stamp = version.public_state_version()
    with django_capture_on_commit_callbacks(execute=True):
        services.impact_window_add(
            incident=bare,
            product=world.vpn,
            level=ImpactWindow.Level.MAJOR_OUTAGE,
            started_at=utc(2026, 11, 30, 8),
        )
    assert not incident_shown_publicly(bare)
    assert version.public_state_version() != stamp
    window = world.storage_incident.windows.get()
    stamp = version.public_state_version()
    with django_capture_on_commit_callbacks(execute=True):
        services.impact_window_edit(
            window=window,
            product=world.vpn,
            level=window.level,
            started_at=window.started_at,
            ended_at=window.ended_at,
        )
    assert not incident_shown_publicly(world.storage_incident)
    assert version.public_state_version() != stamp


def _staff():  # type: ignore[no-untyped-def]
    from django.contrib.auth.models import User

    return User.objects.create_user("staffer", password="x", is_staff=True)
