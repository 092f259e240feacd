"""The headless Chromium the public browser tests drive (Playwright)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.public.browsing import CHROMIUM_ARGS


@pytest.fixture(scope="module")
def browser(chromium_path: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the ORM calls made by the
    # test itself are ordinary blocking calls, which Django would otherwise refuse. Set
    # only while these tests run, so it cannot leak into other tests' environments.
    mp = pytest.MonkeyPatch()
    mp.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    request_cleanup = mp.undo
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
            request_cleanup()
