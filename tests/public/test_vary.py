"""Every public answer that depends on a cookie says so in Vary, and only those.

The English `/` depends on the language cookie (and Accept-Language, and whether it is a
navigation); the incident page on the session cookie (staff see previews). A shared cache
(nginx's micro-cache honours Vary, RFC 9111 4.1) must never hand one visitor's answer to
another whose request differs in a header that chose it. The other public pages, feeds
and badges name no cookie, so shared caches keep one copy for everyone.
"""

from __future__ import annotations

import pytest
from django.conf import settings
from django.http import HttpResponseBase
from django.test import Client

from tests.builders import make_incident, make_product, utc

pytestmark = pytest.mark.django_db

FRENCH_COOKIE = f"{settings.LANGUAGE_COOKIE_NAME}=fr"


def _vary(response: HttpResponseBase) -> set[str]:
    return {h.strip().lower() for h in response.get("Vary", "").split(",") if h.strip()}


def _shared_cache_reuses(stored: dict[str, str], response: HttpResponseBase, request: dict[str, str]) -> bool:
    """RFC 9111 4.1: a stored answer serves a new request only if every header its Vary
    names has the same value in both requests (absent counts as a value)."""
    if "*" in _vary(response):
        return False
    return all(stored.get(name, "") == request.get(name, "") for name in _vary(response))


@pytest.fixture
def incident():  # type: ignore[no-untyped-def]
    gmail = make_product("Gmail")
    return make_incident(title="Gmail is down", product=gmail, start=utc(2026, 1, 1))


def test_the_english_home_page_says_it_varies_on_the_language_cookie(client: Client, incident) -> None:  # type: ignore[no-untyped-def]
    page = client.get("/")
    assert page.status_code == 200
    assert {"cookie", "accept-language", "sec-fetch-mode"} <= _vary(page)
    assert page["Cache-Control"].startswith("public")  # still shared, per variant

    redirect = client.get("/", HTTP_COOKIE=FRENCH_COOKIE)
    assert redirect.status_code == 302 and redirect["Location"] == "/fr/"
    assert {"cookie", "accept-language", "sec-fetch-mode"} <= _vary(redirect)

    # A conditional request answered 304 repeats the Vary of the page it stands for.
    not_modified = client.get("/", HTTP_IF_NONE_MATCH=page["ETag"])
    assert not_modified.status_code == 304
    assert "cookie" in _vary(not_modified)

    # The live script's re-read (not a navigation) is never redirected, and says so too.
    live = client.get("/", HTTP_COOKIE=FRENCH_COOKIE, HTTP_SEC_FETCH_MODE="cors")
    assert live.status_code == 200
    assert {"cookie", "sec-fetch-mode"} <= _vary(live)


def test_a_shared_cache_never_hands_the_english_page_to_a_french_choice(client: Client, incident) -> None:  # type: ignore[no-untyped-def]
    first_visitor: dict[str, str] = {"accept-language": "en-US,en"}
    stored = client.get("/", HTTP_ACCEPT_LANGUAGE=first_visitor["accept-language"])
    assert stored.status_code == 200

    chose_french = {**first_visitor, "cookie": FRENCH_COOKIE}
    assert not _shared_cache_reuses(first_visitor, stored, chose_french)
    assert client.get("/", HTTP_ACCEPT_LANGUAGE="en-US,en", HTTP_COOKIE=FRENCH_COOKIE).status_code == 302

    navigation = {**chose_french, "sec-fetch-mode": "navigate"}
    live_read = client.get("/", HTTP_COOKIE=FRENCH_COOKIE, HTTP_SEC_FETCH_MODE="cors")
    assert not _shared_cache_reuses({**chose_french, "sec-fetch-mode": "cors"}, live_read, navigation)

    # The same request again may be served from the shared copy.
    assert _shared_cache_reuses(first_visitor, stored, dict(first_visitor))


def test_the_incident_page_varies_on_the_session_cookie(
    client: Client,
    staff_client: Client,
    incident,  # type: ignore[no-untyped-def]
) -> None:
    path = f"/incidents/{incident.public_id}/"
    anonymous = Client().get(path)
    assert anonymous.status_code == 200
    assert anonymous["Cache-Control"].startswith("public")
    assert "cookie" in _vary(anonymous)
    assert "cookie" in _vary(staff_client.get(path))


def test_pages_that_do_not_read_a_cookie_do_not_vary_on_one(client: Client, incident) -> None:  # type: ignore[no-untyped-def]
    paths = [
        "/fr/",
        "/history/",
        "/fr/history/",
        "/products/gmail/",
        "/fr/products/gmail/",
        "/products/gmail/uptime/",
        "/history.atom",
        "/products/gmail/history.rss",
        "/history.json",
        "/badge.svg",
        "/sitemap.xml",
        "/robots.txt",
    ]
    for path in paths:
        response = client.get(path, HTTP_COOKIE=FRENCH_COOKIE, HTTP_ACCEPT_LANGUAGE="fr")
        assert response.status_code == 200, path
        assert not _vary(response) & {"cookie", "accept-language"}, (path, response.get("Vary"))
