"""The markup of a product's days on the status page: its uptime bars (`{% bar_strip %}`)
and its row of the days grid, written by a loop over the day rows (`incidents.daily.Bar`)
rather than a template per day. A busy history puts thousands of impacted days on the
page: what a day costs is a few dictionary lookups and one format. Every label that does
not depend on the day's own data (level names, "no incidents", "and 3 more", the
durations) is translated once per process and language and kept; the incident titles
are escaped where they are written. Quiet days are drawn as runs, one decorative element
each. On a product page an impacted day is a link to its worst incident, its tooltip
naming that incident and how many more there were, its text for screen readers saying
the same; on `/` (`light_strip`) a day is its colour only, and each part of the bars one
text counting its days at each level.
Design: docs/adr/0015-page-fragments.md (the fragments these go into).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date, timedelta
from functools import lru_cache
from html import escape
from typing import NamedTuple

from django.conf import settings
from django.urls import get_script_prefix, reverse
from django.utils import dateformat, translation
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext, ngettext

from core.i18n import first_of_month
from incidents.daily import LEVEL_FIELDS, Bar
from incidents.intervals import format_duration
from incidents.selectors import PRODUCT_STATUS_LABELS
from incidents.uptime import OPERATIONAL
from public_site.pages import UPTIME_BAR_DAYS_NARROW

# A run longer than this is split: status.css sizes runs of up to MAX_RUN days (.q2 to
# .q60), the days a wide screen shows beyond the phone's 30.
MAX_RUN = 60


# --- Runs of quiet days, impacted days one by one ---------------------------------------------


class BarSegment(NamedTuple):
    first: date
    last: date
    length: int  # days
    day: Bar | None = None  # an impacted day; None for a run of quiet days


class BarRuns(NamedTuple):
    early: tuple[BarSegment, ...]  # the days a phone does not draw
    recent: tuple[BarSegment, ...]  # the last UPTIME_BAR_DAYS_NARROW days


def _segments(days: Sequence[Bar]) -> tuple[BarSegment, ...]:
    out: list[BarSegment] = []
    first: date | None = None
    last = date.min
    run = 0
    for day in days:
        if not day.impacted:
            if not run:
                first = day.date
            last, run = day.date, run + 1
            if run == MAX_RUN:
                out.append(BarSegment(first, last, run))  # type: ignore[arg-type]
                run = 0
            continue
        if run:
            out.append(BarSegment(first, last, run))  # type: ignore[arg-type]
            run = 0
        out.append(BarSegment(day.date, day.date, 1, day))
    if run:
        out.append(BarSegment(first, last, run))  # type: ignore[arg-type]
    return tuple(out)


def bar_runs(days: Sequence[Bar], *, recent: int = UPTIME_BAR_DAYS_NARROW) -> BarRuns:
    """The bars, oldest first, with no run crossing the line between what a phone hides
    and what it draws (status.css hides the early part under 600 px)."""
    split = max(0, len(days) - recent)
    return BarRuns(early=_segments(days[:split]), recent=_segments(days[split:]))


# --- Labels, once per language ----------------------------------------------------------------


# Dates and times as each language writes them: English keeps its formats byte for byte;
# French follows the Office québécois de la langue française (docs/glossary-fr.md):
# abbreviated days and months end with a full stop ("mer. 2 déc. 2026, 05:00 PST";
# Django's `N` gives the French month abbreviations, `M` would give "Déc"), and the first
# of the month is "1er" (core.i18n.first_of_month).
DATE_STYLES = {
    "en": {"long": "D j M Y, H:i T", "short": "j M, H:i T", "date": "D j M Y", "day": "j M"},
    "fr": {"long": "D. j N Y, H:i T", "short": "j N, H:i T", "date": "D. j N Y", "day": "j N"},
}


# Calendar-day labels. The 90-day bars and the day grid print a few labels per product
# per day, tens of thousands on a large page; Django's `date` filter goes through the
# localisation machinery each time, these are formatted once per day, format and
# language. English keeps its strftime formats (C locale); other languages go through
# Django's date formatting once, with their own day and month names and the formats of
# DATE_STYLES ("long" is its "date", "short" its "day").
_DAY_FORMATS = {"long": "{d:%a} {d.day} {d:%b %Y}", "short": "{d.day} {d:%b}", "iso": "{d:%Y-%m-%d}"}
_DAY_STYLES = {"long": "date", "short": "day"}


@lru_cache(maxsize=4096)
def day_label(day: date, style: str, language: str) -> str:
    if language == settings.LANGUAGE_CODE or style == "iso":
        return _DAY_FORMATS[style].format(d=day)
    fmt = DATE_STYLES.get(language, DATE_STYLES["en"])[_DAY_STYLES[style]]
    with translation.override(language):
        return dateformat.format(day, first_of_month(fmt, day.day))


def _language() -> str:
    return translation.get_language() or settings.LANGUAGE_CODE


class _Words(NamedTuple):
    levels: dict[str, str]  # level -> its label, unescaped
    labelled: str  # "%(label)s: %(title)s", the colon as the language spaces it
    no_incidents: str
    operational: str
    between: str  # first and last day of a run, joined by a dash


@lru_cache(maxsize=16)
def _words(language: str) -> _Words:
    with translation.override(language):
        return _Words(
            levels={level: str(label) for level, label in PRODUCT_STATUS_LABELS.items()},
            labelled=gettext("%(label)s: %(title)s"),
            no_incidents=gettext("no incidents"),
            operational=gettext("operational"),
            between=gettext("%(first)s – %(last)s"),  # noqa: RUF001 - an en dash
        )


def _label(words: _Words, level: str) -> str:
    return words.levels.get(level, level)


@lru_cache(maxsize=4096)
def _impact(durations: tuple[timedelta, ...], language: str) -> str:
    """'Partial outage 2 h, Degraded performance 1 h': the day's time at each level."""
    words = _words(language)
    with translation.override(language):
        return ", ".join(
            f"{_label(words, level)} {format_duration(delta)}"
            for level, delta in zip(LEVEL_FIELDS, durations, strict=True)
            if delta
        )


