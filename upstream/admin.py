"""Staff side of the upstream room: providers (with their read state and what was kept),
dependencies and incident causes. Every write goes through `upstream.services`."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest

from core import roles
from core.admin import ServiceModelAdmin, TabularInlineBase, actor, adopt, call_service
from upstream import services
from upstream.models import Dependency, IncidentCause, Provider, UpstreamComponent, UpstreamIncident


def _may(request: HttpRequest, action: str) -> bool:
    return roles.allowed(request.user, action)


class _ReadOnlyInline(TabularInlineBase):
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _may(request, "console.view")


class ComponentInline(_ReadOnlyInline):
    model = UpstreamComponent
    fields = ("name", "status", "is_listed", "changed_at")
    readonly_fields = fields


class IncidentInline(_ReadOnlyInline):
    model = UpstreamIncident
    fields = ("title", "status", "level", "started_at", "updated_at", "resolved_at", "components")
    readonly_fields = fields


class _Managed(ServiceModelAdmin):
    action = services.MANAGE

    def has_module_permission(self, request: HttpRequest) -> bool:
        return _may(request, "console.view")

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _may(request, "console.view")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return _may(request, self.action)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _may(request, self.action)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _may(request, self.action)

    def get_actions(self, request: HttpRequest) -> Any:
        return {}  # bulk delete would skip the services


@admin.register(Provider)
class ProviderAdmin(_Managed):
    list_display = (
        "name",
        "kind",
        "is_shown",
        "poll_interval_seconds",
        "last_success_at",
        "failures",
        "last_error",
    )
    fields = ("name", "url", "kind", "poll_interval_seconds", "is_shown", "position")
    readonly_fields = ("last_attempt_at", "last_success_at", "next_poll_at", "failures", "last_error")
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    def get_inlines(self, request: HttpRequest, obj: Any) -> list[type[Any]]:
        # What was kept of its reads, on its change page.
        return [ComponentInline, IncidentInline] if obj is not None else []

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return [*self.fields, *self.readonly_fields] if obj is not None else list(self.fields)

    def save_model(self, request: HttpRequest, obj: Provider, form: Any, change: bool) -> None:
        data = {name: form.cleaned_data[name] for name in self.fields}
        saved = call_service(
            "", services.provider_save, provider=obj if change else None, actor=actor(request), **data
        )
        adopt(obj, saved)

    def delete_model(self, request: HttpRequest, obj: Provider) -> None:
        services.provider_delete(provider=obj, actor=actor(request))

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        pass  # the inlines are read-only


@admin.register(Dependency)
class DependencyAdmin(_Managed):
    list_display = ("product", "target", "level", "created_at")
    fields = ("product", "on_product", "on_location", "on_component", "level")
    autocomplete_fields = ()

    @admin.display(description="depends on")
    def target(self, obj: Dependency) -> str:
        return obj.target_label

    def get_queryset(self, request: HttpRequest) -> QuerySet[Dependency]:
        return (
            super()
            .get_queryset(request)
            .select_related("product", "on_product", "on_location", "on_component__provider")
        )

    def save_model(self, request: HttpRequest, obj: Dependency, form: Any, change: bool) -> None:
        data = {name: form.cleaned_data[name] for name in self.fields}
        saved = call_service(
            "", services.dependency_save, dependency=obj if change else None, actor=actor(request), **data
        )
        adopt(obj, saved)

    def delete_model(self, request: HttpRequest, obj: Dependency) -> None:
        services.dependency_delete(dependency=obj, actor=actor(request))


@admin.register(IncidentCause)
class IncidentCauseAdmin(_Managed):
    """ "This incident is caused by a dependency": the public "affected through" line."""

    action = "incident.edit"
    list_display = ("incident", "label")
    raw_id_fields = ("incident",)
    fields = ("incident", "dependency")

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return ["incident", "dependency"] if obj is None else ["incident", "label"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return ["incident", "label"] if obj is not None else []

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change, **kwargs)
        if "dependency" in form.base_fields:
            form.base_fields["dependency"].required = True
        return form

    def save_model(self, request: HttpRequest, obj: IncidentCause, form: Any, change: bool) -> None:
        if change:
            return
        saved = call_service(
            "",
            services.cause_add,
            incident=form.cleaned_data["incident"],
            dependency=form.cleaned_data["dependency"],
            actor=actor(request),
        )
        adopt(obj, saved)

    def delete_model(self, request: HttpRequest, obj: IncidentCause) -> None:
        services.cause_delete(cause=obj, actor=actor(request))
