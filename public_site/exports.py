"""A published report as a printable page, Markdown and PDF, for everyone.

Public content only (postmortems.export.report_export_public): 404 unless the incident is
public and its report published. The page and the Markdown go through the page cache like
every public page; the PDF's bytes are kept per public-state version and language, so a
render (a second of CPU) happens once per change, not once per reader.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone, translation

from core.timezones import in_display_zone
from edge.page_cache import public_page
from edge.shared_cache import cache_get, cache_set, pages_cache
from edge.version import public_state_version
from postmortems.export import MARKDOWN_TEMPLATE, PRINT_TEMPLATE, report_export_public, report_pdf

# A PDF outlives no public change (the version is in its key); a day bounds a stale copy.
PDF_CACHE_SECONDS = 86400


@public_page("report-print")
@in_display_zone
def report_print(request: HttpRequest, public_id: str) -> HttpResponse:
    export = report_export_public(public_id=public_id, now=timezone.now())
    links = {
        "pdf": reverse("public:report-pdf", args=[public_id]),
        "markdown": reverse("public:report-markdown", args=[public_id]),
        "back": reverse("public:incident", args=[public_id]),
    }
    return render(request, PRINT_TEMPLATE, {"export": export, "links": links})


@public_page("report-markdown")
@in_display_zone
def report_markdown(request: HttpRequest, public_id: str) -> HttpResponse:
    export = report_export_public(public_id=public_id, now=timezone.now())
    text = render_to_string(MARKDOWN_TEMPLATE, {"export": export}).strip() + "\n"
    return HttpResponse(text, content_type="text/markdown; charset=utf-8")


@in_display_zone
def report_pdf_view(request: HttpRequest, public_id: str) -> HttpResponse:
    key = f"report-pdf:{public_state_version()}:{translation.get_language()}:{public_id}"
    pdf = cache_get(key, store=pages_cache())
    if pdf is None:
        export = report_export_public(public_id=public_id, now=timezone.now())  # 404s first
        pdf = report_pdf(render_to_string(PRINT_TEMPLATE, {"export": export}, request=request))
        cache_set(key, pdf, PDF_CACHE_SECONDS, store=pages_cache())
    response = HttpResponse(pdf, content_type="application/pdf")
    response["Content-Disposition"] = f'inline; filename="{public_id}-report.pdf"'
    return response