@lru_cache(maxsize=256)
def _and_more(count: int, language: str) -> str:
    """'%(title)s and 11 more', the title left to fill in."""
    with translation.override(language):
        more = ngettext("%(title)s and %(n)s more", "%(title)s and %(n)s more", count)
    return more.replace("%(n)s", str(count))


def _titles(day: Bar, language: str) -> str:
    """The worst incident's title, and how many more incidents the day had."""
    if day.incident_count <= 1:
        return day.title
    return _and_more(day.incident_count - 1, language).replace("%(title)s", day.title)


def incident_url_pattern(script_prefix: str) -> str:
    """An incident's address with "{}" for its id, in the active language (/fr/incidents/…
    under French): memoised per prefix and language, never one language for all."""
    return _incident_url_pattern(script_prefix, _language())


@lru_cache(maxsize=16)
def _incident_url_pattern(script_prefix: str, language: str) -> str:
    with translation.override(language):
        return reverse("public:incident", args=["00000000"]).replace("00000000", "{}")


# --- The bars -----------------------------------------------------------------------------------

_QUIET = '<span class="bar bar--operational{runs}" title="{title}" aria-hidden="true"></span>'
_IMPACTED = (
    '<a class="bar bar--{level}" href="{url}" title="{title}" data-date="{iso}">'
    '<span class="sr-only">{spoken} – {titles}</span></a>'  # noqa: RUF001 - an en dash
)


def bar_strip(days: Sequence[Bar]) -> SafeString:
    """The bars of `_bars.html`: the early days (hidden on a phone) in their own span,
    then the last UPTIME_BAR_DAYS_NARROW."""
    runs = bar_runs(days)
    recent = _strip(runs.recent)
    if not runs.early:
        return recent
    return mark_safe(f'<span class="bars__early">{_strip(runs.early)}</span>{recent}')  # noqa: S308


def _strip(segments: Sequence[BarSegment]) -> SafeString:
    language = _language()
    words = _words(language)
    url = incident_url_pattern(get_script_prefix())
    labelled, levels = words.labelled, words.levels
    out = []
    for first, last, length, day in segments:
        when = day_label(first, "long", language)
        if day is None:
            if length > 1:
                when = words.between % {"first": when, "last": day_label(last, "long", language)}
            title = escape(labelled % {"label": when, "title": words.no_incidents})
            out.append(_QUIET.format(runs=f" q{length}" if length > 1 else "", title=title))
            continue
        titles = _titles(day, language)
        tip = f"{_impact(day.durations, language)} · {titles}"
        out.append(
            _IMPACTED.format(
                level=escape(day.level),
                url=escape(url.format(day.public_id)),
                title=escape(labelled % {"label": when, "title": tip}),
                iso=first.isoformat(),
                spoken=escape(labelled % {"label": when, "title": levels.get(day.level, day.level)}),
                titles=escape(titles),
            )
        )
    return mark_safe("".join(out))  # noqa: S308 - every value escaped above


# --- The light bars of `/`: each day its level, one text per part -------------------------------

# One character a day: what a card's bars show of it (its level), also the card's key
# (public_site.cards). Operational is "a".
LEVEL_CODES = {level: chr(ord("a") + i) for i, level in enumerate(PRODUCT_STATUS_LABELS)}
_CODE_LEVELS = {code: level for level, code in LEVEL_CODES.items()}
_COUNT_ORDER = [LEVEL_CODES[level] for level in (*LEVEL_FIELDS, OPERATIONAL)]  # worst first
_LIGHT_RUN = re.compile(rf"{LEVEL_CODES[OPERATIONAL]}{{1,{MAX_RUN}}}|.")
_LIGHT_DAY = {code: f'<span class="bar bar--{level}"></span>' for code, level in _CODE_LEVELS.items()}
_LIGHT_QUIET = ['<span class="bar bar--operational"></span>'] + [
    f'<span class="bar bar--operational q{n}"></span>' for n in range(2, MAX_RUN + 1)
]


