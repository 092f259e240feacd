"""Move the clear-text DRF tokens (rest_framework.authtoken, now retired) into hashed API
keys, then drop their table.

The authtoken app is no longer installed, so its table is read with plain SQL when it
exists (a database created before this release). Each token becomes an ApiKey of the
same owner whose hash is the hash of the token, so `Authorization: Token <old token>`
keeps working. Tokens of staff users were write keys and stay write keys (a key acts as
its owner, so the owner's role still bounds what it may do); others become read keys.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.db import migrations

LEGACY_TABLE = "authtoken_token"


def copy_legacy_tokens(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    if LEGACY_TABLE not in connection.introspection.table_names():
        return
    api_key = apps.get_model("api", "ApiKey")
    user_model = apps.get_model("auth", "User")
    table = connection.ops.quote_name(LEGACY_TABLE)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {connection.ops.quote_name('key')}, user_id FROM {table}")  # noqa: S608
        rows = cursor.fetchall()
    staff = set(user_model.objects.filter(is_staff=True).values_list("pk", flat=True))
    for raw, user_id in rows:
        key_hash = hashlib.sha256(raw.encode()).hexdigest()
        api_key.objects.get_or_create(
            key_hash=key_hash,
            defaults={
                "user_id": user_id,
                "name": "Legacy token",
                "scope": "write" if user_id in staff else "read",
                "prefix": raw[:10],
            },
        )
    with connection.cursor() as cursor:
        # The clear-text secrets must not outlive their move; forget the app's migrations
        # so that reinstalling it would start from an empty table.
        cursor.execute(f"DROP TABLE {table}")
        cursor.execute("DELETE FROM django_migrations WHERE app = %s", ["authtoken"])


class Migration(migrations.Migration):
    dependencies = [
        ("api", "0001_api_keys_idempotency"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [migrations.RunPython(copy_legacy_tokens, migrations.RunPython.noop)]
