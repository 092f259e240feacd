"""The staff console: thin views. Parse the form, call one service, redirect.

Every view is staff-only, needs a role that may read the console (core.roles), and runs
in settings.DISPLAY_TIME_ZONE, so times are shown and typed in the zone the public page
uses (and named next to them); the database and the services see UTC. The services check
each write against the user's role; a refusal is a 403 page with its message.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Q
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from alerts import services as alert_services
from console import selectors
from console import services as console_services
from console.forms import DeclareForm, TemplateForm
from console.models import MessageTemplate
from core import roles
from core.admin import add_validation_errors
from core.timezones import display_zone_active
from incidents import services
from incidents.models import Incident
from incidents.selectors import incident_get_for_user

View = Callable[..., HttpResponse]


def console_view(view: View) -> View:
    """Staff only (else the Django login), with a role that may read the console, in the
    display time zone, never cached. A write the role does not allow is a 403 page."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not roles.allowed(request.user, "console.view"):
            response = _no_role(request)
        else:
            try:
                with display_zone_active():
                    response = view(request, *args, **kwargs)
            except PermissionDenied as refused:
                response = refused_page(request, str(refused))
        response["Cache-Control"] = "no-store"
        return response

    return staff_member_required(wrapper)


def refused_page(request: HttpRequest, message: str, *, ask: list[str] | None = None) -> HttpResponse:
    return render(request, "console/403.html", {"message": message, "ask": ask}, status=403)


def _no_role(request: HttpRequest) -> HttpResponse:
    """A staff account in no role: say so, and name the people who can give it one."""
    administrators = (
        User.objects.filter(is_active=True, is_staff=True)
        .filter(Q(is_superuser=True) | Q(groups__name="Administrator"))
        .distinct()
        .order_by("username")
        .values_list("username", flat=True)[:10]
    )
    message = "Your account has no role in the console yet, so it cannot read or change anything here."
    return refused_page(request, message, ask=list(administrators))


def _require(request: HttpRequest, action: str) -> None:
    """Refuse a page that exists only to take an action the user's role does not allow
    (the services check the write itself again)."""
    roles.check(request.user, action)


def _user(request: HttpRequest) -> User:
    user = request.user
    assert isinstance(user, User)  # console_view let only a signed-in staff member in
    return user


def _incident(request: HttpRequest, public_id: str) -> Incident:
    return incident_get_for_user(public_id=public_id, user=request.user)


def _template(request: HttpRequest, kind: str) -> MessageTemplate | None:
    pk = request.GET.get("template", "")
    if not pk.isdigit():
        return None
    return MessageTemplate.objects.filter(pk=int(pk), kind=kind).first()


def _templates(kind: str) -> list[MessageTemplate]:
    return list(MessageTemplate.objects.filter(kind=kind).order_by("name"))


# --- Now ------------------------------------------------------------------------------------


@console_view
def now(request: HttpRequest) -> HttpResponse:
    page = selectors.now_page(now=timezone.now())
    return render(request, "console/now.html", {"page": page, "today": timezone.localdate()})


# --- Declare --------------------------------------------------------------------------------


@console_view
def declare(request: HttpRequest) -> HttpResponse:
    _require(request, "incident.declare")
    groups = selectors.products_by_group()
    preview = ""
    if request.method == "POST":
        form = DeclareForm(request.POST, groups=groups)
        if "_preview" in request.POST:
            preview = request.POST.get("body", "")
        elif form.is_valid():
            incident = _declare(request, form)
            if incident is not None:
                what = "Published" if incident.is_public else "Saved the draft of"
                messages.success(request, f"{what} “{incident.title}”.")
                return HttpResponseRedirect(reverse("console:incident", args=[incident.public_id]))
    else:
        template = _template(request, MessageTemplate.Kind.INCIDENT)
        initial: dict[str, Any] = {"started_at": timezone.localtime().replace(second=0, microsecond=0)}
        if template is not None:
            initial.update(title=template.title, body=template.body)
            if template.status:
                initial["status"] = template.status
        form = DeclareForm(initial=initial, groups=groups)
    return render(
        request,
        "console/declare.html",
        {"form": form, "preview": preview, "templates": _templates(MessageTemplate.Kind.INCIDENT)},
    )


