from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def on_pages(settings: Any) -> None:
    """The operator turned the upstream parts of the public pages on."""
    settings.UPSTREAM_ON_PUBLIC_PAGES = True
