"""outbox.clean_addresses: the quick match for everyday addresses accepts nothing that
Django's email validator refuses, and the validator still decides everything else."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from hypothesis import given, settings
from hypothesis import strategies as st

from outbox import services


@settings(max_examples=400, deadline=None)
@given(st.from_regex(services.validation._PLAIN_ADDRESS, fullmatch=True))
def test_every_address_the_quick_match_takes_the_validator_takes_too(address: str) -> None:
    validate_email(address)  # raises if the quick match let through what Django refuses
    assert services.clean_addresses([address]) == [address]


@pytest.mark.parametrize(
    "address",
    [
        "billing@customer.example",
        "first.last+credits@mail.example.co.uk",
        "a_b-c@x-y.example",
    ],
)
def test_everyday_addresses_take_the_quick_match(address: str) -> None:
    assert services.validation._PLAIN_ADDRESS.match(address)
    assert services.clean_addresses([address]) == [address]


@pytest.mark.parametrize(
    "address",
    [
        "o'brien@example.com",  # refused before either check: a quote
        "user@[192.0.2.1]",  # an address literal: the validator decides
        "user@localhost",  # on the validator's allow list
        "josé@example.com",  # not ASCII: the validator decides
    ],
)
def test_the_rest_goes_through_the_validator(address: str) -> None:
    assert not services.validation._PLAIN_ADDRESS.match(address)
    try:
        validate_email(address)
        django_says = True
    except ValidationError:
        django_says = False
    try:
        services.clean_addresses([address])
        we_say = True
    except ValidationError:
        we_say = False
    # The quote is refused before the validator is asked; everything else as it says.
    assert we_say == (django_says and "'" not in address)


@pytest.mark.parametrize(
    "address",
    ["a..b@example.com", ".a@example.com", "a@-example.com", "a@example.c", "a@example", "@example.com"],
)
def test_malformed_addresses_are_refused(address: str) -> None:
    assert not services.validation._PLAIN_ADDRESS.match(address)
    with pytest.raises(ValidationError):
        services.clean_addresses([address])
