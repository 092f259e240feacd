"""Settings of the ops room (/healthz, /readyz, /metrics): docs/operations.md and
docs/settings.md. Pulled into statuspage/settings.py with a star import."""

from __future__ import annotations

import ipaddress

from django.core.exceptions import ImproperlyConfigured

from statuspage.env import env_list, env_str

__all__ = ["METRICS_ALLOWED_NETWORKS", "METRICS_TOKEN"]

# A scraper that sends `Authorization: Bearer <METRICS_TOKEN>` may read /metrics from
# anywhere; empty: no token is accepted.
METRICS_TOKEN = env_str("METRICS_TOKEN")
# Client networks (CIDR) that may read /metrics without the token; the client address is
# the one rule of edge/ratelimit.py (NUM_PROXIES). Default: this machine only.
METRICS_ALLOWED_NETWORKS = env_list("METRICS_ALLOWED_NETWORKS", ["127.0.0.0/8", "::1/128"])
for _network in METRICS_ALLOWED_NETWORKS:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError as _error:
        raise ImproperlyConfigured(
            f"METRICS_ALLOWED_NETWORKS: {_network!r} is not a network ({_error})"
        ) from None
