"""Settings for the status platform: one file, driven by the environment.

With no environment at all the app runs embedded: SQLite under var/, no Redis (tasks run
in process, local-memory cache), emails as files under var/mail/. Every variable read here
is listed, with its meaning, in docker/.env.example."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

import dj_database_url
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_lazy as _

from statuspage import conventions
from statuspage.api_schema import API_TAGS, ENUM_NAME_OVERRIDES
from statuspage.env import env_bool, env_float, env_int, env_list, env_str
from statuspage.settings_db import (
    DB_IDLE_IN_TRANSACTION_TIMEOUT_MS,  # noqa: F401 - a setting of its own
    DB_STATEMENT_TIMEOUT_MS,
    postgres_options,
)

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", default=False)
SILENCED_SYSTEM_CHECKS = ["models.W040"]  # covering indexes: SQLite keeps the key columns only

SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off (DEBUG=1 for development).")
    # Development only: a fixed key keeps sessions valid across restarts of `make run`.
    SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production"  # noqa: S105

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
SITE_URL = env_str("SITE_URL", "http://127.0.0.1:8000").rstrip("/")
# The organisation's name: pages, feeds and emails say "<SITE_NAME> status" unless it says
# "status" already (core.text.site_title), so the default reads "Status", not "Status status".
SITE_NAME = env_str("SITE_NAME", "Status")
# WebSub hub advertised by the feeds, pinged after public changes (public_site/websub.py).
WEBSUB_HUB_URL = env_str("WEBSUB_HUB_URL", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.sitemaps",
    "corsheaders",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    *conventions.ROOMS,
]

MIDDLEWARE: list[str] = [
    "ops.middleware.OpsMiddleware",  # /healthz, /readyz, /metrics before any host, TLS or language rule
    "edge.compress.WireMiddleware",  # outermost: compresses what the others wrote
    "edge.problems.RequestIdMiddleware",  # X-Request-ID, before anything answers or logs
    "edge.middleware.SecurityHeadersMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "audiences.middleware.PageHostMiddleware",  # a page's own host name serves it at /
    # Before load shedding, so that even a 503 speaks the page's language.
    "edge.i18n.PathLanguageMiddleware",
    "edge.middleware.LoadSheddingMiddleware",
    "edge.middleware.RequestDeadlineMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "corsheaders.middleware.CorsMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "edge.middleware.SessionLifetimeMiddleware",
    "edge.middleware.LoginRateLimitMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "api.exceptions.ApiProblemMiddleware",  # /api/ errors as problem details, DEBUG or not
    "edge.middleware.DatabaseUnavailableMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into its 429 answer.
    "axes.middleware.AxesMiddleware",
]

# Load shedding: requests per process at once before a 503 (cached reads exempt; 0: off).
MAX_CONCURRENT_REQUESTS = env_int("MAX_CONCURRENT_REQUESTS", 16)
SHED_RETRY_AFTER = env_int("SHED_RETRY_AFTER", 5)
DB_UNAVAILABLE_RETRY_AFTER = env_int("DB_UNAVAILABLE_RETRY_AFTER", 30)

ROOT_URLCONF = "statuspage.urls"
WSGI_APPLICATION = "statuspage.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "public_site.context_processors.site",
                "console.context_processors.page_status",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL")
if not DATABASE_URL:
    # Embedded default: a SQLite file in VAR_DIR, which a fresh clone does not have yet.
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASE_URL = f"sqlite:///{VAR_DIR / 'statuspage.sqlite3'}"
DATABASES: dict[str, dj_database_url.DBConfig] = {
    "default": dj_database_url.parse(
        DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 60), conn_health_checks=True
    )
}
# Timeouts and keepalives, so a slow or cut database holds no worker nor lock for long.
_statement_timeout_ms = 0
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"].setdefault("OPTIONS", {}).update(postgres_options())
    _statement_timeout_ms = DB_STATEMENT_TIMEOUT_MS
# The client-side bound on one database round trip (edge/deadline.py): the server's
# statement timeout does not cover a slow link or a server that stopped answering.
# Default: the statement timeout plus a second. 0 turns it off.
DB_CLIENT_TIMEOUT_MS = env_int(
    "DB_CLIENT_TIMEOUT_MS", _statement_timeout_ms + 1000 if _statement_timeout_ms else 0
)
# Every request's database work is bounded by this many seconds in total (the public
# pages and cached API reads have a much shorter budget: PUBLIC_RENDER_BUDGET). Keep it
# under GUNICORN_TIMEOUT, which reaps a worker whose request outlives it. 0: no bound.
REQUEST_DEADLINE = env_float("REQUEST_DEADLINE", 20.0)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis: broker and cache when present, nothing when absent ------------------------
REDIS_URL = env_str("REDIS_URL")
# Cache calls give up after this long, and after a failure every call in the process fails
# fast for CACHE_BREAKER_SECONDS before one probes again (edge/cache_backend.py): a
# paused Redis must cost milliseconds per request, not a socket timeout each.
CACHE_SOCKET_TIMEOUT = env_float("CACHE_SOCKET_TIMEOUT", 0.25)
CACHE_BREAKER_SECONDS = env_float("CACHE_BREAKER_SECONDS", 5.0)
# Rendered public pages can live on a Redis of their own (docker-compose: an LRU instance
# with maxmemory), so that page bodies are what gets evicted, never the version stamp,
# locks, rate-limit counters or queued tasks on REDIS_URL. Unset: REDIS_URL holds both.
PAGE_CACHE_URL = env_str("PAGE_CACHE_URL")


def _redis_cache(url: str) -> dict[str, object]:
    return {
        "BACKEND": "edge.cache_backend.ResilientRedisCache",
        "LOCATION": url,
        "KEY_PREFIX": env_str("CACHE_KEY_PREFIX", "statuspage"),
        "OPTIONS": {"socket_connect_timeout": CACHE_SOCKET_TIMEOUT, "socket_timeout": CACHE_SOCKET_TIMEOUT},
    }


if REDIS_URL:
    CACHES = {"default": _redis_cache(REDIS_URL)}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "OPTIONS": {"MAX_ENTRIES": env_int("LOCAL_CACHE_MAX_ENTRIES", 20_000)}}}  # fmt: skip
if PAGE_CACHE_URL:
    CACHES["pages"] = _redis_cache(PAGE_CACHE_URL)
PUBLIC_PAGE_CACHE_ALIAS = "pages" if PAGE_CACHE_URL else "default"
# Rate-limit counters have a cache of their own, so page entries can never evict them
# (why, and the embedded fallback: docs/settings.md, RATELIMIT_REDIS_URL).
RATELIMIT_REDIS_URL = env_str("RATELIMIT_REDIS_URL", REDIS_URL)
if RATELIMIT_REDIS_URL:
    CACHES["ratelimit"] = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": RATELIMIT_REDIS_URL,
        "KEY_PREFIX": env_str("CACHE_KEY_PREFIX", "statuspage") + ":rl",
        "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
    }
else:
    CACHES["ratelimit"] = {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "ratelimit",
        "OPTIONS": {"MAX_ENTRIES": env_int("RATELIMIT_MAX_ENTRIES", 100_000)},
    }

CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
# Without Redis there is no worker: tasks run in process, right after the commit that
# queued them, so the embedded default needs nothing else running.
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL or env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# Retry delays are capped far below this: no redelivery while a countdown still runs.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600),
    "socket_connect_timeout": 1,
    "socket_timeout": 2,
    # Publishing gives up after one quick reconnect instead of kombu's default series: with
    # Redis down, a web request that queues mail must answer fast. The outbox rows are in
    # the database and the sweeper enqueues them when Redis is back.
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.2,
}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = "UTC"

# --- Email ------------------------------------------------------------------------------
EMAIL_HOST = env_str("EMAIL_HOST")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
if EMAIL_HOST:
    EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
else:
    # No SMTP configured: every email is written as a .log file a person can open.
    EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.filebased.EmailBackend")
    EMAIL_FILE_PATH = str(VAR_DIR / "mail")
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "Status <status@localhost>")
SERVER_EMAIL = DEFAULT_FROM_EMAIL

# --- Time ----------------------------------------------------------------------------------
USE_TZ = True
TIME_ZONE = "UTC"
# Times on pages and in emails are shown in this zone and the zone is named next to them.
DISPLAY_TIME_ZONE = env_str("DISPLAY_TIME_ZONE", "US/Pacific")
try:
    ZoneInfo(DISPLAY_TIME_ZONE)
except Exception as exc:
    raise ImproperlyConfigured(f"DISPLAY_TIME_ZONE {DISPLAY_TIME_ZONE!r} is not a time zone") from exc
USE_I18N = True
# English at the bare paths, French under /fr/ (public pages only: public_site.urls and
# subscriptions.urls go through i18n_patterns; the API, admin, console and feeds stay
# English). edge.i18n.PathLanguageMiddleware picks the language from the path alone.
LANGUAGE_CODE = "en"
LANGUAGES = [("en", _("English")), ("fr", _("French"))]
LOCALE_PATHS = [BASE_DIR / "locale"]

# --- Status page rules ----------------------------------------------------------------------
# Display uptime (the 90-day bars) counts major outage fully and partial outage at this
# weight; degraded performance and maintenance do not count (the Statuspage rule).
UPTIME_WEIGHT_MAJOR = env_float("UPTIME_WEIGHT_MAJOR", 1.0)
UPTIME_WEIGHT_PARTIAL = env_float("UPTIME_WEIGHT_PARTIAL", 0.3)
UPTIME_WEIGHT_DEGRADED = env_float("UPTIME_WEIGHT_DEGRADED", 0.0)
STATUS_GRID_DAYS = env_int("STATUS_GRID_DAYS", 14)
# "Recent incidents" on the status page: this many days, one heading per day.
RECENT_INCIDENT_DAYS = env_int("RECENT_INCIDENT_DAYS", 14)
# How often an open public page asks whether anything changed (static/js/live.js), and how
# long a CDN may keep that tiny version document (docs/adr/0016-light-on-the-wire.md).
LIVE_REFRESH_SECONDS = env_int("LIVE_REFRESH_SECONDS", 5)
LIVE_DOCUMENT_MAX_AGE = env_int("LIVE_DOCUMENT_MAX_AGE", 2)

# --- Public page cache (edge/page_cache.py) ------------------------------------------
# Keys carry the public-state version; the TTL only refreshes clock-driven text (durations).
PUBLIC_CACHE_TTL = env_int("PUBLIC_CACHE_TTL", 60)
PUBLIC_CACHE_MAX_AGE = env_int("PUBLIC_CACHE_MAX_AGE", 60)
PUBLIC_CACHE_SWR = env_int("PUBLIC_CACHE_SWR", 30)
PUBLIC_CACHE_SIE = env_int("PUBLIC_CACHE_SIE", 86400)
PUBLIC_CACHE_LOCK_TIMEOUT = env_int("PUBLIC_CACHE_LOCK_TIMEOUT", 10)
# After a database failure, every public page and cached API read skips the database for
# this many seconds (stale copy, snapshot or 503) before one request tries again.
PUBLIC_CACHE_DB_BACKOFF = env_float("PUBLIC_CACHE_DB_BACKOFF", 2.0)
# The time budget of a public rebuild or cached API read (s): past it the request answers
# the last good copy (marked stale) or 503 + Retry-After while the rebuild goes on, at most
# PUBLIC_REBUILD_TIMEOUT s (under PUBLIC_CACHE_LOCK_TIMEOUT: two never overlap).
PUBLIC_RENDER_BUDGET = env_float("PUBLIC_RENDER_BUDGET", 0.3)
PUBLIC_REBUILD_TIMEOUT = env_float("PUBLIC_REBUILD_TIMEOUT", 8.0)
# A page with no older copy waits this long for its first render (one render: requests
# for it meanwhile wait for that one) before 503 + Retry-After.
PUBLIC_FIRST_RENDER_BUDGET = env_float("PUBLIC_FIRST_RENDER_BUDGET", 2.0)
# Expensive misses one process rebuilds at once; the next gets the last good copy or a
# fast 503 (hits, and the plain `/`, product pages and badges, are never shed).
PUBLIC_MAX_REBUILDS = env_int("PUBLIC_MAX_REBUILDS", 2)
# Render `/`, the product pages and the badges after each change (docs/adr/0017-prerender.md).
PUBLIC_PRERENDER_ON_CHANGE = env_bool("PUBLIC_PRERENDER_ON_CHANGE", True)
# max-age of a stale answer: shared caches keep it only briefly.
PUBLIC_STALE_MAX_AGE = env_int("PUBLIC_STALE_MAX_AGE", 5)
# With the cache server unreachable, each process reads the version stamp from the
# database at most this often (seconds): a change shows within this interval.
PUBLIC_STATE_DB_POLL = env_float("PUBLIC_STATE_DB_POLL", 2.0)

# --- Static files ---------------------------------------------------------------------------
STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            # Hashed, compressed files with far-future caching in production; plain files
            # in development and tests, where nobody has run collectstatic.
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if env_bool("STATIC_MANIFEST", not DEBUG)
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}

# --- Auth -------------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = conventions.AUTH_PASSWORD_VALIDATORS
LOGIN_URL = "admin:login"

# Logins lock per account-and-address pair (AXES_*; edge.ratelimit's address), so the owner
# signs in from elsewhere; LOGIN_RATE_PER_ADDRESS login POSTs per cool-off limit an address.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
    "portal.oidc.PortalOidcBackend",  # customer contacts' own OpenID Connect providers only
]
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("AXES_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "edge.ratelimit.login_client_address"
AXES_VERBOSE = False
LOGIN_RATE_PER_ADDRESS = env_int("LOGIN_RATE_PER_ADDRESS", 30)
# Sessions end when idle or old, in seconds (edge.middleware.SessionLifetimeMiddleware).
SESSION_IDLE_TIMEOUT = env_int("SESSION_IDLE_TIMEOUT", 12 * 3600)
SESSION_ABSOLUTE_LIFETIME = env_int("SESSION_ABSOLUTE_LIFETIME", 7 * 24 * 3600)
CSRF_FAILURE_VIEW = "api.exceptions.csrf_failure"

# --- REST framework -----------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.authentication.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_SCHEMA_CLASS": "api.schema.APIAutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Status platform API",
    "DESCRIPTION": "Incidents, impact, incident reports and SLA credits.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
}
# Proxies in front of us that append to X-Forwarded-For; 0 means REMOTE_ADDR is the
# client. Never more than are really there: the header is otherwise forgeable.
NUM_PROXIES = env_int("NUM_PROXIES", 0)
REST_FRAMEWORK.update(
    {
        "EXCEPTION_HANDLER": "api.exceptions.api_exception_handler",
        "DEFAULT_CONTENT_NEGOTIATION_CLASS": "api.parsers.ProblemAwareNegotiation",  # problem+json: no 406
        # JSON bodies nested past a fixed depth are a 400, not a RecursionError (a 500).
        "DEFAULT_PARSER_CLASSES": [
            "api.parsers.DepthLimitedJSONParser",
            "rest_framework.parsers.FormParser",
            "rest_framework.parsers.MultiPartParser",
        ],
        "NUM_PROXIES": NUM_PROXIES,
        "DEFAULT_THROTTLE_RATES": {
            "anon": env_str("API_THROTTLE_ANON", "300/min"),
            "token": env_str("API_THROTTLE_TOKEN", "1200/min"),
            "schema": env_str("API_THROTTLE_SCHEMA", "30/min"),
        },
    }
)
SPECTACULAR_SETTINGS.update(
    {
        # The full description (keys, conventions, limits) is set by api.schema.postprocess.
        "DESCRIPTION": "Incidents, impact, incident reports and SLA credits.",
        # Operation descriptions are written for consumers in extend_schema; class
        # docstrings are for maintainers and stay out of the schema.
        "DISABLE_DOCSTRING_DESCRIPTIONS": True,
        "SWAGGER_UI_DIST": "SIDECAR",
        "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
        "REDOC_DIST": "SIDECAR",
        "COMPONENT_SPLIT_REQUEST": True,
        # 3.1: nullable references are `oneOf [ref, null]` (strict validators reject the
        # 3.0 `allOf` + `nullable` form), and webhooks can be documented.
        "OAS_VERSION": "3.1.0",
        "SERVERS": [{"url": SITE_URL, "description": "This status page"}],
        "LICENSE": {"name": "MIT", "identifier": "MIT"},
        "CONTACT": {"name": "Status page operators", "url": SITE_URL},
        "TAGS": API_TAGS,
        "POSTPROCESSING_HOOKS": [
            "drf_spectacular.hooks.postprocess_schema_enums",
            "api.schema.postprocess",
        ],
        "SCHEMA_PATH_PREFIX": r"/api/v[0-9]",
        # One named enum per choice set, instead of generated names like StatusC00Enum.
        "ENUM_NAME_OVERRIDES": ENUM_NAME_OVERRIDES,
    }
)

# Idempotency-Key records (api.models.IdempotencyRecord) are kept this long, then swept.
API_IDEMPOTENCY_TTL_HOURS = env_int("API_IDEMPOTENCY_TTL_HOURS", 24)
# Failed API key authentications per address per window (s) before a 429.
API_AUTH_FAILURE_LIMIT = env_int("API_AUTH_FAILURE_LIMIT", 20)
API_AUTH_FAILURE_WINDOW = env_int("API_AUTH_FAILURE_WINDOW", 600)

# --- CORS: only public read-only endpoints, so widgets on other origins can read them -----
# The badges, the JSON Feeds and the live page's version document are embeddable too.
CORS_URLS_REGEX = (
    r"^/(api/v2/.*|api/v1/(status|products|locations|incidents|maintenance).*|incidents\.json|products\.json"
    r"|badge\.svg|products/[-\w]+/(badge\.svg|history\.json)|history\.json|live/version\.json)$"
)
CORS_ALLOW_ALL_ORIGINS = True
CORS_ALLOW_METHODS = ["GET", "HEAD", "OPTIONS"]
CORS_ALLOW_CREDENTIALS = False
CORS_EXPOSE_HEADERS = conventions.CORS_EXPOSE_HEADERS  # readable by scripts on other origins

# --- Security (production) ------------------------------------------------------------------
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("BEHIND_PROXY", False) else None
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

# --- Subscriptions, notifications, maintenance, action items --------------------------------
# Signed-link lifetimes (seconds). Unsubscribe links live long: they sit in old emails.
SUBSCRIPTION_CONFIRM_MAX_AGE = env_int("SUBSCRIPTION_CONFIRM_MAX_AGE", 7 * 24 * 3600)
SUBSCRIPTION_MANAGE_MAX_AGE = env_int("SUBSCRIPTION_MANAGE_MAX_AGE", 30 * 24 * 3600)
SUBSCRIPTION_UNSUBSCRIBE_MAX_AGE = env_int("SUBSCRIPTION_UNSUBSCRIBE_MAX_AGE", 400 * 24 * 3600)
# The subscribe form must not mail-bomb anyone: requests per address and per client IP
# within SUBSCRIBE_RATE_WINDOW seconds (counted in the cache; fails open if it is down),
# and at most one confirmation email per address per SUBSCRIBE_CONFIRM_RESEND_SECONDS
# (enforced in the database, so it holds even when the cache is down).
SUBSCRIBE_RATE_PER_ADDRESS = env_int("SUBSCRIBE_RATE_PER_ADDRESS", 3)
SUBSCRIBE_RATE_PER_IP = env_int("SUBSCRIBE_RATE_PER_IP", 20)
SUBSCRIBE_RATE_WINDOW = env_int("SUBSCRIBE_RATE_WINDOW", 3600)
SUBSCRIBE_CONFIRM_RESEND_SECONDS = env_int("SUBSCRIBE_CONFIRM_RESEND_SECONDS", 300)
# Webhook targets on private, loopback or link-local addresses are refused (SSRF) unless
# this is on (tests and local development only).
WEBHOOK_ALLOW_PRIVATE = env_bool("WEBHOOK_ALLOW_PRIVATE", False)
# Webhook, Slack and Teams subscriptions need https URLs unless this is on (development).
WEBHOOK_ALLOW_HTTP = env_bool("WEBHOOK_ALLOW_HTTP", DEBUG)
# A webhook whose deliveries fail for good this many times in a row is disabled.
WEBHOOK_MAX_CONSECUTIVE_FAILURES = env_int("WEBHOOK_MAX_CONSECUTIVE_FAILURES", 5)
MAINTENANCE_REMINDER_MINUTES = env_int("MAINTENANCE_REMINDER_MINUTES", 60)
# Owners of open action items due within this many days (or overdue) get a daily email.
ACTION_ITEM_REMINDER_DAYS = env_int("ACTION_ITEM_REMINDER_DAYS", 3)
ACTION_ITEM_REMINDER_HOUR_UTC = env_int("ACTION_ITEM_REMINDER_HOUR_UTC", 15)

# --- Staff console (/manage/) ------------------------------------------------------------------
# An open incident whose last public update is older than this many minutes is flagged on
# the console's Now page: people watching the page expect news at least this often.
CONSOLE_UPDATE_STALE_MINUTES = env_int("CONSOLE_UPDATE_STALE_MINUTES", 30)
# Resolved incidents listed on the Now page: those resolved within this many days.
CONSOLE_RECENT_DAYS = env_int("CONSOLE_RECENT_DAYS", 7)

_SUBSCRIPTION_BEAT = {
    # Maintenance starts and ends on the minute; both ticks are idempotent, so a late or
    # doubled beat only moves (or reminds of) what is due.
    "incidents-maintenance-advance": {"task": "incidents.tasks.maintenance_advance", "schedule": 60.0},
    "subscriptions-maintenance-reminders": {
        "task": "subscriptions.tasks.maintenance_reminders",
        "schedule": 60.0,
    },
    "subscriptions-action-item-reminders": {
        "task": "subscriptions.tasks.action_item_reminders",
        "schedule": crontab(minute=0, hour=ACTION_ITEM_REMINDER_HOUR_UTC),
    },
}
# Merged, not assigned: other apps add their own entries to the same schedule.
CELERY_BEAT_SCHEDULE = {**globals().get("CELERY_BEAT_SCHEDULE", {}), **_SUBSCRIPTION_BEAT}

# --- Outbox: durable email/webhook delivery (each setting: docs/settings.md) ------------------
# A claimed message is another worker's to retry only after this lease; it must outlast
# the slowest honest attempt (a few EMAIL_TIMEOUTs).
OUTBOX_LEASE_SECONDS = env_float("OUTBOX_LEASE_SECONDS", 300.0)
OUTBOX_MAX_ATTEMPTS = env_int("OUTBOX_MAX_ATTEMPTS", 8)
# Exponential backoff with full jitter: attempt n waits uniform(0, min(cap, base * 2^(n-1))).
# The cap stays under half the broker visibility timeout (checked at start-up, outbox.E001).
OUTBOX_RETRY_BASE_DELAY = env_float("OUTBOX_RETRY_BASE_DELAY", 30.0)
OUTBOX_RETRY_MAX_DELAY = env_float("OUTBOX_RETRY_MAX_DELAY", 900.0)
OUTBOX_SWEEP_GRACE_SECONDS = env_float("OUTBOX_SWEEP_GRACE_SECONDS", 60.0)
OUTBOX_SWEEP_BATCH = env_int("OUTBOX_SWEEP_BATCH", 500)
OUTBOX_SWEEP_INTERVAL = env_float("OUTBOX_SWEEP_INTERVAL", 60.0)
OUTBOX_BATCH_SIZE = env_int("OUTBOX_BATCH_SIZE", 100)
# A destination that is down (refused, timed out, 421, HTTP 5xx) does not use up the
# messages' attempts; they give up only once this old.
OUTBOX_GIVE_UP_DAYS = env_float("OUTBOX_GIVE_UP_DAYS", 3.0)
# Circuit breaker per destination (shared through the database): open after this many
# outage-type failures in a row, then one probe after a cool-down that doubles while the
# outage lasts, up to the maximum.
OUTBOX_BREAKER_THRESHOLD = env_int("OUTBOX_BREAKER_THRESHOLD", 3)
OUTBOX_BREAKER_COOLDOWN = env_float("OUTBOX_BREAKER_COOLDOWN", 30.0)
OUTBOX_BREAKER_MAX_COOLDOWN = env_float("OUTBOX_BREAKER_MAX_COOLDOWN", 300.0)
OUTBOX_PUBLISH_TIMEOUT = env_float("OUTBOX_PUBLISH_TIMEOUT", 0.2)
OUTBOX_SMTP_IDLE_SECONDS = env_float("OUTBOX_SMTP_IDLE_SECONDS", 30.0)
OUTBOX_KICK_LOST_SECONDS = env_float("OUTBOX_KICK_LOST_SECONDS", 2 * OUTBOX_SWEEP_GRACE_SECONDS)
EMAIL_MESSAGE_ID_DOMAIN = env_str("EMAIL_MESSAGE_ID_DOMAIN", urlsplit(SITE_URL).hostname or "localhost")
WEBHOOK_TIMEOUT = env_float("WEBHOOK_TIMEOUT", 10.0)
# Reuse database connections across tasks (why: docs/settings.md, CELERY_DB_REUSE_MAX).
CELERY_DB_REUSE_MAX = 100
CELERY_BEAT_SCHEDULE = {
    **CELERY_BEAT_SCHEDULE,
    "outbox-sweep": {"task": "outbox.tasks.sweep_outbox", "schedule": OUTBOX_SWEEP_INTERVAL},
    # Idempotent: deleting what expired twice deletes nothing the second time.
    "api-idempotency-sweep": {"task": "api.tasks.sweep_idempotency_records", "schedule": 3600.0},
    "subscriptions-notification-events-resume": {
        "task": "subscriptions.tasks.notification_events_resume",
        "schedule": OUTBOX_SWEEP_INTERVAL,
    },
}
# Three queues, so that one slow receiver cannot hold the others: a hung mail server
# blocks only the "email" workers; webhooks and the periodic work (sweeps, maintenance
# transitions, fan-out expansion) have their own (docker/docker-compose.yml runs a worker
# per queue). Anything unrouted goes to "periodic".
CELERY_TASK_DEFAULT_QUEUE = "periodic"
CELERY_TASK_ROUTES = {
    "outbox.tasks.deliver_emails": {"queue": "email"},
    "outbox.tasks.deliver_message": {"queue": "email"},
    "outbox.tasks.deliver_webhooks": {"queue": "webhooks"},
    "outbox.tasks.sweep_outbox": {"queue": "periodic"},
    "incidents.tasks.*": {"queue": "periodic"},
    "subscriptions.tasks.*": {"queue": "periodic"},
}
NOTIFY_CHUNK_SIZE = env_int("NOTIFY_CHUNK_SIZE", 1000)

# --- Alert intake (alerts/) -------------------------------------------------------------------
# Bodies over this many bytes are refused with 413 before they are read in full.
ALERTS_MAX_PAYLOAD_BYTES = env_int("ALERTS_MAX_PAYLOAD_BYTES", 1024 * 1024)
# Requests per integration (after its credentials check), e.g. "120/min".
ALERTS_INTAKE_RATE = env_str("ALERTS_INTAKE_RATE", "120/min")
# Every received payload is kept this long for debugging, then purged by the beat.
ALERTS_PAYLOAD_RETENTION_DAYS = env_int("ALERTS_PAYLOAD_RETENTION_DAYS", 7)
# Who is told when every alert of an incident resolved but a person has been updating it
# (empty: every active staff user with an address).
ALERTS_STAFF_EMAILS = env_list("ALERTS_STAFF_EMAILS", [])
# A generic sender's X-Status-Timestamp may be this far from our clock; its delivery ids
# are kept twice as long, so a captured request cannot be replayed.
ALERTS_SIGNATURE_TOLERANCE_SECONDS = env_int("ALERTS_SIGNATURE_TOLERANCE_SECONDS", 300)
# Open drafts per integration; alert groups beyond it are gathered in one overflow draft.
ALERTS_MAX_OPEN_DRAFTS = env_int("ALERTS_MAX_OPEN_DRAFTS", 20)
CELERY_BEAT_SCHEDULE = {
    **CELERY_BEAT_SCHEDULE,
    # Due auto-resolutions (after the flap debounce) and auto-publications, each minute.
    "alerts-tick": {"task": "alerts.tasks.alerts_tick", "schedule": 60.0},
    "alerts-purge-payloads": {"task": "alerts.tasks.purge_payloads", "schedule": 3600.0},
}

# Upstream providers (docs/settings.md); off: public pages read nothing of upstream/.
UPSTREAM_ON_PUBLIC_PAGES = env_bool("UPSTREAM_ON_PUBLIC_PAGES", False)
UPSTREAM_MIN_INTERVAL_SECONDS = env_int("UPSTREAM_MIN_INTERVAL_SECONDS", 60)
UPSTREAM_MAX_BACKOFF_SECONDS = env_int("UPSTREAM_MAX_BACKOFF_SECONDS", 3600)
UPSTREAM_TIMEOUT_SECONDS = env_float("UPSTREAM_TIMEOUT_SECONDS", 10.0)
UPSTREAM_MAX_BYTES = env_int("UPSTREAM_MAX_BYTES", 2 * 1024 * 1024)
UPSTREAM_USER_AGENT = env_str("UPSTREAM_USER_AGENT", f"statuspage-upstream/1 (+{SITE_URL})")
CELERY_BEAT_SCHEDULE["upstream-poll"] = {"task": "upstream.tasks.poll_providers", "schedule": 30.0}

# --- Markdown rendering (incidents/markdown.py) -------------------------------------------------
# CPU time (not wall time: load does not refuse a post), then a wall-time backstop, for the
# child that renders staff Markdown (docs/adr/0004-markdown-bounds.md).
MARKDOWN_RENDER_CPU_SECONDS = env_float("MARKDOWN_RENDER_CPU_SECONDS", 0.2)
MARKDOWN_RENDER_TIMEOUT = env_float("MARKDOWN_RENDER_TIMEOUT", 5.0)

# --- SLA credits --------------------------------------------------------------------------------
CREDITS_COMPUTE_BATCH = env_int("CREDITS_COMPUTE_BATCH", 2000)
# Four eyes above this money total in one currency; 0 turns the rule off.
CREDITS_SECOND_APPROVER_ABOVE = Decimal(env_str("CREDITS_SECOND_APPROVER_ABOVE", "10000"))
CREDITS_REPLY_TO = env_str("CREDITS_REPLY_TO")  # Reply-To of the letters; empty: none
# The month just ended, for review, at 12:00 UTC on the 1st (it has ended in every zone).
CELERY_BEAT_SCHEDULE = {
    **CELERY_BEAT_SCHEDULE,
    "credits-compute-closed-month": {
        "task": "credits.tasks.compute_closed_month",
        "schedule": crontab(minute=0, hour=12, day_of_month=1),
    },
}

LOGGING = conventions.logging_config(env_str("LOG_LEVEL", "INFO"))
from statuspage.settings_audiences import *  # noqa: E402,F403
from statuspage.settings_ops import *  # noqa: E402,F403
from statuspage.settings_portal import *  # noqa: E402,F403
from statuspage.settings_replica import *  # noqa: E402,F403
from statuspage.settings_stamp import *  # noqa: E402,F403

CELERY_BEAT_SCHEDULE = {**CELERY_BEAT_SCHEDULE, **STAMP_BEAT_SCHEDULE}  # noqa: F405
