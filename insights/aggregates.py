"""The insights page's heavy reads done by PostgreSQL: per-period counts, the response-time
distributions, every product's downtime per period and the action items per period, each
in one query returning a few hundred rows, without reading incidents into Python.

PostgreSQL only; `tests/insights/test_fast_path.py` holds every figure to the Python path.
How the sweep and the ranks work: docs/adr/0005-insights-sql-path.md.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo
from typing import Any

from django.db import connection
from django.db.models import Q

from incidents import uptime
from incidents.models import ActionItem, ImpactWindow, Incident
from insights import metrics, scope_facts
from insights.models import DowntimeMonth, ImpactStretch, ScopeFacts, ScopeIncident

_INCIDENTS = Incident._meta.db_table
_WINDOWS = ImpactWindow._meta.db_table
_ACTION_ITEMS = ActionItem._meta.db_table
_STRETCHES = ImpactStretch._meta.db_table
_SCOPED = ScopeIncident._meta.db_table
_SCOPE_FACTS = ScopeFacts._meta.db_table
_CLOSED_ITEMS = [ActionItem.Status.DONE, ActionItem.Status.WONT_DO]

# For these statements only (SET LOCAL lasts for the one implicit transaction of the
# statement string): no JIT compilation, which pays off for queries that run for many
# seconds and added a few hundred milliseconds of compiling to these (seen at 100,000
# incidents); and room to sort the range's windows and values in memory (at 100,000
# incidents in range the default 4 MB sent a 250,000-row sort to disk). One staff page
# at a time runs these, so the memory is bounded.
_LOCAL_SETTINGS = "SET LOCAL jit = off; SET LOCAL work_mem = '32MB';\n"

_LEVEL_OF_SEVERITY = {severity: level for level, severity in uptime.SEVERITY.items()}


def _micros(expression: str) -> str:
    """An interval as exact whole microseconds (EXTRACT(EPOCH ...) is numeric, not float)."""
    return f"(EXTRACT(EPOCH FROM {expression}) * 1000000)::bigint"


def nearest_rank_sql(count: str, percent: int) -> str:
    """`metrics.nearest_rank_index` in SQL integer arithmetic (count >= 1)."""
    return f"(({count} * {int(percent)} + 99) / 100 - 1)"


@dataclass(frozen=True)
class IncidentFigures:
    """What the database says about the incidents that started in the range."""

    # Per period index: incidents (not maintenance) by `metrics.LEVEL_ORDER` level, open
    # incidents, maintenance.
    by_level: dict[int, dict[str, int]]
    open_incidents: dict[int, int]
    maintenance: dict[int, int]
    response: metrics.Response  # the whole range, `Response.shown()`
    period_response: dict[int, metrics.Response] | None  # per period index, `shown(drawn=0)`
    behind: dict[int, metrics.Named]


# Ranks kept of one measure: (count, {(rank, value, incident id)}), by measure (or by
# measure and period index).
_Ranked = dict[int, tuple[int, set[tuple[int, timedelta, int]]]]
_RankedByPeriod = dict[tuple[int, int], tuple[int, set[tuple[int, timedelta, int]]]]

_MEASURES = ("detect_us", "first_update_us", "resolve_us", "cadence_us")  # k = 0 to 3

# The range's rows of the scope (`insights.models.ScopeIncident`): a scope and a range
# of month keys, read inside each measure's index.
_IN_RANGE = "s.scope = %(scope)s AND s.month >= %(first)s AND s.month < %(after)s"


def _whole_range_ranks_sql(k: int) -> str:
    """The ranks one measure shows over the whole range, read in the order of its index
    (scope, value, incident) with the month beside it: no sort, no join. The ranks
    wanted (`%(ranks_k)s`) and the count (`%(n_k)s`) come from the month sums, so each
    row costs one hashed look-up, and nothing is buffered."""
    column = _MEASURES[k]
    return f"""SELECT {k} AS k, NULL::int AS period, id, v, ra,
       %(n_{k})s::bigint AS na, NULL::bigint AS rp, NULL::bigint AS np FROM (
    SELECT s.incident_id AS id, s.{column} AS v,
           row_number() OVER (ORDER BY s.{column}, s.incident_id) - 1 AS ra
    FROM {_SCOPED} s
    WHERE s.{column} IS NOT NULL AND {_IN_RANGE}
) r{k} WHERE ra = ANY(%(ranks_{k})s::bigint[])"""  # noqa: S608 - constants only


def _per_period_ranks_sql() -> str:
    """Each period's median, 90th percentile and longest per measure (the response CSV
    only): every value of the range numbered within its period."""
    measures = "\n    UNION ALL\n    ".join(
        f"SELECT {k} AS k, width_bucket(s.month, %(lows)s::date[]) AS period, s.incident_id AS id, "  # noqa: S608 - constants
        f"s.{column} AS v FROM {_SCOPED} s WHERE s.{column} IS NOT NULL AND {_IN_RANGE}"
        for k, column in enumerate(_MEASURES)
    )
    pmed, pp90 = nearest_rank_sql("np", 50), nearest_rank_sql("np", 90)
    return f"""SELECT k, period, id, v, NULL::bigint, NULL::bigint, rp, np FROM (
    SELECT k, period, id, v, row_number() OVER (PARTITION BY k, period ORDER BY v, id) - 1 AS rp,
           count(*) OVER (PARTITION BY k, period) AS np
    FROM (
    {measures}
    ) m
) rp WHERE rp IN ({pmed}, {pp90}, np - 1)"""  # noqa: S608 - constants only


_COUNTS_SQL = f"""SELECT month, severity, is_maintenance, is_open, n, n_detect, n_first_update, n_resolve, n_cadence
FROM {_SCOPE_FACTS} s WHERE {_IN_RANGE}"""  # noqa: S608 - constants only


def _figures_sql(per_period: bool) -> str:
    """The ranks of each measure the page shows (over the range, and per period)."""
    picked = [_whole_range_ranks_sql(k) for k in range(len(_MEASURES))]
    if per_period:
        picked.append(_per_period_ranks_sql())
    union = "\nUNION ALL\n".join(f"({part})" for part in picked)
    return f"""{_LOCAL_SETTINGS}
