"""Report export: the printable page, Markdown and PDF, public and staff copies, with
the demo's Cloud Storage report (the issue's acceptance)."""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import pytest
from django.core.management import call_command
from django.templatetags.static import static
from django.test import Client
from freezegun import freeze_time

from incidents import services
from incidents.models import ActionItem, Incident
from postmortems.export import STYLESHEET, report_pdf
from tests.builders import make_incident, make_product, utc
from tests.conftest import service_missing
from tests.public.helpers import publish_report

pytestmark = pytest.mark.django_db

TODAY = "2026-11-29 20:00:00"
SECTIONS = ("Impact", "Summary", "Root cause", "Remediation and prevention", "Follow-up actions")
INTERNAL = "Review the on-call rota for the storage team"


@pytest.fixture
def demo() -> Incident:
    with freeze_time(TODAY):
        call_command("load_demo", stdout=io.StringIO())
    incident = Incident.objects.get(title__startswith="Cloud Storage elevated", recurrence_of=None)
    # An internal item: in the staff copy only.
    services.action_item_create(incident=incident, title=INTERNAL, is_public=False)
    return incident


def _public_items(incident: Incident) -> list[str]:
    return list(incident.action_items.filter(is_public=True).values_list("title", flat=True))


def _pdftotext(pdf: bytes, tmp_path: Path) -> str:
    if shutil.which("pdftotext") is None:
        service_missing("pdftotext (poppler-utils) is not installed")
    path = tmp_path / "report.pdf"
    path.write_bytes(pdf)
    return subprocess.run(
        ["pdftotext", "-raw", str(path), "-"], check=True, capture_output=True, text=True
    ).stdout


def test_the_pdf_is_a_pdf_of_the_report(client: Client, demo: Incident, tmp_path: Path) -> None:
    with freeze_time(TODAY):
        response = client.get(f"/incidents/{demo.public_id}/report.pdf")
    assert response.status_code == 200 and response["Content-Type"] == "application/pdf"
    pdf = response.content
    assert pdf.startswith(b"%PDF-") and b"%%EOF" in pdf[-1024:]
    text = " ".join(_pdftotext(pdf, tmp_path).split())
    assert "Cloud Storage elevated write latency and errors in us-central1" in text
    for section in SECTIONS:
        assert section in text
    assert "12 h 30 min" in text and "5 h 41 min" in text and "18 h 11 min" in text
    for title in _public_items(demo):
        assert title in text
    assert "Overdue" in text and "Reason: Superseded by enforcing capacity constraints" in text
    assert "Key durations" in text and "Timeline" in text and "of the 8 October problem" in text
    assert INTERNAL not in text and "Decision: complete the load balancing rollback" not in text


def test_the_markdown_has_the_sections_and_the_public_action_items(client: Client, demo: Incident) -> None:
    with freeze_time(TODAY):
        response = client.get(f"/incidents/{demo.public_id}/report.md")
    assert response.status_code == 200 and response["Content-Type"] == "text/markdown; charset=utf-8"
    text = response.content.decode()
    assert text.startswith("# Cloud Storage elevated write latency and errors in us-central1\n")
    for section in SECTIONS:
        assert f"\n## {section}\n" in text
    assert (
        "| Cloud Storage | us-central1 (Iowa) | Partial outage | 8 Oct 2026 04:00 | 8 Oct 2026 16:30 | 12 h 30 min |"
        in text
    )
    for title in _public_items(demo):
        assert f"- **{title}**: " in text
    assert "Won't do, due 30 Nov 2026, dropped" in text
    assert INTERNAL not in text and "staff" not in text  # no internal items, no owners
    # The merged timeline and its key durations, public rows only.
    assert "\n## Key durations\n" in text and "\n## Timeline\n" in text
    assert "- Impact start to detection: 50 min\n" in text
    assert (
        "- 9 Oct 2026 09:46 PDT · **Resolution**: Impact ends: Cloud Storage, us-central1-b, after 5 h 41 min\n"
        in text
    )
    assert "**Recurrence** of the 8 October problem" in text
    assert "Decision: complete the load balancing rollback" not in text


def test_the_printable_page_is_the_same_template_with_links_and_a_print_stylesheet(
    client: Client, demo: Incident
) -> None:
    with freeze_time(TODAY):
        html = client.get(f"/incidents/{demo.public_id}/report/print/").content.decode()
        page = client.get(f"/incidents/{demo.public_id}/").content.decode()
    assert 'href="/static/css/report-print.css"' in html
    assert f'href="/incidents/{demo.public_id}/report.pdf"' in html
    assert "Follow-up actions" in html and INTERNAL not in html
    assert f'href="/incidents/{demo.public_id}/report/print/"' in page
    assert "@media print" in Path("static/css/report-print.css").read_text()
    css = Path("static/css/status.css").read_text()
    assert "@media print" in css.split("Printing a public page")[1]


