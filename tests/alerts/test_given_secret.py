"""`integration_create(secret=...)`: the demo's published token instead of a random one.
Only its hash is kept, it authenticates like an issued one, and a weak one is refused."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from alerts import services
from alerts.models import Integration, secret_hash
from tests.builders import make_product

pytestmark = pytest.mark.django_db


def test_a_given_bearer_token_is_kept_as_its_hash_and_authenticates() -> None:
    product = make_product("Cloud Storage")
    integration = services.integration_create(
        name="am", kind="alertmanager", default_product=product, secret="demo-alertmanager-token"
    )

    assert (integration.secret, integration.secret_hash) == ("", secret_hash("demo-alertmanager-token"))
    found = services.integration_authenticate(
        integration_id=integration.pk,
        authorization="Bearer demo-alertmanager-token",
        signature="",
        body=b"{}",
    )
    assert found.pk == integration.pk
    with pytest.raises(services.IntakeUnauthorized):
        services.integration_authenticate(
            integration_id=integration.pk,
            authorization="Bearer something-else-entirely",
            signature="",
            body=b"{}",
        )


@pytest.mark.parametrize("secret", ["short", "has a space in it, sadly", "x" * 129, "line\nbreak-in-a-token"])
def test_a_weak_or_malformed_given_secret_is_refused(secret: str) -> None:
    product = make_product("Cloud Storage")
    with pytest.raises(ValidationError) as refused:
        services.integration_create(name="am", kind="alertmanager", default_product=product, secret=secret)
    assert refused.value.message_dict == {"secret": ["A given secret is 16 to 128 visible characters."]}
    assert not Integration.objects.exists()