WITH picked AS (
{union}
)
SELECT
    -- Each picked incident's name by its key (a few hundred look-ups, not a join the
    -- planner would hash over every incident).
    (SELECT COALESCE(json_agg(json_build_array(p.k, p.period, p.ra, p.na, p.rp, p.np, p.v, p.id,
                                               (SELECT public_id FROM {_INCIDENTS} WHERE id = p.id),
                                               (SELECT title FROM {_INCIDENTS} WHERE id = p.id))), '[]')
     FROM picked p)
"""  # noqa: S608 - only constants are formatted in (table and level names, numbers); values are parameters


def _counts(
    counts: Sequence[Sequence[Any]], period_of_month: dict[date, int]
) -> tuple[dict[int, dict[str, int]], dict[int, int], dict[int, int], list[int]]:
    """Per period index: incidents by level, open incidents, maintenance; and how many
    values each measure has over the range (maintenance has none)."""
    by_level: dict[int, dict[str, int]] = defaultdict(lambda: dict.fromkeys(metrics.LEVEL_ORDER, 0))
    open_incidents: dict[int, int] = defaultdict(int)
    maintenance: dict[int, int] = defaultdict(int)
    measured = [0] * len(_MEASURES)
    for month, severity, maint, is_open, n, *with_values in counts:
        period = period_of_month[month]
        for k, m in enumerate(with_values):
            measured[k] += m
        if maint:
            maintenance[period] += n
            continue
        level = _LEVEL_OF_SEVERITY.get(severity, metrics.NO_IMPACT)
        by_level[period][level if level in metrics.LEVEL_ORDER else metrics.NO_IMPACT] += n
        if is_open:
            open_incidents[period] += n
    return dict(by_level), dict(open_incidents), dict(maintenance), measured


def _kept_ranks(
    picked: list[list[Any]],
) -> tuple[
    _Ranked, dict[tuple[int, int], tuple[int, set[tuple[int, timedelta, int]]]], dict[int, metrics.Named]
]:
    """Keep exactly the ranks the Python path keeps (the query returns a few more): over
    the whole range by measure, per (measure, period), and the incidents behind them."""
    whole: _Ranked = {}
    by_period: _RankedByPeriod = {}
    behind: dict[int, metrics.Named] = {}
    wanted: dict[int, frozenset[int]] = {}  # per count, the ranks shown
    for k, period, ra, na, rp, np, v, incident_id, public_id, title in picked:
        value = timedelta(microseconds=v)
        if na is not None and na not in wanted:
            wanted[na] = metrics.summary_ranks(na) | frozenset(metrics.drawn_ranks(na))
        if na is not None and ra in wanted[na]:
            whole.setdefault(k, (na, set()))[1].add((ra, value, incident_id))
            behind[incident_id] = metrics.Named(public_id=public_id, title=title)
        if np is not None and rp in metrics.summary_ranks(np):
            by_period.setdefault((k, period), (np, set()))[1].add((rp, value, incident_id))
    return whole, by_period, behind


def _response(found: _Ranked) -> metrics.Response:
    dists = []
    for k in range(4):
        n, points = found.get(k, (0, set()))
        dists.append(metrics.Distribution(count=n, points=tuple(sorted(points))))
    return metrics.Response(*dists)


def month_periods(periods: Sequence[metrics.Period]) -> dict[date, int]:
    """Each month key of the range (`insights.scope_facts.month_of`) and the index, from
    1, of the period holding it."""
    out = {}
    for i, p in enumerate(periods, start=1):
        for k in range(p.months):
            out[metrics.add_months(p.first_day, k)] = i
    return out


def incident_figures(
    *, scope: str, periods: Sequence[metrics.Period], per_period: bool = False
) -> IncidentFigures:
    """Two queries: the month sums of the scope (`ScopeFacts`, a few rows per month),
    then the ranks they call for (`ScopeIncident`, along each measure's index). `scope`:
    "all", "g<id>" or "p<id>" (`insights.scope_facts`). `per_period`: rank within each
    period too (a sort of every value of the range), for the response CSV."""
    period_of_month = month_periods(periods)
    params: dict[str, Any] = {
        "scope": scope,
        "first": periods[0].first_day,
        "after": metrics.add_months(periods[-1].first_day, periods[-1].months),
        "lows": [p.first_day for p in periods],
    }
    with connection.cursor() as cursor:
        cursor.execute(_COUNTS_SQL, params)
        by_level, open_incidents, maintenance, measured = _counts(cursor.fetchall(), period_of_month)
        for k, n in enumerate(measured):
            params[f"n_{k}"] = n
            params[f"ranks_{k}"] = sorted(metrics.summary_ranks(n) | frozenset(metrics.drawn_ranks(n)))
        cursor.execute(_figures_sql(per_period), params)
        (picked,) = cursor.fetchone()
    whole, by_period, behind = _kept_ranks(picked)
    period_response = {
        i: _response({k: v for (k, period), v in by_period.items() if period == i})
        for i in range(1, len(periods) + 1)
    }
    return IncidentFigures(
        by_level=by_level,
        open_incidents=open_incidents,
        maintenance=maintenance,
        response=_response(whole),
        period_response=period_response if per_period else None,
        behind=dict(sorted(behind.items())),
    )


def downtime_by_level(
    *, products: Sequence[int] | None, periods: Sequence[metrics.Period], now: datetime, tz: tzinfo
) -> dict[tuple[int, int], dict[str, timedelta]]:
    """Two queries: per (product id, period index), the time each level was the worst one
    in [period start, min(period end, now)). Products and periods without downtime are
    absent.

    The closed stretches of worst level (`insights.models.ImpactStretch`) are summed per
    display-zone month as they are written (`DowntimeMonth`): a few rows per product and
    month. Those still open or ending after now (ongoing impact, scheduled maintenance)
    are read here, their stored share taken back and their share up to now added. The
    stretches partition each product's covered time, so the sums are the sweep's over the
    windows, to the microsecond."""
    period_of_month = month_periods(periods)
    start, after = periods[0].start, periods[-1].end
    horizon = min(after, now)
    if horizon <= start:
        return {}
    micros: dict[tuple[int, int, int], int] = defaultdict(int)
    stored = DowntimeMonth.objects.filter(month__in=list(period_of_month))
    live = ImpactStretch.objects.filter(
        Q(ended_at__isnull=True) | Q(ended_at__gt=now), started_at__lt=after
    ).filter(Q(ended_at__isnull=True) | Q(ended_at__gt=start))
    if products is not None:
        stored = stored.filter(product_id__in=list(products))
        live = live.filter(product_id__in=list(products))
    for product_id, month, severity, value in stored.values_list("product_id", "month", "severity", "micros"):
        micros[(product_id, period_of_month[month], severity)] += value
    for product_id, severity, st, end in live.values_list("product_id", "severity", "started_at", "ended_at"):
        if end is not None:  # counted in full when written: its share after now comes back out
            for month, lo, hi in scope_facts.month_pieces(st, end, tz):
                if month in period_of_month:
                    micros[(product_id, period_of_month[month], severity)] -= _micros_of(hi - lo)
        stop = horizon if end is None else min(end, horizon)
        if stop > st:
            for month, lo, hi in scope_facts.month_pieces(max(st, start), stop, tz):
                micros[(product_id, period_of_month[month], severity)] += _micros_of(hi - lo)
    out: dict[tuple[int, int], dict[str, timedelta]] = defaultdict(dict)
    for (product_id, period, severity), value in sorted(micros.items()):
        if value:
            out[(product_id, period)][_LEVEL_OF_SEVERITY[severity]] = timedelta(microseconds=value)
    return dict(out)


def _micros_of(delta: timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def action_item_counts(
    *, products: Sequence[int] | None, periods: Sequence[metrics.Period], now: datetime, tz: tzinfo
) -> tuple[metrics.ActionItemCounts, ...]:
    """`insights.history.action_items` in one pass over the items instead of three
    filtered counts per period (36 conditions a row): each item is put in buckets once
    (`width_bucket` against the period bounds, the period ends and their dates) and the
    database counts items per bucket; the periods each bucket counts in follow here.

    An item is overdue at the end of period i (the moment m_i, capped at now) when it was
    created before m_i, was due before m_i's date, and was still open then (open now, or
    closed at or after m_i). With the moments ascending, that is: more moments than
    `created`, more dates than `due`, and no more moments than `closed` lie at or before
    them, so it is overdue in periods max(created, due) < i <= closed, one range per item.
    """
    n = len(periods)
    lows = [p.start for p in periods] + [periods[-1].end]
    moments = [min(p.end, now) for p in periods]
    dates = [uptime.local_date(m, tz) for m in moments]
    in_scope = "TRUE"
    scope_params: list[Any] = []
    if products is not None:
        in_scope = f"EXISTS (SELECT 1 FROM {_WINDOWS} w WHERE w.incident_id = a.incident_id AND w.product_id = ANY(%s))"  # noqa: S608 - a table name
        scope_params = [list(products)]
    sql = f"""{_LOCAL_SETTINGS}
