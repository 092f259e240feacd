"""The staff insights page and the public uptime report: access, CSVs, query counts."""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from freezegun import freeze_time

from credits import services as credit_services
from credits.models import CreditNotice, NoticeState
from incidents import services
from incidents.models import ActionItem, ImpactWindow, Incident
from insights import present
from tests.builders import make_group, make_incident, make_product, utc

pytestmark = pytest.mark.django_db

Level = ImpactWindow.Level
NOW = utc(2026, 11, 29, 20, 0)


def build(n: int, *, prefix: str) -> None:
    """Incidents over the last months with updates, action items and one notice."""
    group = make_group(f"{prefix} group")
    products = [make_product(f"{prefix} product {i}", group=group if i else None) for i in range(3)]
    for i in range(n):
        start = NOW - timedelta(days=3 + (i * 11) % 300, hours=i % 7)
        incident = make_incident(
            title=f"{prefix} incident {i}",
            product=products[i % 3],
            start=start,
            end=start + timedelta(minutes=20 + i),
            level=Level.MAJOR_OUTAGE if i % 4 == 0 else Level.PARTIAL_OUTAGE,
            detected_at=start + timedelta(minutes=i % 9) if i % 5 else None,
        )
        services.incident_post_update(
            incident=incident,
            status=Incident.Status.IDENTIFIED,
            body="Found it.",
            display_at=start + timedelta(minutes=15),
        )
        services.action_item_create(
            incident=incident,
            title=f"{prefix} fix {i}",
            due_date=(start + timedelta(days=14)).date(),
            status=ActionItem.Status.DONE if i % 2 else ActionItem.Status.OPEN,
        )
    policy = credit_services.policy_create(
        name=f"{prefix} policy", target=Decimal(99), tiers=[(Decimal(99), Decimal(10))], unit="percent"
    )
    customer = credit_services.customer_create(
        name=f"{prefix} customer", billing_emails=["billing@example.org"], policy=policy
    )
    credit_services.customer_entitle(customer=customer, product=products[0])
    CreditNotice.objects.create(
        customer=customer,
        policy=policy,
        period="2026-10",
        period_start=utc(2026, 10, 1, 7),
        period_end=utc(2026, 11, 1, 7),
        period_minutes=44640,
        downtime_minutes=600,
        uptime_percent=98,
        credit=10,
        unit="percent",
        claim_deadline=utc(2026, 12, 30).date(),
        state=NoticeState.SENT,
        sent_at=NOW,
        computed_at=NOW,
        credit_amount=120,
    )


def test_it_sends_anonymous_visitors_to_the_login_and_refuses_non_staff(client: Client, bob) -> None:  # type: ignore[no-untyped-def]
    for url in ("/manage/insights/", "/manage/insights/incidents.csv"):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/admin/login/?next=/manage/insights/")
    client.force_login(bob)
    assert client.get("/manage/insights/").status_code == 403
    assert client.get("/manage/insights/levels.csv").status_code == 403


