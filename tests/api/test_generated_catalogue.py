"""Acceptance (issue 31): the generated client manages the catalogue and an incident's
parts against a live server (tests/api/flows/catalogue.py), type-checked with every flow."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User

from api import services as api_services
from incidents.message_templates import MessageTemplate
from incidents.models import ActionItem, Location, Product, ProductGroup
from tests.api.test_generated_client import _type_check_flows, generated_client

__all__ = ["generated_client"]  # the fixture, used by name below


def test_the_generated_client_manages_the_catalogue(
    generated_client: Path, live_server: Any, alice: User
) -> None:
    _type_check_flows(generated_client)

    key = api_services.api_key_create(user=alice, name="catalogue flow", scope="write").raw
    importlib.import_module("flows.catalogue").run(live_server.url, key)

    meet = Product.objects.get(slug="meet")
    assert meet.name == "Google Meet" and meet.position == 5 and meet.archived_at is not None
    assert meet.group == ProductGroup.objects.get(name="Meetings")
    assert meet.windows.count() == 1  # its history stays
    assert not Product.objects.filter(slug="spare").exists()
    assert list(Location.objects.values_list("name", "display_name")) == [("europe-west1", "St. Ghislain")]
    item = ActionItem.objects.get(title="Alert on dropped calls")
    assert item.status == "done"
    update = item.incident.updates.get()
    assert update.body == "Calls dropped after a minute in Belgium." and update.revisions.count() == 1
    assert not MessageTemplate.objects.exists()  # created, changed, deleted
