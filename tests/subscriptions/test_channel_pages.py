"""The subscribe form per channel (issue 29): each channel's fields only, with or without
JavaScript; an error summary that takes the focus; "confirm" until the address is
confirmed; Slack and Teams manage pages without the webhook-signing text; the time zone
chosen at subscribe and changed on the manage page."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core import mail
from django.test import Client

from outbox.models import OutboundMessage
from subscriptions.models import Subscriber
from subscriptions.tokens import Purpose, make_token
from tests.subscriptions.builders import make_subscriber

pytestmark = pytest.mark.django_db

SLACK_URL = "https://hooks.slack.com/services/T000/B000/XXXX"
TEAMS_URL = "https://acme.webhook.office.com/webhookb2/abc"


@pytest.fixture(autouse=True)
def _site(settings: Any) -> None:
    settings.SITE_NAME = "Acme"
    settings.DISPLAY_TIME_ZONE = "US/Pacific"
    # Deliveries are not what these tests look at; the addresses need not resolve.
    settings.WEBHOOK_ALLOW_PRIVATE = True


def _names(html: str) -> set[str]:
    """The names of the form's fields on the page."""
    form = html.split('<form class="form"', 1)[1].split("</form>", 1)[0]
    return set(re.findall(r'name="([a-z_]+)"', form)) - {"csrfmiddlewaretoken"}


def _post(client: Client, capture: Any, **data: Any) -> Any:
    with capture(execute=True):
        return client.post("/subscribe/", {"scope": "all", **data}, REMOTE_ADDR="203.0.113.7")


@pytest.mark.parametrize(
    ("query", "fields", "current"),
    [
        ("", {"kind", "email", "time_zone", "scope", "products"}, "Email"),
        ("?channel=email", {"kind", "email", "time_zone", "scope", "products"}, "Email"),
        ("?channel=webhook", {"kind", "url", "email", "payload_format", "scope", "products"}, "Webhook"),
        ("?channel=slack", {"kind", "url", "email", "scope", "products"}, "Slack"),
        ("?channel=teams", {"kind", "url", "email", "scope", "products"}, "Microsoft Teams"),
        ("?channel=pigeon", {"kind", "email", "time_zone", "scope", "products"}, "Email"),
    ],
)
def test_it_shows_the_chosen_channels_fields_only(
    client: Client, gmail, query: str, fields: set[str], current: str
) -> None:
    response = client.get("/subscribe/" + query)
    assert response.status_code == 200
    html = response.content.decode()
    assert _names(html) == fields
    # Every channel is a link (no script needed), the shown one marked as current.
    for channel in ("email", "webhook", "slack", "teams"):
        assert f'href="/subscribe/?channel={channel}"' in html
    switch = html.split('id="channel-choice"', 1)[1].split("</nav>", 1)[0]
    assert re.findall(r'<a href="[^"]+" aria-current="page">([^<]+)</a>', switch) == [current]
    assert "error-summary" not in html


def test_it_labels_each_channels_url_for_what_it_is(client: Client) -> None:
    slack = client.get("/subscribe/?channel=slack").content.decode()
    assert "Slack incoming-webhook URL" in slack and "hooks.slack.com" in slack
    assert "Your email address" in slack
    teams = client.get("/fr/subscribe/?channel=teams").content.decode()
    assert "URL du webhook entrant Teams" in teams and "Votre adresse de courriel" in teams
    email = client.get("/subscribe/").content.decode()
    assert "Webhook URL" not in email and "incoming-webhook" not in email


def test_the_time_zone_defaults_to_the_pages_zone_and_is_stored(
    client: Client, gmail, django_capture_on_commit_callbacks
) -> None:
    page = client.get("/subscribe/").content.decode()
    assert re.findall(r'<option value="([^"]+)" selected>', page) == ["US/Pacific"]
    assert '<optgroup label="Europe">' in page and '<option value="Europe/Paris">Paris</option>' in page

    assert (
        _post(
            client,
            django_capture_on_commit_callbacks,
            kind="email",
            email="paris@example.com",
            time_zone="Europe/Paris",
        ).status_code
        == 302
    )
    assert Subscriber.objects.get(email="paris@example.com").time_zone == "Europe/Paris"
    # A form without the field (an old page, a script): the page's zone.
    assert (
        _post(client, django_capture_on_commit_callbacks, kind="email", email="old@example.com").status_code
        == 302
    )
    assert Subscriber.objects.get(email="old@example.com").time_zone == "US/Pacific"
    # A hook's messages are not written in a zone of its choosing: a posted one is ignored.
    _post(
        client,
        django_capture_on_commit_callbacks,
        kind="slack",
        email="ops@example.com",
        url=SLACK_URL,
        time_zone="Asia/Tokyo",
    )
    assert Subscriber.objects.get(email="ops@example.com").time_zone == ""


