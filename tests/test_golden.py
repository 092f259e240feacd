"""Golden pages: the demo's public output, rendered at a frozen clock, byte for byte.

Written before the code moved into its rooms (issue 10), so a refactor that changes what
a visitor or a consumer receives fails here. Public ids (incidents, products) are random per load, so each is
replaced by a stable placeholder in order of first appearance before comparing, and so
are the live sections' digests (data-live-digest), which hash those ids; nothing else is
normalised. Regenerate on purpose with `GOLDEN_UPDATE=1 make test
PYTEST_ARGS=tests/test_golden.py` and review the diff.
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.color import no_style
from django.db import connection
from django.test import Client
from freezegun import freeze_time

from incidents.models import Incident, Product

pytestmark = pytest.mark.django_db

NOW = "2026-11-29 20:00:00"
GOLDEN = Path(__file__).parent / "golden"


def _normalise(body: str, ids: list[str], prefix: str = "INCIDENT") -> str:
    for n, public_id in enumerate(ids):
        body = body.replace(public_id, f"{prefix}{n:02d}")
    # The live sections' digests hash their markup, random ids included.
    return re.sub(r'data-live-digest="[0-9a-f]+"', 'data-live-digest="DIGEST"', body)


def _restart_sequences() -> None:
    # Group component ids and timeline update ids are database ids. PostgreSQL sequences
    # keep counting across rolled-back tests, so start them again from 1 (the tables are
    # empty inside this test's transaction): the pages then match whatever ran before.
    # SQLite keeps its counters in sqlite_sequence, which a transactional test's flush
    # leaves counting: reset them by name, which works on both engines.
    with connection.cursor() as cursor:
        sequences = connection.introspection.sequence_list()
        for sql in connection.ops.sequence_reset_by_name_sql(no_style(), sequences):
            cursor.execute(sql)


def _pages() -> dict[str, str]:
    _restart_sequences()
    with freeze_time(NOW):
        call_command("load_demo", stdout=io.StringIO())
        ordered = list(Incident.objects.order_by("started_at", "title").values_list("public_id", flat=True))
        products = list(Product.objects.order_by("slug").values_list("public_id", flat=True))
        storage = (
            Incident.objects.filter(windows__product__slug="cloud-storage", started_at__year=2026)
            .distinct()
            .get()
        )
        client = Client()
        urls = {
            "index.html": "/",
            "incident.html": f"/incidents/{storage.public_id}/",
            "history.html": "/history/",
            "summary.json": "/api/v2/summary.json",
            "google-incidents.json": "/incidents.json",
            "history.atom": "/history.atom",
        }
        out = {}
        for name, url in urls.items():
            response = client.get(url)
            assert response.status_code == 200, url
            out[name] = response.content.decode()
    return {name: _normalise(_normalise(b, ordered), products, "PRODUCT") for name, b in out.items()}


def test_it_renders_the_demo_pages_byte_for_byte() -> None:
    pages = _pages()
    if os.environ.get("GOLDEN_UPDATE"):
        GOLDEN.mkdir(exist_ok=True)
        for name, body in pages.items():
            (GOLDEN / name).write_text(body, encoding="utf-8")
    for name, body in pages.items():
        expected = (GOLDEN / name).read_text(encoding="utf-8")
        assert body == expected, f"{name} differs from tests/golden/{name}"


def test_it_normalises_only_the_public_ids() -> None:
    assert _normalise("a abc123 b", ["abc123"]) == "a INCIDENT00 b"
    assert re.search("INCIDENT", (GOLDEN / "index.html").read_text(encoding="utf-8"))
