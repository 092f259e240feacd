"""API keys: the staff page at /api/keys/ (create, shown once; list; revoke) and the same
operations at /api/v1/keys/ for automation that rotates its own keys.

Each user sees and revokes only their own keys. Creating and revoking need `apikey.manage`
(checked in api.services, so page, API and admin agree); a write key needs a role that
writes something. The page answers a create with the page itself rather than a redirect:
the key exists in clear only in this one response, and keeping it around (in the session)
for a redirect would defeat storing only its hash.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseForbidden
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers
from rest_framework.request import Request
from rest_framework.response import Response

from api import services
from api.base import EDIT_ERRORS, STAFF_READ_ERRORS, WRITE_ERRORS, APIMixin, acting_user, errors
from api.filters import StrictQuery
from api.models import ApiKey
from api.permissions import StaffOnly
from api.serializers import StrictSerializer, single_line
from core import roles
from core.timezones import in_display_zone


class ApiKeyForm(forms.Form):
    name = forms.CharField(max_length=100, help_text='What will use it, e.g. "deploy bot".')
    scope = forms.ChoiceField(
        choices=ApiKey.Scope.choices, initial=ApiKey.Scope.READ, widget=forms.RadioSelect
    )


def own_key(user: User, key_id: Any) -> ApiKey:
    """The user's key with this id; a 404 for anything else, including a non-numeric id."""
    try:
        return ApiKey.objects.get(pk=int(str(key_id)), user=user)
    except (ValueError, ApiKey.DoesNotExist) as missing:
        raise Http404("No such API key.") from missing


def _revoke(request: HttpRequest, user: User) -> HttpResponse:
    roles.check(user, "apikey.manage")  # before the lookup: a refusal, not a 404
    key = own_key(user, request.POST.get("key", ""))
    services.api_key_revoke(key=key, actor=user)
    messages.success(request, f"Key “{key.name}” revoked.")
    return redirect("api-keys")


@never_cache
@staff_member_required
@require_http_methods(["GET", "POST"])
@in_display_zone  # a console page: its times are in the zone its footer names
def api_keys(request: HttpRequest) -> HttpResponse:
    user = request.user
    assert isinstance(user, User)  # staff_member_required let only a signed-in staff user in
    form = ApiKeyForm()
    created = None
    try:
        if request.method == "POST" and request.POST.get("action") == "revoke":
            return _revoke(request, user)
        if request.method == "POST":
            form = ApiKeyForm(request.POST)
            if form.is_valid():
                data = form.cleaned_data
                created = services.api_key_create(
                    user=user, name=data["name"], scope=data["scope"], actor=user
                )
                form = ApiKeyForm()
    except PermissionDenied as refused:
        return HttpResponseForbidden(str(refused))
    except ValidationError as invalid:
        form.add_error(None, invalid)
    keys = ApiKey.objects.filter(user=user)
    context = {
        "form": form,
        "created": created,
        "keys": keys,
        "may_manage": roles.allowed(user, "apikey.manage"),
    }
    return render(request, "api/keys.html", context)


# --- The API ---------------------------------------------------------------------------------


class ApiKeySerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="user.get_username", read_only=True, help_text="The key's user.")

    class Meta:
        model = ApiKey
        fields = [
            "id",
            "name",
            "scope",
            "prefix",
            "owner",
            "created_at",
            "expires_at",
            "last_used_at",
            "revoked_at",
        ]
        read_only_fields = fields


class NewApiKeySerializer(ApiKeySerializer):
    key = serializers.CharField(help_text="The key itself, shown in this answer only.")

    class Meta(ApiKeySerializer.Meta):
        fields = [*ApiKeySerializer.Meta.fields, "key"]
        read_only_fields = fields


class AwareDateTimeField(serializers.DateTimeField):
    """A moment with its zone: `2027-01-01T00:00:00` (no zone) is a 400, not taken as UTC."""

    def to_internal_value(self, value: Any) -> Any:
        if isinstance(value, str):
            parsed = parse_datetime(value.strip())
            if parsed is not None and timezone.is_naive(parsed):
                self.fail("naive")
        return super().to_internal_value(value)

    default_error_messages = {
        **serializers.DateTimeField.default_error_messages,
        "naive": "Give a time zone (e.g. 2027-01-01T00:00:00Z).",
    }


class ApiKeyCreateSerializer(StrictSerializer):
    name = single_line(max_length=100, help_text='What will use it, e.g. "deploy bot".')
    scope = serializers.ChoiceField(
        choices=ApiKey.Scope.choices,
        default=ApiKey.Scope.READ,
        help_text="`read`: staff reads only. `write`: reads and writes, within the owner's role.",
    )
    expires_at = AwareDateTimeField(
        required=False,
        allow_null=True,
        help_text="When the key stops working (401 after it): a future moment with its zone. "
        "Omitted or null: never.",
    )


