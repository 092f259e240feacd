"""The invariants, checked at the end from the history, the receivers' copies and the
database (read directly, not through the fault proxy). Each returns its figures and the
violations found; the run fails if any has one."""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any

from bench.soak.load import History
from bench.soak.stack import Stack

Result = dict[str, Any]


def _norm(message_id: str) -> str:
    return message_id.strip().strip("<>")


def _hard_killed(message_ids: list[int]) -> set[int]:
    """Messages one of whose attempts died with its worker (the lease ran out) or lost the
    reply: the outcomes after which a second copy cannot be ruled out (ADR 0002)."""
    from outbox.models import DeliveryAttempt

    outcomes = [DeliveryAttempt.Outcome.LOST, DeliveryAttempt.Outcome.AMBIGUOUS]
    return set(
        DeliveryAttempt.objects.filter(message_id__in=message_ids, outcome__in=outcomes).values_list(
            "message_id", flat=True
        )
    )


def _mark(row: Mapping[str, Any]) -> str:
    """How the outbox shows a message that may have gone out twice."""
    if row["state"] == "review":
        return "in review"
    if row["ambiguous_count"]:
        return "sent, the lost reply recorded (ambiguous_count)"
    return "sent, after a worker died before the mark (unmarked)"


def delivered_once(channel: str, copies: Counter[str]) -> Result:
    """Every message of `channel` delivered exactly once, or (ambiguous only) at most
    twice; nothing delivered that the outbox does not know; nothing left unfinished."""
    from outbox.models import OutboundMessage

    rows = list(
        OutboundMessage.objects.filter(channel=channel).values(
            "id", "message_id", "state", "purpose", "ambiguous_count"
        )
    )
    known = {_norm(r["message_id"]) for r in rows}
    seen = Counter({_norm(k): v for k, v in copies.items()})
    ambiguous = _hard_killed([r["id"] for r in rows])
    figures: Counter[str] = Counter()
    violations: list[str] = []
    for r in rows:
        n = seen[_norm(r["message_id"])]
        figures[f"{r['purpose'] or 'other'} {r['state']}"] += 1
        if r["state"] in ("pending", "sending"):
            violations.append(f"message {r['id']} still {r['state']} after the drain")
        elif (r["state"] == "sent" and n == 1) or (r["state"] in ("failed", "cancelled") and n == 0):
            figures["exactly once (or never, when failed)"] += 1
        elif n == 2 and (r["state"] == "review" or r["id"] in ambiguous or r["ambiguous_count"]):
            figures[f"two copies after an ambiguous outcome: {_mark(r)}"] += 1
        elif r["state"] == "review" and n <= 2:
            figures["in review, one copy or none"] += 1
        else:
            violations.append(f"message {r['id']} ({r['purpose']}, {r['state']}) delivered {n} times")
    strangers = [k for k in seen if k not in known]
    if strangers:
        violations.append(f"{len(strangers)} deliveries the outbox does not know, e.g. {strangers[:3]}")
    figures["messages"] = len(rows)
    figures["copies received"] = sum(seen.values())
    return {"figures": dict(figures), "violations": violations}


def write_violation(write: Mapping[str, Any], applied: int) -> str:
    """What is wrong with one retried write applied `applied` times, or ""."""
    said = f"{write['op']} {write['key']} answered {write['code']} after {write['attempts']} tries"
    if applied > 1 or (write["code"] in (200, 201) and applied != 1):
        return f"{said}, applied {applied} times"
    if write["code"] == 409:  # still "in progress" after three minutes of retries
        return f"{said}: its key stayed in progress"
    return ""


def idempotent_writes(history: History) -> Result:
    """Each write (one Idempotency-Key, retried) applied once if answered 2xx, at most once
    otherwise: its timeline entry carries the write's unique text."""
    from incidents.models import IncidentUpdate

    writes = history.of("write")
    applied = Counter(
        IncidentUpdate.objects.filter(body__in=[w["token"] for w in writes]).values_list("body", flat=True)
    )
    violations = [v for w in writes if (v := write_violation(w, applied[w["token"]]))]
    retried = sum(1 for w in writes if w["attempts"] > 1)
    answered = Counter(str(w["code"]) for w in writes)
    return {
        "figures": {"writes": len(writes), "retried": retried, "answers": dict(answered)},
        "violations": violations,
    }


def windows_disjoint() -> Result:
    """Within an incident, the windows of one product and location never overlap (two
    incidents may: uptime merges them, DESIGN.md)."""
    from incidents.models import ImpactWindow

    by_place: dict[tuple[int, int, int | None], list[ImpactWindow]] = defaultdict(list)
    for w in ImpactWindow.objects.order_by("started_at", "id"):
        by_place[(w.incident_id, w.product_id, w.location_id)].append(w)
    violations = []
    for place, windows in by_place.items():
        for before, after in itertools.pairwise(windows):
            if before.ended_at is None or before.ended_at > after.started_at:
                violations.append(f"windows {before.pk} and {after.pk} overlap on {place}")
    return {
        "figures": {"windows": sum(map(len, by_place.values())), "places": len(by_place)},
        "violations": violations,
    }


