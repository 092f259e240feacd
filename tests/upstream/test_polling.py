"""Polling providers politely: conditional reads, backoff, size and time limits, the
recorded Google incidents.json and Atom feed, and what the public section says."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from tests.builders import utc
from tests.upstream.server import Served, serving
from upstream import selectors, services
from upstream.models import Provider

pytestmark = pytest.mark.django_db
T0 = utc(2026, 11, 29, 19, 30)


def _provider(url: str, kind: str, name: str = "Example Cloud", **fields: Any) -> Provider:
    fields = {"poll_interval_seconds": 60, "is_shown": True, **fields}
    return services.provider_save(name=name, url=url, kind=kind, **fields)


def test_a_google_incidents_json_gives_components_and_incidents_and_then_a_conditional_read() -> None:
    served = Served()
    served.put("/incidents.json", "google-incidents.json", "application/json")
    with serving(served) as base:
        provider = _provider(f"{base}/incidents.json", "google")
        assert services.providers_poll(now=T0).read == 1
        second = services.providers_poll(now=T0 + timedelta(seconds=60))

    provider.refresh_from_db()
    components = {c.name: c.status for c in provider.components.all()}
    assert components == {"Cloud Storage (us-central1)": "partial_outage"}
    open_titles = [i.title for i in provider.incidents.filter(resolved_at__isnull=True)]
    assert open_titles == ["Elevated error rates for Cloud Storage writes in us-central1"]
    assert provider.incidents.count() == 2
    assert provider.incidents.get(external_id="qZ9mEXAMPLEa1").url == f"{base}/incidents/qZ9mEXAMPLEa1"
    # The second read sent the ETag back and was answered 304: nothing re-read.
    assert second.unchanged == 1 and served.not_modified == 1
    assert served.requests[1]["if-none-match"] == provider.etag
    assert "statuspage-upstream" in served.requests[0]["user-agent"]
    assert provider.last_success_at == T0 + timedelta(seconds=60)


def test_an_atom_feed_gives_recent_notices_and_no_status_claim() -> None:
    served = Served()
    served.put("/history.atom", "feed.atom", "application/atom+xml")
    with serving(served) as base:
        _provider(f"{base}/history.atom", "feed", name="Example Mail Relay")
        services.providers_poll(now=T0)

    [view] = selectors.third_party_section(now=T0)
    assert not view.unknown and view.is_feed and view.components == []
    assert [i.title for i in view.incidents] == [
        "Delayed outbound delivery to some providers",
        "Webhook events delayed",
    ]


def test_a_provider_that_fails_backs_off_exponentially_and_shows_unknown_since_its_last_good_read() -> None:
    served = Served()
    served.put("/incidents.json", "google-incidents.json", "application/json")
    with serving(served) as base:
        provider = _provider(f"{base}/incidents.json", "google")
        services.providers_poll(now=T0)
        served.status = 503
        t1 = T0 + timedelta(seconds=60)
        assert services.providers_poll(now=t1).failed == 1
        provider.refresh_from_db()
        assert provider.failures == 1 and provider.last_error == "HTTP 503"
        assert provider.next_poll_at == t1 + timedelta(seconds=120)
        # Not due before the backoff is over: no request at all.
        before = len(served.requests)
        assert services.providers_poll(now=t1 + timedelta(seconds=119)).failed == 0
        assert len(served.requests) == before
        t2 = t1 + timedelta(seconds=120)
        services.providers_poll(now=t2)
        provider.refresh_from_db()
        assert provider.failures == 2 and provider.next_poll_at == t2 + timedelta(seconds=240)

    [view] = selectors.third_party_section(now=t2)
    assert view.unknown and view.since == T0


def test_a_document_over_the_size_limit_or_too_slow_is_a_failed_read(settings: object) -> None:
    settings.UPSTREAM_MAX_BYTES = 500  # type: ignore[attr-defined]
    settings.UPSTREAM_TIMEOUT_SECONDS = 0.3  # type: ignore[attr-defined]
    served = Served()
    served.put("/incidents.json", "google-incidents.json", "application/json")
    with serving(served) as base:
        big = _provider(f"{base}/incidents.json", "google")
        services.providers_poll(now=T0)
        big.refresh_from_db()
        assert "larger than 500 bytes" in big.last_error
        settings.UPSTREAM_MAX_BYTES = 1_000_000  # type: ignore[attr-defined]
        served.delay = 1.0
        services.providers_poll(now=T0 + timedelta(hours=1))
        big.refresh_from_db()
        assert big.failures == 2 and "unreachable" in big.last_error
    assert big.components.count() == 0 and big.last_success_at is None


def test_garbage_is_a_failed_read_that_keeps_what_was_kept() -> None:
    served = Served()
    served.put("/incidents.json", "google-incidents.json", "application/json")
    with serving(served) as base:
        provider = _provider(f"{base}/incidents.json", "google")
        services.providers_poll(now=T0)
        served.documents["/incidents.json"] = (b"<html>maintenance</html>", "text/html")
        services.providers_poll(now=T0 + timedelta(seconds=60))
    provider.refresh_from_db()
    assert provider.failures == 1 and provider.last_error.startswith("not JSON")
    assert provider.components.get().status == "partial_outage"


def test_two_ticks_at_once_read_a_provider_once() -> None:
    served = Served()
    served.put("/incidents.json", "google-incidents.json", "application/json")
    with serving(served) as base:
        _provider(f"{base}/incidents.json", "google")
        services.providers_poll(now=T0)
        services.providers_poll(now=T0)
    assert len(served.requests) == 1


def test_a_provider_is_refused_a_too_short_interval_or_a_non_http_address() -> None:
    with pytest.raises(ValidationError):
        services.provider_save(
            name="Eager", url="http://127.0.0.1:9/x", kind="google", poll_interval_seconds=5
        )
    with pytest.raises(ValidationError):
        services.provider_save(name="File", url="file:///etc/passwd", kind="google")
    assert not Provider.objects.exists()


def test_a_never_read_provider_is_unknown_not_operational() -> None:
    _provider("http://127.0.0.1:9/incidents.json", "google")
    [view] = selectors.third_party_section(now=T0)
    assert view.unknown and view.since is None


def test_the_section_shows_only_providers_the_operator_shows_once_turned_on(
    client: Client,
    settings: Any,
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    settings.UPSTREAM_ON_PUBLIC_PAGES = True
    served = Served()
    served.put("/incidents.json", "google-incidents.json", "application/json")
    with serving(served) as base, django_capture_on_commit_callbacks(execute=True):
        provider = _provider(f"{base}/incidents.json", "google", is_shown=False)
        services.providers_poll()
    assert "Third-party services" not in client.get("/").content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        services.provider_save(provider=provider, is_shown=True)
    page = client.get("/").content.decode()
    assert "Third-party services" in page and "Cloud Storage (us-central1)" in page
    french = client.get("/fr/").content.decode()
    assert "Services tiers" in french
    settings.UPSTREAM_ON_PUBLIC_PAGES = False
    with django_capture_on_commit_callbacks(execute=True):
        services.provider_save(provider=provider, position=1)  # a new render
    assert "Third-party services" not in client.get("/").content.decode()


def _summary(components: list[tuple[str, str, str]], incidents: list[tuple[str, str, str]]) -> bytes:
    return json.dumps(
        {
            "page": {"id": "p", "name": "Second"},
            "components": [{"id": i, "name": n, "status": s, "group": False} for i, n, s in components],
            "incidents": [
                {"id": i, "name": n, "status": "investigating", "impact": impact, "components": []}
                for i, n, impact in incidents
            ],
        }
    ).encode()


def test_a_statuspage_summary_resolves_what_it_no_longer_lists_and_hides_removed_components() -> None:
    served = Served()
    served.documents["/s.json"] = (
        _summary(
            [("a", "API", "major_outage"), ("b", "Web", "operational")], [("i1", "API down", "critical")]
        ),
        "application/json",
    )
    with serving(served) as base:
        provider = _provider(f"{base}/s.json", "statuspage_v2")
        services.providers_poll(now=T0)
        incident = provider.incidents.get()
        assert (incident.level, incident.resolved_at) == ("major_outage", None)
        served.documents["/s.json"] = (_summary([("a", "API", "operational")], []), "application/json")
        services.providers_poll(now=T0 + timedelta(seconds=60))

    incident.refresh_from_db()
    assert incident.resolved_at == T0 + timedelta(seconds=60) and incident.status == "resolved"
    [view] = selectors.third_party_section(now=T0 + timedelta(seconds=60))
    assert [(c.name, c.status) for c in view.components] == [("API", "operational")]
    assert view.incidents == []
