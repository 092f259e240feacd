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
from incidents.models import ActionItem, ImpactWindow, Incident, IncidentUpdate
from insights import metrics

_INCIDENTS = Incident._meta.db_table
_UPDATES = IncidentUpdate._meta.db_table
_WINDOWS = ImpactWindow._meta.db_table
_ACTION_ITEMS = ActionItem._meta.db_table
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


def _running_counts() -> str:
    """Per level, how many of a product's windows cover the stretch after each event."""
    return ", ".join(
        f"sum(CASE WHEN sev = {uptime.SEVERITY[level]} THEN d ELSE 0 END) OVER w AS c{uptime.SEVERITY[level]}"
        for level in uptime.LEVELS_WORST_FIRST
    )


def _worst_covering() -> str:
    """The severity of the worst level covering a stretch; NULL when none does."""
    whens = " ".join(
        f"WHEN c{uptime.SEVERITY[level]} > 0 THEN {uptime.SEVERITY[level]}"
        for level in uptime.LEVELS_WORST_FIRST
    )
    return f"(CASE {whens} END)"


def _micros(expression: str) -> str:
    """An interval as exact whole microseconds (EXTRACT(EPOCH ...) is numeric, not float)."""
    return f"(EXTRACT(EPOCH FROM {expression}) * 1000000)::bigint"


def nearest_rank_sql(count: str, percent: int) -> str:
    """`metrics.nearest_rank_index` in SQL integer arithmetic (count >= 1)."""
    return f"(({count} * {int(percent)} + 99) / 100 - 1)"


def drawn_rank_sql(rank: str, count: str, limit: int = metrics.STRIP_POINTS) -> str:
    """True for every rank `metrics.drawn_ranks` can pick, and a few neighbours.

    `drawn_ranks` rounds i x (n - 1) / (limit - 1) half to even; rather than repeat that
    float rounding in SQL, this keeps every rank within one of such a value (both its
    floor and its ceiling), i.e. the ranks r with some integer i in [0, limit - 1] and
    (limit - 1)(r - 1) < i (n - 1) < (limit - 1)(r + 1), and Python picks the exact ones.
    The smallest i above the lower bound is checked against the upper one.
    """
    m = int(limit) - 1
    first_i = f"(CASE WHEN {rank} = 0 THEN 0 ELSE ({m} * ({rank} - 1)) / ({count} - 1) + 1 END)"
    return (
        f"({count} <= {int(limit)} OR ({first_i} <= {m} AND {first_i} * ({count} - 1) < {m} * ({rank} + 1)))"
    )


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


def _measures_sql(in_scope: str) -> str:
    """The range's incidents in scope (`inc`) and their four measures as intervals (`m`)."""
    return f"""WITH inc AS MATERIALIZED (
    SELECT i.id, i.public_id, i.title, i.kind = %s AS maint, i.is_public, i.resolved_at IS NULL AS open,
           width_bucket(i.started_at, %s::timestamptz[]) AS period,
           i.started_at, i.created_at, i.detected_at, i.resolved_at,
           u.first_at, u.last_at, u.n, u.first_posted_at, w.sev
    FROM {_INCIDENTS} i
    CROSS JOIN LATERAL (
        SELECT min(display_at) AS first_at, max(display_at) AS last_at, count(*) AS n,
               min(created_at) AS first_posted_at
        FROM {_UPDATES} WHERE incident_id = i.id
    ) u
    CROSS JOIN LATERAL (
        SELECT max({_severity_sql("w.level")}) AS sev FROM {_WINDOWS} w
        WHERE w.incident_id = i.id AND {in_scope}
    ) w
    WHERE i.started_at >= %s AND i.started_at < %s AND (NOT %s OR w.sev IS NOT NULL)
),
cadence AS (
    -- metrics.incident_row: (last - first) / (updates - 1) rounded half to even to a
    -- microsecond (timedelta division), then half to even to a whole second (round()).
    SELECT period, id, q + (CASE WHEN 2 * r > k OR (2 * r = k AND mod(q, 2) = 1) THEN 1 ELSE 0 END) AS us
    FROM (
        SELECT period, id, k, d / k AS q, mod(d, k) AS r
        FROM (
            SELECT period, id, n - 1 AS k, GREATEST({_micros("last_at - first_at")}, 0) AS d
            FROM inc WHERE NOT maint AND is_public AND n > 1
        ) c
    ) c
),
-- The four measures as intervals (exact microseconds; ranked faster than numerics).
m AS (
    SELECT 0 AS k, period, id, GREATEST(detected_at - started_at, INTERVAL '0') AS v
    FROM inc WHERE NOT maint AND detected_at IS NOT NULL
    UNION ALL
    SELECT 1, period, id, GREATEST(first_posted_at - COALESCE(detected_at, created_at), INTERVAL '0')
    FROM inc WHERE NOT maint AND is_public AND first_posted_at IS NOT NULL
    UNION ALL
    SELECT 2, period, id, GREATEST(resolved_at - started_at, INTERVAL '0')
    FROM inc WHERE NOT maint AND resolved_at IS NOT NULL
    UNION ALL
    SELECT 3, period, id,
           (us / 1000000 + (CASE WHEN mod(us, 1000000) > 500000
                                   OR (mod(us, 1000000) = 500000 AND mod(us / 1000000, 2) = 1)
                              THEN 1 ELSE 0 END)) * INTERVAL '1 second'
    FROM cadence
)"""  # noqa: S608 - only constants are formatted in (table and level names); values are parameters


