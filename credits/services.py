from __future__ import annotations


def register_outbox_handlers() -> None:
    pass
