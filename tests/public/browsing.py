"""What the browser tests share: Chromium's arguments and a page's console problems."""

from __future__ import annotations

from typing import Any

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


class PageProblems:
    """Collects console errors and uncaught exceptions of one page."""

    def __init__(self, page: Any, *, ignore: tuple[str, ...] = ()) -> None:
        self.errors: list[str] = []
        self.ignore = ignore
        page.on("console", self._console)
        page.on("pageerror", lambda exc: self.errors.append(f"pageerror: {exc}"))

    def _console(self, message: Any) -> None:
        if message.type == "error" and not any(part in message.text for part in self.ignore):
            self.errors.append(f"console: {message.text}")
