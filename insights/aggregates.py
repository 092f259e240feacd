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
from datetime import datetime, timedelta, tzinfo
from typing import Any

from django.db import connection

from incidents import uptime
from incidents.models import ActionItem, ImpactWindow, Incident
from insights import metrics
from insights.models import ImpactStretch, IncidentFacts

_INCIDENTS = Incident._meta.db_table
_WINDOWS = ImpactWindow._meta.db_table
_ACTION_ITEMS = ActionItem._meta.db_table
_FACTS = IncidentFacts._meta.db_table
_STRETCHES = ImpactStretch._meta.db_table
_CLOSED_ITEMS = [ActionItem.Status.DONE, ActionItem.Status.WONT_DO]

# For these statements only (SET LOCAL lasts for the one implicit transaction of the
# statement string): no JIT compilation, which pays off for queries that run for many
# seconds and added a few hundred milliseconds of compiling to these (seen at 100,000
# incidents); and room to sort the range's windows and values in memory (at 100,000
# incidents in range the default 4 MB sent a 250,000-row sort to disk). One staff page
# at a time runs these, so the memory is bounded.
_LOCAL_SETTINGS = "SET LOCAL jit = off; SET LOCAL work_mem = '32MB';\n"

_LEVEL_OF_SEVERITY = {severity: level for level, severity in uptime.SEVERITY.items()}


def _severity_sql(column: str) -> str:
    """`incidents.uptime.SEVERITY` as a CASE expression (the level names are constants)."""
    whens = " ".join(
        f"WHEN '{level}' THEN {severity}" for level, severity in uptime.SEVERITY.items() if severity
    )
    return f"(CASE {column} {whens} END)"


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


def _scope_condition(alias: str, products: Sequence[int] | None) -> tuple[str, list[Any]]:
    if products is None:
        return "TRUE", []
    return f"{alias}.product_id = ANY(%s)", [list(products)]


# Ranks kept of one measure: (count, {(rank, value, incident id)}), by measure (or by
# measure and period index).
_Ranked = dict[int, tuple[int, set[tuple[int, timedelta, int]]]]
_RankedByPeriod = dict[tuple[int, int], tuple[int, set[tuple[int, timedelta, int]]]]


# Every measure of every incident, for the ranks within each period (the response CSV).
_PER_PERIOD_MEASURES = """,
m AS (
    SELECT 0 AS k, period, id, detect_us AS v FROM inc WHERE detect_us IS NOT NULL
    UNION ALL
    SELECT 1, period, id, first_update_us FROM inc WHERE first_update_us IS NOT NULL
    UNION ALL
    SELECT 2, period, id, resolve_us FROM inc WHERE resolve_us IS NOT NULL
    UNION ALL
    SELECT 3, period, id, cadence_us FROM inc WHERE cadence_us IS NOT NULL
)"""


def _measures_sql(scoped: bool, per_period: bool) -> str:
    """The range's incidents in scope (`inc`) from their stored facts, and their four
    measures in microseconds (`m`). Scoped: only incidents with a window on one of the
    products, at the worst level among those."""
    if scoped:
        source = f"""FROM {_FACTS} f
    JOIN {_WINDOWS} w ON w.incident_id = f.incident_id AND w.product_id = ANY(%(products)s)
    WHERE f.started_at >= %(start)s AND f.started_at < %(end)s
    GROUP BY f.incident_id"""
        severity = f"max({_severity_sql('w.level')})"
    else:
        source = f"FROM {_FACTS} f WHERE f.started_at >= %(start)s AND f.started_at < %(end)s"
        severity = "f.severity"
    return f"""WITH inc AS (
    SELECT f.incident_id AS id, f.is_maintenance AS maint, f.is_open AS open,
           width_bucket(f.started_at, %(lows)s::timestamptz[]) AS period, {severity} AS sev,
           f.detect_us, f.first_update_us, f.resolve_us, f.cadence_us
    {source}
){_PER_PERIOD_MEASURES if per_period else ""}"""


_MEASURES = ("detect_us", "first_update_us", "resolve_us", "cadence_us")  # k = 0 to 3


def _whole_range_ranks_sql(k: int, scoped: bool) -> str:
    """The ranks one measure shows over the whole range, read in the order of its index
    (`insights.models.IncidentFacts`): no sort, however many incidents the range holds.
    The ranks wanted (`%(ranks_k)s`) and the count (`%(n_k)s`) come from the counts
    query, so each row costs one hashed look-up, and nothing is buffered."""
    column = _MEASURES[k]
    in_scope = "AND f.incident_id IN (SELECT id FROM inc)" if scoped else ""
    return f"""SELECT {k} AS k, width_bucket(started_at, %(lows)s::timestamptz[]) AS period, id, v, ra,
       %(n_{k})s::bigint AS na, NULL::bigint AS rp, NULL::bigint AS np FROM (
    SELECT f.started_at, f.incident_id AS id, f.{column} AS v,
           row_number() OVER (ORDER BY f.{column}, f.incident_id) - 1 AS ra
    FROM {_FACTS} f
    WHERE f.{column} IS NOT NULL AND f.started_at >= %(start)s AND f.started_at < %(end)s {in_scope}
) r{k} WHERE ra = ANY(%(ranks_{k})s::bigint[])"""  # noqa: S608 - constants only


