"""A public write whose stamp bump is lost after its commit (the web process killed in
between, or the database and the cache unreachable then) is bumped again by the sweep:
otherwise pages rendered before the write stay "fresh" until the next public write
(issue 37, the soak's silently stale answers)."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from edge import version
from edge.models import PendingBump, PublicStateStamp
from edge.tasks import sweep_public_state
from incidents import services as incidents

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_stamp() -> None:
    version.reset()
    cache.delete(version.VERSION_KEY)


def _declare(title: str = "Gmail down") -> Any:
    return incidents.incident_open(title=title, impact="major", windows=[], notify=False)


def _stamps() -> tuple[str | None, str | None]:
    row = PublicStateStamp.objects.filter(pk=1).values_list("version", flat=True).first()
    return cache.get(version.VERSION_KEY), row


def test_a_write_leaves_a_pending_bump_that_its_own_bump_clears(django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        _declare()
    assert PendingBump.objects.count() == 1
    for callback in callbacks:
        callback()
    assert PendingBump.objects.count() == 0
    cached, row = _stamps()
    assert cached is not None and cached == row
    assert version.sweep_pending_bumps(older_than=0) == 0
    assert _stamps() == (cached, row)  # nothing to re-apply: no extra bump


def test_one_pending_row_per_transaction(django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=False) as callbacks, transaction.atomic():
        version.public_state_changed()  # two public writes in one service's transaction
        version.public_state_changed()
    assert PendingBump.objects.count() == 1
    assert len(callbacks) == 1


def test_a_rolled_back_write_leaves_nothing_to_sweep() -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        _declare()
        raise RuntimeError("the service failed after its write")
    assert PendingBump.objects.count() == 0


def test_a_bump_lost_after_the_commit_is_reapplied_by_the_sweep(django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    version._bump()
    before = _stamps()
    # The process dies between the commit and its on-commit bump.
    with django_capture_on_commit_callbacks(execute=False):
        _declare()
    assert _stamps() == before

    assert version.sweep_pending_bumps(older_than=60) == 0  # too young: its bump may be under way
    assert sweep_public_state.apply().get() == 0  # the task, with the setting's age
    assert version.sweep_pending_bumps(older_than=0) == 1

    cached, row = _stamps()
    assert cached == row and cached is not None and cached > str(before[0])
    assert PendingBump.objects.count() == 0


def test_a_bump_the_cache_missed_stays_pending_until_the_cache_is_back(
    django_capture_on_commit_callbacks, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    version._bump()
    before, _row = _stamps()

    def down(*args: Any, **kwargs: Any) -> None:
        raise ConnectionError("Redis is down")

    with monkeypatch.context() as patched:
        patched.setattr(version.cache, "set", down)
        with django_capture_on_commit_callbacks(execute=True):
            _declare()
        # The row took the bump, the cache did not: other processes still read the old stamp.
        assert PendingBump.objects.count() == 1
        assert cache.get(version.VERSION_KEY) == before
        assert version.sweep_pending_bumps(older_than=0) == 0  # still down: kept
        assert PendingBump.objects.count() == 1

    assert version.sweep_pending_bumps(older_than=0) == 1
    cached, row = _stamps()
    assert cached == row and cached is not None and cached > str(before)
    assert PendingBump.objects.count() == 0


def test_the_sweep_is_on_the_beat_schedule() -> None:
    entry = settings.CELERY_BEAT_SCHEDULE["edge-public-state-sweep"]
    assert entry == {"task": "edge.tasks.sweep_public_state", "schedule": settings.PUBLIC_STATE_SWEEP_SECONDS}
