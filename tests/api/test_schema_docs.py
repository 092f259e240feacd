"""The OpenAPI schema and the interactive docs, served without any CDN."""

from __future__ import annotations

import re

import pytest
import yaml
from django.contrib.staticfiles import finders
from django.test import Client

pytestmark = pytest.mark.django_db


def test_it_serves_an_openapi_3_schema_documenting_every_endpoint(anon: Client) -> None:
    response = anon.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    paths = set(schema["paths"])
    for path in (
        "/api/v1/incidents/", "/api/v1/incidents/{public_id}/updates/", "/api/v1/incidents/{public_id}/resolve/",
        "/api/v1/incidents/{public_id}/report/publish/", "/api/v1/maintenance/{public_id}/complete/",
        "/api/v1/action-items/", "/api/v1/status/", "/api/v2/summary.json",
        "/api/v2/scheduled-maintenances/upcoming.json", "/incidents.json", "/products.json",
    ):  # fmt: skip
        assert path in paths
    create = schema["paths"]["/api/v1/incidents/"]["post"]
    assert {"201", "400", "401", "403", "429"} <= set(create["responses"])
    error_ref = create["responses"]["401"]["content"]["application/problem+json"]["schema"]["$ref"]
    assert error_ref == "#/components/schemas/Error"
    problem = schema["components"]["schemas"]["Error"]
    assert {"type", "title", "status", "detail", "instance", "code", "errors", "request_id"} <= set(
        problem["required"]
    )
    assert schema["components"]["schemas"]["ErrorDetail"]["required"] == ["code", "fields", "message"]
    listing = schema["paths"]["/api/v1/incidents/"]["get"]
    ordering = next(p for p in listing["parameters"] if p["name"] == "ordering")
    assert "-started_at" in ordering["schema"]["enum"] or "$ref" in ordering["schema"]
    assert "tokenAuth" in schema["components"]["securitySchemes"]


def test_every_conditional_or_idempotent_write_documents_its_refusals(anon: Client) -> None:
    # The error tuples live once in api.base; every PATCH and DELETE takes If-Match (412) and
    # every POST an Idempotency-Key (409 while running, 422 when reused).
    schema = anon.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    needs = {"patch": {"412"}, "delete": {"412"}, "post": {"409", "422"}}
    # The alert webhook authenticates by its own secret and takes no Idempotency-Key.
    exempt = {("post", "/api/v1/integrations/{integration_id}/alerts/")}
    missing = [
        (method, path, sorted(need - set(operation["responses"])))
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if (need := needs.get(method))
        and (method, path) not in exempt
        and not need <= set(operation["responses"])
    ]
    assert missing == []


def test_it_serves_yaml_by_default(anon: Client) -> None:
    response = anon.get("/api/schema/")
    assert response.status_code == 200
    assert yaml.safe_load(response.content)["info"]["title"] == "Status platform API"


def test_it_serves_the_docs_from_local_static_files(anon: Client) -> None:
    response = anon.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "cdn.jsdelivr.net" not in html and "unpkg.com" not in html
    assert "<script>" not in html  # no inline script: works under a strict CSP
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    static = [s for s in sources if s.startswith("/static/")]
    assert any("swagger-ui-bundle.js" in s for s in static)
    for source in static:
        assert finders.find(source.removeprefix("/static/")), source
    init = next(s for s in sources if "script=" in s)
    script = anon.get(init.replace("&amp;", "&"))
    assert script.status_code == 200
    assert "SwaggerUIBundle" in script.content.decode()
