"""Staff view of render problems: what the public could not be shown, and since when.

Rows are written and cleared by the public path (edge/render_problems.py); the admin
lists them and lets staff delete one they have dealt with (it comes back if it fails
again).
"""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from edge.models import RenderProblem


@admin.register(RenderProblem)
class RenderProblemAdmin(admin.ModelAdmin):
    list_display = ("label", "kind", "error_short", "count", "first_seen_at", "last_seen_at")
    list_filter = ("kind",)
    search_fields = ("label", "key", "error")
    readonly_fields = ("kind", "key", "label", "error", "count", "first_seen_at", "last_seen_at")

    @admin.display(description="error")
    def error_short(self, obj: RenderProblem) -> str:
        return obj.error if len(obj.error) <= 120 else obj.error[:119] + "…"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
