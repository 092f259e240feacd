"""API keys in the admin: list, search, revoke. Keys are created on /api/keys/, where the
key is shown once to the user who will hold it."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from api import services
from api.models import ApiKey


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "scope", "prefix", "created_at", "last_used_at", "revoked_at")
    list_filter = ("scope", ("revoked_at", admin.EmptyFieldListFilter))
    search_fields = ("name", "prefix", "user__username")
    readonly_fields = ("user", "scope", "prefix", "created_at", "last_used_at", "revoked_at")
    exclude = ("key_hash",)
    actions = ("revoke",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Revoke the selected keys", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        keys = list(queryset.filter(revoked_at__isnull=True))
        for key in keys:
            services.api_key_revoke(key=key, actor=request.user)  # type: ignore[arg-type]
        self.message_user(request, f"{len(keys)} key(s) revoked.")
