"""A real Prometheus loaded with the Cloud Storage incident of 8-9 October 2026 as data
(backfilled with `promtool tsdb create-blocks-from openmetrics`)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.conftest import service_missing
from tests.waiting import wait_for

# The declared windows, in UTC (the demo declares them in US/Pacific, PDT = UTC-7).
FIRST = (datetime(2026, 10, 8, 11, 0, tzinfo=UTC), datetime(2026, 10, 8, 23, 30, tzinfo=UTC))
SECOND = (datetime(2026, 10, 9, 11, 5, tzinfo=UTC), datetime(2026, 10, 9, 16, 46, tzinfo=UTC))
DATA_START = datetime(2026, 10, 8, 8, 0, tzinfo=UTC)
DATA_END = datetime(2026, 10, 9, 20, 0, tzinfo=UTC)
EARLY = timedelta(minutes=20)
REQUESTS_PER_MINUTE = 1000
ERRORS_BAD, ERRORS_NORMAL = 300, 1  # 30 % during the incident, 0.1 % otherwise


def _bad(location: str, variant: str, minute: datetime) -> bool:
    """Whether the minute starting at `minute` is inside the measured impact."""
    if location == "us-central1":
        start = FIRST[0] - (EARLY if variant == "early" else timedelta())
        return start <= minute < FIRST[1]
    return SECOND[0] <= minute < SECOND[1]


def openmetrics() -> str:
    """Counters per location and variant, one sample a minute: the value at minute m
    counts every request up to m, so the requests of [m-1, m) show in the increase to m."""
    minutes = int((DATA_END - DATA_START) / timedelta(minutes=1))
    series = [(loc, var) for loc in ("us-central1", "us-central1-b") for var in ("exact", "early")]
    lines = ["# TYPE sli_requests counter"]
    for loc, var in series:
        for i in range(minutes + 1):
            at = DATA_START + timedelta(minutes=i)
            lines.append(
                f'sli_requests_total{{location="{loc}",variant="{var}"}} {i * REQUESTS_PER_MINUTE} {int(at.timestamp())}'
            )
    lines.append("# TYPE sli_errors counter")
    for loc, var in series:
        count = 0
        for i in range(minutes + 1):
            at = DATA_START + timedelta(minutes=i)
            lines.append(
                f'sli_errors_total{{location="{loc}",variant="{var}"}} {count} {int(at.timestamp())}'
            )
            count += ERRORS_BAD if _bad(loc, var, at) else ERRORS_NORMAL
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        service_missing(f"{name} is not installed (apt-get install prometheus)")
    assert found is not None
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ready(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/-/ready", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def run_prometheus(directory: Path, text: str | None = None) -> Iterator[str]:
    """Backfill the TSDB (with the Cloud Storage incident unless `text` gives other
    OpenMetrics), start Prometheus on a free loopback port, yield its base URL."""
    promtool, binary = _tool("promtool"), _tool("prometheus")
    data = directory / "data"
    source = directory / "cloud-storage.om"
    source.write_text(text if text is not None else openmetrics())
    done = subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (directory / "prometheus.yml").write_text("global: {scrape_interval: 1m}\n")
    port = free_port()
    log = (directory / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [
            binary,
            f"--config.file={directory / 'prometheus.yml'}",
            f"--storage.tsdb.path={data}",
            "--storage.tsdb.retention.time=10y",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _ready(base), timeout=60)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
