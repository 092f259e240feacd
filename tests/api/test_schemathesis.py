"""Schema-driven fuzzing of the whole API (R20): zero failures of any check.

Every schemathesis check runs. Schemathesis reads /api/schema/ from the WSGI app and
generates requests for every operation, valid ones and (for query strings and bodies)
invalid ones. Each response must be a non-5xx, with a documented status code, content
type and body shape; a request the schema calls valid must be accepted
(positive_data_acceptance) and one it calls invalid refused (negative_data_rejection).
The run is made twice, anonymously and with a staff token; anonymously, no write may
succeed. Bounded by MAX_EXAMPLES and derandomised, so it is repeatable.

What no schema can state is supplied from the live data (see `_realistic`): ids of
things that exist, and times relative to now or to each other. Only valid cases are
touched; invalid ones are sent as generated.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
import schemathesis
import schemathesis.specs.openapi.checks
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import CHECKS as CHECKS_REGISTRY
from schemathesis.generation.modes import GenerationMode

from alerts import services as alert_services
from credits import confirm
from credits import services as credit_services
from incidents.models import ActionItem, ImpactWindow, Incident, IncidentReport, IncidentUpdate, ProductGroup
from tests.api.conftest import World

pytestmark = pytest.mark.django_db

MAX_EXAMPLES = 10
CHECKS = CHECKS_REGISTRY.get_all()
UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}


@pytest.fixture
def wsgi_app(settings: Any) -> Iterator[Any]:
    # The app runs in the test's transaction: keep Django from closing the connection
    # at the end of each request, as the test client does.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"anon": "1000000/min", "token": "1000000/min", "schema": "1000/min"},
    }
    # The fuzzer sends bad credentials on purpose, far more than a real client would.
    settings.API_AUTH_FAILURE_LIMIT = 1_000_000
    # Issue 31 (subscribers): webhook URLs the fuzzer makes are not looked up in DNS.
    settings.WEBHOOK_ALLOW_PRIVATE = True
    try:
        yield get_wsgi_application()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def _state() -> tuple[int, ...]:
    return (
        Incident.objects.count(),
        IncidentUpdate.objects.count(),
        ImpactWindow.objects.count(),
        IncidentReport.objects.count(),
        ActionItem.objects.count(),
    )


# Body fields naming something that must exist: {field: key of the live values}.
LIVE_IDS = {
    "incident": "incidents",
    "recurrence_of": "incidents",
    "product": "products",
    "location": "locations",
    "policy": "policies",
    "owner": "staff",
    # Issue 31, administration.
    "integration": "integrations",
    "default_product": "products",
    # Issue 31, catalogue: a location inside another (a region).
    "parent": "regions",
    # Issue 32: a link's other incident (api/postmortems.py).
    "to_incident": "incidents",
    # A product's group, by name (api/catalogue): made-up names are rightly a 400.
    "group": "groups",
}
# Times, in the order they must come (an end not before its start, detection not before
# the start of impact, ...). The schema says each bound in words: JSON Schema cannot
# compare a date-time with now or with another field.
TIME_ORDER = [
    "scheduled_for",
    "started_at",
    "detected_at",
    "first_update_at",
    "display_at",
    "at",  # issue 32: a timeline entry's time (not in the future)
    "ended_at",
    "resolved_at",
    "published_at",
    "scheduled_until",
]


_KEYS = itertools.count()


def _live(world: World) -> dict[str, list[Any]]:
    policy = credit_services.policy_create(
        name="Fuzzing standard", target=Decimal("99.9"), tiers=[(Decimal("99.9"), Decimal("3"))]
    )
    incidents = [world.outage, world.ongoing, world.drafted, world.hidden, world.maintenance]
    return {
        "incidents": [i.public_id for i in incidents],
        "products": [world.gmail.slug, world.storage.slug, world.internal.slug],
        "locations": [world.region.name, world.zone.name],
        "regions": [world.region.name],
        "groups": [ProductGroup.objects.get_or_create(name="Fuzzing group")[0].name],
        "policies": [policy.pk],
        "staff": ["alice"],
        "integrations": [
            alert_services.integration_create(
                name="Fuzzing alerts", kind="alertmanager", default_product=world.storage
            ).pk
        ],
    }


def _realistic(case: Any, draw: Callable[[Any], Any], live: dict[str, list[Any]]) -> None:
    """Make a valid case valid against the live data too: what the schema cannot say.

    - ids of things that exist (an incident, a product, a policy...), drawn from `live`;
      a made-up id is rightly a 400, and no schema can list the live ids;
    - times between 1970 and now, in their documented order (`TIME_ORDER`);
    - SLA policy names unique and tiers with distinct thresholds (checked against the
      other policies and tiers, not expressible per value);
    - a credit period that has started, and an approval token that send-preview issued;
    - a fresh Idempotency-Key;
    - no made-up `cursor`: a cursor is opaque, valid only as a `next`/`previous` link
      gave it (a forged one is rightly a 400); paging itself is tested in test_standards.
    """
    if case.query and "cursor" in case.query:
        del case.query["cursor"]
    if case.headers and "If-Match" in case.headers:
        del case.headers["If-Match"]  # a made-up ETag is rightly a 412, like a made-up cursor
    if case.headers and "Idempotency-Key" in case.headers:
        # A key already used with another body is rightly a 422: keys are live state too.
        case.headers["Idempotency-Key"] = f"fuzz-{next(_KEYS)}"
    body = case.body
    if not isinstance(body, dict):
        return
    times: list[tuple[int, dict[str, Any], str]] = []

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
            return
        if not isinstance(node, dict):
            return
        for key, value in node.items():
            if key in LIVE_IDS and isinstance(value, str | int) and not isinstance(value, bool):
                node[key] = draw(st.sampled_from(live[LIVE_IDS[key]]))
            elif key in TIME_ORDER and isinstance(value, str):
                times.append((TIME_ORDER.index(key), node, key))
            elif key == "host" and isinstance(value, str) and value:
                # A page's host name: the service refuses a malformed one (a 400, rightly).
                node[key] = f"fuzz-{next(_KEYS)}.example.com"
            elif key == "allowed_networks" and isinstance(value, list):
                node[key] = ["203.0.113.0/24"][: len(value)]  # address ranges, checked likewise
            elif key == "tracker_url" and isinstance(value, str) and value:
                # JSON Schema's `uri` admits "https://" (no host); Django's URLField rightly refuses it.
                node[key] = "https://tracker.example.com/issues/1"
            else:
                walk(value)

    walk(body)
    now = timezone.now()
    drawn = sorted(
        draw(
            st.datetimes(
                min_value=datetime(1970, 1, 2), max_value=(now - timedelta(hours=1)).replace(tzinfo=None)
            )
        )
        for _ in times
    )
    for moment, (_, node, key) in zip(drawn, sorted(times, key=lambda entry: entry[0]), strict=True):
        node[key] = moment.replace(tzinfo=UTC).isoformat()
    path = case.operation.path
    if path.endswith("/sla-policies/") and isinstance(body.get("name"), str):
        body["name"] = f"{body['name'][:90]} {next(_KEYS)}"
    _realistic_admin(case, body, draw, now)
    if isinstance(body.get("tiers"), list):
        seen: set[Decimal] = set()
        kept = []
        for tier in body["tiers"]:
            below = Decimal(tier["below"]) if isinstance(tier, dict) and "below" in tier else None
            if below not in seen:
                kept.append(tier)
                seen.add(below)  # type: ignore[arg-type]
        body["tiers"] = kept
    if path.endswith("/compute/") and isinstance(body.get("period"), str):
        body["period"] = f"{draw(st.integers(1970, now.year - 1)):04d}-{draw(st.integers(1, 12)):02d}"
    if isinstance(body.get("confirmation"), str):
        body["confirmation"] = confirm.send_plan(ids=[]).token
    if path.endswith("/subscribers/"):
        _realistic_subscriber(body, live)
    if path.startswith("/api/v1/pages/"):
        _realistic_page(body, live)
    if "/templates/" in path and body.get("kind") == "incident" and not str(body.get("title", "")).strip():
        body["title"] = "Templated incident"  # the schema says it in words: incident templates need one


def _realistic_page(body: dict[str, Any], live: dict[str, list[Any]]) -> None:
    """Issue 33: a page's slug is free (and not a reserved word), a public page lists
    public products only, only an audience page names customers, and the lists name
    things that exist."""
    if "slug" in body:
        body["slug"] = f"fuzz-{next(_KEYS)}"
    if "products" in body:
        body["products"] = live["products"][:2]  # the public ones
    if "locations" in body:
        body["locations"] = live["locations"][:1]
    if "customers" in body:
        body["customers"] = []


# Issue 31 (subscribers): what a subscriber's create needs besides its schema: an address
# not subscribed yet, a URL on the kind's documented host, a known product, a real zone.
HOOK_URLS = {
    "webhook": "https://hooks.example.com/fuzz-{n}",
    "slack": "https://hooks.slack.com/services/fuzz-{n}",
    "teams": "https://fuzz.webhook.office.com/in-{n}",
}


def _realistic_subscriber(body: dict[str, Any], live: dict[str, list[Any]]) -> None:
    n = next(_KEYS)
    kind = body.get("kind", "email")
    body["email"] = f"fuzz-{n}@example.com"
    if kind in HOOK_URLS:
        body["url"] = HOOK_URLS[kind].format(n=n)
    elif "url" in body:
        body["url"] = ""
    if kind != "webhook" and "payload_format" in body:
        body["payload_format"] = "native"
    if "time_zone" in body:
        body["time_zone"] = "UTC"
    if body.get("all_products") is False or "products" in body:
        body["products"] = live["products"][:2]  # the public ones


def _realistic_admin(case: Any, body: dict[str, Any], draw: Callable[[Any], Any], now: datetime) -> None:
    """Issue 31: integration names are unique; a new rule is not a second default and
    matches something (the default rule made with its integration catches the rest); a
    key's expiry is in the future."""
    path = case.operation.path
    if path.endswith("/alert-integrations/") and isinstance(body.get("name"), str):
        body["name"] = f"{body['name'][:90]} {next(_KEYS)}"
    if path.endswith("/alert-rules/") and case.method.upper() == "POST":
        body["is_default"] = False
        if not body.get("matchers"):
            body["matchers"] = {"service": "storage"}
    if isinstance(body.get("expires_at"), str):
        body["expires_at"] = (now + timedelta(minutes=draw(st.integers(1, 10**6)))).isoformat()


