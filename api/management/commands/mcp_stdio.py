from __future__ import annotations

import os
from typing import Any

import anyio
from django.core.management.base import BaseCommand, CommandError, CommandParser
from rest_framework.exceptions import AuthenticationFailed

from api.authentication import ApiKeyAuthentication
from api.internal import Caller
from api.mcp_tools import CALLER, SERVER


class Command(BaseCommand):
    help = (
        "Serve the MCP server (the tools of /mcp) over stdio, for a local MCP client. The API "
        "key is read from the environment variable named by --key-env (default "
        "STATUSPAGE_API_KEY); without one only the public reads answer. docs/api.md#mcp."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--key-env", default="STATUSPAGE_API_KEY", help="Environment variable holding the API key."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        raw = os.environ.get(options["key_env"], "").strip()
        caller = Caller.for_site()
        if raw:
            try:
                user, key = ApiKeyAuthentication().key_owner(raw)
            except AuthenticationFailed as failed:
                raise CommandError(str(failed.detail)) from None
            caller = Caller.for_site(authorization=f"Bearer {raw}", user=user, key=key)
        CALLER.set(caller)
        anyio.run(SERVER.run_stdio_async)
