from __future__ import annotations

from django.apps import AppConfig


class PostmortemsConfig(AppConfig):
    name = "postmortems"
    verbose_name = "Postmortems: timelines, review, contributing factors, follow-through"
