"""The MCP server: the REST API's answers as tools for programs that speak the Model
Context Protocol (official `mcp` SDK). Design: docs/adr/0032-mcp-server.md.

Every tool is a thin adaptor over one REST request, run in process through Django's own
request handler (`api.internal.rest_call`) with the caller's key: the REST view is the one
code path that decides visibility (public or staff), filters, pagination, caching and
errors, so a tool's answer is the REST answer. The one figure the REST API has no
resource for, a product's level in one location, comes from the rule the product page
uses (`incidents.locations`).

Who calls: `CALLER`, set by the HTTP bridge (`api.mcp_view`) or the stdio command before
the SDK runs. Write tools refuse a read-only key, or a key whose owner's role does not
allow the action, before anything is written.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.utils import timezone
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from api.authentication import key_can_write
from api.internal import Caller, rest_call
from core import roles
from incidents import selectors
from incidents.locations import location_levels, locations_catalogue
from incidents.models import Location

CALLER: contextvars.ContextVar[Caller] = contextvars.ContextVar("mcp_caller")

SERVER = MCPServer(
    name="statuspage",
    instructions=(
        "Read this status page: the current status, one product's status (in one location), "
        "incidents in a time range, an incident's report, a product's uptime. Staff API keys "
        "whose role allows it may also draft an incident and post an update."
    ),
    # Names and arguments are the contract with clients; the SDK's duplicate warnings
    # would only mask a typo here.
    warn_on_duplicate_tools=False,
)


@dataclass(frozen=True)
class _Answer:
    status: int
    body: Any


def _rest(method: str, path: str, **kwargs: Any) -> Any:
    answer = _Answer(*rest_call(CALLER.get(), method, path, **kwargs))
    if answer.status >= 400:
        detail = answer.body.get("detail") if isinstance(answer.body, dict) else answer.body
        raise ToolError(f"HTTP {answer.status}: {detail or answer.body}")
    return answer.body


async def _rest_async(method: str, path: str, **kwargs: Any) -> Any:
    # thread_sensitive: under the HTTP bridge this runs in the WSGI request's own thread
    # (its database connection); under stdio, in the one thread asgiref keeps for it.
    return await sync_to_async(_rest, thread_sensitive=True)(method, path, **kwargs)


def _require(action: str) -> None:
    caller = CALLER.get()
    if caller.user is None:
        raise ToolError("This tool writes: send a staff API key with the write scope.")
    if not key_can_write(caller.key):
        raise ToolError(
            f"This API key is read-only: create a key with the write scope to {roles.ACTIONS[action]}."
        )
    if not roles.allowed(caller.user, action):
        raise ToolError(f"Your role does not allow you to {roles.ACTIONS[action]}.")


@SERVER.tool()
async def current_status() -> dict[str, Any]:
    """The page indicator and each public product's current status (GET /api/v1/status/)."""
    body: dict[str, Any] = await _rest_async("GET", "/api/v1/status/")
    return body


def _location_level(slug: str, location: str) -> dict[str, Any]:
    places = {loc.name: loc for loc in locations_catalogue()}
    if location not in places:
        raise ToolError(f"No location named {location!r}: one of {', '.join(sorted(places))}.")
    now = timezone.now()
    windows = selectors.windows_counted_between(since=now, until=now).filter(product__slug=slug)
    rows = {
        r.location.pk: r.level for r in location_levels(windows=windows, locations=places.values(), now=now)
    }
    # A zone is listed only where it differs from its region: climb to the listed place.
    place: Location | None = places[location]
    by_pk = {loc.pk: loc for loc in places.values()}
    while place is not None and place.pk not in rows:
        place = by_pk.get(place.parent_id) if place.parent_id else None
    return {
        "name": location,
        "label": places[location].label,
        "status": rows[place.pk] if place is not None else "operational",
    }


@SERVER.tool()
async def product_status(product: str, location: str | None = None) -> dict[str, Any]:
    """One product (by slug) as GET /api/v1/products/<slug>/ answers it; with `location`
    (a location name such as `us-central1`), also its status there, by the product page's
    rule: a window applies to its own place and every place below it."""
    body: dict[str, Any] = await _rest_async("GET", f"/api/v1/products/{product}/")
    if location is not None:
        body = {
            **body,
            "location": await sync_to_async(_location_level, thread_sensitive=True)(product, location),
        }
    return body


@SERVER.tool()
async def incidents(
    started_after: str | None = None,
    started_before: str | None = None,
    product: str | None = None,
    cursor: str | None = None,
) -> dict[str, Any]:
    """Incidents that started in [started_after, started_before) (ISO 8601 times), newest
    first, as GET /api/v1/incidents/ pages them (follow `next` with its `cursor`); the
    REST API validates the times."""
    query = {
        "started_after": started_after,
        "started_before": started_before,
        "product": product,
        "cursor": cursor,
    }
    body: dict[str, Any] = await _rest_async(
        "GET", "/api/v1/incidents/", query={k: v for k, v in query.items() if v is not None}
    )
    return body


@SERVER.tool()
async def incident_report(incident_id: str) -> dict[str, Any]:
    """An incident's report (GET /api/v1/incidents/<id>/report/)."""
    body: dict[str, Any] = await _rest_async("GET", f"/api/v1/incidents/{incident_id}/report/")
    return body


@SERVER.tool()
async def product_uptime(product: str, period: str = "90d") -> dict[str, Any]:
    """A public product's uptime for `period`: `90d` (the page's 90 days) or a month
    `YYYY-MM` of the last 12, from GET /api/v1/products/<slug>/uptime/."""
    body: dict[str, Any] = await _rest_async("GET", f"/api/v1/products/{product}/uptime/")
    if period == "90d":
        figures = body["last_90_days"]
    else:
        months = {m["month"]: m for m in body["months"]}
        if period not in months:
            raise ToolError(f"period must be `90d` or one of the months {', '.join(months)}.")
        figures = months[period]
    head = {k: body[k] for k in ("product", "time_zone", "weights", "rule")}
    return {**head, "period": period, "uptime": figures}


@SERVER.tool()
async def draft_incident(
    title: str, body: str = "", windows: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Draft an incident (not public until published on the console or the API), as POST
    /api/v1/incidents/ with `is_public: false`. `windows` as that endpoint takes them
    (`product`, `level`, `started_at`, optional `location`). Needs a write key of a role
    that may declare incidents."""
    await sync_to_async(_require, thread_sensitive=True)("incident.declare")
    data = {"title": title, "body": body, "is_public": False, "windows": windows or []}
    answer: dict[str, Any] = await _rest_async("POST", "/api/v1/incidents/", data=data)
    return answer


@SERVER.tool()
async def post_update(incident_id: str, status: str, body: str, notify: bool = True) -> dict[str, Any]:
    """Post a timeline update (POST /api/v1/incidents/<id>/updates/): its status becomes
    the incident's. Needs a write key of a role that may post updates."""
    await sync_to_async(_require, thread_sensitive=True)("incident.update")
    data = {"status": status, "body": body, "notify": notify}
    answer: dict[str, Any] = await _rest_async("POST", f"/api/v1/incidents/{incident_id}/updates/", data=data)
    return answer
