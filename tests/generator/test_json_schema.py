"""The JSON Schema editors check a schema with says what the loader says.

Not by reading the tables the loader and the JSON Schema share: by asking
the loader, as an author would meet it. For every table the JSON Schema describes, a
schema with one unknown key there makes the loader list the keys it allows, which must
be the JSON Schema's keys; a wrong choice makes it list the choices, which must be the
JSON Schema's enum; a key the JSON Schema requires, left out, is one the loader misses.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nemo.lens.codegen.command import JSON_SCHEMA_FILE
from nemo.lens.codegen.json_schema import BASE_ONLY_KEYS, json_schema
from nemo.lens.codegen.validate import BUNDLED_BASE_PATH, Problem, SchemaError, load_schema
from tests.generator.conftest import FIXTURES, REPO, run_codegen

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

SCHEMA = json_schema()
DOCUMENT = tomllib.loads((FIXTURES / "small.toml").read_text("utf-8"))
"""A valid schema with every table the format has (the fixture exercises every feature)."""
BOGUS = "zz_bogus"

Path_ = tuple[str, ...]


def _resolve(node: dict[str, Any]) -> tuple[dict[str, Any], str]:
    ref = node.get("$ref", "")
    if ref:
        return SCHEMA["definitions"][ref.rsplit("/", 1)[1]], ref
    return node, ""


def _locations(
    node: dict[str, Any], path: Path_ = (), seen: set[str] | None = None
) -> Iterator[tuple[Path_, dict[str, Any]]]:
    """(path, node) of every node of the JSON Schema, `*` for a key the author chooses; a
    definition used in several places is visited where it is first used."""
    seen = set() if seen is None else seen
    node, ref = _resolve(node)
    if ref:
        if ref in seen:
            return
        seen.add(ref)
    yield path, node
    for key, child in node.get("properties", {}).items():
        if isinstance(child, dict):
            yield from _locations(child, (*path, key), seen)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        yield from _locations(extra, (*path, "*"), seen)


def _instance(data: Any, pattern: Path_) -> Path_:
    """The first path of *data* that *pattern* matches (`*`: any key)."""
    if not pattern:
        return ()
    if not isinstance(data, dict):
        raise LookupError
    head, *rest = pattern
    for key in data if head == "*" else [head]:
        if key in data:
            try:
                return (key, *_instance(data[key], tuple(rest)))
            except LookupError:
                continue
    raise LookupError


def _toml(data: dict[str, Any]) -> str:
    """*data* as TOML (the scalars of a table before its subtables)."""

    def key(text: str) -> str:
        return text if re.fullmatch(r"[A-Za-z0-9_-]+", text) else json.dumps(text)

    def value(item: Any) -> str:
        if isinstance(item, bool):
            return "true" if item else "false"
        if isinstance(item, (int, float)):
            return repr(item)
        if isinstance(item, str):
            return json.dumps(item, ensure_ascii=False)
        return "[" + ", ".join(value(i) for i in item) + "]"

    lines: list[str] = []

    def table(prefix: Path_, body: dict[str, Any]) -> None:
        if prefix:
            lines.append(f"[{'.'.join(key(p) for p in prefix)}]")
        lines.extend(f"{key(k)} = {value(v)}" for k, v in body.items() if not isinstance(v, dict))
        for name, sub in body.items():
            if isinstance(sub, dict):
                table((*prefix, name), sub)

    table((), data)
    return "\n".join(lines) + "\n"


def _problems(tmp_path: Path, data: dict[str, Any]) -> list[Problem]:
    path = tmp_path / "schema.toml"
    path.write_text(_toml(data), encoding="utf-8")
    with pytest.raises(SchemaError) as raised:
        load_schema(path)
    return raised.value.problems


def _edited(path: Path_, key: str, new: Any = None) -> dict[str, Any]:
    """DOCUMENT with *key* of the table at *path* set to *new* (None: removed)."""
    data: dict[str, Any] = copy.deepcopy(DOCUMENT)
    table = data
    for part in path:
        table = table[part]
    if new is None:
        del table[key]
    else:
        table[key] = new
    return data


TABLES = [(p, n) for p, n in _locations(SCHEMA) if "properties" in n and n.get("type") == "object"]
CHOICES = [(p, n) for p, n in _locations(SCHEMA) if "enum" in n and p]


def _ids(locations: list[tuple[Path_, dict[str, Any]]]) -> list[str]:
    return [".".join(p) or "(top level)" for p, _ in locations]


def test_the_walk_reaches_every_table_of_the_format() -> None:
    # A walk that found nothing would make every test below pass: name what it must find.
    assert set(_ids(TABLES)) == {
        "(top level)",
        "groups.*",
        "groups.*.deprecated",
        "presets.*",
        "consumers.*",
        "consumers.*.presets.*",
        "metrics",
        "metrics.sections.*",
        "metrics.instruments.*",
        "attributes",
        "attributes.sections.*",
        "attributes.names.*",
    }


@pytest.mark.parametrize(("pattern", "node"), TABLES, ids=_ids(TABLES))
def test_each_table_has_the_keys_the_loader_allows(
    tmp_path: Path, pattern: Path_, node: dict[str, Any]
) -> None:
    path = _instance(DOCUMENT, pattern)

    problems = _problems(tmp_path, _edited(path, BOGUS, "x"))

    (problem,) = [p for p in problems if p.path == (*path, BOGUS)]
    allowed = re.search(r"\(allowed: (.*)\)$", problem.message)
    assert allowed, problem.message
    assert allowed.group(1).split(", ") == list(node["properties"])
    assert node["additionalProperties"] is False
    assert all(p.get("description") for p in node["properties"].values()), "hover text for each"


@pytest.mark.parametrize(("pattern", "node"), CHOICES, ids=_ids(CHOICES))
def test_each_choice_lists_what_the_loader_accepts(
    tmp_path: Path, pattern: Path_, node: dict[str, Any]
) -> None:
    *table, key = pattern
    if key == "*":
        path = _instance(DOCUMENT, pattern)
        table, key = list(path[:-1]), path[-1]
    else:
        table = list(_instance(DOCUMENT, tuple(table)))

    problems = _problems(tmp_path, _edited(tuple(table), key, BOGUS))

    (problem,) = [p for p in problems if p.path == (*table, key)]
    listed = re.search(r"\(\w+: (.*)\)$", problem.message)
    assert listed, problem.message
    assert listed.group(1).split(", ") == node["enum"]


REQUIRED = [(p, n, k) for p, n in _locations(SCHEMA) for k in n.get("required", [])]


@pytest.mark.parametrize(
    ("pattern", "node", "key"),
    REQUIRED,
    ids=[f"{'.'.join(p) or '(top level)'}:{k}" for p, _, k in REQUIRED],
)
def test_what_the_json_schema_requires_the_loader_requires(
    tmp_path: Path, pattern: Path_, node: dict[str, Any], key: str
) -> None:
    path = _instance(DOCUMENT, (*pattern, key))[:-1]

    problems = _problems(tmp_path, _edited(path, key))

    assert any(p.path == path and repr(key)[1:-1] in p.message for p in problems), problems


@pytest.mark.parametrize("key", BASE_ONLY_KEYS)
def test_what_it_forbids_a_consumer_schema_the_loader_forbids(tmp_path: Path, key: str) -> None:
    assert SCHEMA["then"]["properties"][key] is False
    consumer = {
        "schema_version": 1,
        "extends": BUNDLED_BASE_PATH.as_posix(),
        "consumers": DOCUMENT["consumers"],
        key: DOCUMENT[key],
    }

    problems = _problems(tmp_path, consumer)

    assert [p.path for p in problems] == [(key,)]


def test_print_json_schema_prints_the_file_that_ships_beside_the_base_schema(
    tmp_path: Path,
) -> None:
    result = run_codegen("--print-json-schema", cwd=tmp_path)  # anywhere: it reads no schema

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == SCHEMA
    assert json.loads(result.stdout)["$schema"] == "http://json-schema.org/draft-07/schema#"
    shipped = BUNDLED_BASE_PATH.with_name(JSON_SCHEMA_FILE)
    assert shipped.read_text("utf-8") == result.stdout
    assert (REPO / "schema" / JSON_SCHEMA_FILE).read_text("utf-8") == result.stdout
    assert list(tmp_path.iterdir()) == []


def test_the_base_schema_names_it_on_its_first_line() -> None:
    first = BUNDLED_BASE_PATH.read_text("utf-8").splitlines()[0]

    assert first == f"#:schema ./{JSON_SCHEMA_FILE}"
    assert (BUNDLED_BASE_PATH.parent / first.split(maxsplit=1)[1]).is_file()


def test_the_package_ships_it() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
    data = pyproject["tool"]["setuptools"]["package-data"]["nemo.lens.codegen"]

    assert any(Path("schema", JSON_SCHEMA_FILE).match(pattern) for pattern in data)


def test_make_check_generated_reports_a_stale_copy(tmp_path: Path) -> None:
    for part in ("schema", "src", "docs"):
        ignore = shutil.ignore_patterns("__pycache__")
        shutil.copytree(REPO / part, tmp_path / part, ignore=ignore, symlinks=True)
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    copy_ = tmp_path / "schema" / JSON_SCHEMA_FILE
    copy_.write_text(copy_.read_text("utf-8").replace('"fires"', '"fire"'), encoding="utf-8")

    result = run_codegen("--check", cwd=tmp_path)

    assert result.returncode == 1
    assert f"--- schema/{JSON_SCHEMA_FILE} (on disk)" in result.stdout
    assert "run `make generate`" in result.stderr
    assert run_codegen(cwd=tmp_path).returncode == 0
    assert copy_.read_text("utf-8") == (REPO / "schema" / JSON_SCHEMA_FILE).read_text("utf-8")


def test_generate_help_says_how_an_editor_uses_it(capsys: pytest.CaptureFixture[str]) -> None:
    from nemo.lens import cli

    assert cli.main(["generate", "--help"]) == 0

    help_ = " ".join(capsys.readouterr().out.split())
    assert "--print-json-schema print the JSON Schema of the schema format and exit" in help_
    assert "#:schema ./lens.schema.json" in help_
