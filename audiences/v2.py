"""One page's Statuspage v2 documents (summary, status, components, incidents), with that
format's field names, built from `audiences.selectors.page_view`. An update's extra words
for the page's readers ride in `audience_message` / `internal_note`, fields Statuspage
clients ignore."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.http import HttpRequest

from audiences.selectors import IncidentEntry, PageView


def _iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value else None


def _page(view: PageView, request: HttpRequest) -> dict[str, Any]:
    page = view.page
    return {
        "id": page.slug,
        "name": page.title,
        "url": request.build_absolute_uri(f"/p/{page.slug}/"),
        "updated_at": _iso(page.updated_at),
    }


def _components(view: PageView) -> list[dict[str, Any]]:
    return [
        {
            "id": row.product.public_id,
            "name": row.product.name,
            "status": row.level,
            "position": position,
            "description": row.product.description or None,
            "created_at": _iso(row.product.created_at),
            "updated_at": _iso(row.product.updated_at),
            "page_id": view.page.slug,
            "group": False,
            "group_id": None,
            "showcase": True,
            "only_show_if_degraded": False,
            "start_date": None,
        }
        for position, row in enumerate(view.products, start=1)
    ]


def _incident(entry: IncidentEntry, view: PageView) -> dict[str, Any]:
    incident = entry.incident
    products = {w.product.public_id: w.product for w in entry.windows}
    updates = []
    for item in entry.updates:
        data = {
            "id": str(item.update.pk),
            "status": item.update.status,
            "body": item.update.body,
            "incident_id": incident.public_id,
            "created_at": _iso(item.update.created_at),
            "updated_at": _iso(item.update.edited_at or item.update.created_at),
            "display_at": _iso(item.update.display_at),
        }
        if item.audience_message:
            data["audience_message"] = item.audience_message
        if item.internal_note:
            data["internal_note"] = item.internal_note
        updates.append(data)
    return {
        "id": incident.public_id,
        "name": incident.title,
        "status": incident.status,
        "impact": incident.impact,
        "created_at": _iso(incident.created_at),
        "updated_at": _iso(incident.updated_at),
        "started_at": _iso(incident.started_at),
        "resolved_at": _iso(incident.resolved_at),
        "page_id": view.page.slug,
        "duration_minutes": int(entry.durations.total.total_seconds() // 60),
        "incident_updates": updates,
        "components": [{"id": pid, "name": p.name} for pid, p in products.items()],
    }


def build(part: str, *, view: PageView, request: HttpRequest) -> dict[str, Any]:
    page = _page(view, request)
    status = {"indicator": view.banner.indicator, "description": view.banner.description}
    if part == "status":
        return {"page": page, "status": status}
    if part == "components":
        return {"page": page, "components": _components(view)}
    incidents = [_incident(e, view) for e in (*view.active, *view.recent)]
    if part == "incidents":
        return {"page": page, "incidents": incidents}
    return {
        "page": page,
        "status": status,
        "components": _components(view),
        "incidents": [i for i in incidents if i["resolved_at"] is None],
    }
