"""Test-only routes for the middleware tests, on top of the real URLs."""

from __future__ import annotations

import threading

from django.db import OperationalError
from django.http import HttpRequest, HttpResponse
from django.urls import path

from edge.middleware import shed_exempt
from statuspage.urls import urlpatterns as app_urlpatterns

release = threading.Event()
entered = threading.Event()


def boom(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("secret internals: SECRET_KEY=should-not-leak")


def db_gone(request: HttpRequest) -> HttpResponse:
    raise OperationalError("could not connect to server: Connection refused")


def slow(request: HttpRequest) -> HttpResponse:
    entered.set()
    release.wait(timeout=10)
    return HttpResponse("slow done")


@shed_exempt
def cheap(request: HttpRequest) -> HttpResponse:
    return HttpResponse("cheap")


urlpatterns = [
    path("t/boom/", boom),
    path("t/db-gone/", db_gone),
    path("api/v1/t/db-gone/", db_gone),
    path("t/slow/", slow),
    path("t/cheap/", cheap),
    *app_urlpatterns,
]
