"""Drafts: an incident filed out of sight (from an alert) that staff make public later."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from core import roles
from core.errors import InUse
from incidents import events
from incidents.models import Incident
from incidents.services._common import impact_changed, public_changed
from incidents.services.incidents import incident_delete


@transaction.atomic
def incident_publish(*, incident: Incident, actor: User | None = None) -> Incident:
    """Make a draft public. Subscribers hear "opened" now, not when the draft was filed.

    Idempotent: publishing a public incident changes nothing and tells nobody. A draft
    that already resolved is published into the history without an announcement, since
    telling subscribers "opened" about something long over would mislead them.
    """
    roles.check(actor, "incident.publish_draft")
    # Row lock: a staff click and the auto-publish tick must announce once between them.
    incident = Incident.objects.select_for_update().get(pk=incident.pk)
    if incident.is_public:
        return incident
    incident.is_public = True
    incident.save(update_fields=["is_public", "updated_at"])
    impact_changed(incident)
    if not incident.is_closed:
        first = incident.updates.order_by("display_at", "id").first()
        if first is not None:
            # The draft's first entry was announced while private, which notified nobody
            # (subscriptions skip private incidents); announcing it again now reaches them.
            events.announce(kind="opened", incident=incident, update=first)
    public_changed(incident)  # the history's counts too
    return incident


@transaction.atomic
def incident_draft_delete(*, incident: Incident, actor: User | None = None) -> None:
    """Discard a draft (with its windows, timeline and alert group). A public incident is
    history subscribers and the page have seen: it is corrected, never deleted here."""
    roles.check(actor, "incident.edit")
    incident = Incident.objects.select_for_update().get(pk=incident.pk)
    if incident.is_public:
        raise InUse("Only a draft can be deleted: this incident is public. Correct it instead.")
    incident_delete(incident=incident, actor=actor)
