"""Faults at random, from the seeded RNG: each is injected, held a few seconds, then healed;
now and then two at once (a worker killed while the broker is paused). The timeline of
every injection and heal goes into the report."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable

from bench.soak.load import History
from bench.soak.stack import Stack

Action = Callable[[Stack], None]


def _kill(name: str) -> tuple[Action, Action]:
    return (lambda s: s.procs[name].kill9(), lambda s: s.procs[name].start())


def _pg_cut(stack: Stack) -> None:
    stack.proxy.refusing = True
    stack.proxy.drop_connections()


def _pg_slow(stack: Stack) -> None:
    stack.proxy.delay = 0.25


def _redis_kill_heal(stack: Stack) -> None:
    stack.redis.start()


def _set_smtp(mode: str) -> Action:
    return lambda s: s.smtp.set_mode(mode)


def _set_hook(mode: str) -> Action:
    def apply(stack: Stack) -> None:
        stack.webhooks.mode = mode

    return apply


def _pg_crash(stack: Stack) -> None:
    assert stack.private_pg is not None
    stack.private_pg.crash()


def _pg_start(stack: Stack) -> None:
    assert stack.private_pg is not None
    stack.private_pg.start()


# name -> (inject, heal)
FAULTS: dict[str, tuple[Action, Action]] = {
    "kill -9 web": _kill("web"),
    "kill -9 worker-email": _kill("worker-email"),
    "kill -9 worker-webhooks": _kill("worker-webhooks"),
    "kill -9 worker-periodic": _kill("worker-periodic"),
    "kill -9 beat": _kill("beat"),
    "redis paused": (lambda s: s.redis.pause(), lambda s: s.redis.resume()),
    "redis killed": (lambda s: s.redis.kill(), _redis_kill_heal),
    "postgres slow": (_pg_slow, lambda s: s.proxy.heal()),
    "postgres cut": (_pg_cut, lambda s: s.proxy.heal()),
    "postgres crash and restart": (_pg_crash, _pg_start),
    "smtp refuses": (_set_smtp("refuse"), _set_smtp("ok")),
    "smtp drops after DATA": (_set_smtp("drop"), _set_smtp("ok")),
    "smtp slow": (_set_smtp("slow"), _set_smtp("ok")),
    "webhook 500": (_set_hook("fail"), _set_hook("ok")),
    "webhook hangs": (_set_hook("hang"), _set_hook("ok")),
}
# Faults that touch the same thing never overlap (one proxy, one SMTP mode, ...).
GROUPS = {"postgres": "postgres", "smtp": "smtp", "webhook": "webhook", "redis": "redis"}


def _group(name: str) -> str:
    return next((g for prefix, g in GROUPS.items() if prefix in name), name)


def run_faults(
    stack: Stack, history: History, rng: random.Random, stop: threading.Event, until: float
) -> list[dict[str, object]]:
    """Inject faults until `until` seconds into the run; returns the timeline."""
    timeline: list[dict[str, object]] = []
    # A crash only of a private server, never of the machine's shared one.
    names = sorted(n for n in FAULTS if stack.private_pg is not None or "crash" not in n)
    while not stop.wait(rng.uniform(3, 10)) and history.now() < until:
        picked = [rng.choice(names)]
        if rng.random() < 0.25:
            other = rng.choice(names)
            if _group(other) != _group(picked[0]):
                picked.append(other)
        hold = round(rng.uniform(3, 12), 1)
        for name in picked:
            FAULTS[name][0](stack)
            timeline.append({"t": history.now(), "fault": name, "action": "inject", "hold": hold})
        stop.wait(hold)
        for name in picked:
            FAULTS[name][1](stack)
            timeline.append({"t": history.now(), "fault": name, "action": "heal"})
    return timeline
