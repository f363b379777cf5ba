"""docs/reliability.md's table of bad inputs against the tests that keep each row."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "reliability.md"
ROW = re.compile(r"^\| `([a-z0-9][a-z0-9-]*)` \|(.+)\|(.+)\|\s*$")


def table_cases(text: str) -> dict[str, tuple[str, str]]:
    """The rows of the table: case -> (input, what it gets)."""
    rows: dict[str, tuple[str, str]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        found = ROW.match(line)
        if found is None:
            continue
        case, given, outcome = found.group(1), found.group(2).strip(), found.group(3).strip()
        assert case not in rows, f"{PAGE.name}:{number}: case {case!r} appears twice"
        assert given and outcome, f"{PAGE.name}:{number}: case {case!r} needs both columns"
        rows[case] = (given, outcome)
    return rows


def marked_cases(source: str) -> list[str]:
    """The cases of every ``pytest.mark.bad_input("...")`` in *source*."""
    cases = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "bad_input"
        ):
            for argument in node.args:
                assert isinstance(argument, ast.Constant) and isinstance(argument.value, str)
                cases.append(argument.value)
    return cases


def test_every_row_has_a_test_and_every_marked_test_a_row() -> None:
    rows = table_cases(PAGE.read_text(encoding="utf-8"))
    marked: dict[str, list[str]] = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        for case in marked_cases(path.read_text(encoding="utf-8")):
            marked.setdefault(case, []).append(str(path.relative_to(ROOT)))
    assert rows, f"no table of bad inputs in {PAGE}"
    unkept = sorted(set(rows) - set(marked))
    assert not unkept, f"rows of {PAGE.name} that no test marks bad_input: {unkept}"
    unlisted = {case: where for case, where in marked.items() if case not in rows}
    assert not unlisted, f"tests marked bad_input with no row in {PAGE.name}: {unlisted}"


def test_the_table_check_sees_a_missing_row_and_a_missing_test() -> None:
    page = "| `a-case` | an input | an error |\n| `other` | x | y |\n"
    assert set(table_cases(page)) == {"a-case", "other"}
    source = 'import pytest\n@pytest.mark.bad_input("a-case")\ndef test_x(): pass\n'
    assert marked_cases(source) == ["a-case"]
    assert set(table_cases(page)) - set(marked_cases(source)) == {"other"}
