"""Dependencies: a degraded dependency suggests a draft to staff, never a publication;
a published incident caused by it says "affected through …" on its page."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.utils import timezone

from incidents import services as incidents
from incidents.models import Incident, Location, Product
from incidents.selectors import product_statuses
from tests.builders import make_location, make_product
from tests.upstream.server import Served, serving
from upstream import services
from upstream.models import Suggestion

pytestmark = pytest.mark.django_db


@pytest.fixture
def catalogue() -> dict[str, Any]:
    region = make_location("us-central1")
    return {
        "gmail": make_product("Gmail"),
        "storage": make_product("Cloud Storage", slug="cloud-storage"),
        "region": region,
        "zone": make_location("us-central1-b", kind=Location.Kind.ZONE, parent=region),
        "europe": make_location("europe-west1"),
    }


def _outage(storage: Product, location: Location, level: str = "partial_outage") -> Incident:
    now = timezone.now() - timedelta(minutes=5)
    return incidents.incident_open(
        title=f"Write errors in {location.name}",
        body="We are investigating.",
        started_at=now,
        windows=[incidents.WindowSpec(product=storage, location=location, level=level, started_at=now)],
    )


def _drafts() -> list[Incident]:
    return list(Incident.objects.filter(is_public=False))


def test_cloud_storage_in_partial_outage_suggests_a_draft_for_gmail_and_publishes_nothing(
    catalogue: dict[str, Any], client: Client, on_pages: None
) -> None:
    services.dependency_save(
        product=catalogue["gmail"], on_product=catalogue["storage"], on_location=catalogue["region"]
    )
    _outage(catalogue["storage"], catalogue["europe"])  # elsewhere: not a dependency
    assert _drafts() == []

    _outage(catalogue["storage"], catalogue["zone"])  # a zone of the region counts
    [draft] = _drafts()
    assert draft.title == "Gmail may be affected: Cloud Storage (us-central1) is in partial outage"
    assert [(w.product.name, w.level) for w in draft.windows.all()] == [("Gmail", "partial_outage")]
    assert "depends on Cloud Storage (us-central1)" in draft.internal_notes
    # Nothing public: Gmail is still operational on the page.
    assert product_statuses().get(catalogue["gmail"].pk, "operational") == "operational"

    # The dependency still degraded: no second suggestion.
    _outage(catalogue["storage"], catalogue["region"], level="major_outage")
    assert len(_drafts()) == 1

    incidents.incident_publish(incident=draft)
    page = client.get(f"/incidents/{draft.public_id}/").content.decode()
    assert "Affected through Cloud Storage (us-central1)" in page
    french = client.get(f"/fr/incidents/{draft.public_id}/").content.decode()
    assert "Touché par l’intermédiaire de Cloud Storage (us-central1)" in french


def test_a_recovered_dependency_closes_its_suggestion_and_a_new_outage_suggests_again(
    catalogue: dict[str, Any],
) -> None:
    services.dependency_save(product=catalogue["gmail"], on_product=catalogue["storage"])
    first = _outage(catalogue["storage"], catalogue["region"])
    incidents.incident_resolve(incident=first, body="Fixed.")
    suggestion = Suggestion.objects.get()
    assert suggestion.closed_at is not None
    _outage(catalogue["storage"], catalogue["europe"])
    assert Suggestion.objects.count() == 2 and len(_drafts()) == 2


def test_an_upstream_component_in_partial_outage_suggests_a_draft(catalogue: dict[str, Any]) -> None:
    served = Served()
    served.put("/incidents.json", "google-incidents.json", "application/json")
    with serving(served) as base:
        provider = services.provider_save(name="Example Cloud", url=f"{base}/incidents.json", kind="google")
        services.providers_poll()
    component = provider.components.get()
    services.dependency_save(product=catalogue["gmail"], on_component=component)
    [draft] = _drafts()
    assert (
        draft.title
        == "Gmail may be affected: Cloud Storage (us-central1) at Example Cloud is in partial outage"
    )


def test_a_dependency_is_one_target_never_itself_and_never_twice(catalogue: dict[str, Any]) -> None:
    gmail, storage = catalogue["gmail"], catalogue["storage"]
    with pytest.raises(ValidationError):
        services.dependency_save(product=gmail, on_product=gmail)
    with pytest.raises(ValidationError):
        services.dependency_save(product=gmail)
    services.dependency_save(product=gmail, on_product=storage)
    with pytest.raises(ValidationError):
        services.dependency_save(product=gmail, on_product=storage)
