"""Issue 11: no input takes the status page down.

One regression test per finding, through the path the finding used (anonymous HTTP,
the API with a staff token, the admin with a browser session, the command), and after
each refused or stored value the public pages, feeds and APIs still answer 200.
"""

from __future__ import annotations

import io
import json
import time
from typing import Any
from unittest import mock

import feedparser
import pytest
from django.core.management import CommandError, call_command
from django.test import Client, TestCase

from incidents import services
from incidents.markdown import MARKDOWN_MAX_BYTES, render_markdown
from incidents.models import Incident, IncidentUpdate, Product, ProductGroup
from tests.api.conftest import World

pytestmark = pytest.mark.django_db

PUBLIC = ["/", "/history/", "/history.atom", "/history.rss", "/api/v2/summary.json", "/api/v1/incidents/"]


def _json(client: Client, method: str, url: str, payload: Any) -> Any:
    with TestCase.captureOnCommitCallbacks(execute=True):
        body = payload if isinstance(payload, str) else json.dumps(payload)
        return getattr(client, method)(url, data=body, content_type="application/json")


def assert_public_pages_answer(world: World | None = None) -> None:
    """Every public page, feed and API answers 200; every incident page 200 or 404
    (404 for incidents not shown publicly), never a 5xx."""
    client = Client()
    for url in PUBLIC:
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        if url.endswith((".atom", ".rss")):
            assert not feedparser.parse(response.content).bozo, url
    for incident in Incident.objects.all()[:30]:
        url = f"/incidents/{incident.public_id}/"
        assert client.get(url).status_code in (200, 404), url
    if world is not None:
        for incident in (world.outage, world.ongoing, world.drafted):
            assert client.get(f"/incidents/{incident.public_id}/").status_code == 200


# --- Anonymous 500s on /subscribe/ ------------------------------------------------------------


def test_it_refuses_an_out_of_range_product_id_on_subscribe(world: World) -> None:
    response = Client().post(
        "/subscribe/",
        {"kind": "email", "email": "erin@example.com", "scope": "some", "products": "9223372036854775808"},
    )
    assert response.status_code == 400
    assert b"is not one of the available choices" in response.content


def test_it_refuses_an_out_of_range_webhook_port_on_subscribe(world: World) -> None:
    response = Client().post(
        "/subscribe/",
        {"kind": "webhook", "email": "ops@example.com", "url": "https://example.com:99999/", "scope": "all"},
    )
    assert response.status_code == 400
    assert b"port must be a number from 1 to 65535" in response.content


# --- One bad value must not break public pages ------------------------------------------------


def test_it_removes_control_characters_from_an_update_body_and_the_feeds_stay_valid(
    staff_api: Client, world: World
) -> None:
    url = f"/api/v1/incidents/{world.ongoing.public_id}/updates/"
    response = _json(staff_api, "post", url, {"status": "identified", "body": "Found\x0b it\x7f \x1b[31m."})
    assert response.status_code == 201, response.content
    assert IncidentUpdate.objects.filter(body="Found it [31m.").exists()
    assert_public_pages_answer(world)


def test_it_refuses_a_control_character_in_a_product_name_in_the_admin(
    staff_client: Client, world: World
) -> None:
    response = staff_client.post(
        "/admin/incidents/product/add/",
        {"name": "Gm\x0bail 2", "slug": "gmail-2", "position": "0", "is_public": "on"},
    )
    assert response.status_code == 200
    assert b"control characters are not allowed" in response.content
    assert not Product.objects.filter(slug="gmail-2").exists()
    response = staff_client.post(
        "/admin/incidents/productgroup/add/", {"name": "Work\x0bspace 2", "position": "0"}
    )
    assert response.status_code == 200
    assert not ProductGroup.objects.filter(name__startswith="Work").exclude(name="Workspace").exists()
    assert_public_pages_answer(world)


@pytest.mark.parametrize("when", ["0001-01-01T00:00:00Z", "1969-12-31T23:59:59Z", "9999-12-31T23:59:59Z"])
def test_it_refuses_a_start_out_of_bounds_through_the_api(staff_api: Client, world: World, when: str) -> None:
    before = Incident.objects.count()
    response = _json(staff_api, "post", "/api/v1/incidents/", {"title": "Bad clock", "started_at": when})
    assert response.status_code == 400, response.content
    assert "started_at" in response.json()["errors"]
    assert Incident.objects.count() == before
    edit = _json(staff_api, "patch", f"/api/v1/incidents/{world.ongoing.public_id}/", {"started_at": when})
    assert edit.status_code in (400, 405), edit.content
    assert_public_pages_answer(world)


