"""Errors the services raise that every interface answers the same way."""

from __future__ import annotations

from django.core.exceptions import ValidationError


class InUse(ValidationError):
    """A delete refused because history refers to the row (the API answers 409; the admin
    shows the message on the form, as for any ValidationError). The message says what to
    do instead (archive, deactivate, move the rows that refer to it)."""


class NotApproved(ValidationError):
    """A report published before it was approved (the API answers 409; the console, the
    admin and the command show the message). Docs: docs/adr/0021-report-review.md."""
