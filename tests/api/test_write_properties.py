"""Property test (issue 11, R26): whatever the write services accept, the page stays up.

Hypothesis feeds arbitrary text (control characters, brackets, Markdown soup), times
(year 1 to year 9999) and ids to the write services. Each write is refused with a
ValidationError or stored; either way `/`, `/history/`, the incident pages, both feeds
and `/api/v2/summary.json` answer 200 afterwards. Small max_examples: a bounded run.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.test import Client, TestCase
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from incidents import services
from incidents.models import Incident
from tests.api.conftest import World
from tests.api.test_bad_input import assert_public_pages_answer

pytestmark = pytest.mark.django_db

texts = st.one_of(
    st.text(max_size=300),
    st.text(alphabet="[]()<>*_`#>- \n\t\x0b\x00\x1b&!", max_size=400),
    st.sampled_from(["", " ", "\r\n", "- " * 100, "[" * 300, "{{ settings.SECRET_KEY }}"]),
)
times = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC))
ids = st.one_of(st.integers(min_value=-(2**70), max_value=2**70), st.text(max_size=20))


def _try(write: Any) -> None:
    try:
        with TestCase.captureOnCommitCallbacks(execute=True):
            write()
    except ValidationError:
        pass


@settings(
    max_examples=12, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)
@given(title=texts, body=texts, summary=texts, started=times, resolved=times, some_id=ids)
def test_the_pages_answer_whatever_the_services_accept(
    world: World, title: str, body: str, summary: str, started: datetime, resolved: datetime, some_id: Any
) -> None:
    holder: dict[str, Incident] = {}

    def open_incident() -> None:
        holder["incident"] = services.incident_open(
            title=title or "x",
            summary=summary,
            body=body,
            started_at=started,
            windows=[services.WindowSpec(product=world.gmail, level="major_outage", started_at=started)],
        )

    _try(open_incident)
    incident = holder.get("incident", world.ongoing)
    _try(lambda: services.incident_post_update(incident=incident, status="identified", body=body))
    _try(
        lambda: services.incident_edit(incident=incident, changes={"summary": summary, "started_at": started})
    )
    _try(lambda: services.report_save(incident=world.outage, summary=summary, root_cause=body))
    _try(
        lambda: services.action_item_create(
            incident=world.outage, title=title, description=body, is_public=True
        )
    )
    _try(lambda: services.product_edit(product=world.storage, changes={"description": body}))
    _try(lambda: services.product_group_create(name=title, position=0))
    _try(lambda: services.incident_resolve(incident=incident, body=body, resolved_at=resolved))

    assert_public_pages_answer(world)
    client = Client()
    assert client.get(f"/incidents/{some_id}/").status_code in (200, 404)
    assert client.get(f"/api/v1/incidents/{some_id}/").status_code in (200, 404)
    response = client.post(
        "/subscribe/", {"kind": "email", "email": "p@example.com", "scope": "some", "products": str(some_id)}
    )
    assert response.status_code < 500
