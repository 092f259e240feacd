"""The README and docs/ link only to files and headings that exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _slug(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _bad_links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    bad = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            bad.append(f"{page.relative_to(ROOT)}: {target} does not exist")
        elif anchor and dest.suffix == ".md":
            headings = {_slug(h) for h in re.findall(r"(?m)^#+ (.*)$", dest.read_text())}
            if anchor not in headings:
                bad.append(f"{page.relative_to(ROOT)}: no heading #{anchor} in {path or page.name}")
    return bad


def test_it_links_only_to_what_exists() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    assert len(pages) > 10
    bad = [line for page in pages for line in _bad_links(page)]
    assert bad == []


def test_it_finds_a_broken_link() -> None:
    page = ROOT / "docs" / "_probe.md"
    page.write_text("[gone](nowhere.md) and [here](#not-a-heading)\n# Title\n")
    try:
        assert len(_bad_links(page)) == 2
    finally:
        page.unlink()
