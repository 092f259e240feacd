"""Role-matrix rows of the credits room: console pages and actions, API writes (and the
statement reads) and the sla_credits write subcommands, for the finance actions."""

from __future__ import annotations

import io
from collections.abc import Callable
from decimal import Decimal as D
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.core.management import CommandError, call_command
from django.test import Client

from credits import confirm, services
from credits.models import CreditNotice, Customer, SLAPolicy
from incidents.models import ImpactWindow
from tests.builders import make_incident, make_location, make_product, utc
from tests.credits import builders
from tests.roles.matrix import Row

PERIOD = "2026-10"


def _case() -> None:
    """One customer owed a percent-of-bill credit for October 2026 (USD 250, below the
    four-eyes limit): enough for every row."""
    product, location = make_product("Cloud Storage"), make_location("us-central1")
    incident = make_incident(
        title="Cloud Storage write errors",
        product=product,
        location=location,
        start=utc(2026, 10, 8, 12, 0),
        end=utc(2026, 10, 9, 2, 0),
    )
    ImpactWindow.objects.filter(incident=incident).update(ended_at=utc(2026, 10, 8, 20, 0))
    policy = builders.storage_policy(claim_window_days=30)
    builders.customer("Acme", policy=policy, products=[(product, location)], monthly_bill=D("1000.00"))
    services.credits_compute(period=PERIOD)


def _notice() -> CreditNotice:
    return CreditNotice.objects.get(period=PERIOD)


def _get(url: Callable[[], str]) -> Callable[[Client, User], int]:
    return lambda client, user: client.get(url()).status_code


def _post(url: Callable[[], str], data: Callable[[], dict[str, Any]] = dict) -> Callable[[Client, User], int]:
    return lambda client, user: client.post(url(), data()).status_code


def _api(method: str, url: Callable[[], str], body: dict[str, Any]) -> Callable[[Client, User], int]:
    def perform(client: Client, user: User) -> int:
        call = getattr(client, method)
        return int(call(url(), body, content_type="application/json").status_code)

    return perform


def _command(*args: str) -> Callable[[Client, User], int]:
    def perform(client: Client, user: User) -> int:
        try:
            call_command(
                "sla_credits", *args, "--as", user.username, stdout=io.StringIO(), stderr=io.StringIO()
            )
        except PermissionDenied:
            return 403
        except CommandError as exc:
            if "Permission denied" in str(exc):
                return 403
            raise
        return 200

    return perform


def _notice_url(suffix: str) -> Callable[[], str]:
    return lambda: f"/manage/credits/{_notice().pk}/{suffix}"


def _token() -> dict[str, Any]:
    return {"confirmation": confirm.send_plan(ids=[_notice().pk]).token}


def _customer_url(prefix: str, suffix: str = "") -> Callable[[], str]:
    return lambda: f"{prefix}{Customer.objects.get(name='Acme').pk}/{suffix}"


CUSTOMER = {"name": "Globex", "billing_emails": ["billing@globex.example"]}
POLICY = {
    "name": "Gold",
    "target": "99.9",
    "unit": SLAPolicy.Unit.DAYS,
    "tiers": [{"below": "99.9", "credit": "3"}],
}

# New terms from a day after the computed month (a day in the past would be taken too:
# nothing was sent).
NEW_TERMS = {
    "effective_from": "2026-11-16",
    "target": "99.95",
    "tiers": "99.95: 10\n99: 25",
    "min_downtime_minutes": "5",
    "exclude_maintenance": "on",
    "downtime_source": "declared",
    "measured_down_above": "5",
}