class ApiKeyListQuery(StrictQuery):
    everyone = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Every user's keys, not only the caller's (needs the `users.manage` permission).",
    )


def _as_api_error(refused: PermissionDenied) -> exceptions.PermissionDenied:
    # Keep the message that names the action (the generic handler drops it).
    return exceptions.PermissionDenied(str(refused))


def key_for_revoke(actor: User, key_id: Any) -> ApiKey:
    """The key this actor may revoke: its own, or anyone's with `users.manage`; else 404."""
    if not roles.allowed(actor, "users.manage"):
        return own_key(actor, key_id)
    try:
        return ApiKey.objects.select_related("user").get(pk=int(str(key_id)))
    except (ValueError, ApiKey.DoesNotExist) as missing:
        raise Http404("No such API key.") from missing


class ApiKeyListView(APIMixin):
    permission_classes = [StaffOnly]
    pagination_class = None
    # A plain APIView has no action name: its query parameters are filed under "".
    query_serializers = {"": ApiKeyListQuery}

    def get_query(self, request: Request) -> dict[str, Any]:
        serializer = ApiKeyListQuery(data=request.query_params)
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)

    @extend_schema(
        summary="Your API keys (or everyone's, for administrators)",
        description="The keys of the caller (never the keys themselves, only their prefixes). "
        "`everyone=true` lists every user's keys and needs `users.manage` (Administrator).",
        parameters=[ApiKeyListQuery],
        responses={200: ApiKeySerializer(many=True), **errors(400, *STAFF_READ_ERRORS)},
        tags=["keys"],
    )
    def get(self, request: Request) -> Response:
        query = self.get_query(request)
        try:
            keys = services.api_keys_visible(actor=acting_user(request), everyone=query["everyone"])
        except PermissionDenied as refused:
            raise _as_api_error(refused) from refused
        return Response(ApiKeySerializer(keys.select_related("user"), many=True).data)

    @extend_schema(
        summary="Create an API key",
        description=(
            "A new key for the caller, shown once in `key`. Needs the `apikey.manage` permission; "
            "a `write` key needs a role that writes. The key acts as its owner: it can never do "
            "more than the owner's role allows at the time of use. Give `expires_at` (a future "
            "moment with its zone) for a key that stops working by itself."
        ),
        request=ApiKeyCreateSerializer,
        responses={201: NewApiKeySerializer, **errors(*WRITE_ERRORS)},
        tags=["keys"],
    )
    def post(self, request: Request) -> Response:
        data = self.validated_body(request)
        user = acting_user(request)
        try:
            new = services.api_key_create(
                user=user,
                name=data["name"],
                scope=data["scope"],
                actor=user,
                expires_at=data.get("expires_at"),
            )
        except PermissionDenied as refused:
            raise _as_api_error(refused) from refused
        body = {**ApiKeySerializer(new.key).data, "key": new.raw}
        return Response(body, status=201, headers={"Location": reverse("api-key-detail", args=[new.key.pk])})

    def validated_body(self, request: Request) -> dict[str, Any]:
        serializer = ApiKeyCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)


class ApiKeyDetailView(APIMixin):
    permission_classes = [StaffOnly]
    pagination_class = None

    def current_representation(self) -> Any:
        # For If-Match (APIMixin.check_if_match): the key as the list shows it.
        return ApiKeySerializer(key_for_revoke(acting_user(self.request), self.kwargs["key_id"])).data

    @extend_schema(
        summary="An API key",
        description="One of the caller's keys (any user's for `users.manage`), never the key itself.",
        responses={200: ApiKeySerializer, **errors(404, *STAFF_READ_ERRORS)},
        tags=["keys"],
    )
    def get(self, request: Request, key_id: int) -> Response:
        return Response(self.current_representation())

    @extend_schema(
        summary="Revoke an API key",
        description="Revokes one of the caller's keys at once. Needs the `apikey.manage` permission; "
        "revoking another user's key also needs `users.manage` (Administrator).",
        request=None,
        responses={204: None, **errors(*EDIT_ERRORS)},
        tags=["keys"],
    )
    def delete(self, request: Request, key_id: int) -> Response:
        user = acting_user(request)
        try:
            roles.check(user, "apikey.manage")  # before the lookup: a refusal, not a 404
            key = key_for_revoke(user, key_id)
            services.api_key_revoke(key=key, actor=user)
        except PermissionDenied as refused:
            raise _as_api_error(refused) from refused
        return Response(status=204)
