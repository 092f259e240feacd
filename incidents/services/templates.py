"""Message templates: written by the console and the API alike (staff with `template.write`)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction

from core import roles
from core.text import clean_single_line
from incidents.message_templates import MessageTemplate
from incidents.models import IncidentStatus


@transaction.atomic
def template_save(
    *,
    template: MessageTemplate | None = None,
    name: str,
    kind: str,
    body: str,
    title: str = "",
    status: str = "",
    actor: User | None = None,
) -> MessageTemplate:
    """Create a template, or edit `template`."""
    roles.check(actor, "template.write")
    name = clean_single_line(name, field="name")
    title = clean_single_line(title, field="title") if title else ""
    if kind not in MessageTemplate.Kind.values:
        raise ValidationError({"kind": f"Unknown kind {kind!r}."})
    if status and status not in IncidentStatus.values:
        raise ValidationError({"status": f"Unknown status {status!r}."})
    if not body.strip():
        raise ValidationError({"body": "A template needs a message."})
    if kind == MessageTemplate.Kind.INCIDENT and not title:
        raise ValidationError({"title": "A new-incident template needs a title."})
    clash = MessageTemplate.objects.filter(name__iexact=name)
    if template is not None:
        clash = clash.exclude(pk=template.pk)
    if clash.exists():
        raise ValidationError({"name": "Another template has this name."})
    template = template or MessageTemplate()
    template.name = name
    template.kind = kind
    template.title = title
    template.status = status
    template.body = body
    template.save()
    return template


@transaction.atomic
def template_delete(*, template: MessageTemplate, actor: User | None = None) -> None:
    roles.check(actor, "template.write")
    MessageTemplate.objects.filter(pk=template.pk).delete()
