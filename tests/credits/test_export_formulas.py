"""CSV exports through the one writer: no text cell can run as a spreadsheet formula."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from django.test import Client

from credits import services
from credits.models import Customer, SLAPolicy
from tests.credits.test_review_and_send import storage_case  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db

FORMULAS = [
    '=HYPERLINK("http://evil.example","x")',
    "+1+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(A1)",
    "\tTab",
    "\rCR",
]


def _rows(body: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(body.decode(), newline="")))


@pytest.mark.parametrize("formula", FORMULAS)
def test_the_exports_neutralise_formula_cells(
    staff_client: Client,
    storage_case: dict[str, Any],  # noqa: F811
    formula: str,
) -> None:
    acme = storage_case["acme"]
    Customer.objects.filter(pk=acme.pk).update(name=formula)
    SLAPolicy.objects.filter(pk=storage_case["notice"].policy_id).update(name=f"{formula} policy")
    services.credits_compute(period="2026-10")

    notices = _rows(staff_client.get("/manage/credits/export.csv?period=2026-10").content)
    [row] = [r for r in notices if r["customer_id"] == str(acme.pk)]
    assert row["customer"] == f"'{formula}"
    assert row["policy"] == f"'{formula} policy"
    # Numbers stay numbers.
    assert row["credit_amount"] and not row["credit_amount"].startswith("'")

    statement = staff_client.get(f"/manage/customers/{acme.pk}/statement/?period=2026-10&output=csv")
    lines = _rows(statement.content)
    assert {r["policy"] for r in lines} == {f"'{formula} policy"}
