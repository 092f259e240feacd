"""Subscribers through the generated client: create (with a confirmation email, and a
confirmed webhook import), read, change with If-Match, a webhook's test event and secret
rotation, unsubscribe and delete. Typed calls and models only (tests/api/flows/incident.py
has the conventions). The webhook posts to a closed loopback port: the test allows
private http targets, and nothing leaves the machine.
"""

from __future__ import annotations

from flows.incident import _ok
from status_client import AuthenticatedClient
from status_client.api.subscribers import (
    subscribers_create,
    subscribers_destroy,
    subscribers_list,
    subscribers_partial_update,
    subscribers_retrieve,
    subscribers_rotate_secret_create,
    subscribers_test_event_create,
    subscribers_unsubscribe_create,
)
from status_client.models import (
    Error,
    LanguageEnum,
    PaginatedSubscriberList,
    PatchedSubscriberLanguageRequest,
    PayloadFormatEnum,
    Subscriber,
    SubscriberCreateRequest,
    SubscriberKindEnum,
    SubscribersListKind,
    SubscriberWithSecret,
    TestEvent,
    Unsubscribed,
)

HOOK_URL = "http://127.0.0.1:9/status-hook"


def run(base_url: str, key: str) -> None:
    staff = AuthenticatedClient(base_url=base_url, token=key)

    # An email subscriber, as the subscribe form makes it: unconfirmed until its link is used.
    created = _ok(
        subscribers_create.sync(
            client=staff,
            idempotency_key="flow-subscriber-1",
            body=SubscriberCreateRequest(email="flow.reader@example.com", language=LanguageEnum.EN),
        ),
        SubscriberWithSecret,
    )
    assert created.kind == SubscriberKindEnum.EMAIL and not created.confirmed and created.secret is None

    # Read, then change with If-Match; a stale ETag is a 412 and changes nothing.
    detail = subscribers_retrieve.sync_detailed(created.id, client=staff)
    etag = detail.headers["ETag"]
    changed = _ok(
        subscribers_partial_update.sync(
            created.id,
            client=staff,
            if_match=etag,
            body=PatchedSubscriberLanguageRequest(language=LanguageEnum.FR),
        ),
        Subscriber,
    )
    assert changed.language == LanguageEnum.FR
    stale = subscribers_partial_update.sync(
        created.id,
        client=staff,
        if_match=etag,
        body=PatchedSubscriberLanguageRequest(language=LanguageEnum.EN),
    )
    assert isinstance(stale, Error), stale
    assert _ok(subscribers_retrieve.sync(created.id, client=staff), Subscriber).language == LanguageEnum.FR

    # A webhook imported confirmed: its whsec_ secret is in this answer only.
    hook = _ok(
        subscribers_create.sync(
            client=staff,
            body=SubscriberCreateRequest(
                email="flow.owner@example.com",
                kind=SubscriberKindEnum.WEBHOOK,
                url=HOOK_URL,
                payload_format=PayloadFormatEnum.STATUSPAGE,
                confirmed=True,
            ),
        ),
        SubscriberWithSecret,
    )
    assert hook.confirmed and hook.secret is not None and hook.secret.startswith("whsec_")
    listed = _ok(
        subscribers_list.sync(client=staff, kind=SubscribersListKind.WEBHOOK), PaginatedSubscriberList
    )
    assert [s.id for s in listed.results] == [hook.id]

    test = _ok(subscribers_test_event_create.sync(hook.id, client=staff), TestEvent)
    assert test.event == "test" and test.webhook_id.startswith("msg_")
    rotated = _ok(subscribers_rotate_secret_create.sync(hook.id, client=staff), SubscriberWithSecret)
    assert (
        rotated.secret is not None and rotated.secret.startswith("whsec_") and rotated.secret != hook.secret
    )

    # Unsubscribe the webhook (as its own link would); delete the email subscriber.
    _ok(subscribers_unsubscribe_create.sync(hook.id, client=staff), Unsubscribed)
    etag = subscribers_retrieve.sync_detailed(created.id, client=staff).headers["ETag"]
    deleted = subscribers_destroy.sync_detailed(created.id, client=staff, if_match=etag)
    assert deleted.status_code == 204, deleted.content
    assert isinstance(subscribers_retrieve.sync(created.id, client=staff), Error)
