"""Each destination's circuit breaker, shared by every process through its `Destination` row.

See docs/adr/0002-outbox.md.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from outbox import conf
from outbox.models import CircuitState, Destination

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Gate:
    allowed: bool
    probe: bool = False
    clean: bool = False  # closed with no failures: a success has nothing to reset


def breaker_gate(*, destination: str) -> Gate:
    """May we connect to `destination` now? Shared by every process through the database."""
    now = timezone.now()
    row = (
        Destination.objects.filter(key=destination)
        .values("state", "failures", "open_until", "probe_until")
        .first()
    )
    if row is None or row["state"] == CircuitState.CLOSED:
        return Gate(allowed=True, clean=row is None or row["failures"] == 0)
    if row["state"] == CircuitState.OPEN and row["open_until"] and row["open_until"] > now:
        return Gate(allowed=False)
    if row["state"] == CircuitState.HALF_OPEN and row["probe_until"] and row["probe_until"] > now:
        return Gate(allowed=False)
    # The cool-down is over (or the last probe's lease ran out): one process, the one
    # whose conditional UPDATE wins, sends one message as the probe.
    won = (
        Destination.objects.filter(key=destination)
        .filter(
            Q(state=CircuitState.OPEN, open_until__lte=now)
            | Q(state=CircuitState.HALF_OPEN, probe_until__lte=now)
        )
        .update(state=CircuitState.HALF_OPEN, probe_until=now + timedelta(seconds=conf.lease_seconds()))
    )
    return Gate(allowed=won == 1, probe=won == 1)


def breaker_failure(*, destination: str, error: str, probe: bool) -> None:
    now = timezone.now()
    with transaction.atomic():
        row, _ = Destination.objects.select_for_update().get_or_create(key=destination)
        row.failures += 1
        row.last_error = error[:2000]
        if probe or row.state == CircuitState.HALF_OPEN or row.failures >= conf.breaker_threshold():
            row.opened_count += 1
            # Grows while the outage lasts; jittered so that processes do not probe in step.
            ceiling = min(conf.breaker_max_cooldown(), conf.breaker_cooldown() * 2 ** (row.opened_count - 1))
            row.state = CircuitState.OPEN
            row.open_until = now + timedelta(seconds=random.uniform(0.8, 1.0) * ceiling)
            row.probe_until = None
            logger.warning(
                "outbox: %s unavailable, breaker open until %s: %s", destination, row.open_until, error
            )
        row.save()


def breaker_success(*, destination: str, gate: Gate) -> None:
    if gate.clean:
        return
    Destination.objects.filter(key=destination).exclude(state=CircuitState.CLOSED, failures=0).update(
        state=CircuitState.CLOSED, failures=0, opened_count=0, open_until=None, probe_until=None
    )


def breaker_release_probe(*, destination: str) -> None:
    # The probe found nothing to send: let the next kick probe at once.
    Destination.objects.filter(key=destination, state=CircuitState.HALF_OPEN).update(
        state=CircuitState.OPEN, open_until=timezone.now(), probe_until=None
    )
