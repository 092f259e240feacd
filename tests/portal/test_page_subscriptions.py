"""Subscribers of an audience or internal page: that page's words, its scope only, never
to the public subscribers, once per event, one-click unsubscribe, signed webhooks and
the maintenance reminder (docs/adr/0034-page-subscribers.md)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.test import Client
from freezegun import freeze_time
from standardwebhooks.webhooks import Webhook

from audiences import services as audience_services
from audiences.models import Page
from audiences.selectors import SESSION_CUSTOMER, SESSION_EMAIL
from credits import services as credit_services
from credits.models import Customer
from incidents import services
from incidents.models import ImpactWindow, Incident, Location, Product
from outbox.models import OutboundMessage
from portal import page_notifications, page_subscriptions
from portal.models import PageEvent, PageSubscriber, PortalAccess
from subscriptions.maintenance import maintenance_remind_due
from tests.builders import make_location, make_product, utc
from tests.subscriptions.builders import make_subscriber
from tests.subscriptions.conftest import WebhookReceiver, webhook_receiver  # noqa: F401

pytestmark = pytest.mark.django_db

TAILSPIN = "ops@tailspin.example"
NORTHWIND = "it@northwind.example"
PUBLIC_WORDS = "We are investigating elevated write errors."
AUDIENCE_WORDS = "Your us-central1 buckets are affected; your credit follows."
INTERNAL_WORDS = "Shard rebalancing paused; page the storage on-call."


@pytest.fixture(autouse=True)
def _settings(settings: Any) -> None:
    settings.SITE_URL = "http://testserver"
    settings.WEBHOOK_ALLOW_PRIVATE = True
    settings.WEBHOOK_ALLOW_HTTP = True
    settings.OUTBOX_RETRY_BASE_DELAY = 0
    settings.OUTBOX_RETRY_MAX_DELAY = 0
    settings.WEBHOOK_TIMEOUT = 3


@dataclass
class World:
    gmail: Product
    storage: Product
    vpn: Product
    zone: Location
    europe: Location
    tailspin: Customer
    northwind: Customer
    internal: Page
    tailspin_page: Page
    northwind_page: Page


@pytest.fixture
def world(db: None) -> World:
    gmail = make_product("Gmail")
    storage = make_product("Cloud Storage", slug="cloud-storage", position=1)
    vpn = make_product("Corporate VPN", slug="vpn", is_public=False, position=2)
    us_central1 = make_location("us-central1")
    zone = make_location("us-central1-b", kind=Location.Kind.ZONE, parent=us_central1)
    europe = make_location("europe-west1")
    tailspin = credit_services.customer_create(name="Tailspin", billing_emails=["ap@tailspin.example"])
    northwind = credit_services.customer_create(name="Northwind", billing_emails=["ap@northwind.example"])
    PortalAccess.objects.create(customer=tailspin, domain="tailspin.example")
    PortalAccess.objects.create(customer=northwind, domain="northwind.example")
    save = audience_services.page_save
    return World(
        gmail=gmail,
        storage=storage,
        vpn=vpn,
        zone=zone,
        europe=europe,
        tailspin=tailspin,
        northwind=northwind,
        internal=save(
            actor=None,
            slug="internal",
            title="Internal status",
            visibility=Page.Visibility.INTERNAL,
            products=[gmail, storage, vpn],
        ),
        tailspin_page=save(
            actor=None,
            slug="tailspin",
            title="Tailspin page",
            visibility=Page.Visibility.AUDIENCE,
            products=[storage],
            locations=[us_central1],
            customers=[tailspin],
        ),
        northwind_page=save(
            actor=None,
            slug="northwind",
            title="Northwind page",
            visibility=Page.Visibility.AUDIENCE,
            products=[gmail],
            customers=[northwind],
        ),
    )


def contact(customer: Customer, email: str) -> Client:
    client = Client()
    session = client.session
    session[SESSION_CUSTOMER] = customer.pk
    session[SESSION_EMAIL] = email
    session.save()
    return client


def subscribe(world: World, alice: User) -> dict[str, PageSubscriber]:
    reader = page_subscriptions.Reader
    return {
        "tailspin": page_subscriptions.page_subscribe_email(
            page=world.tailspin_page, reader=reader(TAILSPIN, customer=world.tailspin), language="en"
        ),
        "northwind": page_subscriptions.page_subscribe_email(
            page=world.northwind_page, reader=reader(NORTHWIND, customer=world.northwind), language="en"
        ),
        "internal": page_subscriptions.page_subscribe_email(
            page=world.internal, reader=reader(alice.email, user=alice), language="en"
        ),
    }


def open_with_words(capture: Any, product: Product, location: Location | None, title: str) -> Incident:
    """Open an incident and give its first update the private words, in one transaction
    (as the console's update form does)."""
    start = utc(2026, 11, 21, 8)
    with capture(execute=True), transaction.atomic():
        incident = services.incident_open(
            title=title,
            impact=Incident.Impact.MAJOR,
            started_at=start,
            body=PUBLIC_WORDS,
            windows=[
                services.WindowSpec(
                    product=product,
                    level=ImpactWindow.Level.PARTIAL_OUTAGE,
                    started_at=start,
                    location=location,
                )
            ],
        )
        audience_services.update_words_set(
            actor=None,
            update=incident.updates.get(),
            audience_message=AUDIENCE_WORDS,
            internal_note=INTERNAL_WORDS,
        )
    return incident


@dataclass(frozen=True)
class Mail:
    row: OutboundMessage
    subject: str
    body_text: str
    body_html: str

    @property
    def headers(self) -> dict[str, str]:
        return dict(self.row.headers or {})

    @property
    def purpose(self) -> str:
        return self.row.purpose


def mail_to(address: str) -> list[Mail]:
    """The emails to `address` as sent (shared bodies filled in)."""
    rows = OutboundMessage.objects.filter(channel="email").order_by("id")
    return [Mail(m, *m.content()) for m in rows if address in m.to]


def test_each_page_subscriber_gets_its_page_words_and_public_subscribers_the_public_words(
    world: World, alice: User, django_capture_on_commit_callbacks: Any
) -> None:
    subscribe(world, alice)
    make_subscriber("public-fan@example.com")
    open_with_words(
        django_capture_on_commit_callbacks, world.storage, world.zone, "Cloud Storage write errors"
    )

    (customer_mail,) = mail_to(TAILSPIN)
    assert AUDIENCE_WORDS in customer_mail.body_text and AUDIENCE_WORDS in customer_mail.body_html
    assert INTERNAL_WORDS not in customer_mail.body_text + customer_mail.body_html
    assert customer_mail.subject == "[Tailspin page] Investigating: Cloud Storage write errors"
    assert "http://testserver/p/tailspin/incidents/" in customer_mail.body_text
    assert customer_mail.purpose == page_notifications.EMAIL_PURPOSE

    (staff_mail,) = mail_to(alice.email)
    assert INTERNAL_WORDS in staff_mail.body_text and AUDIENCE_WORDS not in staff_mail.body_text

    (public_mail,) = mail_to("public-fan@example.com")
    assert PUBLIC_WORDS in public_mail.body_text
    for private in (AUDIENCE_WORDS, INTERNAL_WORDS, "Tailspin page", "/p/"):
        assert private not in public_mail.body_text + public_mail.body_html + public_mail.subject

    assert mail_to(NORTHWIND) == []  # Gmail only: a Cloud Storage incident is not its page's


def test_without_private_words_a_page_subscriber_reads_the_public_message(
    world: World, alice: User, django_capture_on_commit_callbacks: Any
) -> None:
    subscribe(world, alice)
    with django_capture_on_commit_callbacks(execute=True):
        services.incident_open(
            title="Gmail delays",
            impact=Incident.Impact.MINOR,
            started_at=utc(2026, 11, 20, 10),
            body=PUBLIC_WORDS,
            windows=[
                services.WindowSpec(
                    product=world.gmail,
                    level=ImpactWindow.Level.DEGRADED_PERFORMANCE,
                    started_at=utc(2026, 11, 20, 10),
                )
            ],
        )
    (northwind_mail,) = mail_to(NORTHWIND)
    assert PUBLIC_WORDS in northwind_mail.body_text
    assert mail_to(TAILSPIN) == []


def test_a_page_hears_only_of_its_products_and_locations(
    world: World, alice: User, django_capture_on_commit_callbacks: Any
) -> None:
    subscribe(world, alice)
    make_subscriber("public-fan@example.com")
    open_with_words(django_capture_on_commit_callbacks, world.storage, world.europe, "Latency in Belgium")
    assert mail_to(TAILSPIN) == []  # us-central1 only
    assert len(mail_to(alice.email)) == 1

    # A staff-only product: the internal page's subscribers hear of it, nobody else.
    open_with_words(django_capture_on_commit_callbacks, world.vpn, None, "VPN concentrator down")
    everyone = [Mail(m, *m.content()) for m in OutboundMessage.objects.filter(channel="email")]
    vpn_mail = [m for m in everyone if "VPN concentrator" in m.subject]
    assert [m.row.to for m in vpn_mail] == [[alice.email]]


def test_each_subscriber_is_queued_once_however_often_the_event_is_expanded(
    world: World, alice: User, django_capture_on_commit_callbacks: Any
) -> None:
    subs = subscribe(world, alice)
    second = page_subscriptions.page_subscribe_email(
        page=world.tailspin_page,
        reader=page_subscriptions.Reader("cto@tailspin.example", customer=world.tailspin),
        language="fr",
    )
    # Subscribing again is the same row.
    again = page_subscriptions.page_subscribe_email(
        page=world.tailspin_page,
        reader=page_subscriptions.Reader(TAILSPIN.upper(), customer=world.tailspin),
        language="en",
    )
    assert again.pk == subs["tailspin"].pk

    with django_capture_on_commit_callbacks(execute=False):
        incident = open_with_words(
            django_capture_on_commit_callbacks, world.storage, world.zone, "Write errors"
        )
    row = PageEvent.objects.get()
    assert (
        page_notifications.page_event_record(kind="opened", incident=incident, update=incident.updates.get())
        == 0
    )
    before = OutboundMessage.objects.count()
    row.done_at, row.cursor, row.recipients = None, 0, 0
    row.save()
    while page_notifications.page_event_expand(event_id=row.pk, chunk=1):
        pass
    assert OutboundMessage.objects.count() == before  # nothing new
    assert {tuple(m.to) for m in OutboundMessage.objects.all()} == {
        (TAILSPIN,),
        (alice.email,),
        (second.email,),
    }
    (french,) = mail_to(second.email)
    assert (
        french.subject == "[Tailspin page] Analyse en cours : Write errors"
    )  # the subject collapses its spaces


def test_one_click_unsubscribe_from_the_email_header(
    world: World, alice: User, django_capture_on_commit_callbacks: Any
) -> None:
    subs = subscribe(world, alice)
    open_with_words(django_capture_on_commit_callbacks, world.storage, world.zone, "Write errors")
    (message,) = mail_to(TAILSPIN)
    assert message.headers["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    url = message.headers["List-Unsubscribe"].strip("<>").removeprefix("http://testserver")
    assert url in message.body_text

    mail_client = Client(enforce_csrf_checks=True)  # no cookie, no CSRF token
    assert mail_client.get(url).status_code == 200
    assert PageSubscriber.objects.filter(pk=subs["tailspin"].pk).exists()  # GET never unsubscribes
    assert mail_client.post(url, {"List-Unsubscribe": "One-Click"}).status_code == 200
    assert not PageSubscriber.objects.filter(pk=subs["tailspin"].pk).exists()
    assert mail_client.post(url).status_code == 200  # a retry changes nothing
    assert mail_client.post(url[:-3] + "xyz/").status_code == 400

    with django_capture_on_commit_callbacks(execute=True):
        services.incident_resolve(
            incident=Incident.objects.get(), resolved_at=utc(2026, 11, 21, 9), body="Fixed."
        )
    assert len(mail_to(TAILSPIN)) == 1 and len(mail_to(alice.email)) == 2


def test_removed_access_stops_the_words(
    world: World, alice: User, django_capture_on_commit_callbacks: Any
) -> None:
    subscribe(world, alice)
    PortalAccess.objects.filter(customer=world.tailspin).delete()
    alice.is_staff = False
    alice.save()
    open_with_words(django_capture_on_commit_callbacks, world.storage, world.zone, "Write errors")
    assert mail_to(TAILSPIN) == [] and mail_to(alice.email) == []


def test_page_webhooks_carry_the_page_words_signed_like_the_public_ones(
    world: World,
    alice: User,
    webhook_receiver: WebhookReceiver,  # noqa: F811
    django_capture_on_commit_callbacks: Any,
) -> None:
    hook = page_subscriptions.page_subscribe_webhook(
        page=world.tailspin_page,
        reader=page_subscriptions.Reader(TAILSPIN, customer=world.tailspin),
        url=webhook_receiver.url,
        language="en",
    )
    assert hook.secret.startswith("whsec_")
    open_with_words(django_capture_on_commit_callbacks, world.storage, world.zone, "Write errors")
    (request,) = webhook_receiver.requests
    payload = Webhook(hook.standard_secret).verify(request.body, request.headers)
    assert payload["update"]["body"] == AUDIENCE_WORDS
    assert payload["page"]["slug"] == "tailspin"
    assert payload["incident"]["shortlink"].startswith("http://testserver/p/tailspin/incidents/")
    assert [c["slug"] for c in payload["incident"]["components"]] == ["cloud-storage"]
    assert INTERNAL_WORDS not in request.body.decode()


def test_the_maintenance_reminder_reaches_page_subscribers_once(
    world: World, alice: User, django_capture_on_commit_callbacks: Any, settings: Any
) -> None:
    settings.MAINTENANCE_REMINDER_MINUTES = 60
    subscribe(world, alice)
    start = utc(2026, 12, 2, 17)
    with freeze_time(start - timedelta(days=2)), django_capture_on_commit_callbacks(execute=True):
        services.incident_open(
            title="Storage backend upgrade",
            kind=Incident.Kind.MAINTENANCE,
            impact=Incident.Impact.NONE,
            scheduled_for=start,
            scheduled_until=start + timedelta(hours=2),
            body="We upgrade the storage backend.",
            windows=[
                services.WindowSpec(
                    product=world.storage,
                    level=ImpactWindow.Level.UNDER_MAINTENANCE,
                    started_at=start,
                    location=world.zone,
                )
            ],
        )
    assert len(mail_to(TAILSPIN)) == 1  # scheduled
    for _ in range(2):
        with freeze_time(start - timedelta(minutes=30)), django_capture_on_commit_callbacks(execute=True):
            maintenance_remind_due()
    reminders = [m for m in mail_to(TAILSPIN) if "Maintenance starts in 30 min" in m.subject]
    assert len(reminders) == 1
    assert "starts in about 30 minutes" in reminders[0].body_text
    assert mail_to(NORTHWIND) == []


# --- The pages ---------------------------------------------------------------------------------


def test_anonymous_visitors_get_the_404_of_a_missing_page(world: World) -> None:
    anonymous = Client()
    private = anonymous.get("/portal/pages/tailspin/subscribe/")
    missing = anonymous.get("/portal/pages/no-such-page/subscribe/")
    assert private.status_code == missing.status_code == 404
    assert private.content == missing.content
    # Another customer's contact, too.
    assert contact(world.northwind, NORTHWIND).get("/portal/pages/tailspin/subscribe/").status_code == 404
    assert Client().get("/portal/pages/internal/subscribe/").status_code == 404


def test_a_public_page_asks_an_anonymous_visitor_to_sign_in(world: World) -> None:
    audience_services.page_save(
        actor=None, slug="open", title="Open page", visibility=Page.Visibility.PUBLIC, products=[world.gmail]
    )
    answer = Client().get("/portal/pages/open/subscribe/")
    assert answer.status_code == 302 and answer["Location"].startswith("/portal/login/?next=")


def test_a_contact_subscribes_adds_a_webhook_and_unsubscribes(world: World) -> None:
    client = contact(world.tailspin, TAILSPIN)
    page = client.get("/portal/pages/tailspin/subscribe/")
    assert page.status_code == 200 and page["Cache-Control"] == "private, no-store"
    assert b"Subscribe by email" in page.content

    assert client.post("/portal/pages/tailspin/subscribe/", {"action": "email"}).status_code == 302
    (subscriber,) = PageSubscriber.objects.all()
    assert (subscriber.email, subscriber.customer, subscriber.page) == (
        TAILSPIN,
        world.tailspin,
        world.tailspin_page,
    )

    refused = client.post("/portal/pages/tailspin/subscribe/", {"action": "webhook", "url": "ftp://x"})
    assert refused.status_code == 400 and PageSubscriber.objects.count() == 1
    added = client.post(
        "/portal/pages/tailspin/subscribe/", {"action": "webhook", "url": "http://127.0.0.1:9/hook"}
    )
    assert added.status_code == 302
    hook = PageSubscriber.objects.get(kind="webhook")
    assert hook.standard_secret.encode() in client.get("/portal/pages/tailspin/subscribe/").content
    again = client.post(
        "/portal/pages/tailspin/subscribe/", {"action": "webhook", "url": "http://127.0.0.1:9/hook"}
    )
    assert again.status_code == 400 and b"subscribed to this page already" in again.content
    for n in range(page_subscriptions.MAX_WEBHOOKS - 1):
        client.post(
            "/portal/pages/tailspin/subscribe/", {"action": "webhook", "url": f"http://127.0.0.1:9/h{n}"}
        )
    assert PageSubscriber.objects.filter(kind="webhook").count() == page_subscriptions.MAX_WEBHOOKS
    over = client.post(
        "/portal/pages/tailspin/subscribe/", {"action": "webhook", "url": "http://127.0.0.1:9/more"}
    )
    assert over.status_code == 400 and b"at most ten" in over.content
    PageSubscriber.objects.filter(kind="webhook").exclude(pk=hook.pk).delete()

    # Someone else's subscription cannot be removed from here.
    other = contact(world.northwind, NORTHWIND)
    other.post("/portal/pages/northwind/subscribe/", {"action": "email"})
    theirs = PageSubscriber.objects.get(email=NORTHWIND)
    assert (
        client.post(
            "/portal/pages/tailspin/subscribe/", {"action": "remove", "subscriber": theirs.pk}
        ).status_code
        == 404
    )
    client.post("/portal/pages/tailspin/subscribe/", {"action": "remove", "subscriber": subscriber.pk})
    assert set(PageSubscriber.objects.values_list("pk", flat=True)) == {hook.pk, theirs.pk}


def test_staff_subscribe_to_the_internal_page(world: World, staff_client: Client, alice: User) -> None:
    assert staff_client.post("/portal/pages/internal/subscribe/", {"action": "email"}).status_code == 302
    subscriber = PageSubscriber.objects.get()
    assert (subscriber.email, subscriber.user, subscriber.customer) == (alice.email, alice, None)
    french = staff_client.get("/fr/portal/pages/internal/subscribe/")
    assert "Les courriels de cette page sont envoyés à alice@example.org".encode() in french.content


def test_a_page_webhook_answering_410_gone_is_unsubscribed(
    world: World,
    webhook_receiver: WebhookReceiver,  # noqa: F811
    django_capture_on_commit_callbacks: Any,
) -> None:
    hook = page_subscriptions.page_subscribe_webhook(
        page=world.tailspin_page,
        reader=page_subscriptions.Reader(TAILSPIN, customer=world.tailspin),
        url=webhook_receiver.url,
        language="en",
    )
    webhook_receiver.script = [410]
    open_with_words(django_capture_on_commit_callbacks, world.storage, world.zone, "Write errors")
    assert OutboundMessage.objects.get(channel="webhook").state == "failed"
    assert not PageSubscriber.objects.filter(pk=hook.pk).exists()


def test_the_page_links_to_its_subscribe_page(world: World) -> None:
    page = contact(world.tailspin, TAILSPIN).get("/p/tailspin/")
    assert b'href="/portal/pages/tailspin/subscribe/"' in page.content


# Real commits: the fan-out runs when the update commits, so the words must be written in
# the same transaction (inside a test transaction every callback would wait for the end).
@pytest.mark.django_db(transaction=True)
def test_words_posted_through_the_console_reach_the_page_subscribers(
    world: World, alice: User, staff_client: Client
) -> None:
    subscribe(world, alice)
    start = utc(2026, 11, 30, 18)
    incident = services.incident_open(
        title="Storage errors again",
        impact=Incident.Impact.MINOR,
        started_at=start,
        body="Investigating.",
        windows=[
            services.WindowSpec(
                product=world.storage,
                location=world.zone,
                level=ImpactWindow.Level.DEGRADED_PERFORMANCE,
                started_at=start,
            )
        ],
    )
    OutboundMessage.objects.all().delete()
    data = {
        "kind": "public",
        "status": "identified",
        "body": "Found it.",
        "display_at": "2026-11-30T10:20",
        f"level_{world.storage.pk}_{world.zone.pk}": ImpactWindow.Level.DEGRADED_PERFORMANCE,
        "impact": "",
        "notify": "on",
        "audience_message": AUDIENCE_WORDS,
        "internal_note": INTERNAL_WORDS,
    }
    answer = staff_client.post(f"/manage/incidents/{incident.public_id}/update/", data)
    assert answer.status_code == 302, answer.content.decode()[:2000]
    (customer_mail,) = mail_to(TAILSPIN)
    assert AUDIENCE_WORDS in customer_mail.body_text and "Found it." not in customer_mail.body_text
    (staff_mail,) = mail_to(alice.email)
    assert INTERNAL_WORDS in staff_mail.body_text
