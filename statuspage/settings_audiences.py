"""Settings of the audience pages (docs/adr/0028-audience-pages.md and docs/settings.md).
Pulled into statuspage/settings.py with a star import."""

from __future__ import annotations

from statuspage.env import env_list

__all__ = ["PAGE_HOSTS"]


def _page_hosts(pairs: list[str]) -> dict[str, str]:
    """`status.tailspin.example=tailspin-toys,…` as {host: slug}; a malformed pair stops
    the start, naming it (a typo must not quietly serve the public page instead)."""
    hosts: dict[str, str] = {}
    for pair in pairs:
        host, sep, slug = pair.partition("=")
        if not sep or not host.strip() or not slug.strip():
            raise ValueError(f"PAGE_HOSTS: expected host=slug, got {pair!r}")
        hosts[host.strip().lower().rstrip(".")] = slug.strip()
    return hosts


# Host names that serve an audience page at `/` (its incidents and v2 JSON under it),
# besides the host set on a page in the console. Each must be in ALLOWED_HOSTS too.
# Any other host serves the public page as before.
PAGE_HOSTS = _page_hosts(env_list("PAGE_HOSTS", []))
