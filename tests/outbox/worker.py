"""A real `celery -A statuspage worker` subprocess (with embedded beat) for integration tests.

The worker is a separate process, so it must see the same database as the test: these
tests run on PostgreSQL with committed (transactional) test data, and the worker is
pointed at the test database through DATABASE_URL. `Worker.run_task` and `Worker.settle`
give the positive signal that tests wait for before asserting that nothing more happened.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from celery import Celery
from django.conf import settings

from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
CELERY = str(Path(sys.executable).with_name("celery"))

# Small timings so the faults play out in seconds. The retry cap stays under half the
# visibility timeout, as in production.
FAST = {
    "OUTBOX_LEASE_SECONDS": "3",
    "OUTBOX_RETRY_BASE_DELAY": "0.2",
    "OUTBOX_RETRY_MAX_DELAY": "1.0",
    "OUTBOX_SWEEP_GRACE_SECONDS": "1",
    "OUTBOX_SWEEP_INTERVAL": "1",
    "OUTBOX_MAX_ATTEMPTS": "6",
    "OUTBOX_BREAKER_COOLDOWN": "0.5",
    "OUTBOX_BREAKER_MAX_COOLDOWN": "1.5",
    "OUTBOX_KICK_LOST_SECONDS": "3",
    "CELERY_VISIBILITY_TIMEOUT": "30",
    "EMAIL_TIMEOUT": "3",
}


# Every queue of settings.CELERY_TASK_ROUTES: one worker for all unless a test splits them.
ALL_QUEUES = "email,webhooks,periodic"


def database_url() -> str:
    db = settings.DATABASES["default"]
    if db["ENGINE"] != "django.db.backends.postgresql":
        raise RuntimeError("a worker subprocess needs PostgreSQL")
    user = db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return (
        f"postgres://{user}{password}@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"
    )


def worker_env(*, redis_url: str, smtp_port: int, **overrides: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO_"))}
    env.update(
        {
            "DATABASE_URL": database_url(),
            "REDIS_URL": redis_url,
            "CELERY_TASK_ALWAYS_EAGER": "0",
            "EMAIL_HOST": "127.0.0.1",
            "EMAIL_PORT": str(smtp_port),
            "SECRET_KEY": "test-only-secret-key",
            "DEBUG": "0",
            "ALLOWED_HOSTS": "localhost",
            "SITE_URL": settings.SITE_URL,
            "EMAIL_MESSAGE_ID_DOMAIN": settings.EMAIL_MESSAGE_ID_DOMAIN,
            "DB_CONN_MAX_AGE": "0",
            "LOG_LEVEL": "INFO",
            **FAST,
        }
    )
    env.update(overrides)
    return env


class Worker:
    def __init__(
        self,
        env: dict[str, str],
        *,
        concurrency: int = 2,
        beat: bool = True,
        queues: str = ALL_QUEUES,
        name: str = "outbox-test",
    ) -> None:
        self.env = env
        self.concurrency = concurrency
        self.beat = beat
        self.queues = queues
        self.name = name
        self.dir = Path(tempfile.mkdtemp(prefix="outbox-worker-"))
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def log_path(self) -> Path:
        return self.dir / f"worker-{self.starts}.log"

    def start(self, timeout: float = 30.0) -> Worker:
        self.starts += 1
        cmd = [
            CELERY,
            "-A",
            "statuspage",
            "worker",
            "--loglevel=INFO",
            f"--concurrency={self.concurrency}",
            "--pool=prefork",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            f"--hostname={self.name}-{os.getpid()}-{self.starts}@%h",
            f"--queues={self.queues}",
        ]
        if self.beat:
            cmd += ["--beat", f"--schedule={self.dir / 'beat-schedule'}"]
        log = open(self.log_path, "wb")  # noqa: SIM115 - the child owns it until it exits
        # Its own process group, so a SIGKILL takes the whole worker (parent, pool, beat).
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        proc = self.proc

        def ready() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"celery worker exited early:\n{self.log()}")
            return b" ready." in self.log_path.read_bytes()

        try:
            wait_for(ready, timeout=timeout, message=self.log)
        except AssertionError:
            self.kill()
            raise
        return self

    def run_task(self, name: str, *, queue: str, args: tuple[Any, ...] = (), timeout: float = 30.0) -> None:
        """Send task `name` to `queue` and wait until this worker logs that it succeeded.

        Published through a client of the worker's own broker (the test process's app may
        point elsewhere, e.g. at a hung Redis)."""
        task_id = f"marker-{uuid.uuid4()}"
        with Celery(broker=self.env["REDIS_URL"], set_as_current=False) as client:
            client.send_task(name, args=args, queue=queue, task_id=task_id)
        done = f"[{task_id}] succeeded".encode()
        wait_for(lambda: done in self.log_path.read_bytes(), timeout=timeout, message=self.log)

    def settle(self, *periodic: str) -> None:
        """The positive signal before asserting that nothing more is sent: a sweep (and the
        given periodic tasks) run now, then an email delivery task queued behind whatever
        they queued. A wrongly requeued row would then be sending or sent twice."""
        for name in ("outbox.tasks.sweep_outbox", *periodic):
            self.run_task(name, queue="periodic")
        self.run_task("outbox.tasks.deliver_emails", queue="email")

    def log(self) -> str:
        return "\n".join(p.read_text(errors="replace")[-6000:] for p in sorted(self.dir.glob("worker-*.log")))

    def kill(self) -> None:
        """SIGKILL the whole worker: no shutdown, no acks, prefetched messages stranded."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()


def outage_outlasted_a_budget() -> bool:
    """Some message has had as many outage-type attempts as its whole retry budget: were
    outages counted per message, it would have failed by now."""
    from django.db.models import Count, F

    from outbox.models import AttemptOutcome, DeliveryAttempt

    return (
        DeliveryAttempt.objects.filter(outcome=AttemptOutcome.OUTAGE)
        .values("message", "message__max_attempts")
        .annotate(n=Count("id"))
        .filter(n__gte=F("message__max_attempts"))
        .exists()
    )


@contextmanager
def running_worker(env: dict[str, str], **kwargs: Any) -> Iterator[Worker]:
    worker = Worker(env, **kwargs).start()
    try:
        yield worker
    finally:
        worker.stop()
        worker.kill()
