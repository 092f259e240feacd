"""Bounded rendering (issue 11): a 64 KB pathological body renders in under 100 ms or is
refused with a clear message.

The corpus (tests/incidents/markdown_corpus.py) holds 64 KB shapes that took seconds to
minutes in Python-Markdown or raised RecursionError, and long ordinary posts. Time is
measured as CPU time of the whole call: this process (the checks and the cost estimate)
plus the forked child that renders (resource.getrusage(RUSAGE_CHILDREN) after it is
reaped). CPU time, because the machine running the tests is shared: wall time would
measure the other jobs. What a fork itself costs in CPU grows with the size of the
forking process, so it is measured in the same run (a child that does nothing, forked
from the same process) and taken off; FORK_ALLOWANCE covers what is left of it (the
pipe, a busy machine's cold caches).
"""

from __future__ import annotations

import multiprocessing
import resource
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from incidents import markdown
from incidents.markdown import RENDER_BUDGET_MS, render_cost, render_for_storage, render_markdown
from tests.incidents.markdown_corpus import ORDINARY, PATHOLOGICAL, PROSE

BUDGET = RENDER_BUDGET_MS / 1000
FORK_ALLOWANCE = 0.05

# Words a refusal must contain to say what is wrong (and each one says "how much").
CLEAR = ("Too long", "nested", "brackets", "definitions", "too many", "Too many", "too long to render")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _noop() -> None:
    pass


def _fork_cost() -> tuple[float, float]:
    """What forking this process and reaping a child that does nothing costs in CPU, here
    and in the child (the lowest of three): the reference the render is measured against.

    It grows with the size of the forking process (page tables copied, pages the child
    touches copied, its address space torn down at exit): a few ms for a small process,
    over 100 ms for a test process that has run a thousand tests (seen in CI). A web
    worker pays its own share, whatever the text; the render's budget is for rendering.
    """
    ctx = multiprocessing.get_context("fork")
    best = (float("inf"), float("inf"))
    for _ in range(3):
        own, children = time.process_time(), _children_cpu()
        process = ctx.Process(target=_noop, daemon=True)
        process.start()
        process.join()
        cost = (time.process_time() - own, _children_cpu() - children)
        best = min(best, cost, key=sum)
    return best


def _cpu_of(call: Callable[[], Any]) -> tuple[float, float, Any]:
    """(CPU of this process, CPU of the children reaped meanwhile, result or exception),
    less what a fork of this process costs when a child ran."""
    markdown._warm_up()  # once per process, as in a web worker: not the call's cost
    fork_own, fork_child = _fork_cost()
    own, children = time.process_time(), _children_cpu()
    try:
        outcome: Any = call()
    except ValueError as exc:
        outcome = exc
    own, child = time.process_time() - own, _children_cpu() - children
    if child > 0:
        own, child = max(own - fork_own, 0.0), max(child - fork_child, 0.0)
    return own, child, outcome


@pytest.mark.parametrize("body", list(PATHOLOGICAL.values()), ids=list(PATHOLOGICAL))
def test_it_renders_64kb_pathological_markdown_in_100ms_or_refuses_it(body: str) -> None:
    own, child, outcome = _cpu_of(lambda: render_markdown(body))
    if isinstance(outcome, ValueError):
        message = str(outcome)
        assert any(word in message for word in CLEAR), message
        if child == 0:
            # Refused by the checks and the estimate, before any rendering.
            assert own < BUDGET, (own, message)
        else:
            # Refused by the child's CPU deadline: the estimate let it through.
            assert child < 0.2 + FORK_ALLOWANCE and own < BUDGET + FORK_ALLOWANCE, (own, child, message)
    else:
        assert isinstance(outcome, str)
        assert child < BUDGET + FORK_ALLOWANCE, child  # the render itself
        assert own + child < BUDGET + 2 * FORK_ALLOWANCE, (own, child)


@pytest.mark.parametrize("body", list(ORDINARY.values()), ids=list(ORDINARY))
def test_it_renders_long_ordinary_posts(body: str) -> None:
    assert render_cost(body).problem() is None
    html = render_markdown(body)
    assert html.count("<") > 100  # rendered, not escaped


def test_it_renders_64kb_of_plain_prose() -> None:
    _own, child, html = _cpu_of(lambda: render_markdown(PROSE))
    assert isinstance(html, str) and html.count("<p>") > 100
    assert child < BUDGET, child


@pytest.mark.parametrize(
    ("shape", "says"),
    [
        ("headings", "too many headings, rules or fences with no blank line between them (16,384)"),
        ("flat-list", "too many list items (16,384; at most about"),
        ("tall-table", "too many table cells"),
        ("inline-links", "too many links"),
        ("emphasis", "too many emphasis markers"),
        ("backticks", "too many code spans"),
        ("paragraphs", "too many blocks"),
        ("footnotes", "Too many footnote references"),
        ("definition-lists", "Too many definition-list lines"),
        ("open-brackets", "brackets or parentheses open at once"),
        ("deep-list", "nested more than 16 levels"),
        ("over-64KB", "Too long: 65,537 bytes, at most 65,536 (64 KB)."),
    ],
)
def test_it_names_the_cause_of_a_refusal(shape: str, says: str) -> None:
    with pytest.raises(ValueError) as exc:
        render_markdown(PATHOLOGICAL[shape])
    assert says in str(exc.value), str(exc.value)


def test_it_turns_a_refusal_into_a_field_error() -> None:
    with pytest.raises(ValidationError) as exc:
        render_for_storage(PATHOLOGICAL["headings"], field="body")
    assert "too many headings" in exc.value.message_dict["body"][0]


def test_the_childs_cpu_deadline_refuses_what_the_estimate_misses(monkeypatch: pytest.MonkeyPatch) -> None:
    # An estimate that lets everything through: only the child's deadline is left.
    monkeypatch.setattr(markdown, "RENDER_BUDGET_MS", 1e9)
    _own, child, outcome = _cpu_of(lambda: render_markdown(PATHOLOGICAL["headings"]))
    assert isinstance(outcome, ValueError)
    assert str(outcome) == (
        "This text takes too long to render (over 200 ms); simplify its formatting or split it."
    )
    # Stopped at its budget, not before (the message says it was the CPU deadline, not the
    # wall-clock backstop). rusage and the timer both sample in clock ticks, and under heavy
    # load they disagree by a few ticks (0.180 was seen at load 10): hence 0.15.
    assert 0.15 <= child < 0.2 + FORK_ALLOWANCE, child


def _spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


@pytest.fixture
def loaded_machine() -> Iterator[None]:
    """Every core busy (plus some), as on a shared machine under load."""
    ctx = multiprocessing.get_context("fork")
    hogs = [
        ctx.Process(target=_spin, args=(5.0,), daemon=True)
        for _ in range(2 * (multiprocessing.cpu_count() or 1))
    ]
    for hog in hogs:
        hog.start()
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.join()


def test_load_on_the_machine_does_not_refuse_an_ordinary_post(loaded_machine: None, settings: Any) -> None:
    # The deadline is CPU time, not wall time: with every core busy, the render of a long
    # post may take several times its CPU time in wall time, and still succeeds.
    settings.MARKDOWN_RENDER_CPU_SECONDS = 0.2
    for body in ORDINARY.values():
        assert render_markdown(body)
