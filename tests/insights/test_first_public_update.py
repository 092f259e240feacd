"""Time to the first public update is the real posting delay: from detection (or filing)
to when the first entry was posted, whatever time staff chose to show it at
(docs/adr/0013-posted-and-shown-times.md)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from freezegun import freeze_time

from incidents import services
from incidents.models import ImpactWindow
from insights import selectors
from insights.scope import ALL, Scope
from tests.builders import make_product, utc

pytestmark = pytest.mark.django_db

STARTED = utc(2026, 10, 8, 7, 50)
DETECTED = STARTED + timedelta(minutes=5)
DECLARED = STARTED + timedelta(minutes=20)
NOW = utc(2026, 11, 20, 18, 0)


def _declare(**kw) -> None:  # type: ignore[no-untyped-def]
    gcs = make_product("Cloud Storage")
    with freeze_time(DECLARED):
        services.incident_declare(
            title="Cloud Storage write errors",
            started_at=STARTED,
            detected_at=DETECTED,
            windows=[
                services.WindowSpec(product=gcs, level=ImpactWindow.Level.PARTIAL_OUTAGE, started_at=STARTED)
            ],
            **kw,
        )


def _first_update(build) -> list[timedelta]:  # type: ignore[no-untyped-def]
    page = build(
        scope=Scope(key=ALL, label="All products", products=(), is_all=True),
        granularity="month",
        last=NOW.date(),
        now=NOW,
    )
    return [value for _, value, _ in page.response.first_update.points]


@pytest.mark.parametrize("first_update_at", [None, DETECTED])
def test_it_measures_from_detection_to_the_posting_time(first_update_at) -> None:  # type: ignore[no-untyped-def]
    # Declared 15 minutes after detection: shown then, or backdated to the detection.
    _declare(first_update_at=first_update_at)
    assert _first_update(selectors.insights_page_python) == [timedelta(minutes=15)]


@pytest.mark.usefixtures("postgres")
def test_the_database_path_measures_the_same() -> None:
    _declare(first_update_at=DETECTED)
    assert _first_update(selectors.insights_page_sql) == [timedelta(minutes=15)]
