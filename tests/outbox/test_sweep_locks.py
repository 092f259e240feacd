"""The sweep passes over rows another session holds (soak, seed 37: one row kept locked
made every sweep wait out its statement timeout, so nothing was re-queued for any
destination). Real PostgreSQL: the lock is held on a second connection in a thread."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from outbox import services
from outbox.models import AttemptOutcome, DeliveryAttempt, MessageState, OutboundMessage

pytestmark = pytest.mark.django_db(transaction=True)


def _enqueue(key: str) -> OutboundMessage:
    return services.email_enqueue(
        key=key, to=["ops@example.com"], subject="Soak", text="Body", purpose="", ref=f"ref:{key}"
    )


def _rows() -> tuple[OutboundMessage, OutboundMessage]:
    """A row whose worker died with no attempts left, and one sent by a worker that died
    before recording it (its handlers still pending)."""
    past = timezone.now() - timedelta(minutes=10)
    exhausted, orphaned = _enqueue("exhausted"), _enqueue("orphaned")
    # In-process tests deliver at once: start from the state the dead workers left.
    DeliveryAttempt.objects.all().delete()
    OutboundMessage.objects.filter(pk=exhausted.pk).update(
        state=MessageState.SENDING, attempts=8, max_attempts=8, lease_expires_at=past
    )
    OutboundMessage.objects.filter(pk=orphaned.pk).update(
        state=MessageState.SENT, handlers_pending=True, updated_at=past
    )
    DeliveryAttempt.objects.create(
        message=orphaned, number=1, started_at=past, outcome=AttemptOutcome.STARTED
    )
    return exhausted, orphaned


class Holder(threading.Thread):
    """Another session (a worker recording an outcome, a second sweeper) that locks the
    rows and keeps them until told to let go."""

    def __init__(self, pks: list[int]) -> None:
        super().__init__(daemon=True)
        self.pks = pks
        self.locked = threading.Event()
        self.release = threading.Event()

    def run(self) -> None:
        try:
            with transaction.atomic():
                list(OutboundMessage.objects.select_for_update().filter(pk__in=self.pks))
                self.locked.set()
                self.release.wait(30)
        finally:
            connection.close()


def _sweep_in_thread(seconds: float) -> tuple[bool, list[BaseException]]:
    errors: list[BaseException] = []

    def sweep() -> None:
        try:
            services.outbox_sweep()
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            errors.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=sweep, daemon=True)
    thread.start()
    thread.join(seconds)
    return not thread.is_alive(), errors


def test_the_sweep_skips_rows_another_session_holds_and_takes_them_later(postgres: None) -> None:
    exhausted, orphaned = _rows()
    holder = Holder([exhausted.pk, orphaned.pk])
    holder.start()
    assert holder.locked.wait(10)
    try:
        started = time.monotonic()
        finished, errors = _sweep_in_thread(4.0)
        took = time.monotonic() - started
        # Without SKIP LOCKED the sweep waits on the first row until its statement
        # timeout (5 s in tests) and then fails.
        assert finished and not errors, (finished, errors)
        assert took < 3, took
        states = dict(OutboundMessage.objects.values_list("pk", "state"))
        assert states[exhausted.pk] == MessageState.SENDING
        assert OutboundMessage.objects.get(pk=orphaned.pk).handlers_pending
    finally:
        holder.release.set()
        holder.join(10)

    services.outbox_sweep()

    assert OutboundMessage.objects.get(pk=exhausted.pk).state == MessageState.FAILED
    orphan = OutboundMessage.objects.get(pk=orphaned.pk)
    assert not orphan.handlers_pending
    assert DeliveryAttempt.objects.get(message=orphan).outcome == AttemptOutcome.SENT


def test_two_sweepers_at_once_take_each_row_once(postgres: None) -> None:
    exhausted, orphaned = _rows()
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def sweeper() -> None:
        try:
            barrier.wait(10)
            services.outbox_sweep()
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=sweeper, daemon=True) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert not errors and not any(t.is_alive() for t in threads), errors
    assert OutboundMessage.objects.get(pk=exhausted.pk).state == MessageState.FAILED
    assert list(DeliveryAttempt.objects.filter(message=orphaned).values_list("outcome", flat=True)) == [
        AttemptOutcome.SENT
    ]
