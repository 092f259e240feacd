"""Every language we ship is complete and compiled: no empty or fuzzy entry in a .po, and
the committed .mo says exactly what its .po says (a .po edited without compilemessages
would otherwise ship the old text)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from django.conf import settings

from tests.conftest import service_missing

LOCALE = Path(settings.BASE_DIR) / "locale"
CATALOGUES = sorted(LOCALE.glob("*/LC_MESSAGES/django.po"))


def _entries(po: Path) -> list[str]:
    return [block for block in po.read_text(encoding="utf-8").split("\n\n") if "msgid " in block]


def _strings(block: str, field: str) -> list[str]:
    """The concatenated value of each `field "..."` (with continuation lines) in a block."""
    values = []
    for match in re.finditer(rf'^{re.escape(field)} ((?:".*"\n?)+)', block, flags=re.M):
        values.append("".join(re.findall(r'"((?:[^"\\]|\\.)*)"', match.group(1))))
    return values


def test_it_has_a_catalogue_for_every_language_but_the_default() -> None:
    translated = {code for code, _name in settings.LANGUAGES if code != settings.LANGUAGE_CODE}
    assert "fr" in translated
    assert {po.parent.parent.name for po in CATALOGUES} == translated


@pytest.mark.parametrize("po", CATALOGUES, ids=lambda p: p.parent.parent.name)
def test_it_translates_every_message(po: Path) -> None:
    problems = []
    entries = _entries(po)
    assert len(entries) > 200  # the public pages, forms and labels
    for block in entries:
        msgid = "".join(_strings(block, "msgid"))
        if msgid == "" and "msgctxt" not in block:
            assert "#, fuzzy" not in block, "the header is still marked fuzzy"
            continue
        if re.search(r"^#,.*\bfuzzy\b", block, flags=re.M):
            problems.append(f"fuzzy: {msgid}")
        if block.lstrip().startswith("#~"):
            problems.append(f"obsolete: {msgid}")
        translations = _strings(block, "msgstr") + [
            value for n in range(4) for value in _strings(block, f"msgstr[{n}]")
        ]
        if not translations or any(value == "" for value in translations):
            problems.append(f"untranslated: {msgid}")
    assert problems == []


@pytest.mark.parametrize("po", CATALOGUES, ids=lambda p: p.parent.parent.name)
def test_it_commits_the_mo_compiled_from_the_po(po: Path, tmp_path: Path) -> None:
    msgfmt = shutil.which("msgfmt")
    if msgfmt is None:
        service_missing("msgfmt (GNU gettext) is not installed: cannot check the compiled catalogue")
        return
    committed = po.with_suffix(".mo")
    assert committed.exists(), f"{committed} is missing: run manage.py compilemessages"
    fresh = tmp_path / "django.mo"
    # --check also refuses format strings that do not match their msgid (%(name)s).
    subprocess.run([msgfmt, "--check", "-o", str(fresh), str(po)], check=True)
    assert committed.read_bytes() == fresh.read_bytes(), (
        f"{committed} is out of date with its .po: run manage.py compilemessages"
    )


@pytest.mark.parametrize(
    ("name", "english", "french"),
    [
        ("Acme", "Acme status", "État d’Acme"),
        ("Écoles", "Écoles status", "État d’Écoles"),
        ("Google", "Google status", "État de Google"),
        ("Hôtel", "Hôtel status", "État de Hôtel"),  # no elision guessed before an h
        ("Acme Status", "Acme Status", "Acme Status"),  # the name already says it
    ],
)
def test_the_site_title_elides_before_a_vowel_in_french(name: str, english: str, french: str) -> None:
    from django.utils import translation

    from core.text import site_title

    with translation.override("en"):
        assert site_title(name) == english
    with translation.override("fr"):
        assert site_title(name) == french