def test_it_refuses_a_year_one_start_in_the_admin(staff_client: Client, world: World) -> None:
    change = f"/admin/incidents/incident/{world.ongoing.pk}/change/"
    page = staff_client.get(change)
    assert page.status_code == 200
    form = {
        "title": world.ongoing.title,
        "impact": "minor",
        "is_public": "on",
        "started_at_0": "0001-01-01",
        "started_at_1": "00:00:00",
    }
    response = staff_client.post(change, form)
    world.ongoing.refresh_from_db()
    assert world.ongoing.started_at.year == 2026
    assert response.status_code in (200, 302)
    assert_public_pages_answer(world)


@pytest.mark.parametrize(
    "body",
    ["- " * 500 + "deep", "> " * 500 + "deep", "".join(" " * (2 * i) + "- level\n" for i in range(200))],
    ids=["list-markers", "quotes", "indented-list"],
)
def test_it_refuses_a_deeply_nested_update_and_stores_nothing(
    staff_api: Client, world: World, body: str
) -> None:
    url = f"/api/v1/incidents/{world.ongoing.public_id}/updates/"
    before = IncidentUpdate.objects.count()
    response = _json(staff_api, "post", url, {"status": "identified", "body": body})
    assert response.status_code == 400, response.content
    assert "nested" in json.dumps(response.json()["errors"])
    assert IncidentUpdate.objects.count() == before
    assert_public_pages_answer(world)


def test_it_refuses_a_resolution_in_the_future(staff_api: Client, world: World) -> None:
    url = f"/api/v1/incidents/{world.ongoing.public_id}/resolve/"
    response = _json(staff_api, "post", url, {"body": "Fixed.", "resolved_at": "9999-01-01T00:00:00Z"})
    assert response.status_code == 400, response.content
    world.ongoing.refresh_from_db()
    assert not world.ongoing.is_closed
    assert world.ongoing.windows.filter(ended_at__year=9999).count() == 0
    assert_public_pages_answer(world)


# --- Slow rendering ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        "[" * 8192,
        "[" * 4000 + "a" + "]" * 4000,
        "[a](" * 2048,
        "".join(f"*[A{i}]: abbreviation {i}\n" for i in range(1500)) + "A1 " * 100,
        "x" * (MARKDOWN_MAX_BYTES + 1),
    ],
    ids=["open-brackets", "nested-brackets", "open-links", "abbreviations", "over-64KB"],
)
def test_it_refuses_pathological_markdown_quickly_through_the_api(
    staff_api: Client, world: World, body: str
) -> None:
    url = f"/api/v1/incidents/{world.ongoing.public_id}/updates/"
    # CPU time of this process (the API's), which load on the machine does not inflate: a
    # render here would cost seconds; a refusal, or a render in a child under its CPU
    # deadline, costs the linear estimate.
    started = time.process_time()
    response = _json(staff_api, "post", url, {"status": "identified", "body": body})
    assert time.process_time() - started < 1.0
    assert response.status_code == 400, response.content[:300]
    assert response.json()["errors"]["body"]


@pytest.mark.parametrize(
    ("shape", "says"),
    [
        ("headings", "too many headings, rules or fences with no blank line between them (16,384)"),
        ("flat-list", "too many list items (16,384; at most about 1,428)"),
        ("tall-table", "too many table cells"),
        ("emphasis", "too many emphasis markers"),
    ],
)
def test_it_names_the_field_and_the_cause_of_a_slow_markdown_body(
    staff_api: Client, world: World, shape: str, says: str
) -> None:
    from tests.incidents.markdown_corpus import PATHOLOGICAL

    url = f"/api/v1/incidents/{world.ongoing.public_id}/updates/"
    before = IncidentUpdate.objects.count()
    response = _json(staff_api, "post", url, {"status": "identified", "body": PATHOLOGICAL[shape]})
    assert response.status_code == 400, response.content[:300]
    (message,) = response.json()["errors"]["body"]
    assert message.startswith("This text would take too long to render (about ")
    assert says in message, message
    assert IncidentUpdate.objects.count() == before
    assert_public_pages_answer(world)


def test_it_stores_the_rendered_html_beside_the_source(staff_api: Client, world: World) -> None:
    url = f"/api/v1/incidents/{world.ongoing.public_id}/updates/"
    response = _json(staff_api, "post", url, {"status": "identified", "body": "Routers **out of headroom**."})
    assert response.status_code == 201
    update = IncidentUpdate.objects.get(body="Routers **out of headroom**.")
    assert (
        update.body_html == render_markdown(update.body) == "<p>Routers <strong>out of headroom</strong>.</p>"
    )
    # Readers use the stored HTML: change it behind the services' back and the page follows.
    IncidentUpdate.objects.filter(pk=update.pk).update(body_html="<p>STORED-HTML</p><script>x</script>")
    page = Client().get(f"/incidents/{world.ongoing.public_id}/")
    assert b"STORED-HTML" in page.content and b"<script>x" not in page.content


