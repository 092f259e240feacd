"""The report screen drafts its impact section from the recorded impact windows."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from incidents import services
from incidents.markdown import render_markdown
from incidents.models import ImpactWindow, Incident
from tests.builders import make_location, make_product, utc

pytestmark = pytest.mark.django_db

Level = ImpactWindow.Level


def _storage_incident() -> Incident:
    """Gmail everywhere: an hour of major outage then half an hour of partial outage;
    Cloud Storage in us-central1 on the 30th and, the next day, in one zone; a staff-only
    product that must not reach a public report."""
    gmail = make_product("Gmail", position=1)
    storage = make_product("Cloud Storage", position=2)
    internal = make_product("Billing backend", position=3, is_public=False)
    region = make_location("us-central1")
    zone = make_location("us-central1-b")
    windows = [
        services.WindowSpec(
            product=gmail,
            level=Level.MAJOR_OUTAGE,
            started_at=utc(2026, 11, 30, 18),
            ended_at=utc(2026, 11, 30, 19),
        ),
        services.WindowSpec(
            product=gmail,
            level=Level.PARTIAL_OUTAGE,
            started_at=utc(2026, 11, 30, 19),
            ended_at=utc(2026, 11, 30, 19, 30),
        ),
        services.WindowSpec(
            product=storage,
            level=Level.DEGRADED_PERFORMANCE,
            started_at=utc(2026, 11, 30, 18, 10),
            ended_at=utc(2026, 12, 1, 9, 15),
            location=region,
        ),
        services.WindowSpec(
            product=storage,
            level=Level.MAJOR_OUTAGE,
            started_at=utc(2026, 12, 1, 18),
            ended_at=utc(2026, 12, 1, 18, 45),
            location=zone,
        ),
        services.WindowSpec(
            product=internal,
            level=Level.MAJOR_OUTAGE,
            started_at=utc(2026, 11, 30, 18),
            ended_at=utc(2026, 11, 30, 20),
        ),
    ]
    incident = services.incident_open(
        title="Gmail and Cloud Storage errors",
        impact="major",
        started_at=utc(2026, 11, 30, 18),
        windows=windows,
    )
    services.incident_resolve(incident=incident, resolved_at=utc(2026, 12, 1, 18, 45), body="Resolved.")
    return incident


def _impact_initial(client: Client, incident: Incident) -> str:
    response = client.get(f"/manage/incidents/{incident.public_id}/report/")
    assert response.status_code == 200
    return str(response.context["form"].initial.get("impact_description", ""))


def test_it_drafts_the_impact_section_from_the_recorded_windows(staff_client: Client) -> None:
    incident = _storage_incident()
    draft = _impact_initial(staff_client, incident)
    assert draft == "\n".join(
        [
            "Recorded impact, 16 h in all (times in US/Pacific):",
            "",
            "- **Gmail** (all locations), 1 h 30 min:",
            "    - All locations: Major outage from Mon 30 Nov 2026, 10:00 PST to 11:00 PST (1 h)",
            "    - All locations: Partial outage from Mon 30 Nov 2026, 11:00 PST to 11:30 PST (30 min)",
            "- **Cloud Storage** (us-central1; us-central1-b), 15 h 50 min:",
            "    - us-central1: Degraded performance from Mon 30 Nov 2026, 10:10 PST to Tue 1 Dec 2026, "
            "01:15 PST (15 h 5 min)",
            "    - us-central1-b: Major outage from Tue 1 Dec 2026, 10:00 PST to 10:45 PST (45 min)",
        ]
    )
    assert "Billing backend" not in draft  # a staff-only product stays out of public text
    page = staff_client.get(f"/manage/incidents/{incident.public_id}/report/").content.decode()
    assert "Drafted from the recorded impact windows" in page
    # The draft is Markdown that renders as the nested list it reads as.
    html = render_markdown(draft)
    assert "<strong>Cloud Storage</strong> (us-central1; us-central1-b)" in html
    assert html.count("<ul>") == 3


def test_it_writes_the_draft_in_the_display_zone(staff_client: Client, settings: Any) -> None:
    settings.DISPLAY_TIME_ZONE = "Europe/Paris"
    incident = _storage_incident()
    draft = _impact_initial(staff_client, incident)
    assert "(times in Europe/Paris)" in draft
    assert "Major outage from Mon 30 Nov 2026, 19:00 CET to 20:00 CET (1 h)" in draft


def test_it_says_an_open_window_has_not_ended(staff_client: Client) -> None:
    product = make_product("Gmail")
    incident = services.incident_open(
        title="Gmail slow",
        impact="minor",
        started_at=utc(2026, 11, 30, 18),
        windows=[
            services.WindowSpec(
                product=product, level=Level.DEGRADED_PERFORMANCE, started_at=utc(2026, 11, 30, 18)
            )
        ],
    )
    draft = _impact_initial(staff_client, incident)
    assert " in all so far (times in US/Pacific):" in draft
    assert "    - All locations: Degraded performance from Mon 30 Nov 2026, 10:00 PST, not ended yet" in draft


def test_it_keeps_an_existing_report_as_written(staff_client: Client) -> None:
    incident = _storage_incident()
    services.report_save(incident=incident, summary="Written by hand.", impact_description="")
    response = staff_client.get(f"/manage/incidents/{incident.public_id}/report/")
    assert response.context["form"].initial["impact_description"] == ""
    assert "Drafted from the recorded impact windows" not in response.content.decode()


def test_it_leaves_the_section_blank_without_public_windows(staff_client: Client) -> None:
    internal = make_product("Billing backend", is_public=False)
    incident = services.incident_open(
        title="Billing batch late",
        impact="minor",
        started_at=utc(2026, 11, 30, 18),
        windows=[
            services.WindowSpec(product=internal, level=Level.MAJOR_OUTAGE, started_at=utc(2026, 11, 30, 18))
        ],
    )
    assert _impact_initial(staff_client, incident) == ""


def test_it_keeps_names_literal_in_markdown(staff_client: Client) -> None:
    product = make_product("Cloud *beta* <API>", slug="beta")
    incident = services.incident_open(
        title="Beta errors",
        impact="minor",
        started_at=utc(2026, 11, 30, 18),
        windows=[
            services.WindowSpec(
                product=product,
                level=Level.PARTIAL_OUTAGE,
                started_at=utc(2026, 11, 30, 18),
                ended_at=utc(2026, 11, 30, 18, 5),
            )
        ],
    )
    draft = _impact_initial(staff_client, incident)
    assert "- **Cloud \\*beta\\* &lt;API>** (all locations), 5 min:" in draft
    assert "<strong>Cloud *beta* &lt;API&gt;</strong>" in render_markdown(draft)
