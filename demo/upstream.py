"""Demo upstream providers and a dependency: Gmail stores attachments in Cloud Storage in
us-central1, so an outage there suggests a Gmail draft to staff. Two providers keep a
recorded read (a Google-style incidents.json and an Atom feed, shipped in demo/recorded/);
their addresses point at a closed loopback port (the demo reaches no other host), so once
polling runs they show "unknown since" the recorded read: put a real address in to follow one. The public section stays off until an operator ticks "shown" on a provider.
Created through `upstream.services`; keyed on names, existing rows are left as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from incidents.models import Location, Product
from upstream import services
from upstream.models import Dependency, Provider
from upstream.parsers import parse

RECORDED = Path(__file__).parent / "recorded"
PROVIDERS = (
    ("Example Cloud", "http://127.0.0.1:9/example-cloud/incidents.json", "google", "google-incidents.json"),
    ("Example Mail Relay", "http://127.0.0.1:9/example-mail-relay/history.atom", "feed", "feed.atom"),
)


@dataclass(frozen=True)
class Summary:
    providers_created: int
    dependencies_created: int


def load(*, stdout: Any = None) -> Summary:
    created = 0
    with transaction.atomic():
        for position, (name, url, kind, recorded) in enumerate(PROVIDERS):
            if Provider.objects.filter(name=name).exists():
                continue
            provider = services.provider_save(
                name=name, url=url, kind=kind, poll_interval_seconds=300, position=position
            )
            body = (RECORDED / recorded).read_bytes()
            services.provider_record(provider=provider, read=parse(kind, body, url=url), now=timezone.now())
            created += 1
        gmail = Product.objects.filter(slug="gmail").first()
        storage = Product.objects.filter(slug="cloud-storage").first()
        region = Location.objects.filter(name="us-central1").first()
        dependencies = 0
        known = Dependency.objects.filter(product=gmail, on_product=storage, on_location=region).exists()
        if gmail and storage and region and not known:
            services.dependency_save(product=gmail, on_product=storage, on_location=region)
            dependencies = 1
    return Summary(providers_created=created, dependencies_created=dependencies)
