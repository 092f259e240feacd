"""The postmortem timeline: services (rules, roles), the automatic timeline of the demo's
Cloud Storage incident, its agreement with the incident page, insights and the SLA
maths, the public page and insights' recurrences."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management import call_command
from django.test import Client
from freezegun import freeze_time

from demo.incidents import GCS_TITLE, GMAIL_2009_TITLE, GMAIL_2026_TITLE
from incidents.intervals import format_duration
from incidents.models import Incident
from incidents.selectors import incident_durations
from insights import metrics
from postmortems import selectors, services
from postmortems.models import IncidentLink, TimelineEntry
from tests.builders import make_incident, make_product, utc

pytestmark = pytest.mark.django_db


def _role_user(name: str, role: str | None) -> User:
    user = User.objects.create_user(name, f"{name}@example.org", "pw", is_staff=True)
    if role:
        user.groups.add(Group.objects.get(name=role))
    return user


@pytest.fixture
def demo(db: None) -> Incident:
    call_command("load_demo", stdout=io.StringIO())
    return Incident.objects.get(title=GCS_TITLE)


def test_it_creates_edits_and_deletes_an_entry(alice: User) -> None:
    incident = make_incident(start=utc(2026, 1, 1, 10), end=utc(2026, 1, 1, 12))
    entry = services.timeline_entry_create(
        incident=incident, at=utc(2026, 1, 1, 10, 5), text="Paged **on-call**", phase="detection", actor=alice
    )
    assert entry.visibility == "internal"
    assert "<strong>on-call</strong>" in entry.text_html
    services.timeline_entry_edit(entry=entry, changes={"visibility": "public", "text": "Paged"}, actor=alice)
    entry.refresh_from_db()
    assert (entry.visibility, entry.text, entry.text_html) == ("public", "Paged", "<p>Paged</p>")
    services.timeline_entry_delete(entry=entry, actor=alice)
    assert not TimelineEntry.objects.exists()


def test_it_sanitises_the_markdown(alice: User) -> None:
    incident = make_incident(start=utc(2026, 1, 1, 10))
    entry = services.timeline_entry_create(
        incident=incident,
        at=utc(2026, 1, 1, 10),
        text="<script>alert(1)</script>[x](javascript:alert(1))",
        actor=alice,
    )
    assert "<script" not in entry.text_html
    assert "javascript:" not in entry.text_html


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"text": "   "}, "text"),
        ({"phase": "guessing"}, "phase"),
        ({"visibility": "secret"}, "visibility"),
        ({"at": utc(2099, 1, 1)}, "at"),
    ],
)
def test_bad_entries_are_refused_and_change_nothing(alice: User, fields, field) -> None:  # type: ignore[no-untyped-def]
    incident = make_incident(start=utc(2026, 1, 1, 10))
    data = {"at": utc(2026, 1, 1, 10), "text": "Deploy", "phase": "other", "visibility": "internal", **fields}
    with pytest.raises(ValidationError) as refused:
        services.timeline_entry_create(incident=incident, actor=alice, **data)
    assert field in refused.value.message_dict
    assert not TimelineEntry.objects.exists()


def test_a_naive_time_is_refused(alice: User) -> None:
    incident = make_incident(start=utc(2026, 1, 1, 10))
    with pytest.raises(ValidationError):
        services.timeline_entry_create(
            incident=incident, at=utc(2026, 1, 1).replace(tzinfo=None), text="x", actor=alice
        )


def test_links_refuse_self_duplicates_and_bad_kinds(alice: User) -> None:
    first = make_incident(title="First", start=utc(2026, 1, 1, 10))
    second = make_incident(title="Second", start=utc(2026, 2, 1, 10))
    with pytest.raises(ValidationError, match="itself"):
        services.incident_link_create(from_incident=first, to_incident=first, kind="related_to", actor=alice)
    with pytest.raises(ValidationError, match="kind"):
        services.incident_link_create(from_incident=second, to_incident=first, kind="cousin_of", actor=alice)
    services.incident_link_create(from_incident=second, to_incident=first, kind="recurrence_of", actor=alice)
    for a, b in ((second, first), (first, second)):  # either way round
        with pytest.raises(ValidationError, match="already linked"):
            services.incident_link_create(from_incident=a, to_incident=b, kind="related_to", actor=alice)
    assert IncidentLink.objects.count() == 1
    assert [li.label for li in selectors.incident_links(incident=first, public=True)] == ["Recurred as"]
    assert [li.label for li in selectors.incident_links(incident=second, public=True)] == [
        "This is a recurrence of"
    ]


def test_roles_the_responder_writes_the_viewer_and_approver_may_not(db: None) -> None:
    incident = make_incident(start=utc(2026, 1, 1, 10))
    responder = _role_user("rita", "Responder")
    services.timeline_entry_create(incident=incident, at=utc(2026, 1, 1, 10), text="ok", actor=responder)
    for name, role in (("vic", "Viewer"), ("amy", "Report approver"), ("nobody", None)):
        with pytest.raises(PermissionDenied):
            services.timeline_entry_create(
                incident=incident, at=utc(2026, 1, 1, 10), text="no", actor=_role_user(name, role)
            )
    assert TimelineEntry.objects.count() == 1


def test_the_demo_cloud_storage_timeline(demo: Incident) -> None:
    timeline = selectors.incident_timeline(incident=demo, public=False)
    kinds = [r.kind for r in timeline.rows]
    assert kinds.count("impact_start") == 2 and kinds.count("impact_end") == 2
    assert [length for _w, length in timeline.periods] == ["12 h 30 min", "5 h 41 min"]
    ends = [r.text for r in timeline.rows if r.kind == "impact_end"]
    assert ends[0].endswith("after 12 h 30 min") and ends[1].endswith("after 5 h 41 min")
    # The first alert (staff only) fired 42 minutes into the impact, before detection.
    alert = [r for r in timeline.rows if r.kind == "alert"]
    assert len(alert) == 1 and not alert[0].is_public
    assert alert[0].at == timeline.periods[0][0].started_at + timedelta(minutes=42)
    assert alert[0].text == "First alert: Cloud Storage write error ratio above 5% in us-central1"
    assert kinds.index("alert") < kinds.index("detection")
    public_kinds = [r.kind for r in selectors.incident_timeline(incident=demo, public=True).rows]
    assert "alert" not in public_kinds
    recurrence = [r for r in timeline.rows if r.entry is not None and "Recurrence" in r.text]
    assert len(recurrence) == 1 and recurrence[0].at == timeline.periods[1][0].started_at
    assert recurrence[0].phase == "detection" and recurrence[0].is_public
    for kind in ("detection", "declaration", "update", "level_change", "mitigation", "resolution", "report"):
        assert kind in kinds
    assert [r.at for r in timeline.rows] == sorted(r.at for r in timeline.rows)
    got = {d.key: d.text for d in timeline.durations}
    assert got == {
        "detection": "50 min",
        "declaration": "50 min",
        "first_public_update": "50 min",
        "mitigation": "12 h 30 min",
        "resolution": "1 d 5 h 46 min",
    }


def test_the_demo_figures_agree_with_the_page_insights_and_sla_maths(demo: Incident) -> None:
    timeline = selectors.incident_timeline(incident=demo, public=True)
    windows = [w for w, _length in timeline.periods]
    page = incident_durations(incident=demo, windows=windows)
    # The two periods add up to the incident page's (and the SLA maths') total impact.
    assert format_duration(page.total) == "18 h 11 min"
    assert sum((w.ended_at - w.started_at for w in windows if w.ended_at), timedelta()) == page.total
    facts = metrics.IncidentFacts(
        incident_id=demo.pk,
        public_id=demo.public_id,
        title=demo.title,
        is_maintenance=False,
        is_public=True,
        started_at=demo.started_at,
        declared_at=demo.created_at,
        detected_at=demo.detected_at,
        resolved_at=demo.resolved_at,
    )
    assert demo.resolved_at is not None
    row = metrics.incident_row(facts, now=demo.resolved_at, weights=metrics.uptime.Weights())
    by_key = {d.key: d.value for d in timeline.durations}
    assert row.time_to_detect == by_key["detection"] == timedelta(minutes=50)
    assert row.time_to_resolve == by_key["resolution"]


def test_the_public_timeline_has_public_rows_only(demo: Incident, client: Client) -> None:
    internal = "Decision: complete the load balancing rollback region-wide"
    assert any(internal in r.text for r in selectors.incident_timeline(incident=demo, public=False).rows)
    public = selectors.incident_timeline(incident=demo, public=True)
    assert all(r.is_public for r in public.rows)
    assert not any(internal in r.text for r in public.rows)
    html = client.get(f"/incidents/{demo.public_id}/").content.decode()
    assert "Key durations" in html and "12 h 30 min" in html and "5 h 41 min" in html
    assert "<strong>Recurrence</strong> of the 8 October problem" in html
    assert internal not in html
    assert "Load balancer configuration change (traffic sorting)" not in html  # internal too
    french = client.get(f"/fr/incidents/{demo.public_id}/").content.decode()
    assert "Durées clés" in french and "12\u00a0h 30\u00a0min" in french
    assert "Début de l’impact\u00a0:" in french


def test_both_pages_show_the_link(demo: Incident, client: Client) -> None:
    old = Incident.objects.get(title=GMAIL_2009_TITLE)
    new = Incident.objects.get(title=GMAIL_2026_TITLE)
    new_html = client.get(f"/incidents/{new.public_id}/").content.decode()
    old_html = client.get(f"/incidents/{old.public_id}/").content.decode()
    assert f'href="/incidents/{old.public_id}/"' in new_html
    assert f'href="/incidents/{new.public_id}/"' in old_html
    assert "Linked incidents" in new_html and "Linked incidents" in old_html


def test_a_link_to_a_hidden_incident_is_not_public(alice: User, client: Client) -> None:
    shown = make_incident(title="Shown", product=make_product("Gmail"), start=utc(2026, 1, 1, 10))
    hidden = make_incident(title="Hidden", start=utc(2026, 2, 1, 10), is_public=False)
    services.incident_link_create(from_incident=shown, to_incident=hidden, kind="related_to", actor=alice)
    assert selectors.incident_links(incident=shown, public=True) == []
    assert len(selectors.incident_links(incident=shown, public=False)) == 1
    assert "Hidden" not in client.get(f"/incidents/{shown.public_id}/").content.decode()


def test_insights_count_recurrences_per_product(alice: User, staff_client: Client) -> None:
    gmail, storage = make_product("Gmail"), make_product("Cloud Storage", position=1)
    first = make_incident(title="First", product=gmail, start=utc(2026, 11, 1, 10), end=utc(2026, 11, 1, 11))
    again = make_incident(
        title="Again", product=gmail, start=utc(2026, 11, 20, 10), end=utc(2026, 11, 20, 11)
    )
    other = make_incident(
        title="Other", product=storage, start=utc(2026, 11, 21, 10), end=utc(2026, 11, 21, 11)
    )
    services.incident_link_create(from_incident=again, to_incident=first, kind="recurrence_of", actor=alice)
    services.incident_link_create(from_incident=other, to_incident=first, kind="related_to", actor=alice)
    since, until = utc(2026, 11, 1), utc(2026, 12, 1)
    assert selectors.recurrences_per_product(since=since, until=until) == [("Gmail", 1)]
    assert selectors.recurrences_per_product(since=since, until=until, product_ids=[storage.pk]) == []
    assert selectors.recurrences_per_product(since=utc(2026, 12, 1), until=utc(2027, 1, 1)) == []
    # The older field counts too, once per incident.
    Incident.objects.filter(pk=other.pk).update(recurrence_of=first)
    assert selectors.recurrences_per_product(since=since, until=until) == [("Cloud Storage", 1), ("Gmail", 1)]
    Incident.objects.filter(pk=again.pk).update(recurrence_of=first)
    assert selectors.recurrences_per_product(since=since, until=until) == [("Cloud Storage", 1), ("Gmail", 1)]
    Incident.objects.filter(pk__in=[other.pk, again.pk]).update(recurrence_of=None)
    with freeze_time(utc(2026, 12, 5, 12)):  # the default range: the months up to this one
        html = staff_client.get("/manage/insights/").content.decode()
    assert 'id="recurrences"' in html
    assert '<tr class="recurrence-row"><th scope="row">Gmail</th><td>1</td></tr>' in html