def notices_valid() -> Result:
    """Credit notices: sent exactly when their email is; none left half-way."""
    from credits.models import CreditNotice

    figures: Counter[str] = Counter()
    violations = []
    for notice in CreditNotice.objects.select_related("message"):
        message = notice.message.state if notice.message else None
        figures[f"{notice.state} (email {message})"] += 1
        ok = (
            (notice.state == "sent" and message == "sent")
            or (notice.state in ("queued", "sent") and message == "review")
            or (notice.state == "computed" and message in (None, "cancelled"))
            or (notice.state in ("failed", "cancelled") and message in ("failed", "cancelled", None))
        )
        if not ok:
            violations.append(f"notice {notice.pk} is {notice.state} with its email {message}")
    return {"figures": dict(figures), "violations": violations}


def page_answers(history: History, *, target: float) -> Result:
    reads = [r for r in history.of("read") if r["path"] in ("/", "/api/v2/summary.json")]
    ok = [r for r in reads if r["status"] == 200]
    share = len(ok) / len(reads) if reads else 0.0
    others = Counter(f"{r['path']} {r['status']}" for r in history.of("read") if r["status"] != 200)
    figures = {
        "requests": len(reads),
        "200": len(ok),
        "200 marked stale": sum(1 for r in ok if r["stale"]),
        "share 200": round(share, 5),
        "non-200 on any public read": dict(others),
    }
    violations = [] if share >= target else [f"the page answered 200 to {share:.4%} (< {target:.1%})"]
    return {"figures": figures, "violations": violations}


def _shown(status: str) -> str | None:
    """How /api/v2/summary.json shows an incident in `status`: resolved ones are absent."""
    return None if status == "resolved" else status


def allowed_views(writes: list[dict[str, Any]], t0: float, t1: float, bound: float) -> set[str | None]:
    """What an unmarked answer to a request sent at t0 and answered at t1 may show of one
    incident (its `writes`): the state it had `bound` seconds before the request STARTED
    (the newest write acknowledged by then; absent before any), or the state of any write
    that may have landed since (started before the answer came, acknowledged after that
    moment, or never acknowledged). The answer is compared with the state when the
    request started, not when it ended: a write acknowledged while the request was in
    flight may or may not be in it."""
    horizon = t0 - bound
    done = sorted(
        (w for w in writes if w["code"] in (200, 201) and w["t1"] <= horizon), key=lambda w: w["t1"]
    )
    allowed: set[str | None] = {_shown(done[-1]["status"])} if done else {None}
    for w in writes:
        if w["t0"] < t1 and (w["t1"] > horizon or w["code"] not in (200, 201)):
            allowed.add(_shown(w["status"]))
    return allowed


def page_fresh(history: History, *, bound: float) -> Result:
    """No unmarked /api/v2/summary.json answer showed an incident in a state older than
    `bound` seconds before the request started (allowed_views)."""
    by_incident: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for w in history.of("write"):
        if w["incident"] and w["status"]:
            by_incident[w["incident"]].append(w)
    checked, violations, lags = 0, [], []
    for r in history.of("read"):
        if r.get("view") is None or r["stale"]:
            continue
        checked += 1
        for incident, writes in by_incident.items():
            shown = r["view"].get(incident)
            if shown in allowed_views(writes, r["t0"], r["t1"], bound):
                continue
            done = [w["t1"] for w in writes if w["code"] in (200, 201) and w["t1"] <= r["t0"] - bound]
            acked = max(done, default=r["t0"])
            lags.append(r["t0"] - acked)
            violations.append(
                f"at {r['t0']}s incident {incident} shown {shown}, its newer state acknowledged at {acked}s"
                f" (X-Cache {r.get('cache', '')})"
            )
    figures = {
        "unmarked answers checked": checked,
        "stale bound s": bound,
        "older than the bound": len(violations),
    }
    if lags:
        figures["worst lag s"] = round(max(lags), 1)
    return {"figures": figures, "violations": violations[:20]}


def workers_alive(stack: Stack, probe: dict[str, Any]) -> Result:
    """After the last heal: every process up, the probe's notifications delivered."""
    down = [name for name, proc in stack.procs.items() if not proc.alive()]
    violations = [f"{name} is not running" for name in down]
    violations += [f"after the last heal: {p}" for p in probe.get("problems", [])]
    return {"figures": {k: v for k, v in probe.items() if k != "problems"}, "violations": violations}
