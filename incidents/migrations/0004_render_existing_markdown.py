"""Render the Markdown of existing rows into the new *_html fields, once.

A row whose text is outside the render bounds (too long, too deep, too slow) is stored
as escaped plain text instead of failing the migration: the page must keep answering.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations
from django.utils.html import escape, linebreaks

FIELDS = {
    "Product": ["description"],
    "Incident": ["summary"],
    "ImpactWindow": ["description"],
    "IncidentUpdate": ["body"],
    "IncidentReport": ["summary", "root_cause", "remediation", "impact_description"],
    "ActionItem": ["description"],
}


def _render(text: str) -> str:
    from incidents.markdown import render_markdown

    try:
        return render_markdown(text)
    except (ValueError, RecursionError):
        return linebreaks(escape(text))


def render_existing(apps: Any, schema_editor: Any) -> None:
    for model_name, fields in FIELDS.items():
        model = apps.get_model("incidents", model_name)
        for row in model.objects.only("pk", *fields).iterator(chunk_size=500):
            for name in fields:
                setattr(row, f"{name}_html", _render(getattr(row, name) or ""))
            row.save(update_fields=[f"{name}_html" for name in fields])


class Migration(migrations.Migration):
    dependencies = [("incidents", "0003_rendered_html")]

    operations = [migrations.RunPython(render_existing, migrations.RunPython.noop)]
