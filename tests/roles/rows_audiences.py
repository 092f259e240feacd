"""Role-matrix rows of the audience pages (`page.manage`): the console's page writes and
key writes, and the API's page CRUD."""

from __future__ import annotations

import json

from django.contrib.auth.models import User
from django.test import Client

from audiences import services
from audiences.models import Page
from tests.api.keys import key_for
from tests.roles.matrix import Row


def _setup() -> None:
    services.page_save(actor=None, slug="row-page", title="Row page", visibility=Page.Visibility.INTERNAL)


def _page() -> Page:
    return Page.objects.get(slug="row-page")


def _create(client: Client, user: User) -> int:
    body = {"title": "Staff page", "slug": "staff-page", "visibility": "internal"}
    return client.post("/manage/pages/new/", body).status_code


def _edit(client: Client, user: User) -> int:
    body = {"title": "Row page, renamed", "slug": "row-page", "visibility": "internal"}
    return client.post(f"/manage/pages/{_page().pk}/", body).status_code


def _key(client: Client, user: User) -> int:
    return client.post(f"/manage/pages/{_page().pk}/keys/", {"label": "Monitoring"}).status_code


def _delete(client: Client, user: User) -> int:
    return client.post(f"/manage/pages/{_page().pk}/delete/").status_code


def _api_create(client: Client, user: User) -> int:
    bearer = Client(HTTP_AUTHORIZATION=f"Bearer {key_for(user, 'write')}")
    body = {"title": "API page", "slug": "api-page", "visibility": "internal"}
    return bearer.post("/api/v1/pages/", json.dumps(body), content_type="application/json").status_code


def _api_delete(client: Client, user: User) -> int:
    bearer = Client(HTTP_AUTHORIZATION=f"Bearer {key_for(user, 'write')}")
    return bearer.delete(f"/api/v1/pages/{_page().slug}/").status_code


ROWS: list[Row] = [
    Row("page.manage", "console", "POST /manage/pages/new/", _create, ok=(302,)),
    Row("page.manage", "console", "POST /manage/pages/<id>/", _edit, ok=(302,), setup=_setup),
    Row("page.manage", "console", "POST /manage/pages/<id>/keys/", _key, ok=(302,), setup=_setup),
    Row("page.manage", "console", "POST /manage/pages/<id>/delete/", _delete, ok=(302,), setup=_setup),
    Row("page.manage", "api", "POST /api/v1/pages/", _api_create, ok=(201,)),
    Row("page.manage", "api", "DELETE /api/v1/pages/<slug>/", _api_delete, ok=(204,), setup=_setup),
]
