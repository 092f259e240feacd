"""Template helpers. `stored_html` (the HTML the services rendered when the text was
written, sanitised again) and `markdown` (previews of unsaved text in the admin) are the
only filters that emit user-derived HTML, both through incidents.markdown."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, timedelta
from functools import lru_cache

from django import template
from django.conf import settings
from django.template.defaultfilters import date as date_filter
from django.urls import get_script_prefix, reverse
from django.utils import dateformat, translation
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext

from core.i18n import first_of_month
from incidents.intervals import format_duration
from incidents.markdown import render_markdown, stored_html
from public_site.cards import BarRuns, BarSegment, bar_runs
from public_site.history import RecentDay
from public_site.pages import DayView

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


# Dates and times as each language writes them: English keeps its formats byte for byte;
# French follows the Office québécois de la langue française (docs/glossary-fr.md):
# abbreviated days and months end with a full stop ("mer. 2 déc. 2026, 05:00 PST";
# Django's `N` gives the French month abbreviations, `M` would give "Déc"), and the first
# of the month is "1er" (core.i18n.first_of_month).
DATE_STYLES = {
    "en": {"long": "D j M Y, H:i T", "short": "j M, H:i T", "date": "D j M Y", "day": "j M"},
    "fr": {"long": "D. j N Y, H:i T", "short": "j N, H:i T", "date": "D. j N Y", "day": "j N"},
}


@register.filter(name="local_date", expects_localtime=True)
def local_date_filter(value: date | datetime | None, style: str) -> str:
    """`{{ dt|local_date:"long" }}`: the `date` filter with the page language's format."""
    if value is None or value == "":
        return ""
    styles = DATE_STYLES.get(translation.get_language() or "", DATE_STYLES["en"])
    return date_filter(value, first_of_month(styles[style], value.day))


# Calendar-day labels. The 90-day bars and the day grid print a few labels per product
# per day, tens of thousands on a large page; Django's `date` filter goes through the
# localisation machinery each time, these are formatted once per day, format and
# language. English keeps its strftime formats (C locale); other languages go through
# Django's date formatting once, with their own day and month names and the formats of
# DATE_STYLES ("long" is its "date", "short" its "day").
_DAY_FORMATS = {"long": "{d:%a} {d.day} {d:%b %Y}", "short": "{d.day} {d:%b}", "iso": "{d:%Y-%m-%d}"}
_DAY_STYLES = {"long": "date", "short": "day"}


@lru_cache(maxsize=4096)
def _day_label(day: date, style: str, language: str) -> str:
    if language == settings.LANGUAGE_CODE or style == "iso":
        return _DAY_FORMATS[style].format(d=day)
    fmt = DATE_STYLES.get(language, DATE_STYLES["en"])[_DAY_STYLES[style]]
    with translation.override(language):
        return dateformat.format(day, first_of_month(fmt, day.day))


@register.filter(name="day_label")
def day_label_filter(day: date | None, style: str = "long") -> str:
    """`{{ day|day_label }}` -> 'Sun 29 Nov 2026'; 'short' -> '29 Nov'; 'iso' -> '2026-11-29'.
    In French: 'dim. 29 nov. 2026', '29 nov.', '1er déc.'."""
    if day is None:
        return ""
    return _day_label(day, style, translation.get_language() or settings.LANGUAGE_CODE)


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


@register.filter(name="bar_title")
def bar_title_filter(day: DayView) -> str:
    """An impacted day's tooltip on the uptime bars: 'Sun 29 Nov 2026: Partial outage
    2 h, Degraded performance 1 h · Title; Other title'."""
    impact = ", ".join(f"{label} {format_duration(delta)}" for label, delta in day.impact)
    titles = "; ".join(i.incident.title for i in day.incidents)
    return labelled_filter(day_label_filter(day.date), f"{impact} · {titles}")


@register.filter(name="bar_runs")
def bar_runs_filter(days: list[DayView]) -> BarRuns:
    """`{% with runs=days|bar_runs %}`: the bars as runs of quiet days and impacted days."""
    return bar_runs(days)


@register.filter(name="quiet_bar_title")
def quiet_bar_title_filter(segment: BarSegment) -> str:
    """A run of quiet bars' tooltip: 'Sat 28 Nov 2026: no incidents' for one day,
    'Sat 31 Oct 2026 - Sat 28 Nov 2026: no incidents' (an en dash) for several."""
    when = day_label_filter(segment.first)
    if segment.count > 1:
        when = gettext("%(first)s – %(last)s") % {"first": when, "last": day_label_filter(segment.last)}  # noqa: RUF001
    return labelled_filter(when, gettext("no incidents"))


@lru_cache(maxsize=16)
def _incident_url_pattern(script_prefix: str) -> str:
    return reverse("public:incident", args=["00000000"]).replace("00000000", "{}")


@register.filter(name="incident_url")
def incident_url_filter(public_id: str) -> str:
    """`{{ incident.public_id|incident_url }}`: the incident page's URL, like `{% url %}`
    but reversed once per process instead of once per bar on the 90-day bars."""
    return _incident_url_pattern(get_script_prefix()).format(public_id)


@register.simple_tag(name="bar_strip")
def bar_strip_tag(segments: Sequence[BarSegment]) -> SafeString:
    """`{% bar_strip runs.recent %}`: the uptime bars of `_bars.html`, built here rather
    than by a template include per bar (tens of microseconds each: a page whose history
    is busy has thousands of impacted days). Quiet runs are one decorative element;
    an impacted day links to its worst incident."""
    return mark_safe("".join(map(_bar_html, segments)))  # noqa: S308 - every value escaped below


def _bar_html(segment: BarSegment) -> str:
    day = segment.day
    if not day:
        runs = f" q{segment.count}" if segment.count > 1 else ""
        quiet = escape(quiet_bar_title_filter(segment))
        return f'<span class="bar bar--operational{runs}" title="{quiet}" aria-hidden="true"></span>'
    worst = day.worst_incident
    public_id, title = (worst.public_id, worst.title) if worst else ("", "")
    spoken = escape(labelled_filter(day_label_filter(segment.first), day.label))
    return (
        f'<a class="bar bar--{escape(day.level)}" href="{escape(incident_url_filter(public_id))}" '
        f'title="{escape(bar_title_filter(day))}" data-date="{escape(day_label_filter(segment.first, "iso"))}">'
        f'<span class="sr-only">{spoken} – {escape(title)}</span></a>'  # noqa: RUF001 - an en dash
    )


@register.simple_tag(name="grid_icon")
def grid_icon_tag(level: str) -> SafeString:
    """`{% grid_icon level %}`: `public/_icon.html` for the days grid, where a busy
    history puts thousands of marks on the page (one include each cost tens of
    microseconds). The same bytes, its trailing newline included."""
    return _icon(str(level))


@lru_cache(maxsize=16)
def _icon(level: str) -> SafeString:
    level = escape(level)
    return mark_safe(  # noqa: S308 - the level is escaped
        f'<svg class="icon icon--{level}" aria-hidden="true" focusable="false" width="20" height="20">'
        f'<use href="#icon-{level}"></use></svg>\n'
    )
