from django.db import migrations


class Migration(migrations.Migration):
    """The room's first step; its models arrive in the migrations that follow."""

    initial = True

    dependencies = [
        ("incidents", "0011_message_template_moved"),
    ]

    operations: list = []