# --- Limits that reset ------------------------------------------------------------------------


def test_it_keeps_the_subscribe_limit_when_pages_fill_the_cache(world: World, settings: Any) -> None:
    settings.SUBSCRIBE_RATE_PER_IP = 2
    client = Client()
    form = {"kind": "email", "scope": "all"}
    codes = [
        client.post(
            "/subscribe/", {**form, "email": f"u{n}@example.com"}, REMOTE_ADDR="203.0.113.9"
        ).status_code
        for n in range(3)
    ]
    assert codes[-1] == 429, codes
    # What the attacker did: many distinct pages, each a cache entry in the default cache.
    # (A few real ones, then the rest written directly so the test stays fast: together
    # well past the default cache's 300 entries.)
    for n in range(30):
        assert client.get(f"/products/gmail/?page={n}").status_code in (200, 404)
    from django.core.cache import cache

    for n in range(400):
        cache.set(f"page-filler-{n}", "x" * 100)
    again = client.post("/subscribe/", {**form, "email": "late@example.com"}, REMOTE_ADDR="203.0.113.9")
    assert again.status_code == 429


def test_it_keeps_the_api_throttle_when_pages_fill_the_cache(world: World, settings: Any) -> None:
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"anon": "3/min", "token": "1000/min"},
    }
    client = Client()
    codes = [client.get("/api/v1/products/", REMOTE_ADDR="203.0.113.10").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    from django.core.cache import cache

    for n in range(400):  # the default cache's 300 entries, overflowed
        cache.set(f"page-filler-{n}", "x" * 100)
    assert client.get("/api/v1/products/", REMOTE_ADDR="203.0.113.10").status_code == 429


# --- Admin login ------------------------------------------------------------------------------


def _login(client: Client, username: str, password: str, ip: str = "198.51.100.20", **extra: Any) -> Any:
    return client.post(
        "/admin/login/?next=/admin/",
        {"username": username, "password": password},
        REMOTE_ADDR=ip,
        **extra,
    )


def test_wrong_passwords_lock_the_account_only_from_the_address_that_failed(alice: Any) -> None:
    client = Client()
    codes = [_login(client, "alice", f"wrong-{n}", ip="198.51.100.7").status_code for n in range(5)]
    assert codes == [200, 200, 200, 200, 429]  # the fifth failure locks
    # The right password from the failing address is still refused...
    assert _login(client, "alice", "alice-password", ip="198.51.100.7").status_code == 429
    assert "_auth_user_id" not in client.session
    # ...but never from an address that has not failed: the owner still signs in.
    owner = Client()
    assert _login(owner, "alice", "alice-password", ip="198.51.100.99").status_code == 302
    assert owner.session["_auth_user_id"] == str(alice.pk)


def test_failures_spread_over_addresses_lock_no_one(alice: Any) -> None:
    client = Client()
    codes = [_login(client, "alice", f"wrong-{n}", ip=f"198.51.100.{n + 1}").status_code for n in range(8)]
    assert codes == [200] * 8
    assert _login(client, "alice", "alice-password", ip="198.51.100.99").status_code == 302


def test_it_limits_login_attempts_per_address(alice: Any, settings: Any) -> None:
    settings.NUM_PROXIES = 1
    settings.LOGIN_RATE_PER_ADDRESS = 5
    client = Client()
    for n in range(5):
        # A forged left-hand X-Forwarded-For entry changes nothing: our proxy's entry counts.
        forged = f"10.0.0.{n}, 192.0.2.50"
        _login(client, f"nobody{n}", "x", ip="10.1.1.1", HTTP_X_FORWARDED_FOR=forged)
    response = _login(
        client, "alice", "alice-password", ip="10.1.1.1", HTTP_X_FORWARDED_FOR="1.2.3.4, 192.0.2.50"
    )
    assert response.status_code == 429 and int(response["Retry-After"]) > 0
    assert "_auth_user_id" not in client.session
    # Another client (another address) is not affected.
    other = _login(Client(), "alice", "alice-password", ip="10.1.1.1", HTTP_X_FORWARDED_FOR="192.0.2.51")
    assert other.status_code == 302


# --- Other errors -----------------------------------------------------------------------------


def test_it_refuses_a_period_at_the_end_of_the_calendar_in_the_command(world: World) -> None:
    with pytest.raises(CommandError, match="9998-12"):
        call_command("sla_credits", "compute", "--period", "9998-12", stdout=io.StringIO())


def test_it_refuses_a_period_at_the_end_of_the_calendar_in_the_api(staff_api: Client, world: World) -> None:
    response = _json(staff_api, "post", "/api/v1/credit-notices/compute/", {"period": "9998-12"})
    assert response.status_code == 400, response.content
    assert response.json()["errors"]["period"]


def test_it_refuses_a_deeply_nested_json_body(staff_api: Client, world: World) -> None:
    response = _json(staff_api, "post", "/api/v1/incidents/", "[" * 100_000 + "]" * 100_000)
    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["code"] == "parse_error"


@pytest.mark.parametrize("url", ["/api/v1/no-such-thing/", "/api/v2/nothing.json", "/api/"])
def test_it_answers_json_for_unknown_api_urls(url: str) -> None:
    response = Client().get(url)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["code"] == "not_found"


def test_it_serves_the_admin_pages_without_inline_styles(staff_client: Client, world: World) -> None:
    for url in (
        f"/admin/incidents/incident/{world.outage.pk}/change/",
        f"/admin/incidents/incident/{world.ongoing.pk}/change/",
    ):
        response = staff_client.get(url)
        if response.status_code == 404:
            continue
        assert response.status_code == 200, url
        assert b' style="' not in response.content, url


def test_services_refuse_overlong_text(world: World) -> None:
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError) as exc:
        services.incident_post_update(incident=world.ongoing, status="identified", body="x" * 70_000)
    assert "body" in exc.value.message_dict


