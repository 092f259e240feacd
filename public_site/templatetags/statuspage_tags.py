"""Template helpers. `stored_html` (the HTML the services rendered when the text was
written, sanitised again) and `markdown` (previews of unsaved text in the admin) are the
only filters that emit user-derived HTML, both through incidents.markdown."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, timedelta

from django import template
from django.conf import settings
from django.template.defaultfilters import date as date_filter
from django.urls import get_script_prefix
from django.utils import dateformat, translation
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext

from core.i18n import first_of_month
from incidents.daily import Bar
from incidents.intervals import format_duration
from incidents.markdown import render_markdown, stored_html
from public_site.day_markup import (
    DATE_STYLES,
    bar_strip,
    day_label,
    icon,
    incident_url_pattern,
    light_strip,
)
from public_site.history import RecentDay

register = template.Library()


@register.filter(name="stored_html")
def stored_html_filter(html: str | None) -> SafeString:
    return mark_safe(stored_html(html))  # noqa: S308 - output is sanitised by nh3


@register.filter(name="markdown")
def markdown_filter(text: str) -> SafeString:
    """Preview of text not stored yet; text outside the render bounds says why."""
    try:
        return mark_safe(render_markdown(text))  # noqa: S308 - output is sanitised by nh3
    except ValueError as exc:
        return format_html("<p><em>{}</em></p>", str(exc))


@register.filter(name="duration")
def duration_filter(delta: timedelta | None) -> str:
    """'18 h 11 min' (incidents.intervals.format_duration), with the units of the page's
    language: '1 j 5 h 46 min' in French, where a no-break space keeps each figure with
    its unit."""
    return "" if delta is None else format_duration(delta)


@register.filter(name="local_date", expects_localtime=True)
def local_date_filter(value: date | datetime | None, style: str) -> str:
    """`{{ dt|local_date:"long" }}`: the `date` filter with the page language's format."""
    if value is None or value == "":
        return ""
    styles = DATE_STYLES.get(translation.get_language() or "", DATE_STYLES["en"])
    return date_filter(value, first_of_month(styles[style], value.day))


@register.filter(name="day_label")
def day_label_filter(day: date | None, style: str = "long") -> str:
    """`{{ day|day_label }}` -> 'Sun 29 Nov 2026'; 'short' -> '29 Nov'; 'iso' -> '2026-11-29'.
    In French: 'dim. 29 nov. 2026', '29 nov.', '1er déc.'."""
    if day is None:
        return ""
    return day_label(day, style, translation.get_language() or settings.LANGUAGE_CODE)


@register.filter(name="quiet_days")
def quiet_days_filter(entry: RecentDay) -> str:
    """A run of days without incidents in one line: 'No incidents reported, 3-13 Nov'
    (an en dash; 'Aucun incident signalé du 3 au 13 nov.'), across months '28 Oct-3 Nov';
    one day 'No incidents reported, 29 Nov'."""
    last = day_label_filter(entry.date, "short")
    if not entry.is_run:
        return gettext("No incidents reported, %(day)s") % {"day": last}
    if (entry.first.year, entry.first.month) == (entry.date.year, entry.date.month):
        first = dateformat.format(entry.first, first_of_month("j", entry.first.day))
    else:
        first = day_label_filter(entry.first, "short")
    # The days joined by an en dash (U+2013), as English writes a range.
    return gettext("No incidents reported, %(first)s–%(last)s") % {"first": first, "last": last}  # noqa: RUF001


@register.filter(name="labelled")
def labelled_filter(label: object, text: object) -> str:
    """`{{ label|labelled:text }}` -> 'label: text', the colon spaced as the page's
    language writes it ('label : text' in French): the spacing comes from the
    translations, never from a template."""
    return gettext("%(label)s: %(title)s") % {"label": label, "title": text}


@register.filter(name="incident_url")
def incident_url_filter(public_id: str) -> str:
    """`{{ incident.public_id|incident_url }}`: the incident page's URL, like `{% url %}`
    but reversed once per process instead of once per bar on the 90-day bars."""
    return incident_url_pattern(get_script_prefix()).format(public_id)


@register.simple_tag(name="bar_strip")
def bar_strip_tag(days: Sequence[Bar]) -> SafeString:
    """`{% bar_strip days %}`: the uptime bars of `_bars.html` (public_site.day_markup),
    written by one loop rather than a template include per bar: a page whose history is
    busy has thousands of impacted days."""
    return bar_strip(days)


@register.simple_tag(name="light_bar_strip")
def light_bar_strip_tag(days: Sequence[Bar]) -> SafeString:
    """`{% light_bar_strip days %}`: the bars of a product card on `/`, each day its level
    only (public_site.day_markup.light_strip)."""
    return light_strip(days)


@register.simple_tag(name="grid_icon")
def grid_icon_tag(level: str) -> SafeString:
    """`{% grid_icon level %}`: `public/_icon.html` without an include (the same bytes)."""
    return icon(str(level))
