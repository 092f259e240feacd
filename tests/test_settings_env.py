"""docker/.env.example lists every variable statuspage/settings.py reads."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_it_lists_every_setting_in_the_env_example() -> None:
    settings_source = (ROOT / "statuspage" / "settings.py").read_text()
    read = set(re.findall(r'env_(?:str|bool|int|float|list)\(\s*"([A-Z0-9_]+)"', settings_source))
    example = (ROOT / "docker" / ".env.example").read_text()
    listed = set(re.findall(r"^#?\s*([A-Z0-9_]+)=", example, flags=re.M))
    assert read, "no settings found: the pattern no longer matches settings.py"
    assert sorted(read - listed) == []