def _fuzz(app: Any, headers: dict[str, str], live: dict[str, list[Any]], *, anonymous: bool) -> Counter[int]:
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", app)
    # Straight into the WSGI app, nothing decodes gzip as an HTTP client would: ask for
    # the plain bytes (compression has its own tests, tests/edge/test_compress.py).
    headers = {**headers, "Accept-Encoding": "identity"}
    statuses: Counter[int] = Counter()
    for result in schema.get_all_operations():
        operation = result.ok()  # type: ignore[union-attr]
        modes = [GenerationMode.POSITIVE, GenerationMode.NEGATIVE]
        strategy = st.one_of(*(operation.as_strategy(generation_mode=mode) for mode in modes))

        @settings(
            max_examples=MAX_EXAMPLES,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=strategy, data=st.data())
        def run(case: Any, data: st.DataObject) -> None:
            if case.meta.generation.mode.is_positive:
                _realistic(case, data.draw, live)
            response = case.call(headers=headers)
            statuses[response.status_code] += 1
            case.validate_response(response, checks=CHECKS, headers=headers)
            if anonymous and case.method.upper() in UNSAFE:
                # 401 from the view, or 404 when the generated path matches no route at all.
                assert response.status_code in (401, 404), (case.method, case.path, response.status_code)

        run()
    return statuses


def test_it_survives_anonymous_fuzzing_and_no_write_succeeds(wsgi_app: Any, world: World) -> None:
    live = _live(world)
    before = _state()
    statuses = _fuzz(wsgi_app, {}, live, anonymous=True)
    assert statuses.total() > 100
    assert {200, 401} <= set(statuses)
    assert _state() == before


def test_it_survives_fuzzing_with_a_staff_token(wsgi_app: Any, world: World, alice_token: str) -> None:
    before = Incident.objects.count()
    statuses = _fuzz(wsgi_app, {"Authorization": f"Token {alice_token}"}, _live(world), anonymous=False)
    assert statuses.total() > 100
    # The fuzzer got past validation too: some writes succeeded, some were refused.
    assert {200, 201, 400, 404} <= set(statuses), statuses
    assert Incident.objects.count() > before