SELECT GROUPING(opened, closed, overdue_from, overdue_to), opened, closed, overdue_from, overdue_to, sum(n)::bigint
FROM (
-- Hashed to a few rows first: grouping sets straight over the items sort them all.
SELECT opened, closed, overdue_from, overdue_to, count(*) AS n
FROM (
    SELECT width_bucket(a.created_at, %s::timestamptz[]) AS opened,
           CASE WHEN a.status = ANY(%s) THEN width_bucket(a.updated_at, %s::timestamptz[]) END AS closed,
           CASE WHEN a.due_date IS NOT NULL
                THEN GREATEST(width_bucket(a.created_at, %s::timestamptz[]), width_bucket(a.due_date, %s::date[]))
           END AS overdue_from,
           CASE WHEN a.status = ANY(%s) THEN {n}
                WHEN a.status = ANY(%s) THEN width_bucket(a.updated_at, %s::timestamptz[])
           END AS overdue_to
    FROM {_ACTION_ITEMS} a
    -- Items closed before the range began count nowhere.
    WHERE (a.status = ANY(%s) OR a.updated_at >= %s OR a.created_at >= %s) AND {in_scope}
) items
GROUP BY 1, 2, 3, 4
) buckets
GROUP BY GROUPING SETS ((opened), (closed), (overdue_from, overdue_to))
"""  # noqa: S608 - only constants are formatted in (table names, numbers); values are parameters
    open_statuses = list(ActionItem.OPEN_STATUSES)
    since = min(periods[0].start, now)
    params = [
        lows,
        _CLOSED_ITEMS,
        lows,
        moments,
        dates,
        open_statuses,
        _CLOSED_ITEMS,
        moments,
        open_statuses,
        since,
        since,
        *scope_params,
    ]
    opened, closed, overdue = [0] * (n + 2), [0] * (n + 2), [0] * (n + 2)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for grouping, o, c, lo, hi, count in cursor.fetchall():
            # GROUPING() bits, first argument highest: which set the row belongs to.
            if grouping == 0b0111:
                opened[o] += count
            elif grouping == 0b1011 and c is not None:
                closed[c] += count
            elif grouping == 0b1100 and lo is not None and hi is not None:
                for i in range(lo + 1, min(hi, n) + 1):
                    overdue[i] += count
    return tuple(
        metrics.ActionItemCounts(period=p, opened=opened[i], closed=closed[i], overdue=overdue[i])
        for i, p in enumerate(periods, start=1)
    )
