"""How the API describes itself: who may call each operation, the headers every write
takes, and the webhooks we send.

- Operations open to anonymous callers declare `security: [{}, bearerAuth, tokenAuth, ...]`
  (anonymous first), so generated clients and Swagger UI allow calls without a key;
  the Statuspage v2 and Google feeds declare `security: [{}]`: public, no key.
- Every POST documents `Idempotency-Key`; every PATCH/DELETE documents `If-Match`.
- `webhooks` (OpenAPI 3.1) documents every event we POST to webhook subscribers, with
  the headers, the signature and an example payload.
- /api/schema/ is served by api.schema_view (built once, throttled).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.permissions import SAFE_METHODS

from api.idempotency import KEY_PATTERN, MAX_KEY_LENGTH
from api.pagination import MAX_PAGE_SIZE
from api.schema_headers import declare_headers
from api.serializers import StrictSerializer

DESCRIPTION = f"""\
Incidents, impact, incident reports and SLA credits, as JSON.

## Authentication
Public data (status, products, locations, public incidents and maintenance, the
Statuspage v2 and Google feeds) is readable **without a key**. Staff data and every
write need a staff **API key**:

1. Sign in as a staff user and open `/api/keys/`.
2. Create a key, give it a name and a scope: `read` (staff reads) or `write` (reads and
   writes). The key is shown **once**; only a hash is stored. Revoke it on the same page.
3. Send it as `Authorization: Bearer <key>` (or, equivalently, `Authorization: Token <key>`).

A header with any other scheme, or an unknown or revoked key, is a `401`, never a silent
anonymous read. A valid key of a non-staff user, or a read key trying to write, is a `403`.

## Conventions
- **Errors** are RFC 9457 problem details (`application/problem+json`): `type`, `title`,
  `status`, `detail`, `instance`, and our extensions `code` (stable), `errors` (maps paths
  such as `windows.1.ended_at` to messages) and `request_id` (as in `X-Request-ID`).
  The older `error` object is deprecated.
- **Request ids**: every response carries `X-Request-ID` (yours, if you send a sane one).
- **Strict types**: a string field takes a string, a boolean `true`/`false`, a date-time
  an ISO 8601 string with a zone; anything else is a `400` naming the field.
- **Strict input**: an unknown body field or query parameter is a `400` naming it.
- **Identifiers**: incidents and maintenance by their string `id`; products by `slug` or
  `id` (both are accepted in paths and in `?product=`); locations by `name`; windows and
  timeline updates by integer `id` under their incident.
- **Created** resources answer `201` with a `Location` header; posting a timeline update
  returns the update.
- **Idempotency**: send `Idempotency-Key: <unique string>` on any POST. A retry with the
  same key and body gets the first response again (with `Idempotent-Replayed: true`); the
  same key with a different body is a `422`. Keys are remembered for 24 hours.
- **Concurrency**: detail responses carry an `ETag`; send it back as `If-Match` on
  PATCH/DELETE to get a `412` instead of overwriting someone else's change.
- **Caching**: public reads carry `ETag`/`Last-Modified` and answer `304` to conditional GETs.
- **Paths** end with a slash; without it you get a `308` redirect to it.

## Limits
- Lists are cursor pages: follow `next`/`previous` (also in the `Link` header); rows
  inserted while you page are neither repeated nor skipped. `page_size` defaults to 50,
  at most {MAX_PAGE_SIZE} (more, or a bad `cursor`, is a `400`).
- Rate limits per client address (anonymous) or per user (keys); every v1 response
  carries `RateLimit-Policy` (`"token";q=1200;w=60`) and `RateLimit` (`"token";r=1187;t=42`),
  per the IETF httpapi draft, and a `429` carries `Retry-After`.
- Request bodies are JSON only; a body over the size limit is a `413`.

