"""Liveness and readiness: what a load balancer, compose healthcheck or orchestrator asks
before it sends traffic. Design: docs/adr/0023-metrics.md, docs/operations.md.

Each readiness check returns None when fine, or a short reason. Checks never raise: a
failing dependency is an answer, not an error.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

import redis
from django.conf import settings
from django.core.cache import caches
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor

# Seconds a readiness probe waits for Redis before it calls it unreachable.
PROBE_TIMEOUT = 2.0

# Once every migration has been seen applied in this process it stays so (migrations are
# not unapplied under a running server), so the graph is loaded once, not per probe.
_migrations_seen_applied = False


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".strip()[:300]


def check_database() -> str | None:
    try:
        with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # noqa: BLE001 - any failure means "not ready"
        return _reason(exc)
    return None


def check_migrations() -> str | None:
    global _migrations_seen_applied
    if _migrations_seen_applied:
        return None
    try:
        connection = connections[DEFAULT_DB_ALIAS]
        executor = MigrationExecutor(connection)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except Exception as exc:  # noqa: BLE001
        return _reason(exc)
    if plan:
        names = ", ".join(f"{migration.app_label}.{migration.name}" for migration, _backwards in plan[:5])
        return f"{len(plan)} unapplied migration(s): {names}"
    _migrations_seen_applied = True
    return None


def check_broker() -> str | None:
    """The Celery broker, when there is one (REDIS_URL); the embedded mode has none."""
    url = settings.REDIS_URL
    if not url:
        return None
    client = redis.Redis.from_url(url, socket_timeout=PROBE_TIMEOUT, socket_connect_timeout=PROBE_TIMEOUT)
    try:
        client.ping()
    except Exception as exc:  # noqa: BLE001
        return _reason(exc)
    finally:
        client.close()
    return None


def check_caches() -> str | None:
    """Every configured cache takes a write and gives it back."""
    problems = []
    for alias in settings.CACHES:
        token = secrets.token_hex(8)
        key = f"readyz:{token}"
        try:
            store = caches[alias]
            store.set(key, token, timeout=10)
            if store.get(key) != token:
                problems.append(f"{alias}: a value written could not be read back")
            store.delete(key)
        except Exception as exc:  # noqa: BLE001
            problems.append(f"{alias}: {_reason(exc)}")
    return "; ".join(problems) or None


CHECKS: dict[str, Callable[[], str | None]] = {
    "database": check_database,
    "migrations": check_migrations,
    "broker": check_broker,
    "cache": check_caches,
}


def readiness() -> dict[str, str]:
    """Each check's name -> "ok" or the reason it failed. Migrations are only checked
    when the database answers (their reason would repeat the database's)."""
    results: dict[str, str] = {}
    for name, check in CHECKS.items():
        if name == "migrations" and results.get("database") != "ok":
            results[name] = "not checked: the database is unreachable"
            continue
        results[name] = check() or "ok"
    return results


def reset() -> None:
    """Forget the migrations memo (tests)."""
    global _migrations_seen_applied
    _migrations_seen_applied = False
