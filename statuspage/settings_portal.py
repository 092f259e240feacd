"""Settings of the customer portal room (docs/adr/0029-customer-portal.md and
docs/settings.md). Pulled into statuspage/settings.py with a star import."""

from __future__ import annotations

from statuspage.env import env_int

__all__ = [
    "PORTAL_LINK_MAX_AGE",
    "PORTAL_LINK_RATE_PER_EMAIL",
    "PORTAL_LINK_RATE_PER_IP",
    "PORTAL_LINK_RATE_WINDOW",
]

# A sign-in link works once, for this many seconds after it was sent.
PORTAL_LINK_MAX_AGE = env_int("PORTAL_LINK_MAX_AGE", 15 * 60)
# Sign-in link requests per address and per client address within the window (seconds);
# past them the form answers "too many requests" whatever the address.
PORTAL_LINK_RATE_PER_EMAIL = env_int("PORTAL_LINK_RATE_PER_EMAIL", 3)
PORTAL_LINK_RATE_PER_IP = env_int("PORTAL_LINK_RATE_PER_IP", 20)
PORTAL_LINK_RATE_WINDOW = env_int("PORTAL_LINK_RATE_WINDOW", 3600)