## Webhooks
Webhook subscribers receive a JSON `POST` per event, signed per Standard Webhooks 1.0
(`webhook-id`, `webhook-timestamp`, `webhook-signature`); see **Webhooks** below for every
event, its payload and the headers.
"""

IDEMPOTENCY_PARAMETER = OpenApiParameter(
    "Idempotency-Key",
    str,
    OpenApiParameter.HEADER,
    required=False,
    pattern=KEY_PATTERN,
    description=(
        f"Any unique string of printable ASCII, at most {MAX_KEY_LENGTH} characters (e.g. a UUID). "
        "A retry with the same key and body replays the first response; the same key with a "
        "different body is a 422."
    ),
)
IF_MATCH_PARAMETER = OpenApiParameter(
    "If-Match",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description="The `ETag` you last read; a 412 if the resource changed since.",
)


def decimal_pattern(field: serializers.DecimalField) -> str:
    """The strings a DecimalField input accepts, as a pattern.

    drf-spectacular's own (`^-?\\d{0,3}(?:\\.\\d{0,3})?$`) also matches "", "-" and ".",
    which are refused, and says nothing of the bounds. The bounds our models use are
    written in: a minimum of 0 (no sign) or above 0 (positive), and a maximum that is a
    power of ten (1 for weights, 100 for percentages).
    """
    places = field.decimal_places or 0
    whole: int | None = None if field.max_digits is None else field.max_digits - places
    low = None if field.min_value is None else Decimal(field.min_value)
    high = None if field.max_value is None else Decimal(field.max_value)
    fraction = rf"(?:\.\d{{0,{places}}})?" if places else ""
    top = ""
    if high is not None and high > 0 and high == 10 ** int(high.log10()):
        whole = int(high.log10())  # below the maximum, this many whole digits at most
        top = f"|{int(high)}" + (rf"(?:\.0{{0,{places}}})?" if places else "")
    if low is not None and low > 0:
        # Positive: a whole part that is not zero, or a fraction with a digit that is not.
        branches = (
            [rf"[1-9]\d{{0,{whole - 1}}}{fraction}" if whole else rf"[1-9]\d*{fraction}"]
            if whole != 0
            else []
        )
        branches += [rf"0?\.0{{{zeros}}}[1-9]\d{{0,{places - zeros - 1}}}" for zeros in range(places)]
        return "^(?:" + "|".join(branches) + top + ")$"
    sign = "" if low is not None and low >= 0 else "-?"
    digits = "0" if whole == 0 else (rf"\d{{1,{whole}}}" if whole else r"\d+")
    fractional_only = rf"|\.\d{{1,{places}}}" if places else ""
    return f"^{sign}(?:{digits}{fraction}{fractional_only}{top})$"


class APIAutoSchema(AutoSchema):
    def _map_serializer(
        self, serializer: Any, direction: str, bypass_extensions: bool = False
    ) -> dict[str, Any]:
        schema: dict[str, Any] = super()._map_serializer(serializer, direction, bypass_extensions)
        if direction == "request" and isinstance(serializer, StrictSerializer):
            # The API refuses any field it does not know (400 naming it): say so.
            schema["additionalProperties"] = False
        return schema

    def _map_serializer_field(
        self, field: Any, direction: str, bypass_extensions: bool = False
    ) -> dict[str, Any]:
        schema: dict[str, Any] = super()._map_serializer_field(field, direction, bypass_extensions)
        if isinstance(field, serializers.DecimalField) and "pattern" in schema and direction == "request":
            schema["pattern"] = decimal_pattern(field)
        return schema

    def _insert_field_validators(self, field: Any, schema: dict[str, Any]) -> None:
        super()._insert_field_validators(field, schema)
        branches = schema.get("oneOf")
        if (
            branches
            and len(branches) == 2
            and branches[1] == {"type": "string", "maxLength": 0}
            and "format" not in branches[0]
            and re.search(branches[0].get("pattern", "(?!)"), "")
        ):
            # drf-spectacular's `oneOf [pattern, empty]` for a blank-allowed field: when the
            # pattern matches "" too, "" would match both branches, which oneOf refuses.
            del schema["oneOf"]
            schema.update(branches[0])

    def get_auth(self) -> list[dict[str, Any]]:
        auths = super().get_auth()
        anonymous_reads = any(
            getattr(permission, "anonymous_reads", False) for permission in self.view.get_permissions()
        )
        if anonymous_reads and self.method in SAFE_METHODS and {} not in auths:
            auths = [{}, *auths]
        return auths

    def get_override_parameters(self) -> list[Any]:
        parameters = list(super().get_override_parameters())
        if self.method == "POST":
            parameters.append(IDEMPOTENCY_PARAMETER)
        elif self.method in ("PATCH", "PUT", "DELETE"):
            parameters.append(IF_MATCH_PARAMETER)
        return parameters


# --- Webhooks ------------------------------------------------------------------------------

WEBHOOK_EVENTS: dict[str, str] = {
    "incident.opened": "An incident was opened.",
    "incident.updated": "A timeline update was posted on an open incident.",
    "incident.resolved": "The incident was resolved.",
    "incident.report_published": "The incident report was published (`report` is set).",
    "maintenance.scheduled": "A maintenance was scheduled.",
    "maintenance.reminder": "A scheduled maintenance starts soon.",
    "maintenance.started": "The maintenance began.",
    "maintenance.updated": "A timeline update was posted on a maintenance.",
    "maintenance.completed": "The maintenance is over.",
    "test": (
        "Sent from the admin's *Send test event* action or `POST /api/v1/subscribers/{id}/test-event/`, "
        "to check a receiver; `incident` is a sample."
    ),
}

_NULLABLE_STRING = {"type": ["string", "null"]}
_NULLABLE_TIME = {"type": ["string", "null"], "format": "date-time"}

WEBHOOK_PAYLOAD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "The body of every webhook POST. Its `meta.event` equals the `X-Status-Event` header.",
    "required": ["meta", "page", "incident", "update", "report"],
    "properties": {
        "meta": {
            "type": "object",
            "required": ["event", "id", "generated_at"],
            "properties": {
                "event": {"type": "string", "enum": list(WEBHOOK_EVENTS)},
                "id": {"type": "string", "description": "Stable per event: deduplicate on it."},
                "generated_at": {"type": "string", "format": "date-time"},
            },
        },
        "page": {
            "type": "object",
            "required": ["name", "url"],
            "properties": {"name": {"type": "string"}, "url": {"type": "string"}},
        },
        "incident": {
            "type": "object",
            "required": ["id", "name", "kind", "status", "impact", "shortlink", "components"],
            "properties": {
                "id": {"type": "string"},
                "name": {"type": "string"},
                "kind": {"type": "string", "enum": ["incident", "maintenance"]},
                "status": {"type": "string"},
                "impact": {"type": "string"},
                "shortlink": {"type": "string", "description": "The incident's public page."},
                "started_at": _NULLABLE_TIME,
                "resolved_at": _NULLABLE_TIME,
                "scheduled_for": _NULLABLE_TIME,
                "scheduled_until": _NULLABLE_TIME,
                "components": {
                    "type": "array",
                    "description": "Affected public products.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string"},
                            "name": {"type": "string"},
                            "slug": {"type": "string"},
                        },
                    },
                },
            },
        },
        "update": {
            "oneOf": [
                {
                    "type": "object",
                    "properties": {
                        "id": {"type": "integer"},
                        "status": {"type": "string"},
                        "body": {"type": "string", "description": "Markdown."},
                        "display_at": _NULLABLE_TIME,
                    },
                },
                {"type": "null"},
            ],
            "description": "The timeline update behind the event, when there is one.",
        },
        "report": {
            "oneOf": [
                {
                    "type": "object",
                    "properties": {
                        "kind": {"type": "string"},
                        "summary": {"type": "string"},
                        "published_at": _NULLABLE_TIME,
                        "url": {"type": "string"},
                    },
                },
                {"type": "null"},
            ],
            "description": "Set on `incident.report_published` only.",
        },
    },
}

WEBHOOK_HEADERS: list[dict[str, Any]] = [
    # Issue 31: Standard Webhooks 1.0 (https://www.standardwebhooks.com/).
    {
        "name": "webhook-id",
        "in": "header",
        "required": True,
        "description": "The delivery's id (`msg_...`), signed, and the same on every retry of it: deduplicate on it.",
        "schema": {"type": "string"},
    },
    {
        "name": "webhook-timestamp",
        "in": "header",
        "required": True,
        "description": "Unix seconds when this attempt was signed; refuse old ones.",
        "schema": {"type": "string"},
    },
    {
        "name": "webhook-signature",
        "in": "header",
        "required": True,
        "description": (
            "`v1,` + base64 HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<raw body>`, keyed with the "
            "subscriber's `whsec_` secret (base64 after the prefix). Any Standard Webhooks library verifies it."
        ),
        "schema": {"type": "string"},
    },
    {
        "name": "X-Status-Event",
        "in": "header",
        "required": True,
        "description": "The event name, as in `meta.event`.",
        "schema": {"type": "string", "enum": list(WEBHOOK_EVENTS)},
    },
    {
        "name": "X-Status-Delivery",
        "in": "header",
        "required": True,
        "description": "Unique per delivery (stable across retries of it).",
        "schema": {"type": "string"},
    },
    {
        "name": "X-Status-Timestamp",
        "in": "header",
        "required": False,
        "deprecated": True,
        "description": "Deprecated (sunset 2027-06-07): only for secrets of the old form; as `webhook-timestamp`.",
        "schema": {"type": "string"},
    },
    {
        "name": "X-Status-Signature",
        "in": "header",
        "required": False,
        "deprecated": True,
        "description": (
            "Deprecated (sunset 2027-06-07; docs/subscriptions.md): only for secrets of the old (hex) form, "
            "`sha256=` + hex HMAC-SHA256 of `<X-Status-Timestamp>.<raw body>` with the secret."
        ),
        "schema": {"type": "string"},
    },
]


def example_payload(event: str) -> dict[str, Any]:
    maintenance = event.startswith("maintenance.")
    return {
        "meta": {"event": event, "id": f"{event}:abc123def456", "generated_at": "2026-10-09T11:06:00+00:00"},
        "page": {"name": "Example", "url": "https://status.example.com"},
        "incident": {
            "id": "abc123def456",
            "name": "Planned network work" if maintenance else "Elevated write latency",
            "kind": "maintenance" if maintenance else "incident",
            "status": "scheduled" if maintenance else "investigating",
            "impact": "none" if maintenance else "minor",
            "shortlink": "https://status.example.com/incidents/abc123def456/",
            "started_at": "2026-10-09T11:05:00+00:00",
            "resolved_at": "2026-10-09T12:40:00+00:00" if event.endswith(("resolved", "completed")) else None,
            "scheduled_for": "2026-10-10T02:00:00+00:00" if maintenance else None,
            "scheduled_until": "2026-10-10T04:00:00+00:00" if maintenance else None,
            "components": [{"id": "p1x2y3z4w5v6", "name": "Cloud Storage", "slug": "cloud-storage"}],
        },
        "update": None
        if event in ("incident.report_published", "maintenance.reminder", "test")
        else {
            "id": 42,
            "status": "investigating",
            "body": "We are looking into it.",
            "display_at": "2026-10-09T11:06:00+00:00",
        },
        "report": {
            "kind": "full",
            "summary": "Request routers ran out of headroom.",
            "published_at": "2026-10-11T09:00:00+00:00",
            "url": "https://status.example.com/incidents/abc123def456/",
        }
        if event == "incident.report_published"
        else None,
    }


def webhooks() -> dict[str, Any]:
    result: dict[str, Any] = {}
    for event, description in WEBHOOK_EVENTS.items():
        result[event] = {
            "post": {
                "operationId": "webhook_" + event.replace(".", "_"),
                "summary": f"Event `{event}`",
                "description": description,
                "tags": ["webhooks"],
                "parameters": WEBHOOK_HEADERS,
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {"$ref": "#/components/schemas/WebhookPayload"},
                            "examples": {event.replace(".", "_"): {"value": example_payload(event)}},
                        }
                    },
                },
                "responses": {
                    "200": {"description": "Any 2xx: delivered."},
                    "400": {"description": "Any other 4xx (but 408, 425, 429): given up, not retried."},
                    "503": {"description": "408, 425, 429 or any 5xx (or no answer): retried with backoff."},
                },
                "security": [],
            }
        }
    return result


# Descriptions of operations whose views say only a summary; kept here, written for the
# consumer, so the resource modules stay about behaviour.
OPERATION_DESCRIPTIONS: dict[str, str] = {
    "action_items_list": "Follow-up work from incidents, filtered by incident and status (staff key).",
    "action_items_create": "File follow-up work against an incident; answers 201 with `Location` (write key).",
    "action_items_retrieve": "One action item by its integer id (staff key).",
    "credit_notices_list": "Notices, newest month first; filter by `period` (`YYYY-MM`) and `state` (staff key).",
    "credit_notices_retrieve": "One notice with its computed credit and delivery state (staff key).",
    "credit_notices_cancel_create": "Cancel a notice that has not been sent; a sent one stays (write key).",
    "credit_notices_compute_create": (
        "Compute (or recompute) the month's notices for review; nothing is sent until approved (write key)."
    ),
    "customers_list": "Customers with their entitlements, by name (staff key).",
    "customers_create": "Create a customer with entitlements; answers 201 with `Location` (write key).",
    "customers_retrieve": "One customer by its integer id (staff key).",
    "customers_partial_update": "Change a customer; entitlements sent are added (write key).",
    "incidents_retrieve": (
        "One incident by id, as the caller may see it (public windows only for anonymous callers). "
        "Carries an `ETag` for conditional GETs and for `If-Match` on writes."
    ),
    "incidents_updates_retrieve": "One timeline update of the incident (the `Location` of a posted update).",
    "incidents_windows_retrieve": "One impact window of the incident (the `Location` of an added window).",
    "locations_list": "Regions and zones, by name; a zone names its region in `parent`.",
    "locations_retrieve": "One location by its name (e.g. `us-central1`).",
    "maintenance_list": "Scheduled maintenance, soonest last by default; the same filters as incidents.",
    "maintenance_retrieve": "One maintenance by id, with its window of time and affected products.",
    "maintenance_updates_retrieve": "One timeline update of the maintenance.",
    "maintenance_windows_retrieve": "One impact window of the maintenance.",
    "sla_policies_list": "SLA policies with their targets, level weights and credit tiers (staff key).",
    "sla_policies_create": "Create a policy with its tiers; answers 201 with `Location` (write key).",
    "sla_policies_retrieve": "One SLA policy by its integer id (staff key).",
    "subscribers_list": "Email and webhook subscribers, filtered by kind, confirmation and product (staff key).",
    "subscribers_retrieve": "One subscriber by its integer id; webhook secrets are never shown (staff key).",
}


_CONFIRMED = {"confirm": {"const": True}}
_SOME_IDS = {"ids": {"minItems": 1}}
# Request bodies whose fields are required in combination, which a serializer cannot
# declare: a send preview needs a period or some ids; an approval needs a confirmation
# token, or a period or ids with `"confirm": true`.
REQUIRED_TOGETHER: dict[str, list[dict[str, Any]]] = {
    "PreviewRequest": [
        {"required": ["period"]},
        {"required": ["ids"], "properties": _SOME_IDS},
    ],
    "ApproveRequest": [
        {"required": ["confirmation"]},
        {"required": ["period", "confirm"], "properties": _CONFIRMED},
        {"required": ["ids", "confirm"], "properties": {**_SOME_IDS, **_CONFIRMED}},
    ],
}


def postprocess(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    result["info"]["description"] = DESCRIPTION
    schemas = result.get("components", {}).get("schemas", {})
    for name, alternatives in REQUIRED_TOGETHER.items():
        if name in schemas:
            schemas[name]["anyOf"] = alternatives
    together = {f"#/components/schemas/{name}" for name in REQUIRED_TOGETHER}
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            body = operation.get("requestBody") if isinstance(operation, dict) else None
            if body and body["content"].get("application/json", {}).get("schema", {}).get("$ref") in together:
                body["required"] = True
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            if isinstance(operation, dict) and not operation.get("description"):
                described = OPERATION_DESCRIPTIONS.get(operation.get("operationId", ""))
                if described:
                    operation["description"] = described
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            # Operations that take no credentials at all (the v2 and Google feeds).
            if isinstance(operation, dict) and not operation.get("security"):
                operation["security"] = [{}]
    result.setdefault("components", {}).setdefault("schemas", {})["WebhookPayload"] = WEBHOOK_PAYLOAD_SCHEMA
    result["webhooks"] = webhooks()
    declare_headers(result)
    _add_tags(result)
    return result


def _add_tags(result: dict[str, Any]) -> None:
    # A copy: the list may be the one in settings, which must not grow with every build.
    tags = result["tags"] = list(result.get("tags", []))
    named = {tag.get("name") for tag in tags}
    tags += [{"name": name, "description": text} for name, text in EXTRA_TAGS.items() if name not in named]


EXTRA_TAGS = {
    "webhooks": "Events we POST to webhook subscribers (signed).",
    "keys": "API keys: the caller's own (list, create shown once, expiry, revoke); every user's for administrators.",
}