def _counts_sql(scoped: bool) -> str:
    """Counts per period and level, and how many values each measure has in the range."""
    counted = ", ".join(f"count({column})" for column in _MEASURES)
    return f"""{_LOCAL_SETTINGS}
{_measures_sql(scoped, per_period=False)}
SELECT
    (SELECT COALESCE(json_agg(json_build_array(period, maint, COALESCE(sev, 0), open, n)), '[]')
     FROM (SELECT period, maint, sev, open, count(*) AS n FROM inc GROUP BY 1, 2, 3, 4) c),
    (SELECT json_build_array({counted}) FROM inc)
"""  # noqa: S608 - only constants are formatted in


def _figures_sql(scoped: bool, per_period: bool) -> str:
    """The ranks of each measure the page shows (over the range, and per period)."""
    picked = [_whole_range_ranks_sql(k, scoped) for k in range(len(_MEASURES))]
    if per_period:
        pmed, pp90 = nearest_rank_sql("np", 50), nearest_rank_sql("np", 90)
        picked.append(f"""SELECT k, period, id, v, NULL::bigint, NULL::bigint, rp, np FROM (
    SELECT k, period, id, v, row_number() OVER (PARTITION BY k, period ORDER BY v, id) - 1 AS rp,
           count(*) OVER (PARTITION BY k, period) AS np
    FROM m
) rp WHERE rp IN ({pmed}, {pp90}, np - 1)""")  # noqa: S608 - constants only
    union = "\nUNION ALL\n".join(f"({part})" for part in picked)
    return f"""{_LOCAL_SETTINGS}
{_measures_sql(scoped, per_period)},
picked AS (
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
    counts: list[list[Any]],
) -> tuple[dict[int, dict[str, int]], dict[int, int], dict[int, int]]:
    """Per period index: incidents by level, open incidents, maintenance."""
    by_level: dict[int, dict[str, int]] = defaultdict(lambda: dict.fromkeys(metrics.LEVEL_ORDER, 0))
    open_incidents: dict[int, int] = defaultdict(int)
    maintenance: dict[int, int] = defaultdict(int)
    for period, maint, severity, is_open, n in counts:
        if maint:
            maintenance[period] += n
            continue
        level = _LEVEL_OF_SEVERITY.get(severity, metrics.NO_IMPACT)
        by_level[period][level if level in metrics.LEVEL_ORDER else metrics.NO_IMPACT] += n
        if is_open:
            open_incidents[period] += n
    return dict(by_level), dict(open_incidents), dict(maintenance)


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


def incident_figures(
    *, products: Sequence[int] | None, periods: Sequence[metrics.Period], per_period: bool = False
) -> IncidentFigures:
    """Two queries: the counts, then the ranks they call for. `products`: the scope's product ids, None for every product (then an
    incident without any window counts too, as in the Python path). `per_period`: rank
    within each period too (a second sort of every value), for the response CSV."""
    lows = [p.start for p in periods]
    scoped = products is not None
    params: dict[str, Any] = {
        "lows": lows,
        "products": list(products or ()),
        "start": periods[0].start,
        "end": periods[-1].end,
    }
    with connection.cursor() as cursor:
        cursor.execute(_counts_sql(scoped), params)
        counts, measured = cursor.fetchone()
        for k, n in enumerate(measured):
            params[f"n_{k}"] = n
            params[f"ranks_{k}"] = sorted(metrics.summary_ranks(n) | frozenset(metrics.drawn_ranks(n)))
        cursor.execute(_figures_sql(scoped, per_period), params)
        (picked,) = cursor.fetchone()
    by_level, open_incidents, maintenance = _counts(counts)
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
    *, products: Sequence[int] | None, periods: Sequence[metrics.Period], now: datetime
) -> dict[tuple[int, int], dict[str, timedelta]]:
    """One query: per (product id, period index), the time each level was the worst one in
    [period start, min(period end, now)). Products and periods without downtime are absent.

    Summed from the stored stretches of worst level (`insights.models.ImpactStretch`),
    each clipped to every period it overlaps: they partition each product's covered time,
    so the sums are the sweep's over the windows, to the microsecond."""
    start = periods[0].start
    horizon = min(periods[-1].end, now)
    lows = [p.start for p in periods]
    highs = [min(p.end, horizon) for p in periods]
    in_scope, scope_params = _scope_condition("s", products)
    sql = f"""{_LOCAL_SETTINGS}
SELECT product_id, b AS period, severity,
       {_micros("sum(LEAST(COALESCE(e, 'infinity'), (%s::timestamptz[])[b]) - GREATEST(st, (%s::timestamptz[])[b]))")}
FROM (
    SELECT s.product_id, s.severity, s.started_at AS st, s.ended_at AS e,
           generate_series(width_bucket(GREATEST(s.started_at, %s), %s::timestamptz[]),
                           width_bucket(LEAST(COALESCE(s.ended_at, 'infinity'), %s) - INTERVAL '1 microsecond',
                                        %s::timestamptz[])) AS b
    FROM {_STRETCHES} s
    WHERE s.started_at < %s AND (s.ended_at IS NULL OR s.ended_at > %s) AND {in_scope}
) pieces
GROUP BY 1, 2, 3
"""  # noqa: S608 - only constants are formatted in (table names); values are parameters
    params = [highs, lows, start, lows, horizon, lows, horizon, start, *scope_params]
    out: dict[tuple[int, int], dict[str, timedelta]] = defaultdict(dict)
    if horizon <= start:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for product_id, period, severity, micros in cursor.fetchall():
            out[(product_id, period)][_LEVEL_OF_SEVERITY[severity]] = timedelta(microseconds=micros)
    return dict(out)


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
