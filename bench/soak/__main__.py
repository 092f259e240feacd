"""A chaos soak: the production topology on this machine under steady load, with seeded
random faults, then the invariants (issue 37, RELIABILITY.md R30, docs/adr/0033-soak.md).

    .venv/bin/python -m bench.soak [--minutes 30] [--seed 1] [--pg postgres://...]

Exits non-zero if any invariant fails. Report and figures: bench/README.md, "Chaos soak".
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.soak import alerts, checks  # noqa: E402 - after the path is set
from bench.soak.chaos import run_faults  # noqa: E402
from bench.soak.load import History, Staff, credits_script, reader, request  # noqa: E402
from bench.soak.stack import Stack  # noqa: E402
from bench.soak.world import World, build_world, recreate_database, setup_django  # noqa: E402

# A task that ran on a connection the database had dropped (statuspage/celery.py).
DEAD_CONNECTION = "InterfaceError('connection already closed')"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--pg",
        default="private",
        help="'private' (a PostgreSQL of its own, which faults may crash) or postgres://user@host:port/db",
    )
    parser.add_argument("--readers", type=int, default=4, help="reader threads")
    parser.add_argument("--rate", type=float, default=8.0, help="public reads per second, all readers")
    parser.add_argument("--subscribers", type=int, default=10)
    parser.add_argument("--customers", type=int, default=20)
    parser.add_argument("--stale-bound", type=float, default=15.0, help="seconds an unmarked answer may lag")
    parser.add_argument(
        "--drain", type=float, default=240.0, help="seconds to finish delivering after the heal"
    )
    parser.add_argument("--report", type=Path, help="JSON report (default var/soak/report-<seed>.json)")
    args = parser.parse_args()
    for tool in ("nginx", "redis-server", "psql"):
        if not shutil.which(tool) and not Path("/usr/sbin", tool).exists():
            sys.exit(f"{tool} is required")
    return args


def warm(stack: Stack) -> None:
    """The first renders (which write the snapshots nginx falls back to)."""
    deadline = time.monotonic() + 120
    for path in ("/", "/api/v2/summary.json"):
        while request(stack.base + path, timeout=30)[0] != 200:
            if time.monotonic() > deadline:
                sys.exit(f"{path} never answered 200")
            time.sleep(0.5)


def drive(stack: Stack, world: World, args: argparse.Namespace, history: History,
          source: alerts.AlertSource) -> list[dict[str, object]]:  # fmt: skip
    """The load and the faults for --minutes; returns the fault timeline."""
    rng = random.Random(args.seed)
    stop = threading.Event()
    duration = args.minutes * 60
    threads = [
        threading.Thread(
            target=reader, args=(stack, history, random.Random(rng.random()), stop, args.readers / args.rate)
        )
        for _ in range(args.readers)
    ]
    for n in range(2):
        staff = Staff(stack, world, history, random.Random(rng.random()), world.products[n::2])
        threads.append(threading.Thread(target=staff.script, args=(stop,)))
    threads.append(threading.Thread(target=credits_script, args=(stack, history, stop, args.minutes)))
    # Its own generator, so the fault schedule of a seed is what it was before alerts.
    alerts_rng = random.Random(args.seed * 7919 + 1)
    threads.append(threading.Thread(target=alerts.alerts_script, args=(source, history, alerts_rng, stop)))
    for thread in threads:
        thread.start()
    timeline: list[dict[str, object]] = []
    # Faults stop a little before the end, so the last writes can land healed.
    settle = min(30.0, duration / 6)
    faults = threading.Thread(
        target=lambda: timeline.extend(run_faults(stack, history, rng, stop, duration - settle))
    )
    faults.start()
    stop.wait(max(0.0, duration - history.now()))
    stop.set()
    for thread in [*threads, faults]:
        thread.join(timeout=240)
    return timeline


def drain(stack: Stack, world: World, history: History, seconds: float) -> dict[str, Any]:
    """Heal everything, write once more (a probe incident), wait until the outbox is empty."""
    from django.db import connections

    from outbox.models import OutboundMessage

    stack.heal_all()
    connections.close_all()  # the driver's own connection may predate a database crash
    stack.wait_ready()
    healed = history.now()
    logs = {name: proc.log_path for name, proc in stack.procs.items() if name.startswith("worker")}
    sizes = {name: path.stat().st_size for name, path in logs.items()}
    probe = Staff(stack, world, history, random.Random(0), world.products[:1])
    incident = probe.write(
        "create", "/api/v1/incidents/", {"title": "Soak probe", "body": "probe open"}, status="investigating"
    )
    if incident:
        probe.write(
            "resolve",
            f"/api/v1/incidents/{incident}/resolve/",
            {"body": "probe resolved"},
            incident,
            "resolved",
        )
    problems = [] if incident else ["the probe incident could not be declared"]
    deadline = time.monotonic() + seconds
    unfinished = OutboundMessage.objects.filter(state__in=("pending", "sending"))
    while unfinished.exists() and time.monotonic() < deadline:
        time.sleep(1)
    left = unfinished.count()
    if left:
        problems.append(f"{left} messages still undelivered {seconds:.0f} s after the heal")
    drained = round(history.now() - healed, 1)
    # Long enough for several sweeps (OUTBOX_SWEEP_INTERVAL=5) on every worker.
    time.sleep(max(2.0, 20 - drained))
    since_heal = {name: _read_from(path, sizes[name]) for name, path in logs.items()}
    ran = since_heal["worker-periodic"].count("succeeded in")
    if not ran:
        problems.append("the periodic worker ran no task after the heal")
    for name, text in since_heal.items():
        if dead := text.count(DEAD_CONNECTION):
            problems.append(f"{name}: {dead} tasks failed on a dead database connection after the heal")
    whole_run = {name: path.read_text(errors="replace").count(DEAD_CONNECTION) for name, path in logs.items()}
    return {"drained in s": drained, "periodic tasks after the heal": ran,
            "tasks failed on a dead connection (whole run)": whole_run, "problems": problems}  # fmt: skip


def _read_from(path: Path, offset: int) -> str:
    with path.open("rb") as log:
        log.seek(offset)
        return log.read().decode(errors="replace")


def report(args: argparse.Namespace, stack: Stack, history: History, timeline: list[dict[str, object]],
           probe: dict[str, Any], integration: int) -> dict[str, Any]:  # fmt: skip
    results = {
        "credit emails and notifications (email)": checks.delivered_once("email", stack.smtp.copies),
        "webhook notifications": checks.delivered_once("webhook", stack.webhooks.copies),
        "idempotent API writes": checks.idempotent_writes(history),
        "impact windows disjoint": checks.windows_disjoint(),
        "credit notices valid": checks.notices_valid(),
        "page answers 200": checks.page_answers(history, target=0.999),
        "page never silently stale": checks.page_fresh(history, bound=args.stale_bound),
        "nothing stuck after the last heal": checks.workers_alive(stack, probe),
        "alerts from Alertmanager": alerts.intake_check(history, integration),
    }
    return {
        "seed": args.seed,
        "minutes": args.minutes,
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "load": {k: len(history.of(k)) for k in ("read", "write", "credits", "alert")},
        "credits runs": history.of("credits"),
        "restarts": {name: proc.starts - 1 for name, proc in stack.procs.items()},
        "faults": timeline,
        "invariants": results,
        "passed": not any(r["violations"] for r in results.values()),
    }


def print_report(rep: dict[str, Any]) -> None:
    print(f"\nchaos soak, seed {rep['seed']}, {rep['minutes']} min: load {rep['load']}")
    injected = [
        f"{f['t']:>7.1f}s {f['fault']} ({f['hold']} s)" for f in rep["faults"] if f["action"] == "inject"
    ]
    print(f"{len(injected)} faults:\n  " + "\n  ".join(injected))
    print(f"restarts: {rep['restarts']}")
    runs = [
        f"{c['op']} {c['period']}: exit {c['code']} after {c['attempts']} tries" for c in rep["credits runs"]
    ]
    print("credit runs: " + "; ".join(runs))
    for name, result in rep["invariants"].items():
        mark = "FAIL" if result["violations"] else "ok"
        print(f"[{mark:4}] {name}: {json.dumps(result['figures'])}")
        for violation in result["violations"][:10]:
            print(f"         - {violation}")
    print("PASSED" if rep["passed"] else "FAILED")


def main() -> None:
    args = parse_args()
    work = ROOT / "var" / "soak" / str(args.seed)
    shutil.rmtree(work, ignore_errors=True)
    stack = Stack(args.pg, work)
    source = None
    try:
        recreate_database(stack)
        setup_django(stack)
        world = build_world(stack, subscribers=args.subscribers, customers=args.customers)
        integration, token = alerts.integration_create()
        stack.start()
        warm(stack)
        source = alerts.AlertSource(work, f"{stack.base}/api/v1/integrations/{integration}/alerts/", token)
        history = History()
        print(
            f"soak: seed {args.seed}, {args.minutes} min, nginx on {stack.base}, logs in {work}/logs",
            flush=True,
        )
        timeline = drive(stack, world, args, history, source)
        probe = drain(stack, world, history, args.drain)
        rep = report(args, stack, history, timeline, probe, integration)
    finally:
        if source is not None:
            source.close()
        stack.close()
    path = args.report or ROOT / "var" / "soak" / f"report-{args.seed}.json"
    path.write_text(json.dumps(rep, indent=1, default=str))
    path.with_name(f"history-{args.seed}.json").write_text(json.dumps(history.ops, default=str))
    print_report(rep)
    print(f"report: {path}")
    sys.exit(0 if rep["passed"] else 1)


if __name__ == "__main__":
    main()
