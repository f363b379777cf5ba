"""The README stays a front door, the docs index lists every page, and no link points nowhere."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
INDEX = DOCS / "index.md"

FRONT_DOOR_BYTES = 12 * 1024
"""How long the README may grow: a few screens, as httpx's and structlog's are."""

# [text](target) and ![alt](target); targets with a scheme or only an anchor are not files.
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _relative_targets(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    # Links inside fenced code blocks are examples, not links.
    text = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    targets = []
    for target in _LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        targets.append(target.split("#", 1)[0])
    return targets


def test_the_readme_is_a_front_door() -> None:
    size = len(README.read_bytes())
    assert size <= FRONT_DOOR_BYTES, (
        f"README.md is {size} bytes; move manuals and figures into docs/ (at most "
        f"{FRONT_DOOR_BYTES})"
    )
    text = README.read_text(encoding="utf-8")
    # It starts with the two commands.
    first_block = text.split("```")[1].splitlines()[1:]
    assert first_block[0].startswith("make demo")
    assert any(line.startswith("make test") for line in first_block)
    for section in (
        "## Quick start",
        "## Choosing span groups at run time",
        "## Add a new span group",
        "## Documentation",
    ):
        assert section in text, section
    assert "docs/index.md" in _relative_targets(README)


def test_the_index_lists_every_page() -> None:
    listed = {Path(target).name for target in _relative_targets(INDEX)}
    pages = {page.name for page in DOCS.glob("*.md")} - {INDEX.name}
    assert pages - listed == set(), "pages docs/index.md does not list"


def test_every_relative_link_leads_to_a_file() -> None:
    broken = []
    for page in [README, *sorted(DOCS.glob("*.md"))]:
        for target in _relative_targets(page):
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(REPO)}: {target}")
    assert broken == []


def test_the_link_check_sees_a_broken_link(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](page.md) [gone](missing.md#part) [web](https://example.org) [anchor](#x)\n"
        "```\n[in a block](nowhere.md)\n```\n",
        encoding="utf-8",
    )
    assert _relative_targets(page) == ["page.md", "missing.md"]
