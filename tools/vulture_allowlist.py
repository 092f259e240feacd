"""What vulture cannot see used (tools/check_size.py), each with its reason.

Vulture reads this file with the code: a name mentioned here counts as used.
"""

from __future__ import annotations

from typing import Any

_: Any = None

NAMED_IN_SETTINGS = (
    _.api_exception_handler,  # REST_FRAMEWORK["EXCEPTION_HANDLER"]
    _.APIAutoSchema,  # REST_FRAMEWORK["DEFAULT_SCHEMA_CLASS"]
    _.postprocess,  # SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"]
    _._get_schema_response,  # SpectacularAPIView's hook, overridden by api.schema_view
    _.login_client_address,  # AXES_CLIENT_IP_CALLABLE
    _.ProblemAwareNegotiation,  # REST_FRAMEWORK["DEFAULT_CONTENT_NEGOTIATION_CLASS"]
    _.RequestIdLogFilter,  # LOGGING["filters"]
    _.ReplicaRouter,  # DATABASE_ROUTERS (statuspage/settings_replica.py)
    _.PortalOidcBackend,  # AUTHENTICATION_BACKENDS (customer portal OpenID Connect)
)
FOUND_BY_FRAMEWORKS = (
    _.login_success,  # mozilla-django-oidc's callback view calls it (portal.oidc.Callback)
    # drf-spectacular registers OpenApiAuthenticationExtension subclasses when they are defined.
    _.ApiKeyScheme,
    _.SessionCookieScheme,
    _.has_permission,  # DRF calls it on each permission class
    _.db_for_read,  # Django's database router protocol (edge.replica.ReplicaRouter)
    _.db_for_write,
    _.allow_relation,
    _.allow_migrate,
    _.Access,  # a model without a table: Django creates the permissions of core.roles from it
    _.feed_url,  # django.contrib.syndication.Feed reads it by name (the feed's self link)
    _.author_name,  # Feed reads these by name too: the feed's <author> (RFC 4287)
    _.author_link,
    _.lastmod,  # django.contrib.sitemaps.Sitemap reads it by name (<lastmod>)
    _.collect,  # prometheus_client calls Collector.collect() on each scrape (ops/metrics.py)
    _.fetch,  # WeasyPrint calls URLFetcher.fetch, overridden by postmortems.export
)
CALLED_BY_TESTS = (
    # Breaker state is per process; tests/conftest.py closes the breakers between tests.
    _.reset_breakers,
    # Shared counts live in Redis across tests; the ops tests start each from zero.
    _.counters_reset,
    # Issue 35: the pure maths of a policy changed mid-month (each version for its days,
    # one cap), tested by hand in tests/credits/test_sla_measured.py. No model stores
    # policy versions yet; see docs/adr/0030-credits-from-measurements.md.
    _.compute_versioned,
)
# Parameters a framework passes by keyword, so they keep their names though unused.
FRAMEWORK_PARAMETERS = (
    _.auto_schema,  # drf-spectacular extension methods
    _.generator,  # drf-spectacular postprocessing hooks
    _.public,
    _.media_type,  # DRF Parser.parse
    _.view_args,  # Django middleware process_view
    _.protocol,  # Sitemap.get_protocol(protocol), overridden by public_site.crawlers
    _.view_kwargs,
    _.model_admin,  # admin list filters: lookups() and queryset()
    _.app_configs,  # Django system checks
    _.drop_broken_connections,  # a Celery task_prerun handler (statuspage/celery.py)
    _.signum,  # signal.signal handlers
    _.frame,
    _.hints,  # Django database routers
    _.app_label,
    _.script_prefix,  # an lru_cache key: one URL pattern per script prefix
    _.feed_extra_kwargs,  # Django Feed hook: keyword arguments of the feed generator
)
