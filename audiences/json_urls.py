"""The per-page v2 JSON, outside the language prefixes (one address each)."""

from __future__ import annotations

from audiences.urls import json_urlpatterns

app_name = "audiences_json"
urlpatterns = json_urlpatterns
