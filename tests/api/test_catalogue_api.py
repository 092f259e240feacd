"""Products, product groups and locations through /api/v1/ (issue 31): written through the
catalogue services with the console's permissions; what history refers to answers 409,
and a product with history is archived instead."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from incidents.models import Location, Product, ProductGroup
from tests.api.catalogue_helpers import client_for, send
from tests.api.conftest import World
from tests.api.test_v1 import assert_error
from tests.builders import make_incident, make_product, utc

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer(db: None) -> Client:
    """Staff with the Viewer role only: may read the console, not edit the catalogue."""
    user = User.objects.create_user("vera", "vera@example.org", "x", is_staff=True)
    user.groups.add(Group.objects.get(name="Viewer"))
    return client_for(user)


# --- Products ------------------------------------------------------------------------------------


def test_staff_create_change_and_delete_a_product(staff_api: Client, anon: Client, world: World) -> None:
    created = send(
        staff_api,
        "post",
        "/api/v1/products/",
        {"name": "Meet", "slug": "meet", "group": "Workspace", "description": "Video **calls**."},
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert created["Location"] == "/api/v1/products/meet/"
    assert (body["name"], body["group"], body["is_public"], body["archived_at"]) == (
        "Meet",
        "Workspace",
        True,
        None,
    )
    assert anon.get("/api/v1/products/meet/").status_code == 200

    etag = staff_api.get("/api/v1/products/meet/")["ETag"]
    changed = send(
        staff_api, "patch", "/api/v1/products/meet/", {"position": 7, "group": None}, **{"If-Match": etag}
    )
    assert changed.status_code == 200, changed.content
    assert (changed.json()["position"], changed.json()["group"]) == (7, None)
    # The old ETag no longer matches: the write is refused, nothing changes.
    stale = send(staff_api, "patch", "/api/v1/products/meet/", {"name": "Hangouts"}, **{"If-Match": etag})
    assert_error(stale, 412, "precondition_failed")
    assert Product.objects.get(slug="meet").name == "Meet"

    fresh = staff_api.get("/api/v1/products/meet/")["ETag"]
    deleted = send(staff_api, "delete", "/api/v1/products/meet/", **{"If-Match": fresh})
    assert deleted.status_code == 204, deleted.content
    assert not Product.objects.filter(slug="meet").exists()


def test_a_product_with_history_is_archived_not_deleted(
    staff_api: Client, anon: Client, world: World
) -> None:
    meet = make_product("Meet")
    past = make_incident(
        title="Meet calls dropped", product=meet, start=utc(2026, 2, 1, 9), end=utc(2026, 2, 1, 10)
    )
    refused = send(staff_api, "delete", "/api/v1/products/meet/")
    error = assert_error(refused, 409, "in_use")
    assert "archive it instead" in error["detail"]
    assert Product.objects.filter(slug="meet").exists()

    archived = send(staff_api, "post", "/api/v1/products/meet/archive/")
    assert archived.status_code == 200, archived.content
    assert archived.json()["archived_at"] is not None
    # Off the public catalogue; its incidents keep their history.
    assert anon.get("/api/v1/products/meet/").status_code == 404
    assert "meet" not in {p["slug"] for p in anon.get("/api/v1/products/").json()["results"]}
    told = anon.get(f"/api/v1/incidents/{past.public_id}/").json()
    assert [w["product"] for w in told["windows"]] == ["meet"]
    assert staff_api.get("/api/v1/products/meet/").json()["archived_at"] is not None
    # No new impact on it.
    window = send(
        staff_api,
        "post",
        f"/api/v1/incidents/{world.ongoing.public_id}/windows/",
        {"product": "meet", "level": "partial_outage", "started_at": "2026-10-09T11:30:00Z"},
    )
    assert "product" in assert_error(window, 400, "invalid")["errors"]

    restored = send(staff_api, "post", "/api/v1/products/meet/restore/")
    assert restored.status_code == 200 and restored.json()["archived_at"] is None
    assert anon.get("/api/v1/products/meet/").status_code == 200


def test_a_product_with_open_impact_is_not_archived(staff_api: Client, world: World) -> None:
    refused = send(staff_api, "post", "/api/v1/products/cloud-storage/archive/")
    assert "archived" in assert_error(refused, 400, "invalid")["errors"]
    assert Product.objects.get(slug="cloud-storage").archived_at is None


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"slug": "meet"}, "name"),
        ({"name": "Meet"}, "slug"),
        ({"name": "Meet", "slug": "not a slug"}, "slug"),
        ({"name": "Meet", "slug": "meet", "group": "No such group"}, "group"),
        ({"name": "Meet", "slug": "meet", "position": -1}, "position"),
        ({"name": "Meet", "slug": "meet", "components": []}, "components"),
        ({"name": "Gmail", "slug": "meet"}, "name"),  # taken
    ],
)
def test_bad_product_input_names_the_field(
    staff_api: Client, world: World, payload: dict[str, Any], field: str
) -> None:
    response = send(staff_api, "post", "/api/v1/products/", payload)
    assert field in assert_error(response, 400, "invalid")["errors"], response.json()
    assert not Product.objects.filter(slug="meet").exists()


# --- Groups and locations -----------------------------------------------------------------------


def test_staff_manage_product_groups(staff_api: Client, anon: Client, world: World) -> None:
    created = send(staff_api, "post", "/api/v1/product-groups/", {"name": "Storage", "position": 2})
    assert created.status_code == 201, created.content
    group_id = created.json()["id"]
    assert created["Location"] == f"/api/v1/product-groups/{group_id}/"
    moved = send(staff_api, "patch", "/api/v1/products/cloud-storage/", {"group": "Storage"})
    assert moved.status_code == 200, moved.content
    assert anon.get(f"/api/v1/product-groups/{group_id}/").json()["products"] == ["cloud-storage"]

    etag = staff_api.get(f"/api/v1/product-groups/{group_id}/")["ETag"]
    renamed = send(
        staff_api, "patch", f"/api/v1/product-groups/{group_id}/", {"name": "Data"}, **{"If-Match": etag}
    )
    assert renamed.status_code == 200 and renamed.json()["name"] == "Data"
    clash = send(staff_api, "patch", f"/api/v1/product-groups/{group_id}/", {"name": "Workspace"})
    assert "name" in assert_error(clash, 400, "invalid")["errors"]

    # A group is not history: deleting it leaves its products ungrouped.
    assert send(staff_api, "delete", f"/api/v1/product-groups/{group_id}/").status_code == 204
    assert Product.objects.get(slug="cloud-storage").group is None


def test_a_group_lists_only_public_current_products_to_the_public(
    staff_api: Client, anon: Client, world: World
) -> None:
    workspace = ProductGroup.objects.get(name="Workspace")
    make_product("Secret thing", is_public=False, group=workspace)
    assert anon.get(f"/api/v1/product-groups/{workspace.pk}/").json()["products"] == ["gmail"]
    assert set(staff_api.get(f"/api/v1/product-groups/{workspace.pk}/").json()["products"]) == {
        "gmail",
        "secret-thing",
    }


def test_staff_manage_locations_and_history_refuses_deletes(staff_api: Client, world: World) -> None:
    created = send(
        staff_api,
        "post",
        "/api/v1/locations/",
        {"name": "europe-west1", "display_name": "Belgium", "kind": "region"},
    )
    assert created.status_code == 201, created.content
    assert created["Location"] == "/api/v1/locations/europe-west1/"
    zone = send(
        staff_api,
        "post",
        "/api/v1/locations/",
        {"name": "europe-west1-b", "kind": "zone", "parent": "europe-west1"},
    )
    assert zone.status_code == 201 and zone.json()["parent"] == "europe-west1"

    etag = staff_api.get("/api/v1/locations/europe-west1/")["ETag"]
    changed = send(
        staff_api,
        "patch",
        "/api/v1/locations/europe-west1/",
        {"display_name": "St. Ghislain"},
        **{"If-Match": etag},
    )
    assert changed.status_code == 200 and changed.json()["display_name"] == "St. Ghislain"
    inside_itself = send(staff_api, "patch", "/api/v1/locations/europe-west1/", {"parent": "europe-west1-b"})
    assert "parent" in assert_error(inside_itself, 400, "invalid")["errors"]

    # A region with a zone inside it, and a zone with impact windows, are history.
    assert_error(send(staff_api, "delete", "/api/v1/locations/europe-west1/"), 409, "in_use")
    assert (
        "impact windows"
        in assert_error(send(staff_api, "delete", "/api/v1/locations/us-central1-b/"), 409, "in_use")[
            "detail"
        ]
    )
    assert Location.objects.filter(name__in=["europe-west1", "us-central1-b"]).count() == 2
    assert send(staff_api, "delete", "/api/v1/locations/europe-west1-b/").status_code == 204
    assert send(staff_api, "delete", "/api/v1/locations/europe-west1/").status_code == 204


# --- Permissions -------------------------------------------------------------------------------


WRITES = [
    ("post", "/api/v1/products/", {"name": "Meet", "slug": "meet"}),
    ("patch", "/api/v1/products/gmail/", {"position": 9}),
    ("delete", "/api/v1/products/gmail/", None),
    ("post", "/api/v1/products/gmail/archive/", None),
    ("post", "/api/v1/product-groups/", {"name": "Storage"}),
    ("post", "/api/v1/locations/", {"name": "europe-west1"}),
    ("delete", "/api/v1/locations/us-central1/", None),
]


@pytest.mark.parametrize(("method", "url", "payload"), WRITES)
def test_only_staff_who_may_edit_write_the_catalogue(
    method: str, url: str, payload: Any, world: World, alice: User, bob: User, viewer: Client, anon: Client
) -> None:
    before = list(Product.objects.values_list("slug", "position", "archived_at").order_by("slug"))
    assert_error(send(client_for(bob), method, url, payload), 403, "permission_denied")  # not staff
    assert_error(send(client_for(alice, "read"), method, url, payload), 403, "permission_denied")  # read key
    denied = assert_error(send(viewer, method, url, payload), 403, "permission_denied")  # role
    assert "role" in denied["detail"]
    assert send(anon, method, url, payload).status_code == 401
    assert list(Product.objects.values_list("slug", "position", "archived_at").order_by("slug")) == before
    assert not ProductGroup.objects.filter(name="Storage").exists()
    assert set(Location.objects.values_list("name", flat=True)) == {"us-central1", "us-central1-b"}


def test_the_public_does_not_see_staff_only_or_archived_products(anon: Client, world: World) -> None:
    assert anon.get("/api/v1/products/billing-backend/").status_code == 404
    Product.objects.filter(slug="gmail").update(archived_at=utc(2026, 1, 1))
    assert anon.get("/api/v1/products/gmail/").status_code == 404
