"""PostgreSQL connection options (statuspage/settings_db.py): a session left idle inside a
transaction (its client cut off behind a proxy, soak seed 37) is ended by the server and
its row locks released; a vanished peer is noticed by TCP keepalives."""

from __future__ import annotations

import importlib
import time
from typing import Any

import psycopg2
import pytest
from django.conf import settings
from django.db import connections

import statuspage.settings_db as settings_db


def test_the_options_carry_the_timeouts_and_keepalives(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DB_STATEMENT_TIMEOUT_MS", "1234")
    monkeypatch.setenv("DB_IDLE_IN_TRANSACTION_TIMEOUT_MS", "4321")
    try:
        options = importlib.reload(settings_db).postgres_options()
    finally:
        monkeypatch.undo()
        importlib.reload(settings_db)
    assert options["options"] == "-c statement_timeout=1234 -c idle_in_transaction_session_timeout=4321"
    assert options["keepalives"] == 1
    assert options["keepalives_idle"] + options["keepalives_interval"] * options["keepalives_count"] <= 15
    assert options["tcp_user_timeout"] > 0


def test_the_default_database_uses_them(postgres: None, db: None) -> None:
    assert settings.DATABASES["default"]["OPTIONS"]["keepalives"] == 1
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT setting FROM pg_settings WHERE name = 'idle_in_transaction_session_timeout'")
        (value,) = cursor.fetchone()
    assert int(value) == settings.DB_IDLE_IN_TRANSACTION_TIMEOUT_MS > 0


def _connect(options: dict[str, Any]) -> Any:
    db = settings.DATABASES["default"]
    return psycopg2.connect(
        dbname=db["NAME"], user=db.get("USER") or "postgres", host=db.get("HOST") or "127.0.0.1",
        port=db.get("PORT") or 5432, password=db.get("PASSWORD") or None, **options,
    )  # fmt: skip


def test_a_session_idle_in_a_transaction_is_ended_and_its_lock_released(
    postgres: None, db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(settings_db, "DB_IDLE_IN_TRANSACTION_TIMEOUT_MS", 500)
    stuck = _connect(settings_db.postgres_options())
    other = _connect(settings_db.postgres_options())
    try:
        with stuck.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(3737)")  # held until its transaction ends
        # The client goes quiet with the transaction open (killed, or cut off).
        time.sleep(1.5)
        with other.cursor() as cursor:
            cursor.execute("SET lock_timeout = '2s'")
            cursor.execute("SELECT pg_try_advisory_lock(3737)")
            assert cursor.fetchone() == (True,)
        with pytest.raises(psycopg2.Error), stuck.cursor() as cursor:
            cursor.execute("SELECT 1")
    finally:
        stuck.close()
        other.close()
