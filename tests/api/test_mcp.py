"""The MCP server (issue 36): the official MCP Python client against `/mcp` of a live
server, and against `manage.py mcp_stdio`; every read tool answers what the REST API
answers, and a write tool refuses a read-only key."""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
import pytest
from django.conf import settings
from django.contrib.auth.models import User
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from incidents.models import Incident
from tests.api.conftest import World
from tests.api.keys import key_for

ROOT = Path(__file__).resolve().parents[2]
READ_TOOLS = {"current_status", "product_status", "incidents", "incident_report", "product_uptime"}


def _rest(base: str, path: str, key: str | None) -> Any:
    request = urllib.request.Request(base + path, headers={"Accept": "application/json"})
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def _http(url: str, key: str | None) -> AbstractAsyncContextManager[Any]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=30))


async def _session_calls(
    transport: AbstractAsyncContextManager[Any], calls: list[tuple[str, dict[str, Any]]]
) -> tuple[set[str], list[Any]]:
    async with transport as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {tool.name for tool in (await session.list_tools()).tools}
        results = [await session.call_tool(name, arguments) for name, arguments in calls]
    return tools, results


def _payload(result: Any) -> Any:
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


def _read_calls(world: World) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("current_status", {}),
        ("product_status", {"product": world.storage.slug, "location": "us-central1-b"}),
        ("product_status", {"product": world.storage.slug, "location": "us-central1"}),
        ("incidents", {"started_after": "2026-01-01T00:00:00Z", "started_before": "2026-12-31T00:00:00Z"}),
        ("incident_report", {"incident_id": world.outage.public_id}),
        ("product_uptime", {"product": world.gmail.slug, "period": "90d"}),
    ]


def _check_reads(base: str, key: str | None, world: World, results: list[Any]) -> None:
    status, zone, region, listed, report, uptime = (_payload(r) for r in results)
    assert status == _rest(base, "/api/v1/status/", key)
    product = _rest(base, f"/api/v1/products/{world.storage.slug}/", key)
    assert {k: v for k, v in zone.items() if k != "location"} == product
    # The ongoing window is on the zone only: the zone is in partial outage, its region not.
    assert zone["location"] == {"name": "us-central1-b", "label": "us-central1-b", "status": "partial_outage"}
    assert region["location"]["status"] == "operational"
    query = (
        "?started_after=2026-01-01T00%3A00%3A00%2B00%3A00&started_before=2026-12-31T00%3A00%3A00%2B00%3A00"
    )
    assert listed == _rest(base, f"/api/v1/incidents/{query}", key)
    titles = {i["title"] for i in listed["results"]}
    assert "Elevated write latency in us-central1-b" in titles
    assert "Gmail unavailable for web users" not in titles  # 2009: outside the range
    assert report == _rest(base, f"/api/v1/incidents/{world.outage.public_id}/report/", key)
    rest_uptime = _rest(base, f"/api/v1/products/{world.gmail.slug}/uptime/", key)
    assert uptime["uptime"] == rest_uptime["last_90_days"]
    assert uptime["product"] == rest_uptime["product"]


@pytest.mark.django_db(transaction=True)
def test_http_client_lists_tools_and_reads_equal_the_rest_api(
    live_server: Any, world: World, alice: User
) -> None:
    for key in (None, key_for(alice, scope="read")):
        tools, results = anyio.run(_session_calls, _http(f"{live_server.url}/mcp", key), _read_calls(world))
        assert READ_TOOLS | {"draft_incident", "post_update"} == tools
        _check_reads(live_server.url, key, world, results)
    # Staff see the hidden incident in range; anonymous callers do not (the REST rule).
    staff_key = key_for(alice, scope="read")
    calls = [
        ("incidents", {"started_after": "2026-03-01T00:00:00Z", "started_before": "2026-03-02T00:00:00Z"})
    ]
    for key, seen in ((staff_key, True), (None, False)):
        _, (result,) = anyio.run(_session_calls, _http(f"{live_server.url}/mcp", key), calls)
        assert ("Secret staff drill" in {i["title"] for i in _payload(result)["results"]}) is seen


@pytest.mark.django_db(transaction=True)
def test_write_tools_follow_the_key_scope_and_the_role(live_server: Any, world: World, alice: User) -> None:
    url = f"{live_server.url}/mcp"
    draft: tuple[str, dict[str, Any]] = (
        "draft_incident",
        {"title": "Gmail may be affected", "body": "Looking into it."},
    )
    update: tuple[str, dict[str, Any]] = (
        "post_update",
        {
            "incident_id": world.ongoing.public_id,
            "status": "identified",
            "body": "Found it.",
            "notify": False,
        },
    )
    no_role = User.objects.create_user("norole", is_staff=True)
    refusals = {
        key_for(alice, scope="read"): "This API key is read-only",
        None: "send a staff API key with the write scope",
        key_for(no_role, scope="write"): "Your role does not allow you to declare incidents",
    }
    for key, message in refusals.items():
        _, results = anyio.run(_session_calls, _http(url, key), [draft, update])
        for result in results:
            assert result.is_error
            assert "read-only" in result.content[0].text or message.split()[0] in result.content[0].text
        assert message in results[0].content[0].text
    assert not Incident.objects.filter(title="Gmail may be affected").exists()
    assert not world.ongoing.updates.filter(body="Found it.").exists()

    _, (drafted, posted) = anyio.run(
        _session_calls, _http(url, key_for(alice, scope="write")), [draft, update]
    )
    made = Incident.objects.get(title="Gmail may be affected")
    assert _payload(drafted)["id"] == made.public_id and not made.is_public
    assert _payload(posted)["status"] == "identified"
    world.ongoing.refresh_from_db()
    assert world.ongoing.status == "identified"


@pytest.mark.django_db(transaction=True)
def test_bad_key_is_the_rest_apis_401(live_server: Any) -> None:
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
    request = urllib.request.Request(
        f"{live_server.url}/mcp",
        data=body,
        headers={"Authorization": "Bearer nope", "Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 401
    assert json.loads(refused.value.read())["detail"] == "Invalid API key."


@pytest.mark.django_db(transaction=True)
def test_stdio_command_answers_like_the_rest_api(
    postgres: None, live_server: Any, world: World, alice: User
) -> None:
    # The stdio server is another process: it reads the test database over PostgreSQL.
    key = key_for(alice, scope="read")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "statuspage.settings",
        "STATUSPAGE_API_KEY": key,
        # The links in the answers follow SITE_URL, as the live server's do.
        "SITE_URL": settings.SITE_URL,
        "ALLOWED_HOSTS": urlsplit(settings.SITE_URL).hostname or "",
    }
    from django.db import connection

    env["DATABASE_URL"] = _database_url(connection.settings_dict)
    params = StdioServerParameters(
        command=sys.executable, args=[str(ROOT / "manage.py"), "mcp_stdio"], env=env, cwd=str(ROOT)
    )
    calls = [*_read_calls(world), ("draft_incident", {"title": "Through stdio"})]
    tools, results = anyio.run(_session_calls, stdio_client(params), calls)
    assert tools >= READ_TOOLS
    _check_reads(live_server.url, key, world, results[:-1])
    assert results[-1].is_error and "read-only" in results[-1].content[0].text
    assert not Incident.objects.filter(title="Through stdio").exists()


def _database_url(db: dict[str, Any]) -> str:
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