def level_codes(days: Sequence[Bar]) -> str:
    return "".join([LEVEL_CODES.get(d.level, "?") for d in days])


@lru_cache(maxsize=256)
def _days_count(count: int, language: str) -> str:
    with translation.override(language):
        return ngettext("%(n)s day", "%(n)s days", count) % {"n": count}


def light_strip(days: Sequence[Bar], *, recent: int = UPTIME_BAR_DAYS_NARROW) -> SafeString:
    """The bars of a product card on `/`: no link, tooltip or text per day (the grid and
    the product page name the incidents), a run of quiet days one element, and for each
    part (the early days a phone hides, the last UPTIME_BAR_DAYS_NARROW it draws) one
    text for screen readers counting its days at each level, so that what is read out is
    what is drawn at every width."""
    codes = level_codes(days)
    split = max(0, len(days) - recent)
    late = _light(codes[split:], days[split].date, days[-1].date) if split < len(days) else ""
    if not split:
        return mark_safe(late)  # noqa: S308 - built from fixed markup and escaped text
    early = _light(codes[:split], days[0].date, days[split - 1].date)
    return mark_safe(f'<span class="bars__early">{early}</span>{late}')  # noqa: S308


def _light(codes: str, first: date, last: date) -> str:
    language = _language()
    words = _words(language)
    when = words.between % {
        "first": day_label(first, "long", language),
        "last": day_label(last, "long", language),
    }
    said = ", ".join(
        f"{_label(words, _CODE_LEVELS[code])} {_days_count(n, language)}"
        for code in _COUNT_ORDER
        if (n := codes.count(code))
    )
    text = escape(words.labelled % {"label": when, "title": said})
    quiet = LEVEL_CODES[OPERATIONAL]
    bars = [
        _LIGHT_QUIET[len(run) - 1] if run[0] == quiet else _LIGHT_DAY.get(run, "")
        for run in _LIGHT_RUN.findall(codes)
    ]
    return f'<span class="sr-only">{text}</span>{"".join(bars)}'


# --- The days grid ------------------------------------------------------------------------------


@lru_cache(maxsize=16)
def icon(level: str) -> SafeString:
    """`public/_icon.html`, the same bytes, its trailing newline included."""
    level = escape(level)
    return mark_safe(  # noqa: S308 - the level is escaped
        f'<svg class="icon icon--{level}" aria-hidden="true" focusable="false" width="20" height="20">'
        f'<use href="#icon-{level}"></use></svg>\n'
    )


@lru_cache(maxsize=64)
def _more_label(count: int, language: str) -> str:
    with translation.override(language):
        return ngettext("%(n)s more incident", "%(n)s more incidents", count) % {"n": count}


_MARK = (
    '<a class="grid__mark" href="{url}" title="{title}">{icon}'
    '<span class="sr-only">{spoken} – {name}</span></a>'  # noqa: RUF001 - an en dash
)
_MORE = (
    '<a class="grid__more" href="{url}" title="{label}"><span aria-hidden="true">+{count}</span>'
    '<span class="sr-only">{spoken}</span></a>'
)
_CELL_END = "</td>\n          "  # the whitespace `_grid_row.html` puts after each cell


def grid_cells(days: Sequence[Bar], quiet: Sequence[str], product_url: str) -> SafeString:
    """A product's cells of the days grid: at most GRID_MARKS marks a day, then "+N" to
    the product's page; a quiet day is `quiet[i]`, rendered once per column."""
    language = _language()
    words = _words(language)
    url = incident_url_pattern(get_script_prefix())
    labelled, levels = words.labelled, words.levels
    out = []
    for i, day in enumerate(days):
        if not day.incident_count:
            out.append(f"{quiet[i]}\n          ")
            continue
        short = day_label(day.date, "short", language)
        out.append(f'<td class="grid__cell grid__cell--{escape(day.level)}">')
        for level, public_id, title in day.marks:
            name = levels.get(level, level)
            out.append(
                _MARK.format(
                    url=escape(url.format(public_id)),
                    title=escape(labelled % {"label": name, "title": title}),
                    icon=icon(level),
                    spoken=escape(labelled % {"label": short, "title": name}),
                    name=escape(title),
                )
            )
        if not day.marks:
            out.append(f'{icon("operational")}<span class="sr-only">')
            out.append(f"{escape(labelled % {'label': short, 'title': words.operational})}</span>")
        more = day.incident_count - len(day.marks)
        if more > 0:
            text = _more_label(more, language)
            spoken = escape(labelled % {"label": short, "title": text})
            out.append(_MORE.format(url=escape(product_url), label=escape(text), count=more, spoken=spoken))
        out.append(_CELL_END)
    return mark_safe("".join(out))  # noqa: S308 - every value escaped above
