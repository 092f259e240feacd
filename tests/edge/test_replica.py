"""Public reads from a real streaming replica (edge/replica.py, docs/adr/0025-replica.md).

The replica is made from the test server by `pg_basebackup -R` and started on another
port (tests/pg_replica.py). Proof that a read came from it: the routed connection says
`pg_is_in_recovery()` and its port, and with the replica's replay paused, a row written
on the primary is missing from the public page served from it but present for staff.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connections, router, transaction
from django.test import Client
from django.utils import timezone

from edge.replica import REPLICA, health, public_read
from incidents.models import Incident
from tests.builders import make_incident, make_product
from tests.conftest import service_missing
from tests.pg_replica import Replica, binaries
from tests.waiting import poll

# The replica alias is a mirror of "default" for Django's test machinery (never flushed:
# it is read-only and gets the primary's rows by replication) but has its own connection.
pytestmark = [
    pytest.mark.services,
    pytest.mark.usefixtures("postgres"),
    pytest.mark.django_db(transaction=True, databases=["default", REPLICA]),
]


@pytest.fixture(scope="module")
def replica_server(django_db_setup: None, django_db_blocker: Any) -> Iterator[Replica]:
    from django.conf import settings

    primary = settings.DATABASES["default"]
    if primary["ENGINE"] != "django.db.backends.postgresql":
        service_missing("the replica tests need PostgreSQL: set DATABASE_URL=postgres://...")
    with django_db_blocker.unblock(), connections["default"].cursor() as cursor:
        cursor.execute("SELECT current_setting('server_version_num')::int / 10000")
        major = cursor.fetchone()[0]
        cursor.execute("SELECT current_setting('wal_level'), current_setting('max_wal_senders')::int")
        wal_level, senders = cursor.fetchone()
    bindir = binaries(major)
    if bindir is None:
        service_missing(f"pg_basebackup for PostgreSQL {major} is not installed (apt-get install postgresql)")
    assert bindir is not None
    if wal_level == "minimal" or senders < 1:
        service_missing(f"the test server cannot stream (wal_level={wal_level}, max_wal_senders={senders})")
    server = Replica(bindir, dict(primary))
    try:
        try:
            server.start()
        except RuntimeError as exc:  # e.g. no replication line in pg_hba.conf
            service_missing(f"no replica could be made of the test server: {exc}")
        alias = copy.deepcopy(connections["default"].settings_dict)
        alias.update(HOST="127.0.0.1", PORT=str(server.port))
        alias["TEST"] = {**alias.get("TEST", {}), "MIRROR": "default"}
        connections.settings[REPLICA] = alias
        yield server
    finally:
        if REPLICA in connections.settings:
            connections[REPLICA].close()
            del connections[REPLICA]
            del connections.settings[REPLICA]
        server.destroy()


@pytest.fixture
def replica(replica_server: Replica, settings: Any) -> Iterator[Replica]:
    """The replica's alias, with the router and middleware installed."""
    if not (replica_server.data / "postmaster.pid").exists():
        replica_server.resume()
    settings.DATABASE_ROUTERS = ["edge.replica.ReplicaRouter"]
    auth = settings.MIDDLEWARE.index("django.contrib.auth.middleware.AuthenticationMiddleware")
    settings.MIDDLEWARE = [
        *settings.MIDDLEWARE[: auth + 1],
        "edge.replica.PublicReadMiddleware",
        *settings.MIDDLEWARE[auth + 1 :],
    ]
    settings.DATABASE_REPLICA_MAX_LAG = 3600.0
    settings.DATABASE_REPLICA_CHECK_INTERVAL = 0.0
    health.reset()
    try:
        yield replica_server
    finally:
        health.reset()
        connections[REPLICA].close()


def _on_replica(sql: str, params: tuple[Any, ...] = ()) -> Any:
    with connections[REPLICA].cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


def _caught_up() -> bool:
    row = _on_replica("SELECT pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn()")
    return bool(row[0])


def _page(client: Client, path: str = "/") -> tuple[int, str]:
    from django.core.cache import cache

    from edge import page_cache, version

    cache.clear()
    page_cache._memo.clear()
    page_cache._memo_last.clear()
    version.reset()
    response = client.get(path)
    return response.status_code, response.content.decode()