def test_it_refuses_an_unknown_zone_with_a_summary_and_changes_nothing(
    client: Client, gmail, django_capture_on_commit_callbacks
) -> None:
    response = _post(
        client,
        django_capture_on_commit_callbacks,
        kind="email",
        email="erin@example.com",
        time_zone="Etc/GMT+5",
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert '<a href="#id_time_zone">Choose a time zone from the list.</a>' in html
    assert (
        'aria-invalid="true" aria-describedby="id_time_zone_helptext id_time_zone_error" id="id_time_zone"'
        in html
    )
    assert not Subscriber.objects.exists() and not OutboundMessage.objects.exists() and mail.outbox == []


def test_a_refused_form_opens_on_an_error_summary_that_has_the_focus(
    client: Client, gmail, django_capture_on_commit_callbacks
) -> None:
    response = _post(
        client, django_capture_on_commit_callbacks, kind="slack", email="", url="https://example.com/hook"
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "<title>Error: Subscribe" in html
    summary = html.split('<div class="error-summary"', 1)[1].split("</div>", 1)[0]
    # Focusable by script and taken on load; headed; one link per problem, in form order.
    assert 'tabindex="-1" autofocus aria-labelledby="error-summary-title"' in summary
    assert re.findall(r'<a href="#([^"]+)">([^<]+)</a>', summary) == [
        ("id_url", "A Slack incoming-webhook URL starts with https://hooks.slack.com/."),
        ("id_email", "Enter your email address."),
    ]
    assert "error-summary.js" in html
    # Still the Slack page: its fields only, what was typed kept, the channel kept.
    assert _names(html) == {"kind", "url", "email", "scope", "products"}
    assert 'value="https://example.com/hook"' in html and 'name="kind" value="slack"' in html
    assert 'aria-describedby="id_url_helptext id_url_error" aria-invalid="true"' in html
    assert not Subscriber.objects.exists() and mail.outbox == []


def test_a_refused_choice_links_to_its_group_and_a_bad_channel_to_the_switch(
    client: Client, gmail, django_capture_on_commit_callbacks
) -> None:
    html = _post(
        client, django_capture_on_commit_callbacks, kind="email", email="erin@example.com", scope="some"
    ).content.decode()
    assert '<a href="#products-group">Choose at least one product, or all of them.</a>' in html
    assert 'id="products-group" aria-describedby="products-error"' in html
    html = _post(
        client, django_capture_on_commit_callbacks, kind="pigeon", email="erin@example.com"
    ).content.decode()
    assert re.search(r'<a href="#channel-choice">Select a valid choice\.[^<]*</a>', html)
    assert not Subscriber.objects.exists()


def test_each_channel_subscribes_with_its_own_fields(
    client: Client, gmail, django_capture_on_commit_callbacks
) -> None:
    for kind, url in (("slack", SLACK_URL), ("teams", TEAMS_URL), ("webhook", "https://example.com/hook")):
        response = _post(
            client,
            django_capture_on_commit_callbacks,
            kind=kind,
            email=f"{kind}@example.com",
            url=url,
            payload_format="statuspage",
        )
        assert response.status_code == 302, response.content
    assert {s.kind: (s.url, s.payload_format) for s in Subscriber.objects.all()} == {
        "slack": (SLACK_URL, "native"),  # only a generic webhook has a choice of shape
        "teams": (TEAMS_URL, "native"),
        "webhook": ("https://example.com/hook", "statuspage"),
    }
    # The email page has no URL field: a URL posted with it is not read.
    _post(client, django_capture_on_commit_callbacks, kind="email", email="erin@example.com", url=SLACK_URL)
    assert Subscriber.objects.get(email="erin@example.com").url == ""


def test_it_asks_to_confirm_until_the_address_is_confirmed(
    client: Client, gmail, django_capture_on_commit_callbacks
) -> None:
    response = _post(client, django_capture_on_commit_callbacks, kind="email", email="erin@example.com")
    sent = client.get(response["Location"]).content.decode()
    assert "<title>Confirm your subscription" in sent and "You are not subscribed yet." in sent
    assert "You are subscribed" not in sent

    (message,) = mail.outbox
    body = str(message.body)
    html = str(message.alternatives[0][0])  # type: ignore[union-attr]
    assert message.subject == "Confirm your subscription to Acme status"
    for part in (body, html):
        assert "You are not subscribed yet." in part
        assert "someone asked to subscribe erin@example.com to Acme status notifications." in part
        # Nothing says it is subscribed, nor offers to change or leave what does not exist yet.
        assert "erin@example.com subscribed" not in part and "Choose products" not in part
    assert body.startswith("Confirm your subscription to Acme status\n\n")

    subscriber = Subscriber.objects.get()
    manage = f"/subscriptions/manage/{make_token(subscriber, Purpose.MANAGE)}/"
    assert "Not subscribed yet: waiting for confirmation" in client.get(manage).content.decode()
    confirm = re.search(r"http://testserver(/subscribe/confirm/[^/\s]+/)", body)
    assert confirm is not None
    done = client.post(confirm.group(1))
    page = client.get(done["Location"]).content.decode()
    assert "You are subscribed." in page and "<dd>Subscribed</dd>" in page


def test_a_chat_channels_confirmation_names_the_channel_not_the_url(
    client: Client, gmail, django_capture_on_commit_callbacks
) -> None:
    _post(client, django_capture_on_commit_callbacks, kind="teams", email="ops@example.com", url=TEAMS_URL)
    (message,) = mail.outbox
    assert (
        "asked to send Acme status notifications to a Microsoft Teams channel and gave ops@example.com"
        in message.body
    )
    assert TEAMS_URL not in message.body + message.alternatives[0][0]  # type: ignore[attr-defined]


def _manage(client: Client, subscriber: Subscriber, lang: str = "") -> str:
    return client.get(
        f"{lang}/subscriptions/manage/{make_token(subscriber, Purpose.MANAGE)}/"
    ).content.decode()


def test_only_a_generic_webhook_is_told_about_signing(client: Client, gmail) -> None:
    webhook = make_subscriber("hook@example.com", kind="webhook", url="https://example.com/hook")
    slack = make_subscriber("slack@example.com", kind="slack", url=SLACK_URL)
    teams = make_subscriber("teams@example.com", kind="teams", url=TEAMS_URL)

    page = _manage(client, webhook)
    assert "Webhook signing" in page and "X-Status-Signature" in page and webhook.secret in page
    for subscriber, own in ((slack, "as a Slack message"), (teams, "as an Adaptive Card")):
        page = _manage(client, subscriber)
        assert (
            "X-Status-Signature" not in page
            and "Signing secret" not in page
            and subscriber.secret not in page
        )
        assert "Generate a new secret" not in page
        assert own in page and "only key: anyone who has it can post there" in page
        assert 'name="time_zone"' not in page
    assert "Canal Slack" in _manage(client, slack, "/fr") and "Votre canal Slack" in _manage(
        client, slack, "/fr"
    )


def test_a_chat_channels_secret_is_not_rotated(client: Client, gmail) -> None:
    slack = make_subscriber("slack@example.com", kind="slack", url=SLACK_URL)
    response = client.post(
        f"/subscriptions/manage/{make_token(slack, Purpose.MANAGE)}/", {"action": "rotate"}
    )
    assert response.status_code == 400  # not an action of this page: a form without its fields
    slack.refresh_from_db()
    assert slack.secret == "s3cret-for-tests"


def test_the_manage_page_changes_an_email_subscribers_zone(client: Client, gmail) -> None:
    erin = make_subscriber("erin@example.com")
    url = f"/subscriptions/manage/{make_token(erin, Purpose.MANAGE)}/"
    page = client.get(url).content.decode()
    # No zone stored yet: the page's zone is shown as chosen.
    assert re.findall(r'<option value="([^"]+)" selected>', page) == ["en", "US/Pacific"]

    saved = client.post(url, {"action": "save", "scope": "all", "language": "en", "time_zone": "Asia/Tokyo"})
    assert saved.status_code == 302
    erin.refresh_from_db()
    assert erin.time_zone == "Asia/Tokyo" and erin.zone == "Asia/Tokyo"

    refused = client.post(url, {"action": "save", "scope": "all", "language": "en", "time_zone": "Tokyo"})
    assert refused.status_code == 400
    assert '<a href="#id_time_zone">Choose a time zone from the list.</a>' in refused.content.decode()
    erin.refresh_from_db()
    assert erin.time_zone == "Asia/Tokyo"
