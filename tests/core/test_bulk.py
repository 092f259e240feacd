"""core.bulk: set-based inserts and updates (UNNEST arrays on PostgreSQL, executemany on
SQLite) store exactly what the ORM would, for awkward values too."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from core import bulk
from outbox.models import MessageBody, OutboundMessage

pytestmark = pytest.mark.django_db

AWKWARD = [
    'quote " and backslash \\ and braces {a,b}',
    "NULL",
    "",
    " leading and trailing ",
    "é ü 日本 and an emoji \U0001f600",
    "comma, and 'single' quotes",
]

FIELDS: tuple[str, ...] = (
    "idempotency_key",
    "channel",
    "destination",
    "to",
    "subject",
    "headers",
    "fills",
    "payload",
)
FIELDS += ("max_attempts", "next_attempt_at", "handlers_pending", "created_at", "updated_at", "message_id")
# No defaults: every NOT NULL column is given.
FIELDS += (
    "purpose",
    "ref",
    "body_text",
    "body_html",
    "url",
    "secret",
    "state",
    "attempts",
    "ambiguous_count",
)
FIELDS += ("last_error", "body_id")


def _rows(now: datetime) -> list[tuple[object, ...]]:
    rows: list[tuple[object, ...]] = []
    for i, text in enumerate(AWKWARD):
        rows.append(
            (
                f"key-{i}",
                "email",
                "smtp",
                [f"a{i}@example.com", text],
                text,
                {"X-Text": text, "n": i},
                {"mark": text},
                None if i % 2 else {"nested": [text, None, 1.5]},
                i,
                now + timedelta(seconds=i),
                bool(i % 2),
                now,
                now,
                f"<{i}@example.com>",
                "test",
                "",
                "",
                "",
                "",
                "",
                "pending",
                0,
                0,
                "",
                None,
            )
        )
    return rows


def test_it_inserts_awkward_values_exactly_and_skips_conflicts() -> None:
    now = datetime(2026, 12, 2, 12, 0, 0, 123456, tzinfo=UTC)
    rows = _rows(now)
    assert bulk.bulk_insert(OutboundMessage, FIELDS, rows, ignore_conflicts=True) == len(rows)
    stored = {m.idempotency_key: m for m in OutboundMessage.objects.all()}
    for i, text in enumerate(AWKWARD):
        m = stored[f"key-{i}"]
        assert m.to == [f"a{i}@example.com", text]
        assert m.subject == text
        assert m.headers == {"X-Text": text, "n": i}
        assert m.fills == {"mark": text}
        assert m.payload == (None if i % 2 else {"nested": [text, None, 1.5]})
        assert m.max_attempts == i
        assert m.next_attempt_at == now + timedelta(seconds=i)
        assert m.handlers_pending is bool(i % 2)
    # Again, plus one new row: only the new one goes in (the unique key decides).
    again = [*rows, ("key-new", *rows[0][1:])]
    assert bulk.bulk_insert(OutboundMessage, FIELDS, again, ignore_conflicts=True) == 1
    assert OutboundMessage.objects.count() == len(rows) + 1
    # Queries compare the stored datetimes as the ORM's own writes.
    assert OutboundMessage.objects.filter(next_attempt_at__lte=now + timedelta(seconds=2)).count() == 4


def test_it_updates_by_key_with_varying_and_constant_columns() -> None:
    now = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
    bulk.bulk_insert(OutboundMessage, FIELDS, _rows(now))
    ids = dict(OutboundMessage.objects.values_list("idempotency_key", "pk"))
    later = now + timedelta(hours=1)
    updates = [(ids[f"key-{i}"], f"new {text}", "sent", later, {"k": text}) for i, text in enumerate(AWKWARD)]
    assert bulk.bulk_update(OutboundMessage, ("subject", "state", "sent_at", "fills"), updates) == len(
        AWKWARD
    )
    for i, text in enumerate(AWKWARD):
        m = OutboundMessage.objects.get(pk=ids[f"key-{i}"])
        assert (m.subject, m.state, m.sent_at, m.fills) == (f"new {text}", "sent", later, {"k": text})
        assert m.to == [f"a{i}@example.com", text]  # untouched


def test_it_inserts_one_row_and_nothing() -> None:
    now = datetime(2026, 12, 2, tzinfo=UTC)
    assert bulk.bulk_insert(MessageBody, ("digest", "subject", "text", "html", "created_at"), []) == 0
    assert (
        bulk.bulk_insert(
            MessageBody, ("digest", "subject", "text", "html", "created_at"), [("d", "S", "T", "", now)]
        )
        == 1
    )
    assert list(MessageBody.objects.values_list("digest", "subject", "text", "html", "created_at")) == [
        ("d", "S", "T", "", now)
    ]


def test_insert_returning_gives_the_inserted_rows_only_where_the_backend_can_say() -> None:
    from django.db import connection

    now = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
    rows = _rows(now)
    first = bulk.bulk_insert_returning(
        OutboundMessage, FIELDS, rows[:3], ("idempotency_key", "pk"), ignore_conflicts=True
    )
    stored = dict(OutboundMessage.objects.values_list("idempotency_key", "pk"))
    again = bulk.bulk_insert_returning(
        OutboundMessage, FIELDS, rows, ("idempotency_key", "pk"), ignore_conflicts=True
    )
    assert OutboundMessage.objects.count() == len(rows)
    if connection.vendor == "postgresql":
        assert first is not None and sorted(first) == sorted(stored.items())
        # The three already there are skipped, and not returned.
        assert again is not None
        assert sorted(k for k, _ in again) == [f"key-{i}" for i in range(3, len(rows))]
        assert dict(again) == {
            k: pk for k, pk in OutboundMessage.objects.values_list("idempotency_key", "pk") if k not in stored
        }
    else:
        assert first is None and again is None


def test_any_of_matches_exactly_the_values_given() -> None:
    from django.db.models import F

    now = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
    bulk.bulk_insert(OutboundMessage, FIELDS, _rows(now))
    ids = dict(OutboundMessage.objects.values_list("idempotency_key", "pk"))
    some = [ids["key-1"], ids["key-4"], 10**9]
    assert sorted(
        OutboundMessage.objects.filter(bulk.AnyOf(F("pk"), some)).values_list("pk", flat=True)
    ) == sorted(some[:2])
    # Text, with the characters an array literal has to quote.
    keys = ["key-0", 'no "such" key, {really}', "key-5"]
    assert sorted(
        OutboundMessage.objects.filter(bulk.AnyOf(F("idempotency_key"), keys)).values_list(
            "idempotency_key", flat=True
        )
    ) == ["key-0", "key-5"]
    assert not OutboundMessage.objects.filter(bulk.AnyOf(F("pk"), [])).exists()
    # A generator is read once, whatever the backend does with it.
    assert OutboundMessage.objects.filter(bulk.AnyOf(F("pk"), (pk for pk in some))).count() == 2