def _incident(title: str) -> Incident:
    return make_incident(
        title=title, product=make_product(title[:20]), start=timezone.now() - timedelta(minutes=5)
    )


def test_a_public_read_goes_to_the_replica_and_everything_else_to_the_primary(replica: Replica) -> None:
    with public_read():
        alias = router.db_for_read(Incident)
        assert alias == REPLICA
        assert _on_replica("SELECT pg_is_in_recovery(), inet_server_port()") == (True, replica.port)
        assert router.db_for_write(Incident) == "default"
        # Once the request wrote, it reads its own writes on the primary.
        assert router.db_for_read(Incident) == "default"
    with public_read(), transaction.atomic():
        assert router.db_for_read(Incident) == "default"  # the transaction's rows are on the primary
    assert router.db_for_read(Incident) == "default"  # not a public read: staff, console, tasks


def test_the_public_page_is_read_from_the_replica_and_staff_pages_from_the_primary(
    replica: Replica, client: Client
) -> None:
    _incident("Calendar sync delayed")
    poll(_caught_up)
    _on_replica("SELECT pg_wal_replay_pause(), 1")
    try:
        _incident("Drive uploads failing")  # on the primary only while replay is paused
        status, body = _page(client)
        assert status == 200
        assert "Calendar sync delayed" in body
        assert "Drive uploads failing" not in body, "the anonymous page was not read from the replica"
        staff = User.objects.create_user("replica-staff", password="x", is_staff=True)
        client.force_login(staff)
        status, body = _page(client)
        assert status == 200 and "Drive uploads failing" in body, "a signed-in visitor must read the primary"
        client.logout()
    finally:
        _on_replica("SELECT pg_wal_replay_resume(), 1")
    assert poll(_caught_up), "the replica never caught up after replay resumed"
    status, body = _page(client)
    assert status == 200 and "Drive uploads failing" in body


def test_a_write_goes_to_the_primary_and_shows_on_the_replica(replica: Replica) -> None:
    started = time.monotonic()
    with public_read():
        incident = _incident("Meet audio drops")
    assert incident._state.db == "default"
    seen = poll(
        lambda: _on_replica("SELECT count(*) FROM incidents_incident WHERE id = %s", (incident.pk,))[0]
    )
    lag = time.monotonic() - started
    assert seen == 1, "the row written on the primary never reached the replica"
    print(f"\nreplication: the write showed on the replica {lag * 1000:.0f} ms after it was sent")


def test_a_lagging_replica_falls_back_to_the_primary(replica: Replica, client: Client, settings: Any) -> None:
    settings.DATABASE_REPLICA_MAX_LAG = 1.0
    poll(_caught_up)
    _on_replica("SELECT pg_wal_replay_pause(), 1")
    try:
        _incident("Docs editor read-only")
        with public_read():
            assert poll(lambda: router.db_for_read(Incident) == "default", timeout=20), (
                "a lagging replica stayed in use"
            )
        assert health.verdict.lag is not None and health.verdict.lag > 1.0
        status, body = _page(client)
        assert status == 200 and "Docs editor read-only" in body, "the lagging replica answered the page"
        print(f"\nreplica lag seen while replay was paused: {health.verdict.lag:.1f} s (limit 1 s)")
    finally:
        _on_replica("SELECT pg_wal_replay_resume(), 1")
    assert poll(_caught_up)
    with public_read():
        assert poll(lambda: router.db_for_read(Incident) == REPLICA), (
            "the replica was not used again once caught up"
        )


def test_a_stopped_replica_falls_back_to_the_primary_and_the_page_stays_up(
    replica: Replica, client: Client, settings: Any
) -> None:
    _incident("Chat messages delayed")
    settings.DATABASE_REPLICA_CHECK_INTERVAL = 60.0  # the last verdict ("usable") holds
    with public_read():
        assert router.db_for_read(Incident) == REPLICA
    replica.stop()
    started = time.monotonic()
    status, body = _page(client)
    elapsed = time.monotonic() - started
    assert status == 200 and "Chat messages delayed" in body
    assert health.verdict.usable is False
    with public_read():
        assert router.db_for_read(Incident) == "default"
    print(f"\nfallback: first page after the replica stopped answered 200 in {elapsed * 1000:.0f} ms")
