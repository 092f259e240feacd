"""The handler registry: rooms above the outbox react to a message's outcome through it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from django.db import transaction

from outbox.models import OutboundMessage

logger = logging.getLogger(__name__)

Handler = Callable[[OutboundMessage], None]
BatchHandler = Callable[[list[OutboundMessage]], None]


@dataclass(frozen=True)
class _Handlers:
    on_sent: Handler | None = None
    on_failed: Handler | None = None
    on_sent_batch: BatchHandler | None = None


_handlers: dict[str, _Handlers] = {}


def outbox_register_handler(
    purpose: str,
    *,
    on_sent: Handler | None = None,
    on_failed: Handler | None = None,
    on_sent_batch: BatchHandler | None = None,
) -> None:
    """React to the outcome of messages of `purpose`, atomically with recording it.

    The callbacks run inside the transaction that marks the message sent or failed, after
    the message row is updated, so a notice can be marked sent together with it. A batch
    delivery calls `on_sent_batch` once with every message of the purpose it sent (if
    given; else `on_sent` per message); should it raise, each message gets `on_sent` on
    its own. Call this from an AppConfig.ready(): workers import apps, not views.
    """
    _handlers[purpose] = _Handlers(on_sent=on_sent, on_failed=on_failed, on_sent_batch=on_sent_batch)


def run_handler(message: OutboundMessage, which: str) -> None:
    handlers = _handlers.get(message.purpose)
    handler = getattr(handlers, which, None) if handlers else None
    if handler is None:
        return
    try:
        # A savepoint: a broken handler must not undo "sent" (that would send it again).
        with transaction.atomic():
            handler(message)
    except Exception as exc:
        logger.exception("outbox: %s handler for %s failed on message %s", which, message.purpose, message.pk)
        OutboundMessage.objects.filter(pk=message.pk).update(
            last_error=f"{which} handler failed: {type(exc).__name__}: {exc}"[:2000]
        )


def run_sent_handlers(rows: list[OutboundMessage]) -> None:
    by_purpose: dict[str, list[OutboundMessage]] = {}
    for row in rows:
        by_purpose.setdefault(row.purpose, []).append(row)
    for purpose, group in by_purpose.items():
        handlers = _handlers.get(purpose)
        if handlers is None:
            continue
        if handlers.on_sent_batch is not None and len(group) > 1:
            try:
                with transaction.atomic():
                    handlers.on_sent_batch(group)
                continue
            except Exception:
                logger.exception("outbox: batch on_sent handler for %s failed; one by one", purpose)
        for row in group:
            run_handler(row, "on_sent")
