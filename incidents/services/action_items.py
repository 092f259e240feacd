"""Action items: what a report commits the team to do."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction

from core import roles
from core.text import clean_single_line
from incidents.action_item_events import FOLLOWED_FIELDS, announce_item_change
from incidents.models import ActionItem, Incident
from incidents.services._common import markdown_field, public_changed


@transaction.atomic
def action_item_create(
    *,
    incident: Incident,
    title: str,
    description: str = "",
    type: str = ActionItem.Type.PREVENT,
    priority: str = ActionItem.Priority.P2,
    status: str = ActionItem.Status.OPEN,
    owner: Any = None,
    due_date: date | None = None,
    tracker_url: str = "",
    is_public: bool = False,
    actor: User | None = None,
    reason: str = "",
) -> ActionItem:
    """Create an item from ActionItem.FIELDS (the parameters, in that order); `reason`
    says why, when it is created as "won't do"."""
    roles.check(actor, "report.write")
    reason = _check_reason(status=status, was=None, reason=reason)
    title = clean_single_line(title, field="title")
    description, description_html = markdown_field(description, field="description")
    item = ActionItem(
        incident=incident,
        title=title,
        type=type,
        priority=priority,
        owner=owner,
        due_date=due_date,
        tracker_url=tracker_url,
        description=description,
        description_html=description_html,
        is_public=is_public,
        status=status,
    )
    item.full_clean()
    item.save()
    announce_item_change(
        item=item,
        actor=actor,
        changes={name: (None, getattr(item, name)) for name in FOLLOWED_FIELDS},
        reason=reason,
    )
    if is_public:
        public_changed(incident)
    return item


# Long enough for a sentence or two of why; the public report shows it as written.
REASON_MAX_LENGTH = 500


def _check_reason(*, status: str | None, was: str | None, reason: str) -> str:
    """Dropping a commitment ("won't do") needs a reason, given with the change; other
    changes take none (a reason sent with them is not kept)."""
    reason = (reason or "").strip()
    if status != ActionItem.Status.WONT_DO or was == ActionItem.Status.WONT_DO:
        return ""
    if not reason:
        raise ValidationError({"reason": "Say why this item will not be done: the reason is kept with it."})
    if len(reason) > REASON_MAX_LENGTH:
        raise ValidationError({"reason": f"Keep the reason under {REASON_MAX_LENGTH} characters."})
    return reason


@transaction.atomic
def action_item_edit(
    *, item: ActionItem, changes: dict[str, Any], actor: User | None = None, reason: str = ""
) -> ActionItem:
    """Change ActionItem.FIELDS; `reason` says why, when the change is to "won't do"."""
    roles.check(actor, "report.write")
    unknown = set(changes) - set(ActionItem.FIELDS)
    if unknown:
        raise ValidationError(f"These fields cannot be edited here: {', '.join(sorted(unknown))}.")
    item = ActionItem.objects.select_for_update().get(pk=item.pk)
    reason = _check_reason(status=changes.get("status"), was=item.status, reason=reason)
    was_public = item.is_public
    before = {name: getattr(item, name) for name in FOLLOWED_FIELDS}
    if "title" in changes:
        changes = {**changes, "title": clean_single_line(changes["title"], field="title")}
    extra: list[str] = []
    if "description" in changes:
        description, item.description_html = markdown_field(changes["description"], field="description")
        changes = {**changes, "description": description}
        extra.append("description_html")
    for name, value in changes.items():
        setattr(item, name, value)
    item.full_clean()
    if changes:
        item.save(update_fields=[*changes, *extra, "updated_at"])
        after = {name: getattr(item, name) for name in FOLLOWED_FIELDS}
        announce_item_change(
            item=item, actor=actor, changes={n: (before[n], after[n]) for n in FOLLOWED_FIELDS}, reason=reason
        )
        if was_public or item.is_public:
            public_changed(item.incident)
    return item


@dataclass(frozen=True)
class ActionItemChange:
    """One row of a table of action items: a new item (`item_id` None) or changes to one."""

    item_id: int | None
    fields: dict[str, Any]
    reason: str = ""  # why, when the row drops the item ("won't do")


class ActionItemRejected(Exception):
    """Rows were refused; `errors` maps each refused row's index to its error, every one
    of them, so the form can mark them all at once."""

    def __init__(self, errors: dict[int, ValidationError]) -> None:
        super().__init__(errors)
        self.errors = errors


@transaction.atomic
def action_items_save(
    *, incident: Incident, rows: Sequence[ActionItemChange], actor: User | None = None
) -> None:
    """Create and edit the incident's items together: one refused row saves none of them.

    Every row is checked before giving up (a refusal is raised before the row's write, in
    the row's own savepoint), so one answer names all the refused rows."""
    roles.check(actor, "report.write")
    own = {item.pk: item for item in incident.action_items.all()}
    errors: dict[int, ValidationError] = {}
    for index, row in enumerate(rows):
        try:
            if row.item_id is None:
                action_item_create(incident=incident, actor=actor, reason=row.reason, **row.fields)
            elif row.item_id not in own:
                raise ValidationError("This action item belongs to another incident.")
            else:
                action_item_edit(item=own[row.item_id], changes=row.fields, actor=actor, reason=row.reason)
        except ValidationError as exc:
            errors[index] = exc
    if errors:
        raise ActionItemRejected(errors)
