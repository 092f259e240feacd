# The message templates moved to incidents (incidents 0011): the table stays.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("console", "0001_initial"),
        ("incidents", "0011_message_template_moved"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="MessageTemplate")],
            database_operations=[],
        ),
    ]
