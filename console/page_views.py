"""Audience pages in the console (/manage/pages/): list, create, edit, delete, and the keys
that read a private page's JSON. Thin: a form, one service, redirect."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from audiences import services
from audiences.models import Page, PageKey
from audiences.selectors import pages_all
from console.page_forms import PageForm, PageKeyForm
from console.views import _require, _user, console_view
from core.admin import add_validation_errors


@console_view
def pages(request: HttpRequest) -> HttpResponse:
    return render(request, "console/pages.html", {"pages": pages_all()})


@console_view
def page_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    _require(request, "page.manage")
    page = get_object_or_404(Page, pk=pk) if pk is not None else None
    if request.method == "POST":
        form = PageForm(request.POST)
        if form.is_valid():
            try:
                saved = services.page_save(actor=_user(request), page=page, **form.cleaned_data)
            except ValidationError as exc:
                add_validation_errors(form, exc)
            else:
                messages.success(request, f"Saved the page “{saved.title}”.")
                return HttpResponseRedirect(reverse("console:page_edit", args=[saved.pk]))
    else:
        form = PageForm(
            initial=PageForm.initial_for(page) if page else {"visibility": Page.Visibility.INTERNAL}
        )
    keys = list(page.keys.order_by("-created_at")) if page else []
    context = {"form": form, "page": page, "keys": keys, "key_form": PageKeyForm()}
    return render(request, "console/page_form.html", context)


@console_view
@require_POST
def page_delete(request: HttpRequest, pk: int) -> HttpResponse:
    page = get_object_or_404(Page, pk=pk)
    services.page_delete(actor=_user(request), page=page)
    messages.success(request, f"Deleted the page “{page.title}”.")
    return HttpResponseRedirect(reverse("console:pages"))


@console_view
@require_POST
def page_key_new(request: HttpRequest, pk: int) -> HttpResponse:
    page = get_object_or_404(Page, pk=pk)
    form = PageKeyForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Name the key’s holder.")
        return HttpResponseRedirect(reverse("console:page_edit", args=[page.pk]))
    _key, secret = services.page_key_create(actor=_user(request), page=page, label=form.cleaned_data["label"])
    url = request.build_absolute_uri(reverse("audiences_json:v2-summary", args=[page.slug]))
    # Shown once: only its digest is stored.
    messages.success(request, f"New key (copy it now, it is not shown again): {url}?key={secret}")
    return HttpResponseRedirect(reverse("console:page_edit", args=[page.pk]))


@console_view
@require_POST
def page_key_revoke(request: HttpRequest, pk: int, key_id: int) -> HttpResponse:
    key = get_object_or_404(PageKey, pk=key_id, page_id=pk)
    services.page_key_revoke(actor=_user(request), key=key)
    messages.success(request, f"Revoked the key “{key.label}”.")
    return HttpResponseRedirect(reverse("console:page_edit", args=[pk]))
