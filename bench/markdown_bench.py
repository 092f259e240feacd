"""Time to refuse or render each Markdown body of tests/incidents/markdown_corpus.py, in CPU
time, against 64 KB of plain prose rendered in the same run; `--calibrate` prints measured
against estimated cost, where the estimate's prices come from.

    .venv/bin/python bench/markdown_bench.py [--repeat 3] [--only headings,flat-list] [--calibrate]

Figures: bench/README.md, "Markdown"; design: docs/adr/0004-markdown-bounds.md.
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def setup_django() -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "statuspage.settings"
    os.environ.update(DEBUG="0", STATIC_MANIFEST="0", DATABASE_URL="sqlite:///:memory:")
    os.environ["SECRET_KEY"] = "bench-only"  # noqa: S105 - a throwaway process, never served
    os.environ.setdefault("ALLOWED_HOSTS", "testserver")
    os.environ.pop("REDIS_URL", None)
    import django

    django.setup()


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(text: str) -> tuple[str, float, float, float]:
    """(outcome, CPU seconds of this process + the child, of the child alone, wall seconds)
    of one write."""
    from incidents.markdown import render_markdown

    own, children, wall = time.process_time(), _children_cpu(), time.perf_counter()
    try:
        render_markdown(text)
        outcome = "rendered"
    except ValueError as exc:
        outcome = f"refused: {exc}"
    child = _children_cpu() - children
    cpu = time.process_time() - own + child
    return outcome, cpu, child, time.perf_counter() - wall


class _Cap(Exception):
    pass


def _raise_cap(_signum: int, _frame: Any) -> None:
    raise _Cap


def raw_render_cpu(text: str, cap: float = 2.0) -> float | None:
    """CPU seconds of Python-Markdown + nh3 on `text` in this process, None past `cap`."""
    from incidents.markdown import _convert

    signal.signal(signal.SIGPROF, _raise_cap)
    started = time.process_time()
    signal.setitimer(signal.ITIMER_PROF, cap)
    try:
        _convert(text)
    except (_Cap, RecursionError):
        return None
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="", help="comma-separated shape names")
    parser.add_argument("--calibrate", action="store_true")
    args = parser.parse_args()
    setup_django()

    from incidents import markdown
    from tests.incidents.markdown_corpus import ORDINARY, PATHOLOGICAL, PROSE

    markdown._warm_up()  # once per process, as in a web worker
    only = {name for name in args.only.split(",") if name}
    shapes = [("ordinary", name, body) for name, body in ORDINARY.items()]
    shapes += [("pathological", name, body) for name, body in PATHOLOGICAL.items()]
    shapes = [shape for shape in shapes if not only or shape[1] in only]

    if args.calibrate:
        print(f"{'shape':24} {'bytes':>6} {'measured ms':>12} {'estimate ms':>12}")
        for _, name, body in [("reference", "prose (reference)", PROSE), *shapes]:
            cpu = raw_render_cpu(body)
            shown = "> 2000" if cpu is None else f"{cpu * 1000:.1f}"
            print(
                f"{name:24} {len(body):6} {shown:>12} {markdown.render_cost(body).total_ms:12.1f}", flush=True
            )
        return

    reference = statistics.median(measure(PROSE)[1] for _ in range(args.repeat))
    print(
        f"reference: 64 KB of plain prose rendered in {reference * 1000:.1f} ms of CPU (median of {args.repeat})"
    )
    print(
        f"{'kind':12} {'shape':22} {'cpu ms':>7} {'child':>6} {'wall ms':>8} {'ratio':>6} {'est ms':>8}  outcome"
    )
    worst = 0.0
    for kind, name, body in shapes:
        runs = [measure(body) for _ in range(args.repeat)]
        cpu = statistics.median(run[1] for run in runs)
        child = statistics.median(run[2] for run in runs)
        wall = statistics.median(run[3] for run in runs)
        worst = max(worst, cpu)
        estimate = markdown.render_cost(body).total_ms
        outcome = runs[0][0]
        print(
            f"{kind:12} {name:22} {cpu * 1000:7.1f} {child * 1000:6.1f} {wall * 1000:8.1f} {cpu / reference:6.2f} "
            f"{estimate:8.0f}  "
            f"{outcome[:110]}",
            flush=True,
        )
    print(
        f"slowest refusal or render: {worst * 1000:.1f} ms of CPU ({worst / reference:.2f} x the reference)"
    )


if __name__ == "__main__":
    main()
