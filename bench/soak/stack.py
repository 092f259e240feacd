"""The production topology on this machine: gunicorn (docker/gunicorn.conf.py) behind nginx
(docker/nginx.conf, its paths and upstream rewritten for loopback), the three Celery
workers and beat with the queues of docker/docker-compose.yml, PostgreSQL through the
fault proxy of tests/faults.py, a throwaway Redis, the soak's SMTP and webhook receivers.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from bench.soak.fakes import SmtpSink, WebhookReceiver
from bench.soak.pg import PrivatePostgres
from tests.faults import FaultProxy, ThrowawayRedis, free_port

ROOT = Path(__file__).resolve().parents[2]
PY = ROOT / ".venv" / "bin" / "python"
CELERY = ROOT / ".venv" / "bin" / "celery"

# docker/docker-compose.yml: one worker per queue, and beat.
CELERY_ROLES = {
    "worker-email": ["worker", "--queues=email", "--concurrency=4", "--hostname=email@%h"],
    "worker-webhooks": ["worker", "--queues=webhooks", "--concurrency=4", "--hostname=webhooks@%h"],
    "worker-periodic": ["worker", "--queues=periodic", "--concurrency=2", "--hostname=periodic@%h"],
}


def pg_parts(url: str) -> re.Match[str]:
    pg = re.match(r"postgres://(?P<user>[^@]+)@(?P<host>[^:/]+):(?P<port>\d+)/(?P<db>\w+)", url)
    if not pg:
        raise SystemExit("--pg must look like postgres://user@host:port/dbname")
    return pg


class Proc:
    """One service process in a session of its own, so kill -9 takes its children too."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], logs: Path) -> None:
        self.name, self.argv, self.env = name, argv, env
        self.log_path = logs / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            self.argv, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        self.starts += 1

    def signal_group(self, sig: int) -> None:
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)

    def kill9(self) -> None:
        self.signal_group(signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.signal_group(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.kill9()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


def app_env(
    pg: re.Match[str], proxy: FaultProxy, redis: ThrowawayRedis, smtp: SmtpSink, var: Path
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO_"))}
    env.update(
        DEBUG="0",
        SECRET_KEY="soak-only",  # noqa: S106 - a throwaway stack
        ALLOWED_HOSTS="127.0.0.1,localhost",
        SECURE_SSL_REDIRECT="0",
        STATIC_MANIFEST="0",
        VAR_DIR=str(var),
        DATABASE_URL=f"postgres://{pg['user']}@127.0.0.1:{proxy.port}/{pg['db']}",
        DB_CONNECT_TIMEOUT="2",
        REDIS_URL=redis.url,
        EMAIL_HOST="127.0.0.1",
        EMAIL_PORT=str(smtp.port),
        EMAIL_TIMEOUT="5",
        WEBHOOK_TIMEOUT="4",
        WEBHOOK_ALLOW_PRIVATE="1",
        WEBHOOK_ALLOW_HTTP="1",
        LOG_LEVEL="WARNING",
        GUNICORN_WORKERS="2",
        GUNICORN_ACCESSLOG="/dev/null",
        GUNICORN_MAX_REQUESTS="0",
        # As the compose test: short leases and sweeps, so recovery fits in minutes.
        OUTBOX_LEASE_SECONDS="20",
        DB_IDLE_IN_TRANSACTION_TIMEOUT_MS="20000",
        OUTBOX_SWEEP_INTERVAL="5",
        OUTBOX_SWEEP_GRACE_SECONDS="1",
        OUTBOX_KICK_LOST_SECONDS="5",
        OUTBOX_RETRY_BASE_DELAY="1",
        OUTBOX_RETRY_MAX_DELAY="8",
        OUTBOX_BREAKER_COOLDOWN="3",
        OUTBOX_BREAKER_MAX_COOLDOWN="10",
        CREDITS_SECOND_APPROVER_ABOVE="100000000",
        PYTHONPATH=str(ROOT),
    )
    return env


def nginx_conf(prefix: Path, *, listen: int, app: int, snapshots: Path) -> str:
    """docker/nginx.conf as production has it, pointed at loopback and this run's paths."""
    server = (ROOT / "docker" / "nginx.conf").read_text()
    server = re.sub(r"(?m)^resolver.*$|^resolver_timeout.*$", "", server)
    server = server.replace("listen 80;", f"listen 127.0.0.1:{listen};")
    server = server.replace("http://web:8000", f"http://127.0.0.1:{app}")
    server = server.replace("/var/cache/nginx/status", str(prefix / "cache"))
    server = server.replace("/app/var/snapshots", str(snapshots))
    user = "user root;" if os.geteuid() == 0 else ""
    temp = " ".join(
        f"{k}_temp_path {prefix}/{k};" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return (
        f"{user}\nworker_processes 1;\npid {prefix}/nginx.pid;\nerror_log {prefix}/error.log warn;\n"
        f"events {{ worker_connections 1024; }}\nhttp {{\naccess_log off;\n{temp}\n{server}\n}}\n"
    )


class Stack:
    """Every service of the run; `procs` are the ones faults kill and restart."""

    def __init__(self, pg_url: str, work: Path) -> None:
        self.work = work
        self.logs = work / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        # "private": a PostgreSQL of the run's own, which the faults may crash and restart.
        self.private_pg = PrivatePostgres() if pg_url == "private" else None
        self.pg = pg_parts(self.private_pg.url if self.private_pg else pg_url)
        self.proxy = FaultProxy((self.pg["host"], int(self.pg["port"])))
        self.redis = ThrowawayRedis()
        self.smtp = SmtpSink()
        self.webhooks = WebhookReceiver()
        self.var = work / "var"
        self.env = app_env(self.pg, self.proxy, self.redis, self.smtp, self.var)
        self.app_port, self.port = free_port(), free_port()
        self.env["GUNICORN_BIND"] = f"127.0.0.1:{self.app_port}"
        self.procs: dict[str, Proc] = {}
        self.nginx: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        gunicorn = [str(PY), "-m", "gunicorn", "--config", "docker/gunicorn.conf.py", "statuspage.wsgi"]
        self.procs["web"] = Proc("web", gunicorn, self.env, self.logs)
        for name, args in CELERY_ROLES.items():
            argv = [str(CELERY), "-A", "statuspage", *args, "--loglevel=INFO"]
            self.procs[name] = Proc(name, argv, self.env, self.logs)
        beat = [
            str(CELERY),
            "-A",
            "statuspage",
            "beat",
            "--loglevel=INFO",
            f"--schedule={self.var}/celerybeat-schedule",
        ]
        self.procs["beat"] = Proc("beat", beat, self.env, self.logs)
        for proc in self.procs.values():
            proc.start()
        self._start_nginx()
        self.wait_ready()

    def _start_nginx(self) -> None:
        prefix = self.work / "nginx"
        shutil.rmtree(prefix, ignore_errors=True)
        (prefix / "cache").mkdir(parents=True)
        (self.var / "snapshots").mkdir(parents=True, exist_ok=True)
        for path in (self.work, prefix, self.var, self.var / "snapshots"):
            path.chmod(0o755)  # nginx workers drop root and read the snapshots
        conf = prefix / "nginx.conf"
        conf.write_text(
            nginx_conf(prefix, listen=self.port, app=self.app_port, snapshots=self.var / "snapshots")
        )
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        self.nginx = subprocess.Popen(
            [nginx, "-p", str(prefix), "-c", str(conf), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL, stderr=(prefix / "stderr.log").open("wb"), start_new_session=True,
        )  # fmt: skip

    def wait_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            url = f"http://127.0.0.1:{self.app_port}/healthz"
            with (
                contextlib.suppress(OSError, urllib.error.URLError),
                urllib.request.urlopen(url, timeout=3) as r,
            ):
                if r.status == 200:
                    return
            time.sleep(0.5)
        raise SystemExit(
            "the web process never answered /healthz: " + self.procs["web"].log_path.read_text()[-3000:]
        )

    def heal_all(self) -> None:
        """Every fault lifted, every process running: what the end of the run checks from."""
        self.proxy.heal()
        if self.private_pg is not None and not self.private_pg.running:
            self.private_pg.start()
        self.smtp.set_mode("ok")
        self.webhooks.mode = "ok"
        if self.redis.proc.poll() is None:
            self.redis.resume()
        else:
            self.redis.start()
        for proc in self.procs.values():
            if not proc.alive():
                proc.start()

    def close(self) -> None:
        for proc in self.procs.values():
            proc.stop()
        if self.nginx is not None and self.nginx.poll() is None:
            os.killpg(self.nginx.pid, signal.SIGQUIT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.nginx.wait(timeout=10)
        self.redis.stop()
        self.proxy.close()
        self.smtp.close()
        self.webhooks.close()
        if self.private_pg is not None:
            self.private_pg.close()
