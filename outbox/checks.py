"""System checks: retry delays must stay well under the broker's visibility timeout.

A Redis-broker message with a countdown stays unacknowledged in the worker until it is
due; if the countdown outlived the visibility timeout, Redis would hand the message to a
second worker while the first still holds it.
"""

from __future__ import annotations

from typing import Any

from django.core.checks import Error, register

from outbox import conf


@register()
def check_retry_cap(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    errors: list[Error] = []
    cap, visibility = conf.retry_max_delay(), conf.visibility_timeout()
    if cap > visibility / 2:
        errors.append(
            Error(
                f"OUTBOX_RETRY_MAX_DELAY ({cap:g}s) must be at most half the broker visibility "
                f"timeout ({visibility:g}s).",
                id="outbox.E001",
            )
        )
    if conf.lease_seconds() > visibility / 2:
        errors.append(
            Error(
                f"OUTBOX_LEASE_SECONDS ({conf.lease_seconds():g}s) must be at most half the broker "
                f"visibility timeout ({visibility:g}s).",
                id="outbox.E002",
            )
        )
    return errors
