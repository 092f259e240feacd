"""The three formats a provider may publish, read into one shape. Pure: bytes in, a
`Read` out, `ParseError` for anything else (docs/adr/0031-upstream-providers.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urljoin

import feedparser

LEVELS = ("operational", "degraded_performance", "partial_outage", "major_outage", "under_maintenance")
_V2_IMPACT_LEVEL = {
    "none": "degraded_performance",
    "minor": "degraded_performance",
    "major": "partial_outage",
    "critical": "major_outage",
    "maintenance": "under_maintenance",
}
_GOOGLE_LEVEL = {
    "SERVICE_INFORMATION": "degraded_performance",
    "SERVICE_DISRUPTION": "partial_outage",
    "SERVICE_OUTAGE": "major_outage",
}
MAX_ITEMS = 500


class ParseError(Exception):
    pass


@dataclass(frozen=True)
class ComponentRead:
    external_id: str
    name: str
    status: str
    position: int = 0


@dataclass(frozen=True)
class IncidentRead:
    external_id: str
    title: str
    status: str
    level: str
    url: str = ""
    started_at: datetime | None = None
    updated_at: datetime | None = None
    resolved_at: datetime | None = None
    components: str = ""


@dataclass
class Read:
    components: list[ComponentRead] = field(default_factory=list)
    incidents: list[IncidentRead] = field(default_factory=list)
    # Statuspage lists every component: one missing from a read is gone. Google lists only
    # what incidents touch: a component it no longer names is back to operational.
    components_complete: bool = True
    # A summary lists only unresolved incidents: one kept but missing was resolved.
    incidents_open_only: bool = False


def _text(value: Any, limit: int) -> str:
    return " ".join(str(value or "").split())[:limit]


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _json(body: bytes) -> Any:
    try:
        return json.loads(body.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ParseError(f"not JSON: {str(exc)[:100]}") from None


def parse_statuspage(body: bytes) -> Read:
    data = _json(body)
    if not isinstance(data, dict) or not isinstance(data.get("components"), list):
        raise ParseError("not a Statuspage v2 summary (no components list)")
    read = Read(incidents_open_only=True)
    for position, item in enumerate(data["components"][:MAX_ITEMS]):
        if not isinstance(item, dict) or item.get("group") or not item.get("id"):
            continue
        status = item.get("status") if item.get("status") in LEVELS else "degraded_performance"
        read.components.append(
            ComponentRead(_text(item["id"], 200), _text(item.get("name"), 200) or "?", str(status), position)
        )
    names = {c.external_id: c.name for c in read.components}
    for item in (data.get("incidents") or [])[:MAX_ITEMS]:
        if not isinstance(item, dict) or not item.get("id"):
            continue
        affected = [
            names.get(str(c.get("id")), _text(c.get("name"), 100)) for c in item.get("components") or []
        ]
        read.incidents.append(
            IncidentRead(
                external_id=_text(item["id"], 200),
                title=_text(item.get("name"), 300) or "?",
                status=_text(item.get("status"), 40),
                level=_V2_IMPACT_LEVEL.get(str(item.get("impact")), "partial_outage"),
                url=_text(item.get("shortlink"), 500),
                started_at=_time(item.get("started_at") or item.get("created_at")),
                updated_at=_time(item.get("updated_at")),
                resolved_at=_time(item.get("resolved_at")),
                components=_text(", ".join(a for a in affected if a), 500),
            )
        )
    return read


def _google_components(item: dict[str, Any], level: str) -> list[ComponentRead]:
    products = [p for p in item.get("affected_products") or [] if isinstance(p, dict) and p.get("title")]
    locations = [loc for loc in item.get("currently_affected_locations") or [] if isinstance(loc, dict)]
    found = []
    for product in products:
        pid = _text(product.get("id") or product["title"], 100)
        for location in locations or [{}]:
            lid = _text(location.get("id"), 80)
            name = _text(product["title"], 120)
            if lid:
                name = f"{name} ({lid})"
            found.append(ComponentRead(f"{pid}/{lid}" if lid else pid, name, level))
    return found


def parse_google(body: bytes, *, base_url: str) -> Read:
    data = _json(body)
    if not isinstance(data, list):
        raise ParseError("not a Google-style incidents.json (not a list)")
    read = Read(components_complete=False)
    statuses: dict[str, ComponentRead] = {}
    for item in data[:MAX_ITEMS]:
        if not isinstance(item, dict) or not item.get("id"):
            continue
        level = _GOOGLE_LEVEL.get(str(item.get("status_impact")), "partial_outage")
        end = _time(item.get("end"))
        products = ", ".join(
            _text(p.get("title"), 100) for p in item.get("affected_products") or [] if isinstance(p, dict)
        )
        read.incidents.append(
            IncidentRead(
                external_id=_text(item["id"], 200),
                title=_text(item.get("external_desc"), 300) or "?",
                status="resolved" if end else _text((item.get("most_recent_update") or {}).get("status"), 40),
                level=level,
                url=urljoin(base_url, str(item.get("uri") or ""))[:500] if item.get("uri") else "",
                started_at=_time(item.get("begin")),
                updated_at=_time(item.get("modified")),
                resolved_at=end,
                components=_text(products, 500),
            )
        )
        if end is None:
            for component in _google_components(item, level):
                known = statuses.get(component.external_id)
                if known is None or LEVELS.index(level) > LEVELS.index(known.status):
                    statuses[component.external_id] = component
    read.components = list(statuses.values())
    return read


def parse_feed(body: bytes) -> Read:
    parsed = feedparser.parse(body)
    if parsed.get("bozo") and not parsed.entries:
        raise ParseError("not an Atom or RSS feed")
    read = Read(components_complete=False)
    for entry in parsed.entries[:MAX_ITEMS]:
        ident = entry.get("id") or entry.get("link") or entry.get("title")
        if not ident:
            continue
        stamp = entry.get("updated_parsed") or entry.get("published_parsed")
        when = datetime(*stamp[:6]).replace(tzinfo=UTC) if stamp else None
        read.incidents.append(
            IncidentRead(
                external_id=_text(ident, 200),
                title=_text(entry.get("title"), 300) or "?",
                status="",
                level="",
                url=_text(entry.get("link"), 500),
                started_at=when,
                updated_at=when,
            )
        )
    return read


def parse(kind: str, body: bytes, *, url: str) -> Read:
    if kind == "statuspage_v2":
        return parse_statuspage(body)
    if kind == "google":
        return parse_google(body, base_url=url)
    if kind == "feed":
        return parse_feed(body)
    raise ParseError(f"unknown provider kind {kind!r}")
