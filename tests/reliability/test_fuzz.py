"""Bad input, fuzzed: every input gets its documented answer, never a stray exception.

* The span-group spec parser: any string resolves to a frozenset of the class's
  groups or raises ``ValueError``.
* The schema loader and ``nemo-lens generate --validate``: any file -- random
  text, random TOML, the real schema with random damage -- yields a schema or
  the validator's report (exit status 2), never a traceback.
* The environment: any value of any ``NEMO_LENS_*`` variable yields a config or
  a ``ValueError`` that names the variable.
* Config fields in code: a value of the wrong type (``enabled="yes"``) is a
  ``TypeError`` naming the field, never silently truthy.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import math
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from nemo.lens.codegen.command import main as codegen_main
from nemo.lens.codegen.model import Schema
from nemo.lens.codegen.validate import SchemaError, load_schema
from nemo.lens.config import NemoLensConfig
from nemo.lens.consumers.gym import GymSpanGroup
from nemo.lens.consumers.megatron import MegatronSpanGroup
from nemo.lens.consumers.rl import RLSpanGroup
from nemo.lens.groups import SpanGroup
from tests.reliability.conftest import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

FUZZ = settings(
    deadline=None,
    max_examples=200,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Text that can live in a file, an environment variable and a TOML string:
# no lone surrogates (not encodable), no NUL (not allowed in the environment).
_TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"))

# -- the spec parser -----------------------------------------------------------------------

CLASSES = (SpanGroup, MegatronSpanGroup, RLSpanGroup, GymSpanGroup)


def _words(cls: type[SpanGroup]) -> list[str]:
    return sorted({*cls.ALL_GROUPS, *cls.PRESETS, "all", *cls.RENAMED})


@st.composite
def _specs(draw: st.DrawFn, cls: type[SpanGroup]) -> str:
    """Specs near the grammar (names, '-', commas, spaces, case) or anything at all."""
    words = _words(cls)
    entry = st.one_of(
        st.sampled_from(words),
        st.sampled_from(words).map(str.upper),
        st.sampled_from(words).map(lambda w: f"-{w}"),
        st.sampled_from(words).map(lambda w: f"  {w[:-1]} "),
        st.sampled_from(["", "-", " - ", ",", "--all", "all-", "\t"]),
        _TEXT,
    )
    if draw(st.booleans()):
        return draw(_TEXT)
    return ",".join(draw(st.lists(entry, max_size=8)))


@settings(FUZZ, max_examples=500)
@given(data=st.data())
def test_any_spec_is_a_set_of_groups_or_a_value_error(data: st.DataObject) -> None:
    cls = data.draw(st.sampled_from(CLASSES))
    spec = data.draw(_specs(cls))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # renamed groups still resolve
        try:
            groups = cls.resolve(spec)
        except ValueError as exc:
            assert str(exc)  # an explanation, not an empty error
            return
    assert isinstance(groups, frozenset)
    assert groups <= cls.ALL_GROUPS


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_non_string_specs_are_a_type_error(cls: type[SpanGroup]) -> None:
    for spec in (None, 3, ["step"], b"step"):
        with pytest.raises(TypeError, match="must be a str"):
            cls.resolve(spec)  # type: ignore[arg-type]


# -- the schema loader ---------------------------------------------------------------------

_REAL_SCHEMA = (REPO / "schema" / "span_groups.toml").read_text(encoding="utf-8")
_VOCABULARY = sorted(
    {
        *("schema_version", "extends", "groups", "presets", "consumers", "description"),
        *("fires", "since", "deprecated", "note", "renamed_to", "class", "module"),
        *("allow_frequent", "default", "per_step", "all", "once", "periodic", "job", "step"),
        *("megatron", "MegatronSpanGroup", "nemo.lens", "0.1.0", "1"),
    }
)
# What `extends` may name: the bundled base, this very file, a file that
# extends this one (a cycle of two), a missing file, a directory, junk paths.
_EXTENDS = ["nemo.lens", "schema.toml", "other.toml", "missing.toml", ".", "", "a\x00b", "../x"]


def _toml_string(text: str) -> str:
    escaped = []
    for char in text:
        if char in '"\\':
            escaped.append("\\" + char)
        elif ord(char) < 0x20 or char == "\x7f":
            escaped.append(f"\\u{ord(char):04X}")
        else:
            escaped.append(char)
    return '"' + "".join(escaped) + '"'


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    if isinstance(value, Mapping):
        pairs = (f"{_toml_string(k)} = {_toml_value(v)}" for k, v in value.items())
        return "{" + ", ".join(pairs) + "}"
    raise AssertionError(f"no TOML for {value!r}")


def toml_document(data: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> str:
    """*data* as a TOML document: tables as ``[sections]``, everything else inline."""
    lines = []
    if prefix:
        lines.append("[" + ".".join(_toml_string(part) for part in prefix) + "]")
    tables = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            tables[key] = value
        else:
            lines.append(f"{_toml_string(key)} = {_toml_value(value)}")
    for key, value in tables.items():
        lines.append(toml_document(value, (*prefix, key)))
    return "\n".join(lines) + "\n"


_KEYS = st.one_of(st.sampled_from(_VOCABULARY), _TEXT.filter(bool))
_SCALARS = st.one_of(
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(),
    st.sampled_from(_VOCABULARY),
    _TEXT,
    st.datetimes(),
    st.dates(),
    st.times(),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=24,
)


def _damage(data: st.DataObject, tree: dict[str, Any]) -> None:
    """Replace, delete or add one entry somewhere in *tree*, in place."""
    node: Any = tree
    while isinstance(node, dict) and node and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(node)))
        if not isinstance(node[key], dict):
            break
        node = node[key]
    if not isinstance(node, dict):
        return
    action = data.draw(st.sampled_from(["replace", "delete", "add"]))
    if action == "add" or not node:
        node[data.draw(_KEYS)] = data.draw(_VALUES)
        return
    key = data.draw(st.sampled_from(sorted(node)))
    if action == "delete":
        del node[key]
    else:
        node[key] = data.draw(_VALUES)


@st.composite
def _schema_documents(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["text", "toml", "damaged", "lines", "extends"]))
    if kind == "text":
        return draw(_TEXT)
    if kind == "toml":
        return toml_document(draw(st.dictionaries(_KEYS, _VALUES, max_size=6)))
    if kind == "damaged":
        tree = tomllib.loads(_REAL_SCHEMA)
        data = draw(st.data())
        for _ in range(draw(st.integers(1, 4))):
            _damage(data, tree)
        return toml_document(tree)
    if kind == "lines":
        lines = _REAL_SCHEMA.splitlines()
        for _ in range(draw(st.integers(1, 6))):
            at = draw(st.integers(0, len(lines) - 1))
            edit = draw(st.sampled_from(["drop", "repeat", "replace", "cut"]))
            if edit == "drop":
                del lines[at]
            elif edit == "repeat":
                lines.insert(at, lines[at])
            elif edit == "replace":
                lines[at] = draw(_TEXT.map(lambda t: t.replace("\n", " ")))
            else:
                lines[at] = lines[at][: draw(st.integers(0, len(lines[at])))]
        return "\n".join(lines) + "\n"
    consumer = {
        "class": draw(st.sampled_from(["MyLibSpanGroup", "SpanGroup", "x"])),
        "module": draw(st.sampled_from(["mylib.lens_groups", "nemo.lens.groups", "1"])),
        "description": "Mylib.",
        "groups": {"shard_merge": {"description": "Merge.", "fires": "periodic", "since": "1.0"}},
        "presets": {"default": {"description": "Prod.", "groups": ["job", "shard_merge"]}},
    }
    tree = {
        "schema_version": 1,
        "extends": draw(st.sampled_from(_EXTENDS)),
        "consumers": {"mylib": consumer},
    }
    data = draw(st.data())
    for _ in range(draw(st.integers(0, 2))):
        _damage(data, tree)
    return toml_document(tree)


@contextlib.contextmanager
def _schema_dir(tmp_path_factory: pytest.TempPathFactory, text: str) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("schema")
    (folder / "other.toml").write_text(
        'schema_version = 1\nextends = "schema.toml"\n', encoding="utf-8"
    )
    path = folder / "schema.toml"
    path.write_text(text, encoding="utf-8")
    yield path


@FUZZ
@given(text=_schema_documents())
def test_any_schema_file_gets_a_report_never_a_traceback(
    tmp_path_factory: pytest.TempPathFactory, text: str
) -> None:
    with _schema_dir(tmp_path_factory, text) as path:
        try:
            loaded = load_schema(path)
        except SchemaError as exc:
            assert exc.problems
            assert all(str(problem) for problem in exc.problems)
        else:
            assert isinstance(loaded, Schema)

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = codegen_main(["--validate", "--schema", str(path)])
        assert status in (0, 2)
        if status == 2:
            assert err.getvalue().startswith("error: ")
            assert err.getvalue().rstrip().endswith("nothing was written.")


@pytest.mark.parametrize(
    "text",
    [
        "x = " + "[" * 5000 + "]" * 5000 + "\n",  # deeper than tomllib's recursion allows
        'schema_version = 1\nextends = "schema.toml"\n[consumers.a]\nclass = "A"\n',
        'schema_version = 1\nextends = "other.toml"\n',  # other.toml extends this one
        'schema_version = 1\nextends = "a\\u0000b"\n',
        b"\xff\xfe not UTF-8".decode("latin-1"),
    ],
    ids=["deep-nesting", "extends-itself", "extends-cycle", "nul-in-path", "latin-1"],
)
def test_the_command_line_reports_hostile_schemas_with_status_2(
    tmp_path_factory: pytest.TempPathFactory, text: str
) -> None:
    with _schema_dir(tmp_path_factory, text) as path:
        completed = subprocess.run(
            [sys.executable, "-m", "nemo.lens.codegen", "--validate", "--schema", str(path)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert completed.returncode == 2, completed.stderr
    assert "Traceback" not in completed.stderr
    assert completed.stderr.startswith("error: ")


# -- configuration -------------------------------------------------------------------------

_ENV = (
    *(f"NEMO_LENS_{suffix}" for suffix in ("ENABLED", "EXPORT_STRATEGY", "EXPORT_RANK")),
    *(f"NEMO_LENS_{suffix}" for suffix in ("EXPORT_SAMPLE_RATE", "SAMPLER_ENABLED")),
    *(f"NEMO_LENS_{suffix}" for suffix in ("TRACES_ENABLED", "METRICS_ENABLED", "LOGS_ENABLED")),
    *(f"NEMO_LENS_{suffix}" for suffix in ("SPAN_GROUPS", "EXPORTER", "RUN_ID", "USER_ID")),
    *(f"NEMO_LENS_{suffix}" for suffix in ("TRACE_FILE", "HANDLE_SIGNALS")),
    "OTEL_SERVICE_NAME",
    "WANDB_ENTITY",
    "WANDB_PROJECT",
)
_PLAUSIBLE = st.sampled_from(
    [
        *("1", "0", "yes", "off", "TRUE", " on ", "-1", "7", "0.5", "1e-3", "nan", "inf"),
        *("all", "per_step,-optimizer", "file", "otlp", "none", "{rank}", "{rank", "t/{x}"),
    ]
)


@FUZZ
@given(values=st.dictionaries(st.sampled_from(_ENV), st.one_of(_PLAUSIBLE, _TEXT), max_size=5))
def test_any_environment_gives_a_config_or_names_the_bad_variable(
    values: dict[str, str],
) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("NEMO_LENS_", "OTEL_"))}
    with mock.patch.dict(os.environ, {**clean, **values}, clear=True):
        try:
            config = NemoLensConfig.from_env()
        except ValueError as exc:
            assert any(variable in str(exc) for variable in values), str(exc)
            return
        try:
            config.validate()
            resolved = config.resolved()
            for rank in (0, 3):
                resolved.format_trace_file(rank)
        except ValueError as exc:
            assert "NemoLensConfig" in str(exc) or "trace_file" in str(exc), str(exc)


_BOOL_FIELDS = (
    "enabled",
    "sampler_enabled",
    "traces_enabled",
    "metrics_enabled",
    "logs_enabled",
    "handle_signals",
)
_NOT_BOOLS = st.one_of(
    st.sampled_from(["yes", "no", "true", "false", "1", "0", "", "off"]),
    st.integers(),
    st.floats(),
    st.none(),
    st.lists(st.booleans(), max_size=2),
    st.builds(object),
)


@FUZZ
@given(field=st.sampled_from(_BOOL_FIELDS), value=_NOT_BOOLS)
def test_a_non_bool_switch_is_a_type_error_never_truthy(field: str, value: object) -> None:
    arguments: dict[str, Any] = {field: value}
    with pytest.raises(TypeError) as raised:
        NemoLensConfig(**arguments)
    message = str(raised.value)
    assert f"NemoLensConfig.{field} must be a bool" in message
    assert "from_env" in message  # it says how strings like 'yes' are meant to be given


_FIELDS = (
    *_BOOL_FIELDS,
    "service_name",
    "export_strategy",
    "export_rank",
    "export_sample_rate",
    "span_groups",
    "exporter",
    "run_id",
    "user",
    "wandb_entity",
    "wandb_project",
    "trace_file",
    "span_group_cls",
)
_ANYTHING = st.one_of(
    _NOT_BOOLS,
    st.booleans(),
    _TEXT,
    st.sampled_from([SpanGroup, MegatronSpanGroup, str, int, -1, -2, 0.5, 1.5, "all", "file"]),
)


@FUZZ
@given(fields=st.dictionaries(st.sampled_from(_FIELDS), _ANYTHING, max_size=4))
def test_any_field_values_give_a_config_or_a_clear_error(fields: dict[str, Any]) -> None:
    assume(fields)
    try:
        config = NemoLensConfig(**fields)
    except (TypeError, ValueError) as exc:
        assert any(name in str(exc) for name in fields), str(exc)
        return
    for name, value in fields.items():
        assert getattr(config, name) is value


def test_enabled_yes_in_code_is_rejected_with_the_fix_in_the_message() -> None:
    with pytest.raises(TypeError) as raised:
        NemoLensConfig(enabled="yes")  # type: ignore[arg-type]
    assert str(raised.value) == (
        "NemoLensConfig.enabled must be a bool (True or False), got str 'yes'; to parse "
        "strings such as 'yes' or '1' use NemoLensConfig.from_env()"
    )
