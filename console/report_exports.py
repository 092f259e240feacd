"""The staff copy of a report as a printable page, Markdown and PDF: drafts too, with the
internal action items and their owners (postmortems.export.report_export_staff)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from console.views import _incident, console_view
from postmortems.export import (
    MARKDOWN_TEMPLATE,
    PRINT_TEMPLATE,
    ReportExport,
    report_export_staff,
    report_pdf,
)


def _export(request: HttpRequest, public_id: str) -> ReportExport:
    return report_export_staff(incident=_incident(request, public_id), now=timezone.now())


@console_view
def report_print(request: HttpRequest, public_id: str) -> HttpResponse:
    export = _export(request, public_id)
    links = {
        "pdf": reverse("console:report-pdf", args=[public_id]),
        "markdown": reverse("console:report-markdown", args=[public_id]),
        "back": reverse("console:report", args=[public_id]),
    }
    return render(request, PRINT_TEMPLATE, {"export": export, "links": links})


@console_view
def report_markdown(request: HttpRequest, public_id: str) -> HttpResponse:
    export = _export(request, public_id)
    text = render_to_string(MARKDOWN_TEMPLATE, {"export": export}).strip() + "\n"
    response = HttpResponse(text, content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{export.filename}-staff.md"'
    return response


@console_view
def report_pdf_view(request: HttpRequest, public_id: str) -> HttpResponse:
    export = _export(request, public_id)
    pdf = report_pdf(render_to_string(PRINT_TEMPLATE, {"export": export}, request=request))
    response = HttpResponse(pdf, content_type="application/pdf")
    response["Content-Disposition"] = f'attachment; filename="{export.filename}-staff.pdf"'
    return response