def test_the_french_export_is_in_french(client: Client, demo: Incident) -> None:
    with freeze_time(TODAY):
        text = client.get(f"/fr/incidents/{demo.public_id}/report.md").content.decode()
    assert "\n## Résumé\n" in text and "\n## Actions de suivi\n" in text


def test_exports_of_an_unpublished_report_or_a_private_incident_are_404(client: Client, alice) -> None:  # type: ignore[no-untyped-def]
    product = make_product("Gmail")
    draft = make_incident(
        title="Draft report", product=product, start=utc(2026, 11, 1, 9), end=utc(2026, 11, 1, 10)
    )
    services.report_save(incident=draft, summary="Not yet.")
    private = make_incident(
        title="Private", product=product, start=utc(2026, 11, 2, 9), end=utc(2026, 11, 2, 10), is_public=False
    )
    publish_report(private)
    no_report = make_incident(
        title="No report", product=product, start=utc(2026, 11, 3, 9), end=utc(2026, 11, 3, 10)
    )
    for incident in (draft, private, no_report):
        for suffix in ("report/print/", "report.md", "report.pdf"):
            assert client.get(f"/incidents/{incident.public_id}/{suffix}").status_code == 404
    # Staff export drafts from the console, and only staff.
    assert client.get(f"/manage/incidents/{draft.public_id}/report.md").status_code == 302
    client.force_login(alice)
    staff = client.get(f"/manage/incidents/{draft.public_id}/report.md")
    assert staff.status_code == 200 and "Draft, not published" in staff.content.decode()


def test_the_staff_copy_has_internal_items_and_owners(
    client: Client, demo: Incident, alice, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    client.force_login(alice)
    with freeze_time(TODAY):
        markdown = client.get(f"/manage/incidents/{demo.public_id}/report.md").content.decode()
        pdf = client.get(f"/manage/incidents/{demo.public_id}/report.pdf")
        printable = client.get(f"/manage/incidents/{demo.public_id}/report/print/")
    assert INTERNAL in markdown and "internal" in markdown and ", staff]" in markdown
    assert pdf["Content-Type"] == "application/pdf" and INTERNAL in " ".join(
        _pdftotext(pdf.content, tmp_path).split()
    )
    assert printable.status_code == 200 and "Staff copy" in printable.content.decode()
    assert not ActionItem.objects.filter(title=INTERNAL, is_public=True).exists()


def test_the_pdf_renders_to_page_images(client: Client, demo: Incident, tmp_path: Path) -> None:
    # The acceptance's look at the PDF starts here: pdftoppm reads every page of it.
    if shutil.which("pdftoppm") is None:
        service_missing("pdftoppm (poppler-utils) is not installed")
    with freeze_time(TODAY):
        pdf = client.get(f"/incidents/{demo.public_id}/report.pdf").content
    (tmp_path / "report.pdf").write_bytes(pdf)
    subprocess.run(
        ["pdftoppm", "-png", "-r", "40", str(tmp_path / "report.pdf"), str(tmp_path / "page")], check=True
    )
    pages = sorted(tmp_path.glob("page-*.png"))
    assert len(pages) >= 2 and all(p.read_bytes().startswith(b"\x89PNG") for p in pages)


def test_the_pdf_fetches_nothing_but_its_stylesheet(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # Stored Markdown cannot hold an image (incidents.markdown allows no <img>); the
    # fetcher is the second line should a template ever show one.
    html = (
        f'<html><head><link rel="stylesheet" href="{static(STYLESHEET)}"></head><body><h1>Report</h1>'
        '<img src="http://169.254.169.254/latest/meta-data/graph.png"><img src="file:///etc/passwd"></body></html>'
    )
    with caplog.at_level("ERROR", logger="weasyprint"):
        pdf = report_pdf(html)
    assert pdf.startswith(b"%PDF-")
    refused = [
        r.getMessage() for r in caplog.records if "fetches nothing but its stylesheet" in r.getMessage()
    ]
    assert any("169.254.169.254" in message for message in refused)
    assert any("/etc/passwd" in message for message in refused)
    assert not any("report-print.css" in message for message in refused)  # the stylesheet is read
    assert "1 / 1" in " ".join(_pdftotext(pdf, tmp_path).split())  # its page counter, from the stylesheet
