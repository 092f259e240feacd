"""The chaos soak's page invariants (bench/soak/checks.py) catch what they are for: a
silently stale summary and a page that answered errors. The soak itself runs in CI
(.ci/run); these histories are made up, so the checks are shown able to fail."""

from __future__ import annotations

from typing import Any

from bench.soak import checks
from bench.soak.load import History


def _history(*ops: dict[str, Any]) -> History:
    history = History()
    for op in ops:
        history.add(op)
    return history


def _write(incident: str, status: str, t0: float, t1: float) -> dict[str, Any]:
    return {"kind": "write", "op": "update", "incident": incident, "status": status, "t0": t0, "t1": t1,
            "code": 201, "key": "k", "token": f"{status} {incident}", "attempts": 1}  # fmt: skip


def _summary(t0: float, view: dict[str, str], *, stale: bool = False) -> dict[str, Any]:
    return {"kind": "read", "path": "/api/v2/summary.json", "t0": t0, "t1": t0 + 0.1, "status": 200,
            "stale": stale, "view": view}  # fmt: skip


def test_an_unmarked_summary_older_than_the_bound_is_a_violation() -> None:
    history = _history(
        _write("A", "investigating", 0, 1),
        _write("A", "resolved", 5, 6),
        _summary(30, {"A": "investigating"}),  # resolved 24 s before, still shown open
        _summary(31, {"A": "investigating"}, stale=True),  # marked: allowed
        _summary(10, {"A": "investigating"}),  # within the bound
        _summary(40, {}),
    )
    result = checks.page_fresh(history, bound=15)
    assert result["figures"]["unmarked answers checked"] == 3
    assert len(result["violations"]) == 1
    assert "at 30" in result["violations"][0]


def test_an_incident_missing_from_the_summary_is_stale_unless_being_resolved() -> None:
    missing = _history(_write("B", "investigating", 0, 1), _summary(20, {}))
    assert checks.page_fresh(missing, bound=15)["violations"]
    resolving = _history(
        _write("B", "investigating", 0, 1), _write("B", "resolved", 19, 25), _summary(20, {})
    )
    assert not checks.page_fresh(resolving, bound=15)["violations"]


def test_a_write_applied_twice_or_left_in_progress_is_a_violation() -> None:
    answered = _write("C", "investigating", 0, 1)
    assert checks.write_violation(answered, 1) == ""
    assert "applied 2 times" in checks.write_violation(answered, 2)
    assert "applied 0 times" in checks.write_violation(answered, 0)
    # Defect 2 of the soak (bench/README.md): a claim that outlived its request.
    stuck = {**answered, "code": 409, "attempts": 60}
    assert "stayed in progress" in checks.write_violation(stuck, 0)
    assert checks.write_violation({**answered, "code": 0}, 0) == ""


def test_the_page_must_answer_200_to_999_in_1000() -> None:
    reads = [
        {"kind": "read", "path": "/", "t0": 0, "t1": 0, "status": 200, "stale": n % 2 == 0}
        for n in range(999)
    ]
    good = _history(*reads, {"kind": "read", "path": "/", "t0": 0, "t1": 0, "status": 502, "stale": False})
    assert not checks.page_answers(good, target=0.999)["violations"]
    bad = _history(
        *reads[:998], *[{"kind": "read", "path": "/", "t0": 0, "t1": 0, "status": 0, "stale": False}] * 2
    )
    assert checks.page_answers(bad, target=0.999)["violations"]
