"""What the public pages say must be true (issues 28 and 29): each product with its own
locations, back-to-back level changes as one stretch, a maintenance labelled by where it
stands, a headline impact in the windows' words and never milder than they were, and the
French typography of those lines coming from the translations."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from freezegun import freeze_time

from incidents import services
from incidents.models import ImpactWindow, Incident
from public_site import pages as public_selectors
from tests.builders import make_incident, make_location, make_product, utc
from tests.public.helpers import add_window

pytestmark = pytest.mark.django_db

Level = ImpactWindow.Level
NOW = utc(2026, 11, 29, 20, 0)  # 12:00 PST
NBSP = "\u00a0"


@pytest.fixture(autouse=True)
def _frozen():  # type: ignore[no-untyped-def]
    with freeze_time(NOW):
        yield


def text(response) -> str:  # type: ignore[no-untyped-def]
    assert response.status_code == 200
    return response.content.decode()


def card_affected_line(html: str) -> str:
    match = re.search(r'<p class="card__meta">Affected products?:(.*?)</p>', html, re.S)
    assert match, "no Affected line on the card"
    return re.sub(r"<[^>]+>", "", match.group(1)).strip()


def compute_and_gmail() -> Incident:
    """Compute Engine affected everywhere, Gmail only in us-central1, both still open."""
    compute = make_product("Compute Engine")
    gmail = make_product("Gmail", position=1)
    central = make_location("us-central1")
    start = NOW - timedelta(hours=2)
    incident = make_incident(
        title="Networking trouble", product=compute, start=start, level=Level.PARTIAL_OUTAGE
    )
    add_window(incident, gmail, start, location=central, level=Level.DEGRADED_PERFORMANCE)
    return incident


# --- 1. Each product with its own locations --------------------------------------------------


def test_it_shows_each_product_with_its_own_locations_on_the_card(client: Client) -> None:
    compute_and_gmail()

    line = card_affected_line(text(client.get("/")))

    assert line == "Compute Engine (all locations), Gmail (us-central1)"


def test_it_shows_each_product_with_its_own_locations_on_the_incident_page(client: Client) -> None:
    incident = compute_and_gmail()

    html = text(client.get(f"/incidents/{incident.public_id}/"))

    affected = html.split('id="affected-title"')[1].split("</table>")[0]
    rows = [re.sub(r"<[^>]+>|\s+", " ", row).split() for row in affected.split("<tr>")[2:]]
    assert rows[0][:4] == ["Compute", "Engine", "All", "locations"]
    assert rows[1][:2] == ["Gmail", "us-central1"]


def test_a_window_without_a_location_makes_the_product_affected_everywhere(client: Client) -> None:
    # Everywhere first, then confined to a region: over the incident, all locations.
    compute = make_product("Compute Engine")
    start = NOW - timedelta(hours=3)
    incident = make_incident(
        title="Compute trouble", product=compute, start=start, end=None, level=Level.MAJOR_OUTAGE
    )
    window = incident.windows.get()
    services.impact_window_close(window=window, ended_at=start + timedelta(hours=1))
    add_window(incident, compute, start + timedelta(hours=1), location=make_location("us-central1"))

    page = public_selectors.status_page(now=NOW)
    (item,) = page.incidents
    (affected,) = item.affected
    assert affected.locations == ()
    assert card_affected_line(text(client.get("/"))) == "Compute Engine (all locations)"


# --- 2. Back-to-back level changes are one stretch --------------------------------------------


def test_back_to_back_level_changes_count_as_one_period(client: Client) -> None:
    storage = make_product("Cloud Storage")
    start = NOW - timedelta(hours=4)
    incident = make_incident(title="Storage errors", product=storage, start=start, level=Level.MAJOR_OUTAGE)
    for hours, level in (
        (1, Level.PARTIAL_OUTAGE),
        (2, Level.DEGRADED_PERFORMANCE),
        (3, Level.PARTIAL_OUTAGE),
    ):
        services.incident_post_update_with_levels(
            incident=incident,
            status=Incident.Status.IDENTIFIED,
            body=f"Now {level}.",
            levels=[services.LevelSpec(product=storage, level=level)],
            display_at=start + timedelta(hours=hours),
        )
    assert incident.windows.count() == 4

    html = text(client.get(f"/incidents/{incident.public_id}/"))

    assert html.count('<tr class="window">') == 4  # every level is still shown
    assert "separate window" not in html and "separate period" not in html
    assert public_selectors.incident_page(public_id=incident.public_id, user=None, now=NOW).periods == 1


def test_it_counts_periods_of_time_whatever_the_product_or_place(client: Client) -> None:
    storage = make_product("Cloud Storage")
    compute = make_product("Compute Engine")
    zone = make_location("us-central1-b")
    start = NOW - timedelta(hours=10)
    incident = make_incident(
        title="Storage errors", product=storage, start=start, end=start + timedelta(hours=1)
    )
    # Back to back with the first: the same stretch.
    add_window(
        incident, storage, start + timedelta(hours=1), start + timedelta(hours=2), level=Level.PARTIAL_OUTAGE
    )
    # Touching it in time in another place, and another product at the same time: still
    # the same stretch (the products were hit together, not one after the other).
    add_window(incident, storage, start + timedelta(hours=2), start + timedelta(hours=3), location=zone)
    add_window(incident, compute, start, start + timedelta(hours=3))
    # A gap, then again: a second stretch.
    add_window(incident, storage, start + timedelta(hours=5), start + timedelta(hours=6))

    html = text(client.get(f"/incidents/{incident.public_id}/"))

    assert "Impact came in 2 separate periods; the total counts time covered by any of them once." in html
    assert html.count('<tr class="window">') == 5


# --- 3. A maintenance says where it stands ----------------------------------------------------


def maintenance(*, starts_in: timedelta, title: str = "BigQuery upgrade") -> Incident:
    bigquery = make_product(f"BigQuery {title}")
    begins = NOW + starts_in
    return services.incident_open(
        title=title,
        kind=Incident.Kind.MAINTENANCE,
        impact=Incident.Impact.NONE,
        scheduled_for=begins,
        scheduled_until=begins + timedelta(hours=2),
        windows=[
            services.WindowSpec(
                product=bigquery,
                level=Level.UNDER_MAINTENANCE,
                started_at=begins,
                ended_at=begins + timedelta(hours=2),
            )
        ],
        body="Storage upgrade.",
    )


def past_item(html: str, title: str) -> str:
    match = re.search(
        rf'<li class="past"(?: id="day-[0-9-]+")?>\s*<div class="past__head">.*?>{title}</a>.*?</li>',
        html,
        re.S,
    )
    assert match, title
    return match.group(0)


def test_history_labels_maintenance_that_has_not_begun_scheduled(client: Client) -> None:
    maintenance(starts_in=timedelta(hours=3))  # later today, still November in US/Pacific

    item = past_item(text(client.get("/history/")), "BigQuery upgrade")

    assert re.search(r'status--under_maintenance.*?<span class="status__text">Scheduled</span>', item, re.S)
    assert "Under maintenance" not in item
    assert "Maintenance 2 h" in item and "so far" not in item  # its planned length


def test_history_labels_maintenance_in_progress_and_completed(client: Client) -> None:
    running = maintenance(starts_in=-timedelta(hours=1), title="Running")
    services.incident_post_update(incident=running, status=Incident.Status.IN_PROGRESS, body="Begun.")
    done = maintenance(starts_in=-timedelta(days=2), title="Done")
    services.incident_post_update(incident=done, status=Incident.Status.IN_PROGRESS, body="Begun.")
    services.incident_resolve(incident=done, resolved_at=NOW - timedelta(days=2, hours=-2), body="Complete.")

    html = text(client.get("/history/"))

    assert '<span class="status__text">Under maintenance</span>' in past_item(html, "Running")
    assert '<span class="status__text">Completed</span>' in past_item(html, "Done")
    french = text(client.get("/fr/history/"))
    assert '<span class="status__text">Terminée</span>' in past_item(french, "Done")


# --- 4. The headline impact follows the windows' levels --------------------------------------


def test_windows_all_partial_outage_do_not_read_major_impact(client: Client) -> None:
    storage = make_product("Cloud Storage")
    incident = make_incident(
        title="Storage errors",
        product=storage,
        start=NOW - timedelta(hours=5),
        end=NOW - timedelta(hours=1),
        level=Level.PARTIAL_OUTAGE,
        impact=Incident.Impact.MAJOR,  # Statuspage's word for a partial outage
    )

    html = text(client.get(f"/incidents/{incident.public_id}/"))

    assert "Major impact" not in html
    header = html.split('<header class="incident__header">')[1].split("</header>")[0]
    assert '<span class="badge badge--impact-major">Partial outage</span>' in header


def test_the_headline_is_the_worst_level_reached_not_the_last(client: Client) -> None:
    gmail = make_product("Gmail")
    start = NOW - timedelta(hours=2)
    incident = make_incident(title="Gmail down", product=gmail, start=start, level=Level.MAJOR_OUTAGE)
    services.incident_post_update_with_levels(
        incident=incident,
        status=Incident.Status.MONITORING,
        body="Recovering.",
        levels=[services.LevelSpec(product=gmail, level=Level.DEGRADED_PERFORMANCE)],
        impact=Incident.Impact.MINOR,  # the last update lowers the recorded impact
        display_at=start + timedelta(hours=1),
    )

    page = text(client.get(f"/incidents/{incident.public_id}/"))
    home = text(client.get("/"))

    header = page.split('<header class="incident__header">')[1].split("</header>")[0]
    assert '<span class="badge badge--impact-critical">Major outage</span>' in header
    assert '<article class="card card--critical"' in home
    assert '<span class="badge badge--impact-critical">Major outage</span>' in home
    # The product's status is its current level.
    assert re.search(r'data-component-name="Gmail">.*?Degraded performance', home, re.S)


def test_an_incident_without_public_windows_keeps_its_recorded_impact(client: Client) -> None:
    incident = make_incident(
        title="Something odd", start=NOW - timedelta(hours=1), impact=Incident.Impact.NONE
    )

    html = text(client.get(f"/incidents/{incident.public_id}/"))

    assert '<span class="badge badge--impact-none">None impact</span>' in html


# --- 5. French typography from the translations -----------------------------------------------


def test_french_affected_line_agrees_and_spaces_the_colon(client: Client) -> None:
    compute_and_gmail()

    html = text(client.get("/fr/"))

    assert f"Produits concernés{NBSP}: " in html
    assert "Concerné" not in html
    assert 'Compute Engine</a> <span class="muted">(tous les emplacements)</span>' in html


def test_french_affected_line_is_singular_for_one_product(client: Client) -> None:
    make_incident(title="Gmail down", product=make_product("Gmail"), start=NOW - timedelta(hours=1))

    html = text(client.get("/fr/"))

    assert f"Produit concerné{NBSP}: " in html
    assert "Produits concernés" not in html


def test_bar_and_grid_tooltips_space_the_colon_in_french_only(client: Client) -> None:
    gmail = make_product("Gmail")
    make_incident(
        title="Gmail slow", product=gmail, start=NOW - timedelta(hours=3), end=NOW - timedelta(hours=2)
    )

    english = text(client.get("/"))
    french = text(client.get("/fr/"))
    # The bars with a tooltip a day are the product page's; `/` keeps the grid's.
    english_bars = text(client.get("/products/gmail/"))
    french_bars = text(client.get("/fr/products/gmail/"))

    assert 'title="Sun 29 Nov 2026: Major outage 1 h · Gmail slow"' in english_bars
    # The quiet days before it, as far back as a phone draws, are one run with one tooltip.
    assert 'title="Sat 31 Oct 2026 \u2013 Sat 28 Nov 2026: no incidents"' in english_bars
    assert 'title="Major outage: Gmail slow"' in english
    assert f'title="dim. 29 nov. 2026{NBSP}: Panne majeure 1{NBSP}h · Gmail slow"' in french_bars
    assert f'title="du sam. 31 oct. 2026 au sam. 28 nov. 2026{NBSP}: aucun incident"' in french_bars
    assert f'title="Panne majeure{NBSP}: Gmail slow"' in french
    # The card's bars: one text a part, counting the days at each level.
    assert (
        f'sr-only">du sam. 31 oct. 2026 au dim. 29 nov. 2026{NBSP}: '
        f"Panne majeure 1{NBSP}jour, Opérationnel 29{NBSP}jours<"
    ) in french
    # No colon glued to a date or a label in the French tooltips or screen-reader texts.
    for page in (french, french_bars):
        assert not re.search(r'(title="|sr-only">)[^"<]*\w: ', page)


def test_periods_and_headline_read_in_french(client: Client) -> None:
    storage = make_product("Cloud Storage")
    start = NOW - timedelta(hours=10)
    incident = make_incident(
        title="Storage errors", product=storage, start=start, end=start + timedelta(hours=1)
    )
    add_window(incident, storage, start + timedelta(hours=5), start + timedelta(hours=6))

    html = text(client.get(f"/fr/incidents/{incident.public_id}/"))

    assert "L’impact s’est produit en 2 périodes distinctes" in html
    assert '<span class="badge badge--impact-critical">Panne majeure</span>' in html


# --- 6. A corrected update says so --------------------------------------------------------------


def test_an_edited_update_is_marked_on_the_incident_page_and_the_card(
    client: Client,
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    gmail = make_product("Gmail")
    with freeze_time(NOW - timedelta(hours=1)):  # posted at 11:00 PST
        incident = make_incident(title="Gmail slow", product=gmail, start=NOW - timedelta(hours=1))
    with freeze_time(NOW - timedelta(minutes=30)):
        untouched = text(client.get(f"/incidents/{incident.public_id}/"))
    assert "edited" not in untouched

    # Corrected at 12:00 PST. The edit moves the public stamp once committed, so the
    # cached page is not served again.
    with django_capture_on_commit_callbacks(execute=True):
        services.incident_update_edit(update=incident.updates.get(), body="Gmail is slow for **some** users.")
    page = text(client.get(f"/incidents/{incident.public_id}/"))
    home = text(client.get("/"))

    mark = re.compile(
        r'<span class="edited">· edited <time datetime="2026-11-29T12:00:00-08:00" '
        r'data-fmt="short">29 Nov, 12:00 PST</time>\s*</span>'
    )
    timeline = page.split('id="timeline-title"')[1]
    assert mark.search(timeline) and "<strong>some</strong> users" in timeline
    assert mark.search(home.split('class="card__update-head"')[1].split("</p>")[0])
    french = text(client.get(f"/fr/incidents/{incident.public_id}/"))
    assert "· modifiée le <time" in french
