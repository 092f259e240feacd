"""Template helpers. `markdown` is the only filter that emits user-derived HTML, and it
does so through the one render-and-sanitise function."""

from __future__ import annotations

from datetime import timedelta

from django import template
from django.utils.safestring import SafeString, mark_safe

from incidents.intervals import format_duration
from incidents.markdown import render_markdown

register = template.Library()


@register.filter(name="markdown")
def markdown_filter(text: str) -> SafeString:
    return mark_safe(render_markdown(text))  # noqa: S308 - output is sanitised by nh3


@register.filter(name="duration")
def duration_filter(delta: timedelta | None) -> str:
    if delta is None:
        return ""
    return format_duration(delta)
