"""The delivery benches still run: each script, at a small size, against the real
PostgreSQL and Redis, with real Celery workers and its SMTP sink. A bench that rots (a
new NOT NULL column its COPY does not fill, a driver mode its bulk load cannot use) fails
here, not in front of the next person measuring."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.usefixtures("postgres")


def _database_url() -> str:
    db = settings.DATABASES["default"]
    user = db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    # Its own database: a bench drops and creates the one it is given.
    name = f"{db['NAME']}_bench"
    return f"postgres://{user}{password}@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{name}"


def _bench_redis(redis_url: str) -> str:
    # Its own Redis database too: a bench flushes it.
    parts = urlsplit(redis_url)
    return urlunsplit((parts.scheme, parts.netloc, "/11", "", ""))


def _run(script: str, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO_"))}
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{script} failed:\n{done.stdout}\n{done.stderr}"
    assert "WARNING" not in done.stdout, done.stdout
    return done.stdout


def test_the_credits_bench_runs_through_the_workers(redis_url: str) -> None:
    out = _run(
        "credits_bench.py",
        "--customers=300",
        "--deliver=200",
        "--workers=1",
        f"--database-url={_database_url()}",
        f"--redis-url={_bench_redis(redis_url)}",
    )
    assert re.search(r"approve\+queue: 200 notices in [\d.]+ s", out), out
    assert "the same rows by SQL alone" in out
    assert re.search(r"deliver \(celery workers \+ redis\): 200 notices sent", out), out
    assert re.search(r"ratio outbox / bare loop: [\d.]+", out), out


def test_the_fanout_bench_runs_through_the_workers(redis_url: str) -> None:
    out = _run(
        "fanout_bench.py",
        "--subscribers=500",
        "--expand=100",
        "--workers=1",
        f"--database-url={_database_url()}",
        f"--redis-url={_bench_redis(redis_url)}",
    )
    small = re.search(r"staff update, 10 subscribers: [\d.]+ ms, (\d+) queries", out)
    large = re.search(r"staff update, 500 subscribers: [\d.]+ ms, (\d+) queries", out)
    assert small and large, out
    # The staff request's query count does not grow with the list.
    assert small.group(1) == large.group(1)
    assert re.search(r"deliver: [\d,]+ emails in", out), out
