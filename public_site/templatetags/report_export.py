"""Filters for the report's Markdown export (templates/postmortems/report.md)."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter(name="md_line")
def md_line_filter(text: object) -> str:
    """Text kept on one line of a Markdown list item: line breaks become spaces."""
    return " ".join(str(text or "").split())


@register.filter(name="md_cell")
def md_cell_filter(text: object) -> str:
    """Text for a Markdown table cell: on one line, with its pipes escaped."""
    return md_line_filter(text).replace("|", "\\|")
