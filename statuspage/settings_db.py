"""PostgreSQL connection options: timeouts and TCP keepalives, so that neither a slow
server nor a cut link (a proxy that drops the connection, a host gone) holds a worker
or a row lock forever (RELIABILITY.md, bench/README.md "Chaos soak").

Imported at the top of statuspage/settings.py, which applies `postgres_options()` to the
default database (and, through settings_replica.py, to the replica).
"""

from __future__ import annotations

from typing import Any

from statuspage.env import env_int

__all__ = [
    "DB_CONNECT_TIMEOUT",
    "DB_IDLE_IN_TRANSACTION_TIMEOUT_MS",
    "DB_STATEMENT_TIMEOUT_MS",
    "DB_TCP_USER_TIMEOUT_MS",
    "postgres_options",
]

# A slow database must not pin every web worker: queries give up after this long.
DB_STATEMENT_TIMEOUT_MS = env_int("DB_STATEMENT_TIMEOUT_MS", 5000)
# A session that opened a transaction and then went quiet (its client killed, or cut off
# behind a proxy that never tells either side) is ended by the server after this long,
# which releases its row locks: otherwise every sweep and claim that needs those rows waits
# on them until the server's own keepalives notice, hours later. Above the longest work
# a transaction legitimately pauses for (REQUEST_DEADLINE, the SMTP and webhook timeouts).
# 0 turns it off.
DB_IDLE_IN_TRANSACTION_TIMEOUT_MS = env_int("DB_IDLE_IN_TRANSACTION_TIMEOUT_MS", 60_000)
DB_CONNECT_TIMEOUT = env_int("DB_CONNECT_TIMEOUT", 3)
# Unacknowledged data older than this closes the connection on our side (Linux).
DB_TCP_USER_TIMEOUT_MS = env_int("DB_TCP_USER_TIMEOUT_MS", 10_000)


def postgres_options() -> dict[str, Any]:
    """The libpq options of every PostgreSQL connection."""
    server = f"-c statement_timeout={DB_STATEMENT_TIMEOUT_MS}"
    server += f" -c idle_in_transaction_session_timeout={DB_IDLE_IN_TRANSACTION_TIMEOUT_MS}"
    return {
        "connect_timeout": DB_CONNECT_TIMEOUT,
        "options": server,
        # A peer that vanished (host down, network cut) is noticed by the kernel within
        # seconds instead of the default two hours; a slow or silent one is bounded by
        # DB_CLIENT_TIMEOUT_MS (settings.py), which TCP cannot see.
        "keepalives": 1,
        "keepalives_idle": 5,
        "keepalives_interval": 2,
        "keepalives_count": 3,
        "tcp_user_timeout": DB_TCP_USER_TIMEOUT_MS,
    }
