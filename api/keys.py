"""The staff page for API keys at /api/keys/: create (shown once), list, revoke.

Server-rendered, CSRF-protected, for a signed-in staff user; each user sees and revokes
only their own keys. The console links here. Creating a key answers with the page
itself rather than a redirect: the key exists in clear only in this one response, and
keeping it around (in the session) for a redirect would defeat storing only its hash.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from api import services
from api.models import ApiKey


class ApiKeyForm(forms.Form):
    name = forms.CharField(max_length=100, help_text='What will use it, e.g. "deploy bot".')
    scope = forms.ChoiceField(
        choices=ApiKey.Scope.choices, initial=ApiKey.Scope.READ, widget=forms.RadioSelect
    )


@never_cache
@staff_member_required
@require_http_methods(["GET", "POST"])
def api_keys(request: HttpRequest) -> HttpResponse:
    user = request.user
    assert isinstance(user, User)  # staff_member_required let only a signed-in staff user in
    form = ApiKeyForm()
    created = None
    if request.method == "POST" and request.POST.get("action") == "revoke":
        key = get_object_or_404(ApiKey, pk=request.POST.get("key", ""), user=user)
        services.api_key_revoke(key=key)
        messages.success(request, f"Key “{key.name}” revoked.")
        return redirect("api-keys")
    if request.method == "POST":
        form = ApiKeyForm(request.POST)
        if form.is_valid():
            created = services.api_key_create(
                user=user, name=form.cleaned_data["name"], scope=form.cleaned_data["scope"]
            )
            form = ApiKeyForm()
    keys = ApiKey.objects.filter(user=user)
    return render(request, "api/keys.html", {"form": form, "created": created, "keys": keys})
