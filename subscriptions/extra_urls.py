"""Subscription addresses that are not translated: the iCalendar feed (calendar apps key
on the URL) and the staff list of action items (staff pages are English, like the
console). Their names are under `subscriptions_extra:`."""

from __future__ import annotations

from django.urls import path

from subscriptions import views

app_name = "subscriptions_extra"

urlpatterns = [
    path("maintenance.ics", views.maintenance_ics, name="maintenance_ics"),
    path("staff/action-items/", views.staff_action_items, name="staff_action_items"),
]
