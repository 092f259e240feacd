"""The replica settings without a replica (edge/replica.py, docs/adr/0025-replica.md): no
database, no server, so this runs on every machine, outside test_replica.py's PostgreSQL
marks."""

from __future__ import annotations

import os
import subprocess
import sys

from edge import replica as replica_module
from edge.replica import REPLICA


def test_without_a_replica_url_nothing_changes() -> None:
    from django.conf import settings

    assert settings.DATABASE_ROUTERS == []
    assert "edge.replica.PublicReadMiddleware" not in settings.MIDDLEWARE
    env = {**os.environ, "DATABASE_REPLICA_URL": "postgres://postgres@127.0.0.1:5999/x", "DEBUG": "1"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    shown = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os; os.environ['DJANGO_SETTINGS_MODULE'] = 'statuspage.settings'; "
            "from django.conf import settings as s; m = s.MIDDLEWARE; "
            "print(s.DATABASES['replica']['PORT'], s.DATABASES['replica']['TEST']['MIRROR'], s.DATABASE_ROUTERS[0], "
            "m.index('edge.replica.PublicReadMiddleware') - m.index('django.contrib.auth.middleware.AuthenticationMiddleware'))",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert shown.stdout.split() == ["5999", "default", "edge.replica.ReplicaRouter", "1"]
    assert replica_module.ReplicaRouter().allow_migrate(REPLICA, "incidents") is False