def _declare(request: HttpRequest, form: DeclareForm) -> Incident | None:
    data = form.cleaned_data
    started_at = data["started_at"] or timezone.now()
    affected = form.affected()
    # Each product's own locations; none ticked: one window for all locations.
    windows = [
        services.WindowSpec(product=product, level=level, started_at=started_at, location=location)
        for product, level, locations in affected
        for location in locations
    ]
    try:
        return services.incident_declare(
            title=data["title"],
            status=data["status"],
            impact=data["impact"] or None,  # none chosen: the service follows the worst level
            started_at=started_at,
            detected_at=data["detected_at"],
            body=data["body"],
            windows=windows,
            created_by=_user(request),
            is_public="_draft" not in request.POST,
            notify=bool(data["notify"]),
            first_update_at=data["first_update_at"],
            confirm_duplicate_of=data["confirm_duplicate_of"] or None,
        )
    except services.DuplicateTitle as warned:
        # Not an error: the form names the recent incident and asks before filing another.
        form.duplicate = warned.existing
        return None
    except ValidationError as exc:
        add_validation_errors(form, exc)
        return None


# --- One incident ---------------------------------------------------------------------------


@console_view
def incident(request: HttpRequest, public_id: str) -> HttpResponse:
    page = selectors.console_incident(incident=_incident(request, public_id))
    return render(request, "console/incident.html", {"page": page, "incident": page.incident})


@console_view
@require_POST
def publish_draft(request: HttpRequest, public_id: str) -> HttpResponse:
    incident = _incident(request, public_id)
    try:
        # Also cancels a pending auto-publish of an alert-fed draft.
        alert_services.alert_draft_publish(incident=incident, actor=_user(request))
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, "Published: the incident is on the public page now.")
    return HttpResponseRedirect(reverse("console:incident", args=[incident.public_id]))


# --- Templates -----------------------------------------------------------------------------------


@console_view
def templates(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "console/templates.html",
        {"templates": MessageTemplate.objects.order_by("kind", "name")},
    )


@console_view
def template_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    _require(request, "template.write")
    template = get_object_or_404(MessageTemplate, pk=pk) if pk is not None else None
    if request.method == "POST":
        form = TemplateForm(request.POST)
        if form.is_valid():
            try:
                saved = console_services.template_save(
                    template=template,
                    actor=_user(request),
                    **form.cleaned_data,
                )
            except ValidationError as exc:
                add_validation_errors(form, exc)
            else:
                messages.success(request, f"Saved the template “{saved.name}”.")
                return HttpResponseRedirect(reverse("console:templates"))
    else:
        initial = (
            {
                "name": template.name,
                "kind": template.kind,
                "title": template.title,
                "status": template.status,
                "body": template.body,
            }
            if template
            else {"kind": MessageTemplate.Kind.UPDATE}
        )
        form = TemplateForm(initial=initial)
    return render(request, "console/template_form.html", {"form": form, "template": template})


@console_view
@require_POST
def template_delete(request: HttpRequest, pk: int) -> HttpResponse:
    template = get_object_or_404(MessageTemplate, pk=pk)
    console_services.template_delete(template=template, actor=_user(request))
    messages.success(request, f"Deleted the template “{template.name}”.")
    return HttpResponseRedirect(reverse("console:templates"))


# --- Markdown preview (the live preview's endpoint) ----------------------------------------------


@console_view
@require_POST
def preview(request: HttpRequest) -> HttpResponse:
    """The body rendered by the one Markdown filter the public page uses."""
    return render(request, "console/_preview.html", {"body": request.POST.get("body", "")[:100_000]})
