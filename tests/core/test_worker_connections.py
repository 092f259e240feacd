"""A worker's database connection after the server dropped it (the chaos soak found each
pool process failing up to 200 tasks on a dead connection after a PostgreSQL restart:
Celery's fixup checks kept connections only every 2 x CELERY_DB_REUSE_MAX tasks)."""

from __future__ import annotations

import pytest
from celery.signals import task_prerun
from django.db import OperationalError, connection, connections
from django.db.utils import InterfaceError

import statuspage.celery  # noqa: F401 - connects the task_prerun handler


def _one() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        return int(cursor.fetchone()[0])


def _terminate_session() -> None:
    """The server ends this connection's session, as a restart or a failover does."""
    pid = connection.connection.info.backend_pid
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    finally:
        other.close()


@pytest.mark.django_db(transaction=True)
def test_the_next_task_gets_a_new_connection_after_the_server_dropped_it() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (pg_terminate_backend)")
    assert _one() == 1
    _terminate_session()
    with pytest.raises((OperationalError, InterfaceError)):
        _one()
    # Without the handler every later query on this connection fails too.
    with pytest.raises(InterfaceError):
        _one()
    task_prerun.send(sender=None, task_id="t", task=None, args=(), kwargs={})
    assert _one() == 1


@pytest.mark.django_db(transaction=True)
def test_a_healthy_connection_is_kept_across_tasks() -> None:
    assert _one() == 1
    raw = connection.connection
    task_prerun.send(sender=None, task_id="t", task=None, args=(), kwargs={})
    assert _one() == 1
    assert connection.connection is raw
