"""Static settings data kept out of the settings module (it is at its size limit):
nothing here comes from the environment."""

from __future__ import annotations

from typing import Any

# Response headers a script on another origin may read (the schema declares them).
CORS_EXPOSE_HEADERS = [
    "ETag",
    "Location",
    "Link",
    "RateLimit",
    "RateLimit-Policy",
    "Retry-After",
    "Idempotent-Replayed",
    "X-Request-ID",
    "Deprecation",
    "Sunset",
]


def logging_config(level: str) -> dict[str, Any]:
    """Every record names the request it was written for (X-Request-ID; "-" outside one)."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": "edge.problems.RequestIdLogFilter"}},
        "formatters": {"default": {"format": "%(levelname)s %(name)s [%(request_id)s] %(message)s"}},
        "handlers": {
            "console": {"class": "logging.StreamHandler", "filters": ["request_id"], "formatter": "default"}
        },
        "root": {"handlers": ["console"], "level": level},
    }


AUTH_PASSWORD_VALIDATORS = [
    {"NAME": f"django.contrib.auth.password_validation.{name}"}
    for name in ("UserAttributeSimilarityValidator", "MinimumLengthValidator", "CommonPasswordValidator")
]

# The rooms, top to bottom (import-linter holds the order; see pyproject.toml).
ROOMS = [
    "demo",
    "console",
    "public_site",
    "api",
    "ops",
    "portal",
    "insights",
    "audiences",
    "postmortems",
    "credits",
    "subscriptions",
    "alerts",
    "upstream",
    "measurements",
    "incidents",
    "outbox",
    "edge",
    "core",
]