def _figures_sql(in_scope: str, per_period: bool) -> str:
    """Counts per period and level, and the ranks of each measure the page shows."""
    if per_period:
        period_ranks = (
            "row_number() OVER (PARTITION BY k, period ORDER BY v, id) - 1 AS rp, "
            "count(*) OVER (PARTITION BY k, period) AS np"
        )
    else:
        period_ranks = "NULL::bigint AS rp, NULL::bigint AS np"
    med, p90 = nearest_rank_sql("na", 50), nearest_rank_sql("na", 90)
    pmed, pp90 = nearest_rank_sql("np", 50), nearest_rank_sql("np", 90)
    return f"""{_LOCAL_SETTINGS}
{_measures_sql(in_scope)},
ranked AS (
    SELECT k, period, id, v,
           row_number() OVER (PARTITION BY k ORDER BY v, id) - 1 AS ra,
           count(*) OVER (PARTITION BY k) AS na,
           {period_ranks}
    FROM m
),
picked AS (
    SELECT * FROM ranked
    WHERE ra IN ({med}, {p90}, na - 1) OR {drawn_rank_sql("ra", "na")} OR rp IN ({pmed}, {pp90}, np - 1)
)
SELECT
    (SELECT COALESCE(json_agg(json_build_array(period, maint, COALESCE(sev, 0), open, n)), '[]')
     FROM (SELECT period, maint, sev, open, count(*) AS n FROM inc GROUP BY 1, 2, 3, 4) c),
    (SELECT COALESCE(json_agg(json_build_array(p.k, p.period, p.ra, p.na, p.rp, p.np, {_micros("p.v")},
                                               p.id, i.public_id, i.title)), '[]')
     FROM picked p JOIN inc i ON i.id = p.id)
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
        if na not in wanted:
            wanted[na] = metrics.summary_ranks(na) | frozenset(metrics.drawn_ranks(na))
        if ra in wanted[na]:
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
    """One query. `products`: the scope's product ids, None for every product (then an
    incident without any window counts too, as in the Python path). `per_period`: rank
    within each period too (a second sort of every value), for the response CSV."""
    lows = [p.start for p in periods]
    in_scope, scope_params = _scope_condition("w", products)
    scoped = products is not None
    params = [Incident.Kind.MAINTENANCE, lows, *scope_params, periods[0].start, periods[-1].end, scoped]
    with connection.cursor() as cursor:
        cursor.execute(_figures_sql(in_scope, per_period), params)
        counts, picked = cursor.fetchone()
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
    [period start, min(period end, now)). Products and periods without downtime are absent."""
    lows = [p.start for p in periods]
    start = periods[0].start
    horizon = min(periods[-1].end, now)
    in_scope, scope_params = _scope_condition("w", products)
    sql = f"""{_LOCAL_SETTINGS}
WITH pieces AS (
    SELECT w.product_id, {_severity_sql("w.level")} AS sev,
           GREATEST(w.started_at, %s) AS s,
           LEAST(COALESCE(w.ended_at, %s), %s) AS e
    FROM {_WINDOWS} w
    WHERE w.started_at < %s AND (w.ended_at IS NULL OR w.ended_at > %s) AND {in_scope}
),
events AS (
    SELECT product_id, s AS t, sev, 1 AS d FROM pieces WHERE e > s
    UNION ALL
    SELECT product_id, e, sev, -1 FROM pieces WHERE e > s
    UNION ALL
    -- Every period start, so that no stretch runs across two periods.
    SELECT product_id, low, 0, 0
    FROM (SELECT DISTINCT product_id FROM pieces WHERE e > s) p, unnest(%s::timestamptz[]) AS low
),
running AS (
    SELECT product_id, t, lead(t) OVER w AS t_next, {_running_counts()}
    FROM events
    -- Events at the same moment: the last one's running counts hold them all, and the
    -- others' stretches are empty.
    WINDOW w AS (PARTITION BY product_id ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
)
SELECT product_id, width_bucket(t, %s::timestamptz[]) AS period, {_worst_covering()} AS sev,
       {_micros("sum(t_next - t)")} AS length
FROM running
WHERE t_next > t AND {_worst_covering()} IS NOT NULL
GROUP BY 1, 2, 3
"""  # noqa: S608 - only constants are formatted in (table and level names, numbers); values are parameters
    params = [start, horizon, horizon, horizon, start, *scope_params, lows, lows]
    out: dict[tuple[int, int], dict[str, timedelta]] = defaultdict(dict)
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
