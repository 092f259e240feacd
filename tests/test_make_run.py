"""`make run` tells the app the address it serves (SITE_URL), so links in emails point at
the port actually served; a SITE_URL the user set wins. Checked with `make -n`, which
prints the recipe's commands without running them."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import service_missing

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = ("migrate", "load_demo", "run_periodic", "runserver")


def _site_urls(*args: str, env_site_url: str | None = None) -> dict[str, str]:
    """The SITE_URL each manage.py command of `make run` would get."""
    if shutil.which("make") is None:
        service_missing("make is not installed")
    env = {k: v for k, v in os.environ.items() if k != "SITE_URL"}
    if env_site_url is not None:
        env["SITE_URL"] = env_site_url
    result = subprocess.run(
        ["make", "-n", "run", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    found: dict[str, str] = {}
    # The periodic runner and the server share one shell line, joined by `;` and `\`.
    lines = result.stdout.replace("\\\n", " ").splitlines()
    for line in (line for line in lines if "manage.py" in line):
        for part in line.split(";"):
            words = shlex.split(part.replace("&", " "))
            if "manage.py" not in words:
                continue
            command = words[words.index("manage.py") + 1]
            found[command] = next((w.split("=", 1)[1] for w in words if w.startswith("SITE_URL=")), "")
    return found


def test_it_passes_the_served_address_as_site_url() -> None:
    urls = _site_urls("HOST=127.0.0.1", "PORT=8123")

    assert set(urls) == set(COMMANDS)
    assert urls == dict.fromkeys(COMMANDS, "http://127.0.0.1:8123")


@pytest.mark.parametrize("how", ["environment", "command line"])
def test_it_keeps_a_site_url_the_user_set(how: str) -> None:
    wanted = "https://status.example.com"
    if how == "environment":
        urls = _site_urls("PORT=8123", env_site_url=wanted)
    else:
        urls = _site_urls("PORT=8123", f"SITE_URL={wanted}")

    assert urls == dict.fromkeys(COMMANDS, wanted)
