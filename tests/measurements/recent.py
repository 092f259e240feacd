"""OpenMetrics for the last 26 hours (for "test the query", which reads the last day):
1000 requests a minute in us-central1, 30 % failing from 6 h to 5 h ago, 0.1 % otherwise."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

SPAN = timedelta(hours=26)
BAD = (timedelta(hours=6), timedelta(hours=5))  # how long ago the bad hour starts and ends


def recent_openmetrics(now: datetime | None = None) -> str:
    now = (now or datetime.now(UTC)).replace(second=0, microsecond=0) - timedelta(minutes=1)
    start = now - SPAN
    minutes = int(SPAN / timedelta(minutes=1))
    requests = ["# TYPE sli_requests counter"]
    errors = ["# TYPE sli_errors counter"]
    count = 0
    for i in range(minutes + 1):
        at = start + timedelta(minutes=i)
        stamp = int(at.timestamp())
        requests.append(f'sli_requests_total{{location="us-central1"}} {i * 1000} {stamp}')
        errors.append(f'sli_errors_total{{location="us-central1"}} {count} {stamp}')
        count += 300 if now - BAD[0] <= at < now - BAD[1] else 1
    return "\n".join([*requests, *errors, "# EOF"]) + "\n"