def test_it_renders_every_chart_with_a_title_a_description_a_table_and_a_csv(staff_client: Client) -> None:
    build(12, prefix="a")
    with freeze_time(NOW):
        response = staff_client.get("/manage/insights/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "no-cache" in response["Cache-Control"] or "no-store" in response["Cache-Control"]
    for chart in ("levels", "downtime", "response", "action-items", "credits"):
        assert re.search(
            rf'<svg class="chart__svg"[^>]*aria-labelledby="chart-{chart}-title chart-{chart}-desc"', html
        )
        assert f'<title id="chart-{chart}-title">' in html and f'<desc id="chart-{chart}-desc">' in html
        assert f'href="/manage/insights/{chart}.csv"' in html
    assert html.count('<table class="data') == 6
    # Nothing the CSP refuses: no inline style and no inline script.
    assert " style=" not in html and "<style" not in html
    assert not re.search(r"<script(?![^>]*\bsrc=)", html)


@pytest.mark.parametrize("name", present.CHARTS)
def test_every_csv_parses_and_has_a_row_per_period(staff_client: Client, name: str) -> None:
    build(8, prefix="c")
    with freeze_time(NOW):
        response = staff_client.get(f"/manage/insights/{name}.csv?by=quarter")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    header, body = rows[0], rows[1:]
    assert all(len(r) == len(header) for r in body)
    if name in ("levels", "downtime", "action-items", "credits"):
        assert len(body) == 8
        assert body[-1][0] == "2026 Q4"
    if name == "incidents":
        assert len(body) == 8
    if name == "credits":
        assert body[-1][1:5] == ["1", "0", "1", "USD 120.00"]


def test_the_scope_and_the_filter_are_checked(staff_client: Client) -> None:
    build(6, prefix="s")
    with freeze_time(NOW):
        one = staff_client.get("/manage/insights/incidents.csv?scope=product:s-product-1")
        group = staff_client.get("/manage/insights/incidents.csv?scope=group:" + str(make_group("empty").pk))
        bad_scope = staff_client.get("/manage/insights/?scope=product:nope")
        bad_month = staff_client.get("/manage/insights/?until=2026-13")
        future = staff_client.get("/manage/insights/?until=2027-01")
        bad_csv = staff_client.get("/manage/insights/nothing.csv")
    titles = [r["title"] for r in csv.DictReader(io.StringIO(one.content.decode()))]
    assert titles and all(t.split()[-1] in {"1", "4"} for t in titles)  # i % 3 == 1
    assert list(csv.DictReader(io.StringIO(group.content.decode()))) == []
    assert bad_scope.status_code == bad_month.status_code == future.status_code == 400
    assert "YYYY-MM" in bad_month.content.decode()
    assert bad_csv.status_code == 404


def test_a_formula_in_a_title_is_neutralised_in_the_csv(staff_client: Client) -> None:
    make_incident(title="=HYPERLINK(1)", product=make_product("Sheets"), start=NOW - timedelta(days=2))
    with freeze_time(NOW):
        body = staff_client.get("/manage/insights/incidents.csv").content.decode()
    assert "'=HYPERLINK(1)" in body


def test_the_page_needs_the_same_number_of_queries_however_much_history(staff_client: Client) -> None:
    def count() -> list[int]:
        from incidents.models import ProductGroup

        group = ProductGroup.objects.order_by("pk").values_list("pk", flat=True)[0]
        counts = []
        for query in (
            "",
            "?by=quarter",
            f"?scope=group:{group}",
            "?scope=product:small-product-1&by=quarter",
        ):
            with freeze_time(NOW), CaptureQueriesContext(connection) as ctx:
                assert staff_client.get("/manage/insights/" + query).status_code == 200
            counts.append(len(ctx.captured_queries))
        return counts

    build(3, prefix="small")
    # The session's first request at the frozen time records its activity (a write the
    # session middleware makes at most once a minute): not part of the page's cost.
    with freeze_time(NOW):
        staff_client.get("/manage/insights/")
    small = count()
    build(20, prefix="large")
    assert count() == small
    if connection.vendor == "postgresql":
        # Session and user, groups and products, then the database path's eight: the month
        # sums, the ranks they call for, the stored downtime months and the stretches read
        # live, the newest incidents and their windows, action items, credits; and the
        # recurrences per product (postmortems.selectors).
        assert small == [13, 13, 13, 13]


def test_the_public_report_is_cached_linked_and_public_only(client: Client) -> None:
    product = make_product("Storage")
    hidden = make_product("Hidden", is_public=False)
    make_incident(
        product=product, start=NOW - timedelta(days=40), end=NOW - timedelta(days=40) + timedelta(hours=2)
    )
    make_incident(
        title="Staff only",
        product=product,
        start=NOW - timedelta(days=10),
        end=NOW - timedelta(days=9),
        is_public=False,
    )
    with freeze_time(NOW):
        page = client.get("/products/storage/uptime/")
        again = client.get("/products/storage/uptime/", HTTP_IF_NONE_MATCH=page["ETag"])
        with CaptureQueriesContext(connection) as ctx:
            client.get("/products/storage/uptime/?anything=1")
        product_page = client.get("/products/storage/").content.decode()
        rows = list(csv.DictReader(io.StringIO(client.get("/products/storage/uptime.csv").content.decode())))
        api = client.get("/api/v1/products/storage/uptime/")
        missing = [
            client.get(u).status_code for u in ("/products/hidden/uptime/", "/api/v1/products/hidden/uptime/")
        ]
    assert hidden.pk
    assert page.status_code == 200 and "public" in page["Cache-Control"]
    assert again.status_code == 304
    assert len(ctx.captured_queries) <= 1  # served from the page cache (the version stamp only)
    assert 'href="/products/storage/uptime/"' in product_page
    assert "Downtime = major outage minutes x 1 + partial outage minutes x 0.3" in page.content.decode()
    assert len(rows) == 12
    # The staff-only incident never counts: 2 hours of major outage, in October only.
    assert [r["weighted_downtime_minutes"] for r in rows if r["weighted_downtime_minutes"] != "0.00"] == [
        "120.00"
    ]
    assert rows[0]["complete"] == "no" and rows[1]["complete"] == "yes"
    body = api.json()
    assert api.status_code == 200 and body["product"]["slug"] == "storage"
    assert len(body["months"]) == 12 and body["weights"]["partial_outage"] == "0.3"
    assert missing == [404, 404]
