"""A report as a document: the printable page, Markdown and PDF, all from one context
(docs/adr/0022-follow-through-and-export.md).

The public variant shows only what the public incident page shows (a published report,
windows on public products, public action items); the staff variant adds the internal
items, their owners and every window. The PDF is WeasyPrint's rendering of the printable
page's own template, with every outside fetch refused. The views render the templates
(PRINT_TEMPLATE, MARKDOWN_TEMPLATE) with `{"export": ...}`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from django.contrib.staticfiles import finders
from django.http import Http404
from django.templatetags.static import static
from django.utils.text import slugify

from incidents.models import ImpactWindow, Incident, IncidentReport
from incidents.selectors import (
    IncidentDurations,
    incident_durations,
    incident_windows_public,
    incidents_public,
    window_interval,
)
from postmortems.follow import Commitment, commitments_for_report, commitments_of
from postmortems.selectors import Timeline, incident_timeline

# One template per format, rendered by the views (their tag library is the public site's).
PRINT_TEMPLATE = "postmortems/report_print.html"
MARKDOWN_TEMPLATE = "postmortems/report.md"


@dataclass(frozen=True)
class ExportWindow:
    window: ImpactWindow
    duration: timedelta


@dataclass(frozen=True)
class ReportExport:
    incident: Incident
    report: IncidentReport
    windows: tuple[ExportWindow, ...]
    durations: IncidentDurations
    commitments: tuple[Commitment, ...]
    timeline: Timeline  # the merged timeline and key durations, public rows only when public
    is_public: bool
    generated_at: datetime

    @property
    def filename(self) -> str:
        return f"{self.incident.public_id}-{slugify(self.incident.title)[:60] or 'report'}"


def _export(incident: Incident, report: IncidentReport, *, public: bool, now: datetime) -> ReportExport:
    if public:
        windows = incident_windows_public(incident=incident)
        commitments = commitments_for_report(incident=incident, report=report, now=now)
    else:
        windows = list(incident.windows.select_related("product", "location").order_by("started_at", "id"))
        commitments = commitments_of(incident.action_items.select_related("owner"), now=now)
    return ReportExport(
        incident=incident,
        report=report,
        windows=tuple(ExportWindow(w, window_interval(w, now=now).duration) for w in windows),
        durations=incident_durations(incident=incident, windows=windows, now=now),
        commitments=tuple(commitments),
        timeline=incident_timeline(incident=incident, public=public, now=now),
        is_public=public,
        generated_at=now,
    )


def report_export_public(*, public_id: str, now: datetime) -> ReportExport:
    """A public incident's published report, as the public sees it; 404 otherwise."""
    incident = incidents_public().filter(public_id=public_id).first()
    report = None if incident is None else IncidentReport.objects.filter(incident=incident).first()
    if incident is None or report is None or not report.is_published:
        raise Http404("No published report.")
    return _export(incident, report, public=True, now=now)


def report_export_staff(*, incident: Incident, now: datetime) -> ReportExport:
    """Any report of an incident the caller already passed the staff gate for, drafts too."""
    report = IncidentReport.objects.filter(incident=incident).first()
    if report is None:
        raise Http404("This incident has no report yet.")
    return _export(incident, report, public=False, now=now)


# The PDF's base address: relative links resolve under it, and nothing is ever fetched
# from it (the one stylesheet is read from disk).
PDF_BASE_URL = "https://report.invalid/"
STYLESHEET = "css/report-print.css"


def _stylesheet() -> bytes:
    path = finders.find(STYLESHEET)
    if not isinstance(path, str):
        raise FileNotFoundError(STYLESHEET)
    return Path(path).read_bytes()


def report_pdf(html: str) -> bytes:
    """The printable page's HTML (rendered by the caller's view) as a PDF."""
    # Imported here: loading Pango costs a second, which no other page should pay.
    from weasyprint import HTML
    from weasyprint.urls import URLFetcher, URLFetcherResponse

    stylesheet_url = urljoin(PDF_BASE_URL, static(STYLESHEET))

    class StylesheetOnly(URLFetcher):  # type: ignore[misc]
        """The report's own stylesheet, read from disk, and nothing else: stored Markdown
        may name outside images, and a render must not make the server fetch them (a
        request forger's way in, and a slow render)."""

        def fetch(self, url: str, headers: Any = None) -> Any:
            if url != stylesheet_url:
                raise ValueError(f"The report export fetches nothing but its stylesheet: {url}")
            return URLFetcherResponse(url, body=_stylesheet(), headers={"Content-Type": "text/css"})

    # Font subsetting logs a dozen INFO lines per font and PDF: noise in every log.
    logging.getLogger("fontTools").setLevel(logging.WARNING)

    pdf = HTML(string=html, base_url=PDF_BASE_URL, url_fetcher=StylesheetOnly()).write_pdf()
    assert pdf is not None  # None only when a target file is given
    return bytes(pdf)
