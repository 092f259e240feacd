"""The insights CSV goes through the one CSV writer: titles that look like numbers or
formulas are text, prefixed so a spreadsheet never evaluates them."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.test import Client
from freezegun import freeze_time

from incidents.models import Incident
from tests.builders import make_incident, make_product, utc

pytestmark = pytest.mark.django_db

NOW = utc(2026, 11, 29, 20, 0)


def test_the_incidents_csv_neutralises_every_formula_title(staff_client: Client) -> None:
    product = make_product("Gmail")
    titles = ["=1+1", "-1", "+1", "@A1", "-1+cmd|' /C calc'!A0"]
    for i, title in enumerate(titles):
        incident = make_incident(
            title=f"placeholder {i}",
            product=product,
            start=NOW - timedelta(days=10 + i),
            end=NOW - timedelta(days=10 + i) + timedelta(hours=1),
        )
        # Stored as a reviewer would type it (builders may tidy titles).
        Incident.objects.filter(pk=incident.pk).update(title=title)
    with freeze_time(NOW):
        response = staff_client.get("/manage/insights/incidents.csv")
    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(response.content.decode(), newline="")))
    assert sorted(r["title"] for r in rows) == sorted(f"'{t}" for t in titles)
