"""The public uptime report's chart, table and rule in the page's language.

insights.present builds them for the staff insights pages and the CSV, in English. The
public page shows the same figures, with its own words, month names and decimal
separator; in English the result is exactly what insights.present gives.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal

from django.conf import settings
from django.template.defaultfilters import date as date_filter
from django.utils import formats, translation
from django.utils.translation import gettext as _

from insights import charts
from insights import present as insights_present
from insights.selectors import UptimeReport
from public_site.templatetags.statuspage_tags import duration_filter


def _english() -> bool:
    return translation.get_language() in (None, settings.LANGUAGE_CODE)


def local_number(text: str) -> str:
    """'1,234.5' (charts.number_text) with the language's separators: '1 234,5' in French."""
    if _english():
        return text
    decimal = str(formats.get_format("DECIMAL_SEPARATOR"))
    thousands = str(formats.get_format("THOUSAND_SEPARATOR"))
    return text.replace(",", "\0").replace(".", decimal).replace("\0", thousands)


def uptime_chart(report: UptimeReport) -> charts.BarChart:
    if _english():
        return insights_present.uptime_chart(report)
    percents = [m.downtime.uptime.percent for m in report.months]
    floor = insights_present.uptime_floor(percents)
    periods = [m.period for m in report.months]
    return charts.bar_chart(
        id="chart-uptime",
        title=_("%(name)s: monthly uptime, last %(count)d months")
        % {"name": report.product.name, "count": len(report.months)},
        description=_(
            "One bar per month, oldest first; the axis runs from %(floor)s %% to 100 %%. "
            "The table below has each month's uptime and downtime."
        )
        % {"floor": local_number(charts.number_text(floor))},
        categories=[date_filter(p.first_day, "N") for p in periods],
        sub_labels=[
            str(p.first_day.year) if i == 0 or p.first_day.month == 1 else "" for i, p in enumerate(periods)
        ],
        series=[charts.Series(name=_("Uptime"), css="s-uptime", values=tuple(percents))],
        y_min=floor,
        y_max=100.0,
        y_label="%",
        value_text=lambda v: local_number(charts.number_text(float(v))),
    )


def uptime_table(report: UptimeReport) -> insights_present.Table:
    table = insights_present.uptime_table(report)
    if _english():
        return table
    months = report.newest_first
    return dataclasses.replace(
        table,
        caption=_("%(name)s: monthly uptime, newest first (this month up to now)")
        % {"name": report.product.name},
        headers=(_("Month"), _("Uptime"), _("Weighted"), _("Total"), _("Incidents")),
        rows=tuple(
            (
                date_filter(m.period.first_day, "N Y").capitalize(),
                f"{formats.localize(m.downtime.uptime.percent)}\N{NO-BREAK SPACE}%",
                f"{formats.localize(m.downtime.weighted_minutes.quantize(Decimal('0.1')))}\N{NO-BREAK SPACE}min",
                duration_filter(m.downtime.total),
                str(m.incidents),
            )
            for m in months
        ),
    )


def weighting_rule(report: UptimeReport) -> str:
    """insights.selectors.weighting_rule in the page's language."""
    if _english():
        return report.rule
    weights = report.weights
    values = {
        "major": local_number(str(weights.major.normalize())),
        "partial": local_number(str(weights.partial.normalize())),
        "degraded": local_number(str(weights.degraded.normalize())),
    }
    if weights.degraded:
        downtime = _(
            "Downtime = major outage minutes x %(major)s + partial outage minutes x %(partial)s + "
            "degraded performance minutes x %(degraded)s; maintenance does not count."
        )
    else:
        downtime = _(
            "Downtime = major outage minutes x %(major)s + partial outage minutes x %(partial)s; "
            "degraded performance and maintenance do not count."
        )
    rest = _(
        "A minute covered by several windows counts once, at its worst level. Uptime = (minutes in "
        "the period - downtime) / minutes in the period, rounded down to 0.01 %."
    )
    return f"{downtime % values} {rest}"
