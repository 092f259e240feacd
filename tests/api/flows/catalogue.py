"""Managing the catalogue and an incident's parts through the generated client (issue 31):
products, a group and a location created, changed with If-Match and deleted; a product
with history refused (409) and archived instead; an action item closed; a timeline
update corrected with If-Match; a message template written and deleted. Typed calls and models only, as in flows/incident.py.
"""

from __future__ import annotations

import datetime
from typing import TypeVar

from status_client import AuthenticatedClient
from status_client.api.action_items import action_items_close_create, action_items_create
from status_client.api.incidents import (
    incidents_create,
    incidents_updates_list,
    incidents_updates_partial_update,
    incidents_updates_retrieve,
    incidents_windows_list,
)
from status_client.api.locations import (
    locations_create,
    locations_destroy,
    locations_partial_update,
    locations_retrieve,
)
from status_client.api.product_groups import (
    product_groups_create,
    product_groups_partial_update,
    product_groups_retrieve,
)
from status_client.api.products import (
    products_archive_create,
    products_create,
    products_destroy,
    products_partial_update,
    products_retrieve,
)
from status_client.api.templates import (
    templates_create,
    templates_destroy,
    templates_partial_update,
    templates_retrieve,
)
from status_client.models import (
    ActionItem,
    ActionItemCloseRequest,
    ActionItemCloseStatusEnum,
    ActionItemCreateRequest,
    ActionStatusEnum,
    Error,
    Incident,
    IncidentCreateRequest,
    IncidentStatusEnum,
    LevelEnum,
    Location,
    LocationKindEnum,
    LocationWriteRequest,
    PatchedLocationWriteRequest,
    PatchedProductGroupWriteRequest,
    PatchedProductWriteRequest,
    PatchedTemplateWriteRequest,
    PatchedUpdateEditRequest,
    Product,
    ProductGroup,
    ProductGroupWriteRequest,
    ProductWriteRequest,
    Template,
    TemplateKindEnum,
    TemplateWriteRequest,
    Update,
    Window,
    WindowInputRequest,
)

T = TypeVar("T")


def _ok(value: T | Error | None, kind: type[T]) -> T:
    if isinstance(value, Error):
        raise AssertionError(f"API error {value.error.code}: {value.error.message}")
    assert isinstance(value, kind), value
    return value


def _refused(value: object, code: str) -> Error:
    assert isinstance(value, Error), value
    assert value.error.code == code, value.error
    return value


