from __future__ import annotations

from urllib.error import URLError

from celery import shared_task

from public_site import websub


@shared_task(
    autoretry_for=(URLError, OSError),
    retry_backoff=True,
    retry_backoff_max=600,
    max_retries=8,
    acks_late=True,
    ignore_result=True,
)
def websub_publish() -> int:
    """Tell the WebSub hub the public feeds changed (idempotent: a repeat only makes the
    hub refetch). The feed list is read when the task runs, so it is current."""
    hub = websub.hub_url()
    if not hub:
        return 0
    return websub.ping_hub(hub, websub.feed_urls())
