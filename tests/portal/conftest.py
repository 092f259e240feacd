from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command
from django.test import Client
from freezegun import freeze_time

from outbox.models import OutboundMessage

# After the Cloud Storage incident of 8-9 October 2026, inside the portal's six months.
TODAY = "2026-11-29 20:00:00"
TAILSPIN = "ops@tailspin.example"  # Cloud Storage in us-central1
NORTHWIND = "it@northwind.example"  # Gmail only


@pytest.fixture
def demo(db: None) -> None:
    with freeze_time(TODAY):
        call_command("load_demo", stdout=io.StringIO())


def link_in(message: OutboundMessage) -> str:
    """The path of the sign-in link a message carries."""
    found = re.search(r"https?://[^/\s]+(/portal/signin/[^\s]+/)", message.body_text)
    assert found, message.body_text
    return found.group(1)


def last_link(email: str) -> str:
    message = OutboundMessage.objects.filter(purpose="portal.signin", to=[email]).order_by("-id").first()
    assert message is not None, f"no sign-in email to {email}"
    return link_in(message)


def sign_in(client: Client, email: str) -> None:
    assert client.post("/portal/login/", {"email": email}).status_code == 200
    path = last_link(email)
    assert client.post(path).status_code == 302
