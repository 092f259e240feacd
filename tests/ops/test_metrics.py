"""/metrics: who may read it, and what it says (each reading from the real tables and
the real shared counters)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from edge import counters, snapshots
from edge.models import RenderProblem
from incidents.models import ImpactWindow, Incident
from outbox import services as outbox
from outbox.models import MessageState, OutboundMessage
from tests.builders import make_incident, make_product
from tests.outbox.smtp import SmtpSink

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_counts(settings: Any) -> Iterator[None]:
    settings.REDIS_URL = ""
    counters.counters_reset()
    yield
    counters.counters_reset()


def samples(response: Any) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    assert response.status_code == 200, response.content
    text = response.content.decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def scrape(client: Client, **extra: Any) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return samples(client.get("/metrics", **extra))


# --- Who may read it -------------------------------------------------------------------


def test_it_answers_loopback_by_default(client: Client) -> None:
    response = client.get("/metrics", REMOTE_ADDR="127.0.0.1")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    assert "no-store" in response["Cache-Control"]


def test_it_hides_from_other_networks(client: Client) -> None:
    response = client.get("/metrics", REMOTE_ADDR="203.0.113.9")
    assert response.status_code == 404
    assert b"statuspage_" not in response.content


def test_it_answers_the_token_from_anywhere(client: Client, settings: Any) -> None:
    settings.METRICS_TOKEN = "s3cret-scrape-token"
    response = client.get(
        "/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer s3cret-scrape-token"
    )
    assert response.status_code == 200
    assert b"statuspage_ready" in response.content


def test_it_refuses_a_wrong_token_even_from_loopback(client: Client, settings: Any) -> None:
    settings.METRICS_TOKEN = "s3cret-scrape-token"
    response = client.get("/metrics", REMOTE_ADDR="127.0.0.1", HTTP_AUTHORIZATION="Bearer guessed")
    assert response.status_code == 403
    assert b"statuspage_" not in response.content


def test_it_accepts_no_token_when_none_is_set(client: Client, settings: Any) -> None:
    settings.METRICS_TOKEN = ""
    response = client.get("/metrics", REMOTE_ADDR="127.0.0.1", HTTP_AUTHORIZATION="Bearer ")
    assert response.status_code == 200  # an empty bearer is no token: the network rule decides
    response = client.get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer anything")
    assert response.status_code == 403


def test_it_answers_the_configured_networks(client: Client, settings: Any) -> None:
    settings.METRICS_ALLOWED_NETWORKS = ["10.0.0.0/8", "2001:db8::/32"]
    assert client.get("/metrics", REMOTE_ADDR="10.20.30.40").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="2001:db8::7").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 404  # loopback no longer listed


def test_it_judges_the_address_the_trusted_proxy_saw(client: Client, settings: Any) -> None:
    # Behind nginx (NUM_PROXIES=1) REMOTE_ADDR is nginx on loopback: the outside client
    # nginx names must not pass for local, and a forged left entry changes nothing.
    settings.NUM_PROXIES = 1
    outside = client.get("/metrics", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="127.0.0.1, 198.51.100.4")
    assert outside.status_code == 404


def test_it_answers_openmetrics_when_asked(client: Client) -> None:
    response = client.get("/metrics", HTTP_ACCEPT="application/openmetrics-text; version=1.0.0")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/openmetrics-text")
    assert response.content.endswith(b"# EOF\n")


# --- What it says ----------------------------------------------------------------------


def test_it_reports_incidents_and_component_levels(client: Client) -> None:
    gmail = make_product("Gmail")
    make_product("Drive")
    now = timezone.now()
    make_incident(
        title="Gmail down",
        product=gmail,
        start=now - timedelta(minutes=5),
        level=ImpactWindow.Level.MAJOR_OUTAGE,
    )
    got = scrape(client)
    assert got[("statuspage_incidents_open", (("impact", "critical"),))] == 1
    assert got[("statuspage_incidents_open", (("impact", "minor"),))] == 0
    assert got[("statuspage_component_status", (("component", "Gmail"), ("level", "major_outage")))] == 1
    assert got[("statuspage_component_status", (("component", "Gmail"), ("level", "operational")))] == 0
    assert got[("statuspage_component_status", (("component", "Drive"), ("level", "operational")))] == 1
    assert Incident.objects.count() == 1


def test_it_reports_the_outbox_queue_and_its_oldest_pending_message(client: Client) -> None:
    message = outbox.email_enqueue(
        key="credit-1", to=["a@example.com"], subject="S", text="T", purpose="credits"
    )
    OutboundMessage.objects.filter(pk=message.pk).update(created_at=timezone.now() - timedelta(hours=2))
    outbox.email_enqueue(key="credit-2", to=["b@example.com"], subject="S", text="T", purpose="credits")
    got = scrape(client)
    assert got[("statuspage_outbox_messages", (("channel", "email"), ("destination", "smtp"), ("state", "pending")))] == 2  # fmt: skip
    age = got[
        ("statuspage_outbox_oldest_pending_age_seconds", (("channel", "email"), ("purpose", "credits")))
    ]
    assert 2 * 3600 <= age < 2 * 3600 + 60
    OutboundMessage.objects.update(state=MessageState.CANCELLED)
    got = scrape(client)
    assert not [key for key in got if key[0] == "statuspage_outbox_messages"]


def test_it_reports_snapshot_age_and_render_problems(client: Client, settings: Any, tmp_path: Any) -> None:
    settings.VAR_DIR = tmp_path
    page = snapshots.CachedPage(body=b"<p>ok</p>", content_type="text/html", etag='"e"', built_at=0.0)
    snapshots.snapshot_write("index", page)
    meta = snapshots.snapshot_dir() / "index.html.meta.json"
    meta.write_text(
        json.dumps({**json.loads(meta.read_text()), "built_at": timezone.now().timestamp() - 600})
    )
    now = timezone.now()
    RenderProblem.objects.create(kind="page", key="index", label="/", error="boom", count=3, first_seen_at=now, last_seen_at=now)  # fmt: skip
    got = scrape(client)
    assert 600 <= got[("statuspage_snapshot_age_seconds", (("snapshot", "index.html"),))] < 660
    assert got[("statuspage_render_problems_open", (("kind", "page"),))] == 1
    assert got[("statuspage_render_problem_failures", (("kind", "page"),))] == 3
    assert got[("statuspage_render_problems_open", (("kind", "feed_entry"),))] == 0


def test_it_counts_page_cache_hits_and_rebuilds(client: Client) -> None:
    make_product("Gmail")
    assert client.get("/").status_code == 200
    assert client.get("/").status_code == 200
    got = scrape(client)
    assert got[("statuspage_page_cache_rebuilds_total", (("outcome", "ok"), ("page", "index")))] == 1
    assert got[("statuspage_page_cache_hits_total", (("page", "index"),))] == 1


def test_it_counts_deliveries_and_their_latency(client: Client, smtp: SmtpSink, django_capture_on_commit_callbacks: Any) -> None:  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        outbox.email_enqueue(key="notice-1", to=["a@example.com"], subject="S", text="T", purpose="test")
    smtp.handler.wait_for(1)
    got = scrape(client)
    assert got[("statuspage_outbox_deliveries_total", (("channel", "email"), ("outcome", "sent")))] == 1
    assert got[("statuspage_outbox_delivery_latency_seconds_count", (("channel", "email"),))] == 1
    assert (
        got[("statuspage_outbox_delivery_latency_seconds_bucket", (("channel", "email"), ("le", "+Inf")))]
        == 1
    )
    # Every bound is there from the first observation, the lower ones at 0 or 1.
    assert (
        got[("statuspage_outbox_delivery_latency_seconds_bucket", (("channel", "email"), ("le", "86400.0")))]
        == 1
    )


def test_it_keeps_reporting_when_a_group_fails(client: Client, settings: Any) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    settings.REDIS_URL = f"redis://127.0.0.1:{dead}/0"
    got = scrape(client)
    assert got[("statuspage_metrics_group_up", (("group", "counters"),))] == 0
    assert got[("statuspage_metrics_group_up", (("group", "incidents"),))] == 1
    assert got[("statuspage_ready", (("check", "broker"),))] == 0
    assert got[("statuspage_ready", (("check", "database"),))] == 1
