"""Settings of the read replica (edge/replica.py, docs/adr/0025-replica.md).

Pulled into statuspage/settings.py at its end: it reads the DATABASES and MIDDLEWARE
defined there and, when DATABASE_REPLICA_URL is set, adds the "replica" alias, the
router and the middleware that marks public reads. Unset, nothing changes.
"""

from __future__ import annotations

import copy

import dj_database_url

from statuspage.env import env_float, env_int, env_str
from statuspage.settings import DATABASES, MIDDLEWARE

__all__ = [
    "DATABASE_REPLICA_CHECK_INTERVAL",
    "DATABASE_REPLICA_MAX_LAG",
    "DATABASE_REPLICA_URL",
    "DATABASE_ROUTERS",
]

# A streaming replica of the primary (postgres://...): anonymous reads of the public
# pages, feeds and cached API reads go there. Empty: everything reads from the primary.
DATABASE_REPLICA_URL = env_str("DATABASE_REPLICA_URL")
# A replica whose replay is more than this many seconds behind is not read from.
DATABASE_REPLICA_MAX_LAG = env_float("DATABASE_REPLICA_MAX_LAG", 5.0)
# Each process asks the replica for its lag at most this often (seconds); a replica found
# lagging or unreachable is left alone until the next check.
DATABASE_REPLICA_CHECK_INTERVAL = env_float("DATABASE_REPLICA_CHECK_INTERVAL", 2.0)

DATABASE_ROUTERS: list[str] = []
if DATABASE_REPLICA_URL:
    _replica = dj_database_url.parse(
        DATABASE_REPLICA_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 60), conn_health_checks=True
    )
    # The primary's connection options (timeouts, keepalives) hold for the replica too.
    _replica["OPTIONS"] = {
        **copy.deepcopy(DATABASES["default"].get("OPTIONS", {})),
        **_replica.get("OPTIONS", {}),
    }
    # Tests read the replica through the primary's connection (no test database of its own).
    _replica["TEST"] = {"MIRROR": "default"}
    DATABASES["replica"] = _replica
    DATABASE_ROUTERS = ["edge.replica.ReplicaRouter"]
    # After authentication (it asks whether the visitor is signed in), before the views.
    MIDDLEWARE.insert(
        MIDDLEWARE.index("django.contrib.auth.middleware.AuthenticationMiddleware") + 1,
        "edge.replica.PublicReadMiddleware",
    )