# --- Isolation: one entry that cannot be rendered ---------------------------------------------


def test_it_degrades_one_feed_entry_that_cannot_be_rendered(world: World, caplog: Any) -> None:
    from public_site import feeds

    real = feeds.HistoryRssFeed._description

    def flaky(self: Any, item: Any) -> str:
        if item.incident.pk == world.outage.pk:
            raise RuntimeError("this entry cannot be rendered")
        return real(self, item)

    with mock.patch.object(feeds.HistoryRssFeed, "_description", flaky):
        for url in ("/history.rss", "/history.atom"):
            response = Client().get(url)
            assert response.status_code == 200, url
            assert world.outage.title.encode() in response.content
            assert not feedparser.parse(response.content).bozo
    assert "could not be rendered" in caplog.text


def test_it_serves_the_last_good_page_when_rendering_fails(world: World, caplog: Any) -> None:
    from edge import version

    client = Client()
    good = client.get("/")
    assert good.status_code == 200
    with TestCase.captureOnCommitCallbacks(execute=True):
        version.public_state_changed()
    with mock.patch("public_site.views.public_selectors.status_page", side_effect=RuntimeError("bad entry")):
        response = client.get("/")
    assert response.status_code == 200
    # The last good render (marked stale), not an error page.
    assert world.ongoing.title.encode() in response.content
    assert "serving the last good copy" in caplog.text


def test_it_starts_an_incident_at_its_detection_when_no_start_is_given(
    staff_api: Client, world: World
) -> None:
    # Found by schemathesis (positive_data_acceptance): the start defaulted to now, which put
    # a past detection before the start and refused a valid request.
    response = staff_api.post(
        "/api/v1/incidents/",
        {"title": "Found by a probe", "detected_at": "2026-11-30T10:00:00Z", "notify": False},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    assert response.json()["started_at"] == response.json()["detected_at"] == "2026-11-30T10:00:00Z"
    assert (
        Incident.objects.get(public_id=response.json()["id"]).started_at.isoformat()
        == "2026-11-30T10:00:00+00:00"
    )


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/v1/credit-notices/compute/", {"period": "2026-13"}, "period"),
        ("/api/v1/sla-policies/", {"name": "A", "target": "", "tiers": []}, "target"),
        ("/api/v1/sla-policies/", {"name": "A", "target": "0", "tiers": []}, "target"),
        ("/api/v1/customers/", {"name": "A", "billing_emails": ["a'b@example.com"]}, "billing_emails"),
        ("/api/v1/customers/", {"name": "A", "billing_emails": []}, "billing_emails"),
        ("/api/v1/action-items/", {"incident": "x", "title": "A", "tracker_url": "urn:x"}, "tracker_url"),
    ],
)
def test_it_refuses_what_the_schema_calls_invalid(
    staff_api: Client, world: World, path: str, body: dict[str, Any], field: str
) -> None:
    # Each of these passed the old schema (an empty decimal, any string as a period, a quote
    # in an address, a URI of any scheme) and was refused: the schema now says so too.
    response = staff_api.post(path, body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert field in {name.split(".")[0] for name in response.json()["errors"]}


def test_it_refuses_an_empty_period_filter_on_credit_notices(staff_api: Client, world: World) -> None:
    # Found by schemathesis (negative_data_rejection): `?period=` listed every notice, as if
    # no filter had been given, where the schema says a period is YYYY-MM.
    response = staff_api.get("/api/v1/credit-notices/?period=")
    assert response.status_code == 400, response.content
    assert "period" in response.json()["errors"]
