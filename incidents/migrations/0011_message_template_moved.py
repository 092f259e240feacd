# The message templates move from the console to this room (the API writes them too): the
# table stays, only Django's state moves (console 0002 removes it there).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("incidents", "0010_product_archived_at"),
        ("console", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="MessageTemplate",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("name", models.CharField(help_text="What staff pick it by.", max_length=100, unique=True)),
                        (
                            "kind",
                            models.CharField(
                                choices=[
                                    ("incident", "New incident (title and first message)"),
                                    ("update", "Update (message)"),
                                ],
                                default="update",
                                max_length=10,
                            ),
                        ),
                        (
                            "title",
                            models.CharField(
                                blank=True, help_text="Incident title (new incidents only).", max_length=200
                            ),
                        ),
                        (
                            "status",
                            models.CharField(
                                blank=True,
                                choices=[
                                    ("investigating", "Investigating"),
                                    ("identified", "Identified"),
                                    ("monitoring", "Monitoring"),
                                    ("resolved", "Resolved"),
                                    ("postmortem", "Postmortem"),
                                    ("scheduled", "Scheduled"),
                                    ("in_progress", "In progress"),
                                    ("verifying", "Verifying"),
                                    ("completed", "Completed"),
                                ],
                                help_text="The status the message is usually posted with; empty: keep the form's.",
                                max_length=16,
                            ),
                        ),
                        ("body", models.TextField(help_text="The public message (Markdown).")),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                    ],
                    options={
                        "db_table": "console_messagetemplate",
                        "ordering": ["kind", "name"],
                        "constraints": [
                            models.CheckConstraint(
                                condition=models.Q(("kind__in", ["incident", "update"])), name="template_kind_valid"
                            ),
                            models.CheckConstraint(
                                condition=models.Q(
                                    ("status", ""),
                                    (
                                        "status__in",
                                        [
                                            "investigating",
                                            "identified",
                                            "monitoring",
                                            "resolved",
                                            "postmortem",
                                            "scheduled",
                                            "in_progress",
                                            "verifying",
                                            "completed",
                                        ],
                                    ),
                                    _connector="OR",
                                ),
                                name="template_status_valid",
                            ),
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
