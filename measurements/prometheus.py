"""A small client for Prometheus's HTTP API (`/api/v1/query_range`), bounded in time and
size. Every failure is a `SourceUnavailable`: the caller falls back to declared windows."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation

MAX_BYTES = 8 * 1024 * 1024
MAX_POINTS = 11_000  # Prometheus's own limit per series
TIMEOUT_SECONDS = 10.0


class SourceUnavailable(Exception):
    """Prometheus could not be reached, refused the query, or answered nonsense."""


def query_range(
    base_url: str,
    query: str,
    *,
    start: datetime,
    end: datetime,
    step: timedelta,
    timeout: float = TIMEOUT_SECONDS,
) -> dict[datetime, Decimal]:
    """The query's single series, {timestamp: value}; several series are summed. NaN
    and missing steps are absent from the answer (gaps)."""
    if start.tzinfo is None or end.tzinfo is None:
        raise ValueError("query_range takes aware datetimes")
    seconds = int(step.total_seconds())
    if seconds <= 0 or (end - start) / step > MAX_POINTS:
        raise SourceUnavailable(f"too many points: {start} to {end} by {step}")
    params = urllib.parse.urlencode(
        {
            "query": query,
            "start": f"{start.timestamp():.3f}",
            "end": f"{end.timestamp():.3f}",
            "step": f"{seconds}s",
        }
    )
    url = f"{base_url.rstrip('/')}/api/v1/query_range?{params}"
    if not url.startswith(("http://", "https://")):
        raise SourceUnavailable(f"not an http(s) URL: {base_url}")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 (scheme checked above)
            body = response.read(MAX_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise SourceUnavailable(
            f"Prometheus answered {exc.code}: {exc.read(500).decode(errors='replace')}"
        ) from exc
    except (OSError, ValueError) as exc:
        raise SourceUnavailable(f"Prometheus unreachable at {base_url}: {exc}") from exc
    if len(body) > MAX_BYTES:
        raise SourceUnavailable("Prometheus answer too large")
    return _parse(body)


def _parse(body: bytes) -> dict[datetime, Decimal]:
    try:
        payload = json.loads(body)
        if payload.get("status") != "success":
            raise SourceUnavailable(f"Prometheus error: {payload.get('error', 'unknown')}")
        points: dict[datetime, Decimal] = {}
        for series in payload["data"]["result"]:
            for stamp, value in series["values"]:
                number = Decimal(value)
                if not number.is_finite():
                    continue
                at = datetime.fromtimestamp(float(stamp), tz=UTC)
                points[at] = points.get(at, Decimal(0)) + number
        return points
    except (KeyError, TypeError, ValueError, InvalidOperation) as exc:
        raise SourceUnavailable(f"unexpected Prometheus answer: {exc}") from exc
