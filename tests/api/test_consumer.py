"""Issue 18: what an API consumer relies on. Keys as Bearer or Token, strict input,
edits, idempotency, conditional writes, consistent identifiers and headers, webhooks."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client, TestCase
from django.utils import timezone

from api import services as api_services
from api.models import ApiKey, IdempotencyRecord
from incidents.models import ImpactWindow, Incident
from outbox.delivery import webhook_event
from outbox.models import OutboundMessage
from subscriptions.models import Subscriber
from tests.api.conftest import World
from tests.api.test_v1 import assert_error

pytestmark = pytest.mark.django_db


def key_for(user: User, scope: str = "write") -> str:
    return api_services.api_key_create(user=user, name=f"{scope} key", scope=scope).raw


def bearer(raw: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {raw}")


def send(client: Client, method: str, url: str, payload: Any = None, **headers: str) -> Any:
    with TestCase.captureOnCommitCallbacks(execute=True):
        return getattr(client, method)(
            url, data=json.dumps(payload or {}), content_type="application/json", headers=headers
        )


# --- 1. Authentication ---------------------------------------------------------------------------


def test_it_accepts_a_key_as_bearer_or_token_and_sees_staff_data(alice: User, world: World) -> None:
    raw = key_for(alice, "read")
    anonymous = Client().get("/api/v1/incidents/").json()["count"]
    as_bearer = bearer(raw).get("/api/v1/incidents/")
    as_token = Client(HTTP_AUTHORIZATION=f"Token {raw}").get("/api/v1/incidents/")
    assert as_bearer.status_code == as_token.status_code == 200
    assert as_bearer.json()["count"] == as_token.json()["count"] > anonymous
    assert ApiKey.objects.get().last_used_at is not None


@pytest.mark.parametrize(
    "header", ["Basic YWxpY2U6cHc=", "Bearer", "Bearer not-a-key", "Bearer a b", "Digest x"]
)
def test_it_answers_401_naming_the_scheme_never_silent_anonymity(world: World, header: str) -> None:
    response = Client(HTTP_AUTHORIZATION=header).get("/api/v1/incidents/")
    error = assert_error(response, 401, "authentication_failed")
    assert response["WWW-Authenticate"].startswith("Bearer")
    if header.startswith(("Basic", "Digest")):
        assert "Bearer" in error["detail"] and "Token" in error["detail"]


def test_it_refuses_revoked_keys_and_writes_with_a_read_key(alice: User, world: World) -> None:
    read = key_for(alice, "read")
    assert_error(send(bearer(read), "post", "/api/v1/incidents/", {"title": "x"}), 403, "permission_denied")
    assert Incident.objects.filter(title="x").count() == 0
    new = api_services.api_key_create(user=alice, name="gone", scope="write")
    api_services.api_key_revoke(key=new.key)
    error = assert_error(bearer(new.raw).get("/api/v1/incidents/"), 401, "authentication_failed")
    assert "revoked" in error["detail"]


def test_only_staff_hold_keys_and_only_a_hash_is_stored(alice: User, bob: User) -> None:
    with pytest.raises(Exception, match="staff"):
        api_services.api_key_create(user=bob, name="nope", scope="read")
    created = api_services.api_key_create(user=alice, name="deploy bot", scope="write")
    stored = ApiKey.objects.get()
    assert created.raw not in (stored.key_hash, stored.prefix, stored.name)
    assert stored.key_hash == api_services.hash_key(created.raw)


def test_the_keys_page_creates_shows_once_and_revokes(client: Client, db: None) -> None:
    # Staff with the Integrations role (apikey.manage), no admin permissions at all.
    carol = User.objects.create_user("carol", "carol@example.org", "pw", is_staff=True)
    carol.groups.add(Group.objects.get(name="Integrations"))
    assert client.get("/api/keys/").status_code == 302  # to the staff login
    client.force_login(carol)
    page = client.get("/api/keys/")
    assert page.status_code == 200 and b"csrfmiddlewaretoken" in page.content
    created = client.post("/api/keys/", {"action": "create", "name": "deploy bot", "scope": "write"})
    key = ApiKey.objects.get(user=carol)
    raw = created.context["created"].raw
    assert raw.encode() in created.content and key.scope == "write"
    assert raw.encode() not in client.get("/api/keys/").content  # shown once
    assert bearer(raw).get("/api/v1/action-items/").status_code == 200
    revoked = client.post("/api/keys/", {"action": "revoke", "key": key.pk})
    assert revoked.status_code == 302
    key.refresh_from_db()
    assert key.revoked_at is not None
    assert Client().get("/api/keys/").status_code == 302


def test_the_csrf_check_holds_on_the_keys_page(db: None) -> None:
    carol = User.objects.create_user("carol", "carol@example.org", "pw", is_staff=True)
    client = Client(enforce_csrf_checks=True)
    client.force_login(carol)
    assert client.post("/api/keys/", {"action": "create", "name": "x", "scope": "read"}).status_code == 403
    assert not ApiKey.objects.exists()


# --- 3. Edits and strict input -------------------------------------------------------------------


def test_it_patches_an_incident_and_refuses_unknown_fields(alice: User, world: World) -> None:
    api = bearer(key_for(alice))
    url = f"/api/v1/incidents/{world.ongoing.public_id}/"
    edited = send(api, "patch", url, {"title": "Write latency", "impact": "major", "is_public": False})
    assert edited.status_code == 200, edited.content
    assert edited.json()["title"] == "Write latency" and edited.json()["is_public"] is False
    world.ongoing.refresh_from_db()
    assert (world.ongoing.title, world.ongoing.impact) == ("Write latency", "major")
    error = assert_error(send(api, "patch", url, {"status": "resolved", "colour": "red"}), 400, "invalid")
    assert error["errors"] == {"colour": ["Unknown field."], "status": ["Unknown field."]}


def test_unknown_fields_on_create_are_a_400_naming_them(alice: User, world: World) -> None:
    api = bearer(key_for(alice))
    error = assert_error(
        send(api, "post", "/api/v1/incidents/", {"title": "x", "components": ["gmail"]}), 400, "invalid"
    )
    assert error["errors"] == {"components": ["Unknown field."]}
    nested = {
        "title": "x",
        "windows": [
            {"product": "gmail", "level": "major_outage", "started_at": "2026-10-09T11:00:00Z", "lvl": 1}
        ],
    }
    error = assert_error(send(api, "post", "/api/v1/incidents/", nested), 400, "invalid")
    assert error["errors"] == {"windows.0.lvl": ["Unknown field."]}
    assert not Incident.objects.filter(title="x").exists()


def test_it_adds_changes_ends_and_removes_windows(alice: User, world: World) -> None:
    api = bearer(key_for(alice))
    base = f"/api/v1/incidents/{world.ongoing.public_id}/windows/"
    added = send(
        api,
        "post",
        base,
        {"product": "gmail", "level": "degraded_performance", "started_at": "2026-10-09T11:30:00Z"},
    )
    assert added.status_code == 201, added.content
    window_id = added.json()["id"]
    assert added["Location"] == f"{base}{window_id}/"
    assert api.get(added["Location"]).json()["level"] == "degraded_performance"
    changed = send(api, "patch", f"{base}{window_id}/", {"level": "partial_outage"})
    assert changed.status_code == 200 and changed.json()["level"] == "partial_outage"
    assert changed.json()["started_at"] == "2026-10-09T11:30:00Z"
    ended = send(api, "post", f"{base}{window_id}/end/", {"ended_at": "2026-10-09T12:30:00Z"})
    assert ended.status_code == 200 and ended.json()["ended_at"] == "2026-10-09T12:30:00Z"
    world.ongoing.refresh_from_db()
    assert world.ongoing.status != "resolved"  # ended short of resolving
    assert send(api, "delete", f"{base}{window_id}/").status_code == 204
    assert not ImpactWindow.objects.filter(pk=window_id).exists()
    assert_error(api.get(f"{base}{window_id}/"), 404, "not_found")


# --- 4. Idempotency and conditional writes -------------------------------------------------------


def test_an_idempotency_key_replays_the_first_response(alice: User, world: World) -> None:
    api = bearer(key_for(alice))
    body = {
        "title": "Login failures",
        "windows": [{"product": "gmail", "level": "major_outage", "started_at": "2026-10-09T11:00:00Z"}],
    }
    first = send(api, "post", "/api/v1/incidents/", body, **{"Idempotency-Key": "k-1"})
    again = send(api, "post", "/api/v1/incidents/", body, **{"Idempotency-Key": "k-1"})
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json() and again["Location"] == first["Location"]
    assert again["Idempotent-Replayed"] == "true"
    assert Incident.objects.filter(title="Login failures").count() == 1
    other = send(api, "post", "/api/v1/incidents/", {**body, "title": "Else"}, **{"Idempotency-Key": "k-1"})
    assert_error(other, 422, "idempotency_key_reused")
    # Without a key, or with another one, it is a new incident.
    assert send(api, "post", "/api/v1/incidents/", body, **{"Idempotency-Key": "k-2"}).status_code == 201
    assert Incident.objects.filter(title="Login failures").count() == 2


def test_a_failed_request_does_not_burn_its_key_and_records_expire(alice: User, world: World) -> None:
    api = bearer(key_for(alice))
    bad = send(api, "post", "/api/v1/incidents/", {"title": ""}, **{"Idempotency-Key": "k"})
    assert bad.status_code == 400
    good = send(api, "post", "/api/v1/incidents/", {"title": "Fixed"}, **{"Idempotency-Key": "k"})
    assert good.status_code == 201
    record = IdempotencyRecord.objects.get()
    assert api_services.idempotency_sweep(now=record.expires_at - timedelta(seconds=1)) == 0
    assert api_services.idempotency_sweep(now=record.expires_at) == 1
    assert not IdempotencyRecord.objects.exists()


def test_if_match_refuses_a_stale_write_with_412(alice: User, world: World) -> None:
    api = bearer(key_for(alice))
    url = f"/api/v1/incidents/{world.ongoing.public_id}/"
    etag = api.get(url)["ETag"]
    edited = send(api, "patch", url, {"title": "First edit"}, **{"If-Match": etag})
    assert edited.status_code == 200
    assert edited["ETag"] == api.get(url)["ETag"] != etag
    stale = send(api, "patch", url, {"title": "Second edit"}, **{"If-Match": etag})
    assert_error(stale, 412, "precondition_failed")
    world.ongoing.refresh_from_db()
    assert world.ongoing.title == "First edit"
    window = world.ongoing.windows.get()
    gone = send(api, "delete", f"{url}windows/{window.pk}/", **{"If-Match": etag})
    assert_error(gone, 412, "precondition_failed")
    assert ImpactWindow.objects.filter(pk=window.pk).exists()


# --- 5. Consistency --------------------------------------------------------------------------------


def test_products_by_slug_or_id_in_paths_and_filters(world: World) -> None:
    anon = Client()
    by_id = anon.get(f"/api/v1/products/{world.storage.public_id}/")
    assert by_id.status_code == 200 and by_id.json()["slug"] == world.storage.slug
    by_slug = anon.get(f"/api/v1/incidents/?product={world.storage.slug}").json()["count"]
    assert by_slug > 0
    assert anon.get(f"/api/v1/incidents/?product={world.storage.public_id}").json()["count"] == by_slug


def test_a_posted_update_is_returned_with_its_location(alice: User, world: World) -> None:
    api = bearer(key_for(alice))
    base = f"/api/v1/incidents/{world.ongoing.public_id}/"
    posted = send(
        api,
        "post",
        f"{base}updates/",
        {"status": "identified", "body": "Found it.", "display_at": "2026-10-09T11:10:00Z"},
    )
    assert posted.status_code == 201
    assert posted.json()["body"] == "Found it."
    assert posted["Location"] == f"{base}updates/{posted.json()['id']}/"
    assert api.get(posted["Location"]).json() == posted.json()
    created = send(api, "post", "/api/v1/incidents/", {"title": "New"})
    assert created["Location"] == f"/api/v1/incidents/{created.json()['id']}/"


def test_the_slashless_path_redirects_with_308(world: World) -> None:
    response = Client().get("/api/v1/incidents?status=resolved")
    assert response.status_code == 308 and response["Location"] == "/api/v1/incidents/?status=resolved"
    assert Client().post("/api/v1/incidents", "{}", content_type="application/json").status_code == 308
    assert_error(Client().get("/api/v1/nothing-here"), 404, "not_found")


@pytest.mark.parametrize(
    ("url", "field"),
    [
        ("/api/v1/incidents/?colour=red", "colour"),
        ("/api/v1/incidents/?page_size=500", "page_size"),
        ("/api/v1/incidents/?page_size=abc", "page_size"),
        ("/api/v1/products/?status=x", "status"),
        ("/api/v1/status/?x=1", "x"),
    ],
)
def test_unknown_parameters_and_bad_page_sizes_are_refused(world: World, url: str, field: str) -> None:
    assert field in assert_error(Client().get(url), 400, "invalid")["errors"]


def test_a_bogus_period_on_credit_notices_is_a_400(alice: User, world: World) -> None:
    api = bearer(key_for(alice, "read"))
    assert "period" in assert_error(api.get("/api/v1/credit-notices/?period=bogus"), 400, "invalid")["errors"]
    assert api.get("/api/v1/credit-notices/?period=2026-09").status_code == 200


def test_responses_carry_ratelimit_headers(world: World, settings: Any) -> None:
    first = Client(REMOTE_ADDR="203.0.113.18").get("/api/v1/status/")
    second = Client(REMOTE_ADDR="203.0.113.18").get("/api/v1/status/")
    # draft-ietf-httpapi-ratelimit-headers-09: the policy, then what is left of it.
    assert first["RateLimit-Policy"] == '"anon";q=300;w=60'
    assert "RateLimit-Limit" not in first and "RateLimit-Remaining" not in first

    def left(response: Any) -> tuple[int, int]:
        match = re.fullmatch(r'"anon";r=(\d+);t=(\d+)', response["RateLimit"])
        assert match, response["RateLimit"]
        return int(match[1]), int(match[2])

    (remaining, reset), (after, _) = left(first), left(second)
    assert after == remaining - 1
    assert 1 <= reset <= 60


# --- 6. Webhooks -----------------------------------------------------------------------------------


def test_x_status_event_carries_the_event_name() -> None:
    message = OutboundMessage(purpose="subscriptions.webhook", payload={"meta": {"event": "incident.opened"}})
    assert webhook_event(message) == "incident.opened"
    assert webhook_event(OutboundMessage(purpose="p", payload={})) == "p"


def test_the_admin_sends_a_test_event_through_the_outbox(alice: User, db: None) -> None:
    hook = Subscriber.objects.create(
        kind=Subscriber.Kind.WEBHOOK,
        email="ops@example.org",
        url="https://hooks.example.org/x",
        confirmed_at=timezone.now(),
        all_products=True,
    )
    client = Client()
    client.force_login(alice)
    with TestCase.captureOnCommitCallbacks(execute=False):
        response = client.post(
            "/admin/subscriptions/subscriber/",
            {"action": "send_test_event", "_selected_action": [hook.pk]},
        )
    assert response.status_code == 302
    message = OutboundMessage.objects.get()
    assert isinstance(message.payload, dict)
    assert message.url == hook.url and message.payload["meta"]["event"] == "test"
    assert webhook_event(message) == "test"


def test_the_schema_documents_every_webhook_event_with_an_example(anon: Client) -> None:
    from subscriptions.notifications import Event

    schema = json.loads(anon.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").content)
    assert schema["openapi"].startswith("3.1")
    for event in [*(e.value for e in Event), "test"]:
        operation = schema["webhooks"][event]["post"]
        example = operation["requestBody"]["content"]["application/json"]["examples"]
        assert next(iter(example.values()))["value"]["meta"]["event"] == event


# --- 2. The schema tells the truth -----------------------------------------------------------------


def test_the_schema_declares_anonymous_reads_and_public_feeds(anon: Client) -> None:
    schema = json.loads(anon.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").content)
    paths = schema["paths"]
    assert paths["/api/v1/incidents/"]["get"]["security"][0] == {}
    assert {"bearerAuth": []} in paths["/api/v1/incidents/"]["get"]["security"]
    assert {} not in paths["/api/v1/incidents/"]["post"]["security"]
    assert {} not in paths["/api/v1/action-items/"]["get"]["security"]
    assert paths["/api/v2/summary.json"]["get"]["security"] == [{}]
    assert paths["/incidents.json"]["get"]["security"] == [{}]
    assert {"servers", "tags", "webhooks"} <= set(schema)
    assert schema["info"]["license"]["name"] and schema["info"]["contact"]
    assert "/api/keys/" in schema["info"]["description"]
    text = json.dumps(schema)
    assert "Policies shared" not in text
    idempotency = [p["name"] for p in paths["/api/v1/incidents/"]["post"]["parameters"]]
    assert "Idempotency-Key" in idempotency
    assert "412" in paths["/api/v1/incidents/{public_id}/"]["patch"]["responses"]
    notice = schema["components"]["schemas"]["Notice"]["properties"]["message_state"]
    assert "null" in json.dumps(notice)


def test_a_key_still_in_flight_is_a_409(alice: User, world: World) -> None:
    api = bearer(key_for(alice))
    now = timezone.now()
    IdempotencyRecord.objects.create(
        user=alice, key="busy", fingerprint="other", created_at=now, expires_at=now + timedelta(hours=1)
    )
    assert_error(
        send(api, "post", "/api/v1/incidents/", {"title": "x"}, **{"Idempotency-Key": "busy"}),
        422,
        "idempotency_key_reused",
    )
    # The same method, path and body as the claim: the first attempt is still running.
    record = IdempotencyRecord.objects.get()
    body = json.dumps({"title": "x"}).encode()
    digest = hashlib.sha256(b"POST" + b"\0/api/v1/incidents/\0" + body).hexdigest()
    IdempotencyRecord.objects.filter(pk=record.pk).update(fingerprint=digest)
    assert_error(
        send(api, "post", "/api/v1/incidents/", {"title": "x"}, **{"Idempotency-Key": "busy"}),
        409,
        "idempotency_in_progress",
    )
    assert not Incident.objects.filter(title="x").exists()


def test_a_claim_whose_request_died_is_taken_over_by_a_retry(alice: User, world: World) -> None:
    """Found by the chaos soak (bench/soak, seed 2): a PostgreSQL crash during a request
    left its claim with no answer, and every retry with the key got 409 for hours. The
    write and its answer commit together, so an unanswered claim past any request's
    lifetime applied nothing: the retry runs it, once."""
    api = bearer(key_for(alice))
    body = json.dumps({"title": "Died mid-request"}).encode()
    digest = hashlib.sha256(b"POST" + b"\0/api/v1/incidents/\0" + body).hexdigest()
    then = timezone.now() - timedelta(minutes=3)
    IdempotencyRecord.objects.create(
        user=alice, key="orphan", fingerprint=digest, created_at=then, expires_at=then + timedelta(hours=24)
    )
    first = send(
        api, "post", "/api/v1/incidents/", {"title": "Died mid-request"}, **{"Idempotency-Key": "orphan"}
    )
    assert first.status_code == 201
    again = send(
        api, "post", "/api/v1/incidents/", {"title": "Died mid-request"}, **{"Idempotency-Key": "orphan"}
    )
    assert again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    assert Incident.objects.filter(title="Died mid-request").count() == 1


def test_a_read_key_reads_staff_resources_but_cannot_write_them(alice: User, world: World) -> None:
    api = bearer(key_for(alice, "read"))
    assert api.get("/api/v1/action-items/").status_code == 200
    payload = {"incident": world.outage.public_id, "title": "Add headroom"}
    assert_error(send(api, "post", "/api/v1/action-items/", payload), 403, "permission_denied")
    created = send(bearer(key_for(alice)), "post", "/api/v1/action-items/", payload)
    assert (
        created.status_code == 201 and created["Location"] == f"/api/v1/action-items/{created.json()['id']}/"
    )
