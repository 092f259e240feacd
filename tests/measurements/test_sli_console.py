"""SLI sources in the console (/manage/sli/): who may manage them, what a bad URL,
query or label selector does (a form error, nothing saved), and "test the query" against
a real Prometheus holding the last day, a stopped one, and a query matching nothing."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.core.exceptions import PermissionDenied
from django.test import Client

from core.roles import ROLES
from measurements import services
from measurements.models import SliSource
from tests.builders import make_location, make_product
from tests.measurements.prom import free_port, run_prometheus
from tests.measurements.recent import recent_openmetrics

ERRORS = "sum(increase(sli_errors_total{selector}[{window}]))"
VALID = "sum(increase(sli_requests_total{selector}[{window}]))"


@pytest.fixture(scope="module")
def recent_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from run_prometheus(Path(tmp_path_factory.mktemp("prometheus-recent")), recent_openmetrics())


def _member(role: str) -> Client:
    user = User.objects.create_user(f"m-{role.lower().replace(' ', '-')}", is_staff=True)
    user.groups.add(Group.objects.get(name=role))
    client = Client()
    client.force_login(user)
    return client


def _form(**changes: Any) -> dict[str, Any]:
    data = {
        "product": str(make_product("Cloud Storage").pk)
        if "product" not in changes
        else changes.pop("product"),
        "location": "",
        "base_url": "http://127.0.0.1:9090",
        "kind": "counts",
        "errors_query": ERRORS,
        "valid_query": VALID,
        "error_rate_query": "",
        "label_selector": 'location="us-central1"',
        "enabled": "on",
    }
    data.update(changes)
    return data


@pytest.mark.django_db
@pytest.mark.parametrize("role", sorted(ROLES))
def test_only_integrations_and_administrators_manage_sources(role: str) -> None:
    client = _member(role)
    allowed = "sli.manage" in ROLES[role]
    assert allowed == (role in ("Integrations", "Administrator"))
    assert client.get("/manage/sli/").status_code == (200 if allowed else 403)
    response = client.post("/manage/sli/new/", _form())
    assert response.status_code == (302 if allowed else 403)
    assert SliSource.objects.count() == (1 if allowed else 0)
    if not allowed:
        source = SliSource.objects.create(product=make_product("Gmail"), base_url="http://127.0.0.1:9090")
        assert client.post(f"/manage/sli/{source.pk}/delete/").status_code == 403
        assert client.get(f"/manage/sli/{source.pk}/test/").status_code == 403
        assert SliSource.objects.filter(pk=source.pk).exists()


@pytest.mark.django_db
def test_create_edit_and_delete_a_source() -> None:
    client = _member("Integrations")
    region = make_location("us-central1")
    response = client.post("/manage/sli/new/", _form(location=str(region.pk)))
    source = SliSource.objects.get()
    assert response["Location"] == f"/manage/sli/{source.pk}/"
    assert (source.location, source.label_selector, source.errors_query) == (
        region,
        'location="us-central1"',
        ERRORS,
    )
    listing = client.get("/manage/sli/").content.decode()
    assert "Cloud Storage in us-central1" in listing
    # Switching to an error-rate expression empties the counter queries it no longer runs.
    edited = _form(
        product=str(source.product_id),
        location=str(region.pk),
        kind="error_rate",
        error_rate_query="100 * sum(rate(sli_errors_total{selector}[{window}])) / sum(rate(sli_requests_total{selector}[{window}]))",
    )
    assert client.post(f"/manage/sli/{source.pk}/", edited).status_code == 302
    source.refresh_from_db()
    assert (source.kind, source.errors_query, source.valid_query) == ("error_rate", "", "")
    assert client.post(f"/manage/sli/{source.pk}/delete/").status_code == 302
    assert not SliSource.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"base_url": "ftp://127.0.0.1/"}, "base_url", "http:// or https://"),
        ({"base_url": "not a url"}, "base_url", "http:// or https://"),
        (
            {"errors_query": "sum(increase(sli_errors_total{selector}[{window}])"},
            "errors_query",
            "unclosed “(”",
        ),
        ({"valid_query": "sum(x))"}, "valid_query", "unmatched “)”"),
        ({"valid_query": 'sum(x{a="b)'}, "valid_query", "string is not closed"),
        ({"valid_query": ""}, "valid_query", "Enter a PromQL expression"),
        ({"kind": "error_rate"}, "error_rate_query", "Enter a PromQL expression"),
        ({"label_selector": "location=us-central1"}, "label_selector", "Write label matchers"),
        ({"label_selector": 'location="a" zone="b"'}, "label_selector", "Expected a comma"),
        ({"label_selector": 'location="a",'}, "label_selector", "does not end with a comma"),
    ],
)
def test_a_bad_url_query_or_selector_is_a_form_error_and_saves_nothing(
    changes: dict[str, str], field: str, message: str
) -> None:
    client = _member("Integrations")
    response = client.post("/manage/sli/new/", _form(**changes))
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert message in " ".join(errors[field]), errors
    assert 'class="field__error"' in response.content.decode()
    assert not SliSource.objects.exists()


@pytest.mark.django_db
def test_a_bad_edit_changes_nothing_and_a_second_source_for_one_place_is_refused() -> None:
    client = _member("Administrator")
    assert client.post("/manage/sli/new/", _form()).status_code == 302
    source = SliSource.objects.get()
    bad = _form(product=str(source.product_id), label_selector='location="us-central1', base_url="http://x:1")
    assert client.post(f"/manage/sli/{source.pk}/", bad).status_code == 200
    source.refresh_from_db()
    assert (source.label_selector, source.base_url) == ('location="us-central1"', "http://127.0.0.1:9090")
    twin = client.post("/manage/sli/new/", _form(product=str(source.product_id)))
    assert "already has a source for this location" in " ".join(twin.context["form"].errors["location"])
    assert SliSource.objects.count() == 1


@pytest.mark.django_db
def test_the_service_checks_the_role_itself() -> None:
    viewer = User.objects.create_user("v", is_staff=True)
    viewer.groups.add(Group.objects.get(name="Viewer"))
    with pytest.raises(PermissionDenied):
        services.sli_source_save(actor=viewer, product=make_product(), base_url="http://127.0.0.1:9090")
    assert not SliSource.objects.exists()


def _source(base_url: str, selector: str = 'location="us-central1"') -> SliSource:
    return services.sli_source_save(
        actor=None,
        product=make_product("Cloud Storage"),
        base_url=base_url,
        errors_query=ERRORS,
        valid_query=VALID,
        label_selector=selector,
    )


@pytest.mark.django_db
def test_testing_the_query_plots_the_last_day_from_a_real_prometheus(recent_prometheus: str) -> None:
    source = _source(recent_prometheus)
    page = _member("Integrations").get(f"/manage/sli/{source.pk}/test/")
    assert page.status_code == 200
    chart = page.context["chart"]
    # 288 five-minute periods in a day; the data begins 26 h ago and ends a minute ago,
    # so at most the last period lacks data.
    assert chart.expected == 288 and chart.points >= 287
    # The bad hour: 300 errors of 1000 a minute, 30 %; otherwise 1 of 1000, 0.1 %.
    assert (chart.highest, chart.lowest) == (Decimal(30), Decimal("0.1"))
    body = page.content.decode()
    wide = 'viewBox="0 0 1000 240" width="100%" role="img" aria-labelledby="sli-title-wide sli-desc-wide"'
    narrow = (
        'viewBox="0 0 360 260" width="100%" role="img" aria-labelledby="sli-title-narrow sli-desc-narrow"'
    )
    assert wide in body and narrow in body
    assert page.context["narrow_chart"].points == chart.points
    # One unbroken line in each drawing (no period without data but perhaps the last).
    assert body.count("<polyline") == 2 and "Highest 30.000%" in body
    assert "Prometheus could not be read" not in body


@pytest.mark.django_db
def test_testing_the_query_of_a_stopped_prometheus_says_so() -> None:
    source = _source(f"http://127.0.0.1:{free_port()}")
    page = _member("Integrations").get(f"/manage/sli/{source.pk}/test/")
    body = page.content.decode()
    assert page.status_code == 200 and "chart" not in page.context
    assert "Prometheus could not be read: Prometheus unreachable at http://127.0.0.1:" in body
    assert "<polyline" not in body


@pytest.mark.django_db
def test_testing_a_query_that_matches_nothing_says_so(recent_prometheus: str) -> None:
    source = _source(recent_prometheus, selector='location="nowhere"')
    page = _member("Administrator").get(f"/manage/sli/{source.pk}/test/")
    assert "the query returned no data for the last 24 hours" in page.content.decode()
    assert "chart" not in page.context
