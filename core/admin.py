"""The service-backed admin: saves call services, and their refusals show on the form.

A service may refuse what the admin's forms accepted. It raises `ValidationError`; the
admin turns that into `ServiceRejected`, which unwinds through the admin's own
`transaction.atomic` (so nothing of the request is saved), and then renders the same
POST again with the service's messages added to the form.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.forms import BaseForm, ModelForm
from django.http import HttpRequest, HttpResponse

if TYPE_CHECKING:
    ModelAdminBase = admin.ModelAdmin[Any]
    TabularInlineBase = admin.TabularInline[Any, Any]
    StackedInlineBase = admin.StackedInline[Any, Any]
else:
    ModelAdminBase = admin.ModelAdmin
    TabularInlineBase = admin.TabularInline
    StackedInlineBase = admin.StackedInline

_REJECTION_ATTR = "_service_rejection"


# --- Service errors back onto forms ---------------------------------------------------------


class ServiceRejected(Exception):
    """A service refused a save; carries its error and which part of the page it concerns."""

    def __init__(self, error: ValidationError, *, context: str = "") -> None:
        super().__init__(str(error))
        self.error = error
        self.context = context


def add_validation_errors(form: BaseForm, error: ValidationError, *, context: str = "") -> None:
    """Put a service's errors on the form: on the field when the form has it, else on top."""
    prefix = f"{context}: " if context else ""
    if hasattr(error, "error_dict"):
        for field, errors in error.error_dict.items():
            texts = [text for e in errors for text in e.messages]
            if not context and field in form.fields:
                form.add_error(field, texts)
            elif field == NON_FIELD_ERRORS:
                form.add_error(None, [prefix + text for text in texts])
            else:
                label = field.replace("_", " ")
                form.add_error(None, [f"{prefix}{label}: {text}" for text in texts])
    else:
        form.add_error(None, [prefix + text for text in error.messages])


def with_rejection(form_class: type[ModelForm[Any]], rejected: ServiceRejected) -> type[ModelForm[Any]]:
    class RejectedForm(form_class):  # type: ignore[valid-type,misc]
        def clean(self) -> Any:
            cleaned = super().clean()
            add_validation_errors(self, rejected.error, context=rejected.context)
            return cleaned

    RejectedForm.__name__ = form_class.__name__
    return RejectedForm


def record_formset(formset: Any, *, new: list[Any], changed: list[Any], deleted: list[Any]) -> None:
    # The admin's change message reads these, which `formset.save()` would have set.
    formset.new_objects = new
    formset.changed_objects = changed
    formset.deleted_objects = deleted


class ServiceModelAdmin(ModelAdminBase):
    """A ModelAdmin whose saves call services and whose refusals show on the form."""

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except ServiceRejected as rejected:
            # The admin ran the save inside transaction.atomic, which the exception has
            # rolled back. Bind the same POST again; the form now carries the error.
            setattr(request, _REJECTION_ATTR, rejected)
            return super().changeform_view(request, object_id, form_url, extra_context)

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> type[ModelForm[Any]]:
        form_class = super().get_form(request, obj, change, **kwargs)
        rejected = getattr(request, _REJECTION_ATTR, None)
        return with_rejection(form_class, rejected) if rejected else form_class


def actor(request: HttpRequest) -> Any:
    """The signed-in staff member (the admin views only run for authenticated staff)."""
    return request.user


def call_service(context: str, func: Any, /, **kwargs: Any) -> Any:
    try:
        return func(**kwargs)
    except ValidationError as exc:
        raise ServiceRejected(exc, context=context) from exc


def adopt(obj: Any, saved: Any) -> None:
    """Make the admin's unsaved form instance stand for the row a service created, so the
    admin's redirect and change message name the right object."""
    obj.pk = saved.pk
    obj._state.adding = False
    obj._state.db = saved._state.db
