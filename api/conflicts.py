"""Writes the state of the rows refuses, answered 409 with the service's message: above
all deletes that history refers to (the services raise `core.errors.InUse`; the message
says what to do instead)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

from django.core.exceptions import ValidationError
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions, status

from api import serializers as s
from api.base import errors
from core.errors import InUse

# The errors a staff DELETE documents besides its 409.
DELETE_ERRORS = (401, 403, 404, 412, 429, 503)


class InUseConflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "Other records refer to this one: it cannot be deleted."
    default_code = "in_use"


@contextmanager
def conflict_on(refusal: type[ValidationError], conflict: type[exceptions.APIException]) -> Iterator[None]:
    """A service's refusal that is not bad input (the state of the rows refuses the write) as
    the 409 `conflict` exception, carrying the service's message."""
    try:
        yield
    except refusal as refused:
        raise conflict(" ".join(refused.messages)) from None


def refused_when_in_use() -> AbstractContextManager[None]:
    return conflict_on(InUse, InUseConflict)


def delete_errors(in_use: str, codes: tuple[int, ...] = DELETE_ERRORS) -> dict[int, OpenApiResponse]:
    """A DELETE's documented errors; its 409 says what refuses it."""
    return {**errors(*codes), 409: OpenApiResponse(s.ErrorSerializer, description=in_use)}
