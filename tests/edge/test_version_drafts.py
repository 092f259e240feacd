"""The public-state stamp moves on writes the public can see, and never on a draft's own.

The stamp keys every cached page and the live version document: a bump from a draft
write would make every open status page refetch for nothing and announce a change
(Last-Modified, the live document) that no visitor can see.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from edge import version
from incidents import services
from incidents.models import ImpactWindow
from tests.builders import make_incident, make_product, utc

pytestmark = pytest.mark.django_db

T0 = utc(2026, 1, 5, 9)
HOUR = timedelta(hours=1)


def _stamp_after(write: Any, capture: Any) -> bool:
    """Did `write` move the stamp (once its transaction committed)?"""
    before = version.public_state_version()
    with capture(execute=True):
        write()
    return version.public_state_version() != before


def test_it_never_moves_on_a_drafts_writes(django_capture_on_commit_callbacks: Any) -> None:
    capture = django_capture_on_commit_callbacks
    gmail = make_product("Gmail")
    drafts = []

    assert not _stamp_after(
        lambda: drafts.append(make_incident(title="Draft", product=gmail, start=T0, is_public=False)), capture
    )
    draft = drafts[0]
    window = draft.windows.get()
    writes = [
        lambda: services.incident_post_update(incident=draft, status="identified", body="Found it."),
        lambda: services.impact_window_add(
            incident=draft, product=gmail, level=ImpactWindow.Level.PARTIAL_OUTAGE, started_at=T0
        ),
        lambda: services.impact_window_close(window=window, ended_at=T0 + HOUR),
        lambda: services.incident_edit(incident=draft, changes={"title": "Still a draft"}),
        lambda: services.report_save(incident=draft, summary="What happened."),
        lambda: services.action_item_create(incident=draft, title="Add a canary", is_public=True),
        lambda: services.incident_resolve(incident=draft, resolved_at=T0 + 2 * HOUR),
    ]
    for write in writes:
        assert not _stamp_after(write, capture)


def test_it_moves_when_a_draft_is_published_or_unpublished(django_capture_on_commit_callbacks: Any) -> None:
    capture = django_capture_on_commit_callbacks
    gmail = make_product("Gmail")
    draft = make_incident(title="Draft", product=gmail, start=T0, is_public=False)

    assert _stamp_after(lambda: services.incident_publish(incident=draft), capture)
    assert _stamp_after(
        lambda: services.incident_post_update(incident=draft, status="identified", body="Hm."), capture
    )
    assert _stamp_after(lambda: services.incident_edit(incident=draft, changes={"is_public": False}), capture)
    assert _stamp_after(lambda: services.incident_edit(incident=draft, changes={"is_public": True}), capture)


def test_it_does_not_move_when_a_draft_is_deleted(django_capture_on_commit_callbacks: Any) -> None:
    gmail = make_product("Gmail")
    draft = make_incident(title="Filed by mistake", product=gmail, start=T0, is_public=False)

    assert not _stamp_after(
        lambda: services.incident_delete(incident=draft), django_capture_on_commit_callbacks
    )
