"""Schema text is always inert: whatever a schema may say, the generated code only defines names.

For any description, deprecation note, consumer description and group key (any
text hypothesis can make, crafted escapes and quotes included), the schema is
either refused with a report, or accepted; and what is accepted renders modules
that compile, pass ruff and mypy --strict, and whose import does nothing but
define names (no output, no file or process access, no further code run).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from nemo.lens.codegen.render import render_all
from nemo.lens.codegen.validate import SchemaError, load_schema
from tests.generator.conftest import REPO, free_group_name

# Text as a TOML string can hold it: anything but lone surrogates.
TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=80)
# Strings that have broken generators before: escapes, quotes, a trailing backslash.
NASTY = st.sampled_from(
    [
        "\\",
        "ends in a backslash \\",
        '"""',
        '""""',
        "'''",
        '\\"""; import os; os.system("echo pwned") #',
        "\\x41 \\N{BULLET} \\u0000 \\U0001F600",
        '"quoted"',
        "tab\there",
        "line\nbreak",
        "\u202e reversed",
        "{{ jinja }} {% if %}",
        "` | <script>alert(1)</script>",
    ]
)
# Printable text of every script, punctuation and symbols: what a schema accepts.
PRINTABLE = st.text(
    st.characters(categories=("L", "M", "N", "P", "S", "Zs")), min_size=1, max_size=60
)
FIELD = st.one_of(
    NASTY,
    PRINTABLE,
    TEXT,
    st.builds("".join, st.lists(st.one_of(NASTY, PRINTABLE), min_size=1, max_size=4)),
)
NAME = st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True)
KEY = st.one_of(NAME, NAME, NAME, TEXT, NASTY, NAME.map(lambda n: n + "\n"))

# Collected across examples: (directory, module name) of every accepted rendering, checked
# with ruff and mypy once at the end (a type checker per example would take minutes).
ACCEPTED: list[Path] = []
_CASES = itertools.count()
_WATCH = threading.local()
_FORBIDDEN = ("open", "os.", "subprocess.", "socket.", "shutil.", "builtins.input", "compile")


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if getattr(_WATCH, "events", None) is not None and event.startswith((*_FORBIDDEN, "exec")):
        _WATCH.events.append(event)


sys.addaudithook(_audit)


@contextlib.contextmanager
def _watched() -> Iterator[list[str]]:
    events: list[str] = []
    _WATCH.events = events
    try:
        yield events
    finally:
        _WATCH.events = None


def _toml(value: str) -> str:
    # JSON string syntax is valid TOML basic-string syntax for any text without
    # lone surrogates (and json escapes every control character).
    return json.dumps(value)


def _schema(description: str, note: str, consumer: str, key: str, index: int) -> str:
    return f"""\
schema_version = 1
extends = "nemo.lens"

[consumers.fuzz]
class = "FuzzSpanGroup"
module = "fuzz{index}.lens_groups"
description = {_toml(consumer)}

[consumers.fuzz.groups.{_toml(key)}]
description = {_toml(description)}
fires = "periodic"
since = "1.0.0"

[consumers.fuzz.groups.old_name]
description = {_toml(description)}
fires = "periodic"
since = "0.1.0"
deprecated = {{ note = {_toml(note)}, renamed_to = {_toml(key)} }}

[consumers.fuzz.groups.retired]
description = "Retired."
fires = "periodic"
since = "0.1.0"
deprecated = {{ note = {_toml(note)} }}
"""


def _import_inertly(name: str, source: str) -> dict[str, Any]:
    """Execute *source* as module *name*; fail on any effect besides defining names."""
    namespace: dict[str, Any] = {"__name__": name}
    code = compile(source, f"<{name}>", "exec")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), _watched() as events:
        exec(code, namespace)
    assert out.getvalue() == err.getvalue() == ""
    assert events == ["exec"], f"importing the generated module did more: {events}"
    exported = set(namespace["__all__"])
    public = {n for n in namespace if not n.startswith("_")}
    imported = {"annotations", "Mapping", "MappingProxyType", "TYPE_CHECKING", "Any", "ClassVar"}
    imported |= {"Final", "Literal", "TypeAlias", "TypeVar", "cast", "overload", "SpanGroup"}
    imported |= {"DynamicSpanGroup", "GroupInfo", "RenamedGroup", "primitives_getattr"}
    imported |= {"by_name", "with_implicit_presets"}
    assert public - exported - imported == set()
    return namespace


@pytest.fixture(scope="module")
def out_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("inert")
    yield root
    # With every example rendered, the project's own gates judge all of them at once.
    # (Most random text is refused; the crafted strings and names make sure some pass.)
    assert len(ACCEPTED) >= len(_CRAFTED), f"only {len(ACCEPTED)} schemas were accepted"
    files = [str(p) for p in ACCEPTED]
    config = str(REPO / "pyproject.toml")
    for gate in (
        ["ruff", "check", "--config", config, *files],
        ["ruff", "format", "--check", "--config", config, *files],
        ["mypy", "--strict", "--no-incremental", "--explicit-package-bases", *files],
    ):
        done = subprocess.run(
            [sys.executable, "-m", *gate], cwd=root, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stdout + done.stderr


# Accepted for sure, so the gates always judge the crafted cases: text that ends in a
# backslash, holds triple quotes, escape sequences, template syntax, or code after a quote.
_CRAFTED = [
    ("ends in a backslash \\", '"""', "\\", free_group_name("shard_merge")),
    (
        '\\"""; import os; os.system("echo pwned") #',
        "\\x41 \\N{BULLET} \\u0000",
        '""""',
        free_group_name("a"),
    ),
    ("{{ jinja }} {% if %}", "` | <script>alert(1)</script>", "'''", free_group_name("merge2")),
    ("\"quoted\" and 'single'", "\\", "Ünïcödé ✓ 日本", free_group_name("z9_x")),
]


def _crafted(test: Any) -> Any:
    for description, note, consumer, key in _CRAFTED:
        test = example(description=description, note=note, consumer=consumer, key=key)(test)
    return test


@_crafted
@settings(
    max_examples=100,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(description=FIELD, note=FIELD, consumer=FIELD, key=KEY)
def test_any_accepted_schema_text_generates_inert_code(
    out_root: Path, description: str, note: str, consumer: str, key: str
) -> None:
    index = next(_CASES)
    directory = out_root / f"case{index}"
    directory.mkdir()
    schema_path = directory / "lens.toml"
    schema_path.write_text(_schema(description, note, consumer, key, index), encoding="utf-8")
    try:
        schema = load_schema(schema_path, shown="lens.toml")
    except SchemaError as refused:
        assert refused.problems  # refused with a report: fine, unless it is plain text
        assert (description, note, consumer, key) not in _CRAFTED, str(refused)
        return
    files = render_all(schema, out_root, directory / "docs.md", command="nemo-lens generate")
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if path.suffix == ".py":
            namespace = _import_inertly(f"fuzz{index}.lens_groups", text)
            cls = namespace["FuzzSpanGroup"]
            # A key the base defines too is the base's group (promoted): its text wins.
            base = {g.name: g.description for g in schema.base.groups}
            assert cls.GROUP_INFO[key].description == base.get(key, description.strip())
            # Wrapped into a docstring, the words are the same (long ones may be split).
            assert "".join(cls.__doc__.split()) == "".join(consumer.split())
            ACCEPTED.append(path)
        else:
            assert "<script>" not in text
