"""Loaded as a pytest plugin (-p tests.testenv) before Django reads its settings.

It sets the environment tests run in: production-like (DEBUG off) but without the
HTTPS redirect, with a throwaway secret key. Variables already set (DATABASE_URL,
REDIS_URL in CI) are left alone.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

os.environ.setdefault("SECRET_KEY", "test-only-secret-key")
os.environ.setdefault("DEBUG", "0")
os.environ.setdefault("SECURE_SSL_REDIRECT", "0")
os.environ.setdefault("SESSION_COOKIE_SECURE", "0")
os.environ.setdefault("CSRF_COOKIE_SECURE", "0")
os.environ.setdefault("SECURE_HSTS_SECONDS", "0")
os.environ.setdefault("ALLOWED_HOSTS", "testserver,localhost,127.0.0.1")
os.environ.setdefault("VAR_DIR", os.path.join(os.path.dirname(os.path.dirname(__file__)), "var", "test"))
os.environ.setdefault("STATIC_MANIFEST", "0")
# Prerendering after each change would render every page after every write of every test;
# the tests of it turn it on (tests/edge/test_prerender.py).
os.environ.setdefault("PUBLIC_PRERENDER_ON_CHANGE", "0")

# The main suite runs on a local-memory cache with tasks in process, so results do not
# depend on what another test left in Redis. Tests that need the real Redis (broker,
# cache outage, worker) read TEST_REDIS_URL and set things up explicitly.
if os.environ.get("REDIS_URL"):
    os.environ.setdefault("TEST_REDIS_URL", os.environ.pop("REDIS_URL"))
os.environ.setdefault("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")

# Under pytest-xdist (`make test` runs two workers) each worker owns its Redis databases,
# since the tests that use Redis flush them: worker 0 keeps the numbers above, worker n
# moves the main one by 5n and the outbox and subscription ones (14, 13) down by 2n.
_worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
if _worker.isdigit() and int(_worker) > 0:
    _n = int(_worker)
    _url = urlsplit(os.environ["TEST_REDIS_URL"])
    _db = (int(_url.path.strip("/") or 0) + 5 * _n) % 16
    os.environ["TEST_REDIS_URL"] = urlunsplit(_url._replace(path=f"/{_db}"))
    os.environ["OUTBOX_TEST_REDIS_DB"] = str(int(os.environ.get("OUTBOX_TEST_REDIS_DB", "14")) - 2 * _n)
    os.environ["SUBS_TEST_REDIS_DB"] = str(int(os.environ.get("SUBS_TEST_REDIS_DB", "13")) - 2 * _n)
