"""Statuspage `component_update` webhooks: a public product's level changed.

Statuspage-format webhooks get one per change, as Statuspage sends them (`page`,
`component_update` with the old and new status, `component`), with `X-Status-Event:
component.updated`. The level each product was last announced at is kept in
`ComponentLevel`; `component_levels_sync` compares it with the levels now and announces
the differences. It runs in the writer's transaction when an incident change moves
counted impact (`impact_changed`), and on the minute tick (subscriptions.tasks.maintenance_reminders), which catches what moves with
the clock alone (a scheduled maintenance window that starts or ends). Each change has its
own key per subscriber, so a tick and a writer racing announce it once.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from core.site import page_id
from incidents import events
from incidents.models import Product
from incidents.selectors import OPERATIONAL, product_statuses, status_summary
from outbox.services import WebhookSpec, messages_enqueue_many
from subscriptions import emails
from subscriptions.channels import STATUSPAGE_DOCUMENTATION
from subscriptions.models import ComponentLevel, Subscriber
from subscriptions.webhooks import WEBHOOK_PURPOSE

COMPONENT_EVENT = "component.updated"
CHUNK = 500


def _iso(value: datetime) -> str:
    return value.isoformat()


def statuspage_hooks(product: Product) -> QuerySet[Subscriber]:
    """Active Statuspage-format webhooks told about `product`."""
    interested = Q(all_products=True) | Q(
        pk__in=Subscriber.products.through.objects.filter(product=product).values("subscriber_id")
    )
    return (
        Subscriber.objects.filter(
            kind=Subscriber.Kind.WEBHOOK,
            payload_format=Subscriber.Format.STATUSPAGE,
            confirmed_at__isnull=False,
            disabled_at__isnull=True,
        )
        .filter(interested)
        .order_by("pk")
    )


def _has_listeners() -> bool:
    return Subscriber.objects.filter(
        kind=Subscriber.Kind.WEBHOOK,
        payload_format=Subscriber.Format.STATUSPAGE,
        confirmed_at__isnull=False,
        disabled_at__isnull=True,
    ).exists()


def component_update_payload(
    *, product: Product, row: ComponentLevel, old: str, page: dict[str, Any], unsubscribe_url: str
) -> dict[str, Any]:
    """Statuspage's component-update webhook body."""
    return {
        "meta": {"unsubscribe": unsubscribe_url, "documentation": STATUSPAGE_DOCUMENTATION},
        "page": page,
        "component_update": {
            "id": f"{product.public_id}-{row.version}",
            "component_id": product.public_id,
            "old_status": old,
            "new_status": row.level,
            "created_at": _iso(row.changed_at),
        },
        "component": {
            "id": product.public_id,
            "name": product.name,
            "status": row.level,
            "created_at": _iso(product.created_at),
        },
    }


def _announce(*, product: Product, row: ComponentLevel, old: str, page: dict[str, Any]) -> int:
    """Queue the change to every Statuspage-format webhook of the product, a chunk at a time."""
    queued, cursor = 0, 0
    while True:
        hooks = list(statuspage_hooks(product).filter(pk__gt=cursor)[:CHUNK])
        if not hooks:
            return queued
        specs = [
            WebhookSpec(
                key=f"component:{product.pk}:{row.version}:{hook.pk}",
                url=hook.url,
                payload=component_update_payload(
                    product=product,
                    row=row,
                    old=old,
                    page=page,
                    unsubscribe_url=emails.subscriber_links(hook)["unsubscribe_url"],
                ),
                secret=hook.secret,
                purpose=WEBHOOK_PURPOSE,
                ref=hook.outbox_ref,
                event=COMPONENT_EVENT,
            )
            for hook in hooks
        ]
        messages_enqueue_many(specs)
        queued += len(specs)
        cursor = hooks[-1].pk


def _record(
    product: Product, level: str, known: ComponentLevel | None, now: datetime
) -> tuple[ComponentLevel, str] | None:
    """Store the product's new level; (the row, the old level) when it changed."""
    if known is None:
        try:
            with transaction.atomic():  # a savepoint: a racing writer may have made it
                row = ComponentLevel.objects.create(product=product, level=level, changed_at=now)
        except IntegrityError:
            return None
        return (row, OPERATIONAL) if level != OPERATIONAL else None
    if known.level == level:
        return None
    old = known.level
    known.level, known.changed_at, known.version = level, now, known.version + 1
    known.save(update_fields=["level", "changed_at", "version"])
    return known, old


@transaction.atomic
def component_levels_sync(*, product_ids: Iterable[int] | None = None, now: datetime | None = None) -> int:
    """Announce every public product whose level differs from the one last announced
    (all public products, or those of `product_ids`); returns the changes found."""
    now = now or timezone.now()
    products = Product.objects.filter(is_public=True).order_by("pk")
    if product_ids is not None:
        products = products.filter(pk__in=list(product_ids))
    chosen = list(products)
    if not chosen:
        return 0
    levels = product_statuses(at=now, products=chosen)
    # Row locks: a tick and a writer comparing one product take turns.
    known = {
        row.product_id: row
        for row in ComponentLevel.objects.select_for_update().filter(product_id__in=[p.pk for p in chosen])
    }
    page: dict[str, Any] | None = None
    changes = 0
    for product in chosen:
        changed = _record(product, levels.get(product.pk, OPERATIONAL), known.get(product.pk), now)
        if changed is None:
            continue
        changes += 1
        if page is None:
            banner = status_summary(now=now).banner
            page = {
                "id": page_id(),
                "status_indicator": banner.indicator,
                "status_description": banner.description,
            }
        _announce(product=product, row=changed[0], old=changed[1], page=page)
    return changes


def on_incident_event(event: events.IncidentEvent) -> None:
    """Counted impact moved: announce at once when anyone listens (the tick keeps the
    record otherwise, so no change is announced late with a stale `old_status`)."""
    if event.kind != "impact_changed" or not event.products or not _has_listeners():
        return
    component_levels_sync(product_ids=event.products)
