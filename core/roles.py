"""Who may do what: one table of actions and the roles that may take them.

Services call `check(actor, ACTION)` before they write; interfaces ask `allowed` to show
only what a person may do. Roles are Django groups holding `core.<action>` permissions,
kept equal to ROLES by `sync_roles` (run by migrations). Design: docs/adr/0010-roles.md.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied

# action -> what it lets a person do (the message of a refusal names it).
ACTIONS: dict[str, str] = {
    "console.view": "read the console, insights and drafts",
    "incident.declare": "declare incidents",
    "incident.update": "post incident updates",
    "incident.resolve": "resolve incidents",
    "incident.edit": "edit incidents and their impact windows",
    "incident.publish_draft": "publish draft incidents",
    "report.write": "write incident reports and action items",
    "report.publish": "approve and publish incident reports",
    "template.write": "edit message templates",
    "customer.write": "manage SLA customers and their entitlements",
    "policy.write": "manage SLA policies and tiers",
    "credits.compute": "compute SLA credits",
    "credits.review": "review, cancel and prepare SLA credit notices",
    "credits.send": "send SLA credit notices",
    "credits.statement": "read credit statements and exports",
    "portal.access": "manage who may sign in to the customer portal",
    "alerts.manage": "manage alert integrations and rules",
    "webhook.manage": "manage subscriber webhooks",
    "subscriber.manage": "manage subscribers",
    "apikey.manage": "create and revoke API keys",
    "page.manage": "manage the internal and customer status pages and their keys",
    "upstream.manage": "manage upstream providers and product dependencies",
    "sli.manage": "manage SLI sources (the Prometheus queries measuring downtime)",
    "users.manage": "manage users and roles",
}

_RESPONDER = {
    "console.view",
    "incident.declare",
    "incident.update",
    "incident.resolve",
    "incident.edit",
    "incident.publish_draft",
    "report.write",
    "template.write",
}
ROLES: dict[str, frozenset[str]] = {
    "Viewer": frozenset({"console.view"}),
    "Responder": frozenset(_RESPONDER),
    "Report approver": frozenset({"console.view", "report.publish"}),
    "Finance": frozenset(
        {
            "console.view",
            "customer.write",
            "policy.write",
            "credits.compute",
            "credits.review",
            "credits.send",
            "credits.statement",
            "portal.access",
        }
    ),
    "Integrations": frozenset(
        {
            "console.view",
            "alerts.manage",
            "webhook.manage",
            "subscriber.manage",
            "apikey.manage",
            "upstream.manage",
            "sli.manage",
        }
    ),
    "Administrator": frozenset(ACTIONS),
}


# The admin also asks Django's model permissions: a role holds those of the rooms whose
# admin pages it works in (the services still check the action).
ADMIN_APPS: dict[str, tuple[str, ...]] = {
    "Responder": ("incidents",),
    "Finance": ("credits",),
    "Integrations": ("alerts", "api", "subscriptions", "upstream"),
}


def codename(action: str) -> str:
    return action.replace(".", "_")


def permission(action: str) -> str:
    """The Django permission behind an action, as `user.has_perm` takes it."""
    if action not in ACTIONS:
        raise KeyError(f"unknown action {action!r}: add it to core.roles.ACTIONS")
    return f"core.{codename(action)}"


def allowed(user: Any, action: str) -> bool:
    """May this user take the action? Superusers may; inactive or anonymous users may not."""
    if user is None or not getattr(user, "is_active", False):
        return False
    return bool(user.has_perm(permission(action)))


def check(actor: Any, action: str) -> None:
    """Refuse with PermissionDenied unless `actor` may take the action.

    `actor=None` is the system itself (alert intake, beat tasks, data loaders, tests of
    the rules): interfaces always pass the person or API key owner they act for.
    """
    if actor is None:
        return
    if not allowed(actor, action):
        raise PermissionDenied(f"Your role does not allow you to {ACTIONS[action]}.")


def sync_roles(apps: Any) -> None:
    """Make the groups and their permissions equal to ROLES (idempotent; for migrations).

    Administrator also gets every other permission, so the admin (users, groups, data
    repair) is open to it.
    """
    content_types = apps.get_model("contenttypes", "ContentType")
    permissions = apps.get_model("auth", "Permission")
    groups = apps.get_model("auth", "Group")
    access, _ = content_types.objects.get_or_create(app_label="core", model="access")
    by_action = {}
    for action, text in ACTIONS.items():
        perm, _ = permissions.objects.update_or_create(
            content_type=access, codename=codename(action), defaults={"name": f"Can {text}"[:255]}
        )
        by_action[action] = perm
    permissions.objects.filter(content_type=access).exclude(
        codename__in=[codename(a) for a in ACTIONS]
    ).delete()
    for name, actions in ROLES.items():
        group, _ = groups.objects.get_or_create(name=name)
        wanted = [by_action[a] for a in sorted(actions)]
        wanted += permissions.objects.filter(content_type__app_label__in=ADMIN_APPS.get(name, ()))
        if name == "Administrator":
            wanted = list(permissions.objects.all())
        group.permissions.set(wanted)
