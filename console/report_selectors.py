"""Reads for the incident report screen: the impact section drafted from the recorded
impact windows, so a new report starts from what was recorded rather than blank.

Only public products are listed (the report is public text); times are in the display
zone with the zone named, durations in the pages' one format
(incidents.intervals.format_duration), per product the union of its windows as the
public incident page counts it (incidents.selectors.incident_durations).
"""

from __future__ import annotations

import re
from datetime import datetime

from django.utils import dateformat, timezone

from core.timezones import display_zone
from incidents.intervals import format_duration
from incidents.models import ImpactWindow, Incident
from incidents.selectors import PRODUCT_STATUS_LABELS, incident_durations, window_interval

# The public pages' long and short time formats (public_site DATE_STYLES, English).
_LONG = "D j M Y, H:i T"
_SHORT = "H:i T"
# What can start emphasis, code or a link inside a line (names never start a line here,
# so list and heading markers need no escape: "us-central1" stays readable). "<" could
# open an HTML tag, which Markdown does not let a backslash escape: an entity instead.
_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_\[\]])")


def _md(text: str) -> str:
    """A name as literal text in Markdown (a product called `*beta*` stays that)."""
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", text).replace("<", "&lt;")


def _time(value: datetime, *, same_day_as: datetime | None = None) -> str:
    local = timezone.localtime(value, display_zone())
    if same_day_as is not None and timezone.localtime(same_day_as, display_zone()).date() == local.date():
        return dateformat.format(local, _SHORT)
    return dateformat.format(local, _LONG)


def _window_line(window: ImpactWindow, *, now: datetime) -> str:
    # Four spaces: Python-Markdown nests a list only at that indent.
    where = _md(window.location.name) if window.location else "All locations"
    level = PRODUCT_STATUS_LABELS.get(window.level, window.level)
    start = _time(window.started_at)
    if window.ended_at is None:
        return f"    - {where}: {level} from {start}, not ended yet"
    end = _time(window.ended_at, same_day_as=window.started_at)
    duration = format_duration(window_interval(window, now=now).duration)
    return f"    - {where}: {level} from {start} to {end} ({duration})"


def report_impact_draft(*, incident: Incident, now: datetime | None = None) -> str:
    """Markdown for the report's "Detailed description of impact": each public product
    with its locations, then each window's level, start, end and duration. Empty when
    no public product has a window."""
    now = now or timezone.now()
    windows = list(
        incident.windows.filter(product__is_public=True)
        .select_related("product", "location")
        .order_by("started_at", "id")
    )
    if not windows:
        return ""
    durations = incident_durations(incident=incident, windows=windows, now=now)
    total = format_duration(durations.total)
    lines = [
        f"Recorded impact, {total} in all{' so far' if durations.ongoing else ''} "
        f"(times in {display_zone().key}):",
        "",
    ]
    for per_product in durations.per_product:
        product = per_product.product
        own = [w for w in windows if w.product_id == product.pk]
        # A product impaired everywhere and also in one zone says both, never just the zone.
        places = ["all locations"] if any(w.location is None for w in own) else []
        places += [_md(loc.name) for loc in sorted(per_product.locations, key=lambda loc: loc.name)]
        where = "; ".join(places)
        lines.append(f"- **{_md(product.name)}** ({where}), {format_duration(per_product.duration)}:")
        lines += [_window_line(w, now=now) for w in own]
    return "\n".join(lines)
