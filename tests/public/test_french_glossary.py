"""The French catalogue follows the one glossary (docs/glossary-fr.md): each term it lists
is translated as it says, no word it forbids appears, and every French string keeps the
typography it sets out (OQLF / Imprimerie nationale): no-break space before a colon and
inside « », narrow no-break space before ; ! ?, no straight quotes in text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings

from tests.core.test_translations import _entries, _strings

GLOSSARY = Path(settings.BASE_DIR) / "docs" / "glossary-fr.md"
PO = Path(settings.BASE_DIR) / "locale" / "fr" / "LC_MESSAGES" / "django.po"
NBSP, NNBSP = "\u00a0", "\u202f"


def _unescape(value: str) -> str:
    return value.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")


def catalogue() -> list[tuple[str | None, str, list[str]]]:
    """(context, msgid, [translations]) of every entry but the header."""
    out = []
    for block in _entries(PO):
        msgid = _unescape("".join(_strings(block, "msgid")))
        if not msgid:
            continue
        context = "".join(_strings(block, "msgctxt")) or None
        values = _strings(block, "msgstr") + [v for n in range(2) for v in _strings(block, f"msgstr[{n}]")]
        out.append((context, msgid, [_unescape(v) for v in values]))
    return out


def glossary_rows() -> list[tuple[str, str, str]]:
    """(English, French, never) cells of the terms table, backticks kept."""
    rows = []
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0] not in ("English", "---"):
            rows.append((cells[0], cells[1], cells[2]))
    return rows


def _code(cell: str) -> str | None:
    match = re.fullmatch(r"`([^`]+)`", cell)
    return match.group(1) if match else None


def test_it_reads_a_glossary_of_real_terms() -> None:
    rows = glossary_rows()
    assert len(rows) > 40
    assert ("`Status`", "`État`", "Statut") in rows
    assert ("`Partial System Outage`", "`Panne partielle`", "des systèmes") in rows


def test_it_translates_each_glossary_term_as_the_glossary_says() -> None:
    entries = {msgid: values for context, msgid, values in catalogue() if context is None}
    problems = []
    for english, french, _never in glossary_rows():
        msgid, wanted = _code(english), _code(french)
        if msgid is None:
            continue  # a term used inside sentences: the "never" column guards it
        assert wanted is not None, f"{english}: the French of a catalogue entry is in backticks"
        if msgid not in entries:
            problems.append(f"{msgid!r} is not in the catalogue")
        elif entries[msgid] != [wanted.replace(" :", NBSP + ":")]:
            problems.append(f"{msgid!r} is {entries[msgid]!r}, the glossary says {wanted!r}")
    assert problems == []


def test_it_never_uses_a_word_the_glossary_forbids() -> None:
    forbidden = [never for _e, _f, never in glossary_rows() if never]
    assert "Statut" in forbidden and "e-mail" in forbidden
    found = [
        (word, msgid)
        for _context, msgid, values in catalogue()
        for value in values
        for word in forbidden
        if word in value
    ]
    assert found == []


def _text(value: str) -> str:
    """The words of a translation: no tags, code, entities, placeholders or addresses."""
    value = re.sub(r"<code>.*?</code>", "", value)
    value = re.sub(r"<[^>]+>", "", value)
    value = value.replace("&nbsp;", NBSP)
    value = re.sub(r"&#?\w+;", "", value)
    value = re.sub(r"%\(\w+\)[sd]|\{\w+\}", "X", value)
    return re.sub(r"https?://\S+", "", value)


# Entries that are Django date formats ("j N Y \\à H:i"), not words.
DATE_FORMAT_CONTEXTS = (
    "email datetime format",
    "email date format",
    "email month format",
    "the first day of a month",
)


def french_strings() -> list[tuple[str, str]]:
    return [
        (msgid, _text(v))
        for context, msgid, values in catalogue()
        if context not in DATE_FORMAT_CONTEXTS
        for v in values
    ]


@pytest.mark.parametrize(
    ("rule", "pattern"),
    [
        ("a breakable space or none before a colon", r"(?:[^\u00a0\d]|^):(?!\d)"),
        ("a full or breakable space, or none, before ; ! ?", r"(?:[^\u202f]|^)[;!?]"),
        ("a straight double quote in text", r'"'),
        ("a straight apostrophe in text", r"'"),
        ("« without a no-break space after it", r"«(?!\u00a0)"),
        ("» without a no-break space before it", r"(?<!\u00a0)»"),
        ("a percent sign without a no-break space", r"(?<=\d|X)[ ]?%"),
    ],
)
def test_it_keeps_french_typography(rule: str, pattern: str) -> None:
    broken = [(msgid, text) for msgid, text in french_strings() if re.search(pattern, text)]
    assert broken == [], rule


def test_it_catches_what_the_typography_rules_are_for() -> None:
    # The rules above are not vacuous: each refuses what it names.
    assert re.search(r"(?:[^\u00a0\d]|^):(?!\d)", _text("État : Résolu"))
    assert not re.search(r"(?:[^\u00a0\d]|^):(?!\d)", _text(f"État{NBSP}: Résolu à 14:05"))
    assert re.search(r"(?:[^\u202f]|^)[;!?]", _text(f"Vous préférez un agenda{NBSP}?"))
    assert not re.search(r"(?:[^\u202f]|^)[;!?]", _text(f"un agenda{NNBSP}?"))
    assert re.search(r"(?<=\d|X)[ ]?%", _text("%(number)s%%".replace("%%", "%")))