def run(base_url: str, key: str) -> None:
    staff = AuthenticatedClient(base_url=base_url, token=key)

    # A group, a product in it, and a location.
    group = _ok(
        product_groups_create.sync(
            client=staff, body=ProductGroupWriteRequest(name="Collaboration", position=3)
        ),
        ProductGroup,
    )
    meet = _ok(
        products_create.sync(
            client=staff,
            idempotency_key="flow-catalogue-meet",
            body=ProductWriteRequest(
                name="Meet", slug="meet", group="Collaboration", description="Video calls."
            ),
        ),
        Product,
    )
    assert meet.group == "Collaboration" and meet.archived_at is None
    region = _ok(
        locations_create.sync(
            client=staff,
            body=LocationWriteRequest(
                name="europe-west1", display_name="Belgium", kind=LocationKindEnum.REGION
            ),
        ),
        Location,
    )
    assert region.parent is None

    # Changes, each with the ETag its GET returned.
    etag = products_retrieve.sync_detailed("meet", client=staff).headers["ETag"]
    moved = _ok(
        products_partial_update.sync(
            "meet",
            client=staff,
            if_match=etag,
            body=PatchedProductWriteRequest(position=5, name="Google Meet"),
        ),
        Product,
    )
    assert (moved.name, moved.position) == ("Google Meet", 5)
    stale = products_partial_update.sync(
        "meet", client=staff, if_match=etag, body=PatchedProductWriteRequest(position=6)
    )
    _refused(stale, "precondition_failed")
    etag = product_groups_retrieve.sync_detailed(group.id, client=staff).headers["ETag"]
    renamed = _ok(
        product_groups_partial_update.sync(
            group.id, client=staff, if_match=etag, body=PatchedProductGroupWriteRequest(name="Meetings")
        ),
        ProductGroup,
    )
    assert renamed.products == ["meet"]
    etag = locations_retrieve.sync_detailed("europe-west1", client=staff).headers["ETag"]
    relabelled = _ok(
        locations_partial_update.sync(
            "europe-west1",
            client=staff,
            if_match=etag,
            body=PatchedLocationWriteRequest(display_name="St. Ghislain"),
        ),
        Location,
    )
    assert relabelled.display_name == "St. Ghislain"

    # History: a past incident on Meet, with an action item and a timeline to correct.
    start = datetime.datetime(2026, 9, 14, 10, 0, tzinfo=datetime.UTC)
    incident = _ok(
        incidents_create.sync(
            client=staff,
            body=IncidentCreateRequest(
                title="Meet calls dropped",
                body="Calls drop after a minute.",
                windows=[
                    WindowInputRequest(
                        product="meet",
                        location="europe-west1",
                        level=LevelEnum.MAJOR_OUTAGE,
                        started_at=start,
                        ended_at=start + datetime.timedelta(minutes=40),
                    )
                ],
            ),
        ),
        Incident,
    )
    assert str(incident.impact) == "critical"  # the worst window, as in the console
    windows = incidents_windows_list.sync(incident.id, client=staff)
    assert isinstance(windows, list) and [w.product for w in windows if isinstance(w, Window)] == ["meet"]

    updates = incidents_updates_list.sync(incident.id, client=staff)
    assert isinstance(updates, list) and len(updates) == 1
    first = updates[0]
    etag = incidents_updates_retrieve.sync_detailed(incident.id, first.id, client=staff).headers["ETag"]
    corrected = _ok(
        incidents_updates_partial_update.sync(
            incident.id,
            first.id,
            client=staff,
            if_match=etag,
            body=PatchedUpdateEditRequest(body="Calls dropped after a minute in Belgium."),
        ),
        Update,
    )
    assert corrected.edited_at is not None

    item = _ok(
        action_items_create.sync(
            client=staff, body=ActionItemCreateRequest(incident=incident.id, title="Alert on dropped calls")
        ),
        ActionItem,
    )
    closed = _ok(
        action_items_close_create.sync(
            item.id, client=staff, body=ActionItemCloseRequest(status=ActionItemCloseStatusEnum.DONE)
        ),
        ActionItem,
    )
    assert closed.status == ActionStatusEnum.DONE

    # Deletes: history refuses them (409), so Meet is archived; a product and a location
    # nothing refers to are deleted.
    _refused(products_destroy.sync("meet", client=staff), "in_use")
    _refused(locations_destroy.sync("europe-west1", client=staff), "in_use")
    archived = _ok(products_archive_create.sync("meet", client=staff), Product)
    assert archived.archived_at is not None

    spare = _ok(
        products_create.sync(client=staff, body=ProductWriteRequest(name="Spare", slug="spare")), Product
    )
    etag = products_retrieve.sync_detailed(spare.slug, client=staff).headers["ETag"]
    assert products_destroy.sync_detailed(spare.slug, client=staff, if_match=etag).status_code == 204
    _ok(locations_create.sync(client=staff, body=LocationWriteRequest(name="asia-east1")), Location)
    assert locations_destroy.sync_detailed("asia-east1", client=staff).status_code == 204

    # A message template: created, changed with If-Match, deleted.
    template = _ok(
        templates_create.sync(
            client=staff,
            body=TemplateWriteRequest(
                name="Calls dropping", kind=TemplateKindEnum.UPDATE, body="Calls drop."
            ),
        ),
        Template,
    )
    etag = templates_retrieve.sync_detailed(template.id, client=staff).headers["ETag"]
    changed = _ok(
        templates_partial_update.sync(
            template.id,
            client=staff,
            if_match=etag,
            body=PatchedTemplateWriteRequest(status=IncidentStatusEnum.IDENTIFIED),
        ),
        Template,
    )
    assert changed.status == IncidentStatusEnum.IDENTIFIED and changed.body == "Calls drop."
    assert templates_destroy.sync_detailed(template.id, client=staff).status_code == 204
