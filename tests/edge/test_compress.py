"""Compression on the wire (edge/compress.py, edge/page_cache.py): public pages and JSON
shrink, say Vary: Accept-Encoding, keep their validators (304), and nothing that carries
a secret is compressed (signed-in pages, CSRF tokens, cookies)."""

from __future__ import annotations

import gzip

import pytest
from django.conf import settings
from django.core.management import call_command
from django.http import HttpResponse
from django.middleware.csrf import get_token
from django.test import Client, RequestFactory

from edge.compress import may_compress
from tests.builders import make_incident, make_product, utc

GZIP = {"Accept-Encoding": "gzip, deflate, br"}


def _vary(response) -> set[str]:  # type: ignore[no-untyped-def]
    return {h.strip().lower() for h in response.get("Vary", "").split(",") if h.strip()}


@pytest.fixture
def demo(db: None) -> None:
    call_command("load_demo", stdout=open("/dev/null", "w"))  # noqa: SIM115


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path", ["/fr/", "/products/gmail/", "/history/", "/api/v2/summary.json", "/history.atom"]
)
def test_it_compresses_public_pages_feeds_and_json(client: Client, demo: None, path: str) -> None:
    plain = client.get(path)
    packed = client.get(path, headers=GZIP)
    assert plain.status_code == packed.status_code == 200
    assert "Content-Encoding" not in plain
    assert packed["Content-Encoding"] == "gzip"
    assert "accept-encoding" in _vary(plain) and "accept-encoding" in _vary(packed)
    assert gzip.decompress(packed.content) == plain.content
    assert int(packed["Content-Length"]) == len(packed.content) < len(plain.content) / 3
    # The two representations differ: the compressed one has the weak form of the ETag.
    assert packed["ETag"] == "W/" + plain["ETag"].removeprefix("W/") or packed["ETag"] == plain["ETag"]


@pytest.mark.django_db
def test_the_cached_status_page_is_compressed_once_and_revalidates(client: Client, demo: None) -> None:
    first = client.get("/fr/", headers=GZIP)
    second = client.get("/fr/", headers=GZIP)
    # Stored compressed with the page: the same bytes every time (no per-hit gzip, whose
    # random header would make them differ).
    assert first.content == second.content
    assert first["ETag"].startswith('W/"')
    not_modified = client.get("/fr/", HTTP_IF_NONE_MATCH=first["ETag"], headers=GZIP)
    assert not_modified.status_code == 304
    assert not_modified.content == b""
    assert not_modified["ETag"] == first["ETag"]
    assert "accept-encoding" in _vary(not_modified)
    # An identity client revalidating the gzip ETag (a proxy that decompressed) also matches.
    plain_304 = client.get("/fr/", HTTP_IF_NONE_MATCH=first["ETag"])
    assert plain_304.status_code == 304


@pytest.mark.django_db
def test_head_says_what_get_would_send(client: Client, demo: None) -> None:
    get = client.get("/fr/", headers=GZIP)
    head = client.head("/fr/", headers=GZIP)
    assert head.status_code == 200
    assert head.content == b""
    assert head["Content-Encoding"] == "gzip"
    assert head["Content-Length"] == get["Content-Length"]
    assert head["ETag"] == get["ETag"]


@pytest.mark.django_db
def test_it_never_compresses_a_signed_in_page(staff_client: Client) -> None:
    incident = make_incident(title="Gmail is down", product=make_product("Gmail"), start=utc(2026, 1, 1))
    for path in (f"/incidents/{incident.public_id}/", "/manage/"):
        response = staff_client.get(path, headers=GZIP)
        assert response.status_code == 200, path
        assert "Content-Encoding" not in response, path
    # The cached public copy is the same bytes for everyone, so it holds no one's secret.
    assert staff_client.get("/api/v2/summary.json", headers=GZIP)["Content-Encoding"] == "gzip"


@pytest.mark.django_db
def test_it_never_compresses_a_page_with_a_csrf_token_or_a_cookie(client: Client, demo: None) -> None:
    form = client.get("/subscribe/", headers=GZIP)
    assert form.status_code == 200
    assert b"csrfmiddlewaretoken" in form.content
    assert "Content-Encoding" not in form

    chose = client.get("/language/fr/?next=/fr/", headers=GZIP)
    assert chose.cookies  # the language choice sets a cookie
    assert "Content-Encoding" not in chose


def test_credentials_or_cookies_rule_compression_out() -> None:
    rf = RequestFactory()
    page = HttpResponse("x" * 1000, content_type="text/html; charset=utf-8")
    assert may_compress(rf.get("/"), page)
    assert not may_compress(rf.get("/", HTTP_AUTHORIZATION="Token abc"), page)
    signed_in = rf.get("/")
    signed_in.COOKIES[settings.SESSION_COOKIE_NAME] = "s"
    assert not may_compress(signed_in, page)
    with_token = rf.get("/")
    get_token(with_token)
    assert not may_compress(with_token, page)
    cookie = HttpResponse("x" * 1000)
    cookie.set_cookie("c", "1")
    assert not may_compress(rf.get("/"), cookie)
    assert not may_compress(rf.get("/"), HttpResponse(b"\x89PNG" * 300, content_type="image/png"))


@pytest.mark.django_db
def test_small_and_binary_answers_are_left_alone(client: Client, demo: None) -> None:
    version = client.get("/live/version.json", headers=GZIP)
    assert version.status_code == 200
    assert "Content-Encoding" not in version  # a few dozen bytes: gzip would add


@pytest.mark.django_db
def test_a_304_carries_only_what_revalidation_needs(client: Client) -> None:
    first = client.get("/live/version.json")
    assert "Content-Security-Policy" in first
    again = client.get("/live/version.json", HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304
    assert {name.lower() for name in again.headers} <= {
        "etag",
        "cache-control",
        "vary",
        "date",
        "last-modified",
    }
    assert again["ETag"] == first["ETag"] and again["Cache-Control"] == first["Cache-Control"]