ROWS: list[Row] = [
    # Console.
    Row(
        "credits.review",
        "console",
        "GET /manage/credits/<id>/letter/",
        _get(_notice_url("letter/")),
        setup=_case,
    ),
    Row(
        "credits.review",
        "console",
        "GET /manage/credits/<id>/letter.html",
        _get(_notice_url("letter.html")),
        setup=_case,
    ),
    Row(
        "credits.review",
        "console",
        "GET /manage/credits/confirm/?ids=<id> (prepare)",
        _get(lambda: f"/manage/credits/confirm/?ids={_notice().pk}"),
        setup=_case,
    ),
    Row(
        "credits.review",
        "console",
        "POST /manage/credits/<id>/cancel/",
        _post(_notice_url("cancel/")),
        setup=_case,
    ),
    Row(
        "credits.send",
        "console",
        "POST /manage/credits/send/",
        _post(lambda: "/manage/credits/send/", _token),
        setup=_case,
    ),
    Row(
        "credits.compute",
        "console",
        "POST /manage/credits/compute/",
        _post(lambda: "/manage/credits/compute/", lambda: {"period": PERIOD}),
        setup=_case,
    ),
    Row(
        "credits.statement",
        "console",
        "GET /manage/credits/export.csv",
        _get(lambda: f"/manage/credits/export.csv?period={PERIOD}"),
        setup=_case,
    ),
    Row(
        "credits.statement",
        "console",
        "GET /manage/customers/<id>/statement/",
        _get(lambda: f"{_customer_url('/manage/customers/', 'statement/')()}?period={PERIOD}"),
        setup=_case,
    ),
    Row(
        "credits.review",
        "console",
        "GET /manage/credits/policies/<id>/",
        _get(lambda: f"/manage/credits/policies/{SLAPolicy.objects.get().pk}/"),
        setup=_case,
    ),
    Row(
        "policy.write",
        "console",
        "POST /manage/credits/policies/<id>/ (a version from a day)",
        _post(lambda: f"/manage/credits/policies/{SLAPolicy.objects.get().pk}/", lambda: NEW_TERMS),
        setup=_case,
    ),
    # API.
    Row(
        "customer.write",
        "api",
        "POST /api/v1/customers/",
        _api("post", lambda: "/api/v1/customers/", CUSTOMER),
    ),
    Row(
        "customer.write",
        "api",
        "PATCH /api/v1/customers/<id>/",
        _api("patch", _customer_url("/api/v1/customers/"), {"monthly_bill": "2000.00"}),
        setup=_case,
    ),
    Row(
        "policy.write",
        "api",
        "POST /api/v1/sla-policies/",
        _api("post", lambda: "/api/v1/sla-policies/", POLICY),
    ),
    Row(
        "credits.compute",
        "api",
        "POST /api/v1/credit-notices/compute/",
        _api("post", lambda: "/api/v1/credit-notices/compute/", {"period": PERIOD}),
        setup=_case,
    ),
    Row(
        "credits.review",
        "api",
        "POST /api/v1/credit-notices/send-preview/",
        _api("post", lambda: "/api/v1/credit-notices/send-preview/", {"period": PERIOD}),
        setup=_case,
    ),
    Row(
        "credits.review",
        "api",
        "POST /api/v1/credit-notices/<id>/cancel/",
        _api("post", lambda: f"/api/v1/credit-notices/{_notice().pk}/cancel/", {}),
        setup=_case,
    ),
    Row(
        "credits.send",
        "api",
        "POST /api/v1/credit-notices/approve/",
        _api("post", lambda: "/api/v1/credit-notices/approve/", {"period": PERIOD, "confirm": True}),
        setup=_case,
    ),
    Row(
        "credits.statement",
        "api",
        "GET /api/v1/credit-notices/export/",
        _get(lambda: f"/api/v1/credit-notices/export/?period={PERIOD}"),
        setup=_case,
    ),
    Row(
        "credits.statement",
        "api",
        "GET /api/v1/customers/<id>/statement/",
        _get(lambda: f"{_customer_url('/api/v1/customers/', 'statement/')()}?period={PERIOD}"),
        setup=_case,
    ),
    # Commands.
    Row(
        "credits.compute",
        "command",
        "sla_credits compute --as",
        _command("compute", "--period", PERIOD),
        setup=_case,
    ),
    Row(
        "credits.send",
        "command",
        "sla_credits send --yes --as",
        _command("send", "--period", PERIOD, "--yes"),
        setup=_case,
    ),
]
