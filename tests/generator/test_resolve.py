"""Every shipped class resolves what the schema says, and the grammar works on any class.

The expected vocabulary is read from the schema itself (with tomllib, and a small
independent reading of its preset rules), never restated here: adding, moving or
removing a group with one schema edit leaves these tests passing. The grammar is
tested on the fixture schema's classes.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import pytest

from nemo.lens.cli import span_group_classes
from nemo.lens.groups import SpanGroup
from nemo.lens.spec import categories_for, resolve_for
from tests.fixture_vocabulary import fixture_classes
from tests.generator.conftest import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

SCHEMA: dict[str, Any] = tomllib.loads(
    (REPO / "schema" / "span_groups.toml").read_text(encoding="utf-8")
)
CLASSES = span_group_classes()
IMPLICIT = {"all", "goodput", "profiling"}


def _current(groups: Mapping[str, Any]) -> set[str]:
    return {n for n, g in groups.items() if "renamed_to" not in g.get("deprecated", {})}


def _table(cls: type[SpanGroup]) -> dict[str, Any] | None:
    """The schema's consumer table of *cls*; None for the base class."""
    for table in SCHEMA.get("consumers", {}).values():
        if table["class"] == cls.__name__:
            return dict(table)
    assert cls is SpanGroup, f"{cls.__name__} is not in the schema"
    return None


def _expand(
    declared: Mapping[str, Any], inherited: Mapping[str, set[str]], groups: set[str]
) -> dict[str, set[str]]:
    """Presets as the schema's header comment describes them: listed groups, `extends`,
    and for a consumer the base preset of the same name unless `replace = true`."""

    def members(name: str) -> set[str]:
        if name == "all":
            return set(groups)
        if name not in declared:
            return set(inherited.get(name, set()))
        body = declared[name]
        out = set(body.get("groups", [])) & groups
        if not body.get("replace", False):
            out |= inherited.get(name, set())
        for parent in body.get("extends", []):
            out |= members(parent)
        return out

    return {name: members(name) for name in {*declared, *inherited}}


def expected(cls: type[SpanGroup]) -> tuple[set[str], dict[str, set[str]], set[str]]:
    """(every group, every preset's members, the goodput groups) of *cls*, from the schema."""
    base_groups = _current(SCHEMA["groups"])
    base_presets = _expand(SCHEMA["presets"], {}, base_groups)
    base_goodput = {n for n, g in SCHEMA["groups"].items() if g.get("category") == "goodput"}
    table = _table(cls)
    if table is None:
        groups, presets, goodput = base_groups, base_presets, base_goodput
    else:
        own = table.get("groups", {})
        groups = base_groups | _current(own)
        presets = _expand(table.get("presets", {}), base_presets, groups)
        overrides = table.get("categories", {})
        goodput = {g for g in base_goodput if overrides.get(g, "goodput") == "goodput"}
        goodput |= {g for g, c in overrides.items() if c == "goodput"}
        goodput |= {n for n, g in own.items() if g.get("category") == "goodput"}
    presets = {**presets, "all": groups, "profiling": groups, "goodput": goodput & groups}
    return groups, presets, goodput & groups


@pytest.mark.parametrize("cls", CLASSES.values(), ids=lambda c: c.__name__)
def test_all_groups_is_the_schemas_groups(cls: type[SpanGroup]) -> None:
    groups, _, _ = expected(cls)
    assert cls.ALL_GROUPS == groups
    for name in groups:
        assert getattr(cls, name.upper()) == name


@pytest.mark.parametrize("cls", CLASSES.values(), ids=lambda c: c.__name__)
def test_every_group_resolves_from_its_bare_name(cls: type[SpanGroup]) -> None:
    for name in cls.ALL_GROUPS:
        assert cls.resolve(name) == {name}


@pytest.mark.parametrize("cls", CLASSES.values(), ids=lambda c: c.__name__)
def test_presets_resolve_to_exactly_what_the_schema_says(cls: type[SpanGroup]) -> None:
    _, presets, _ = expected(cls)
    assert set(cls.PRESETS) == set(presets)
    assert IMPLICIT <= set(cls.PRESETS)
    for preset, members in presets.items():
        assert cls.resolve(preset) == members, preset
        assert cls.PRESETS[preset] == members
        assert cls._PRESETS[preset] == members
        # the module's typed constant is the very set the class holds
        constant = getattr(sys.modules[cls.__module__], f"{preset.upper()}_PRESET")
        assert constant == members, preset
        assert constant is cls.PRESETS[preset], preset


@pytest.mark.parametrize("cls", CLASSES.values(), ids=lambda c: c.__name__)
def test_categories_are_the_schemas(cls: type[SpanGroup]) -> None:
    groups, _, goodput = expected(cls)
    assert cls.GOODPUT_GROUPS == goodput
    assert cls.categories() == {g: "goodput" if g in goodput else "profiling" for g in groups}
    for group, info in cls.GROUP_INFO.items():
        assert info.category == cls.categories()[group]
    table = _table(cls) or {}
    for group, body in {**SCHEMA["groups"], **table.get("groups", {})}.items():
        if group in cls.GROUP_INFO:
            assert cls.GROUP_INFO[group].bucket == body.get("bucket", ""), group


@pytest.mark.parametrize("cls", CLASSES.values(), ids=lambda c: c.__name__)
def test_consumers_inherit_every_base_preset(cls: type[SpanGroup]) -> None:
    table = _table(cls) or {}
    for name in SCHEMA["presets"]:
        replaced = table.get("presets", {}).get(name, {}).get("replace", False)
        if not replaced:
            assert SpanGroup.resolve(name) <= cls.resolve(name), name


@pytest.mark.parametrize("cls", CLASSES.values(), ids=lambda c: c.__name__)
def test_default_holds_only_quiet_groups_or_stated_exceptions(cls: type[SpanGroup]) -> None:
    quiet = {"once", "periodic"}
    frequent = {g for g in cls.resolve("default") if cls.GROUP_INFO[g].fires not in quiet}
    stated: set[str] = set(SCHEMA["presets"]["default"].get("allow_frequent", {}))
    table = _table(cls)
    if table is not None:
        stated |= set(table.get("presets", {}).get("default", {}).get("allow_frequent", {}))
    assert frequent <= stated


# --- the grammar, on the fixture schema's classes -----------------------------------------


@pytest.fixture(scope="module")
def base() -> type[SpanGroup]:
    return fixture_classes()["base"]


def test_grammar(base: type[SpanGroup]) -> None:
    every = set(base.ALL_GROUPS)
    default = set(base.PRESETS["default"])
    per_step = set(base.PRESETS["per_step"])
    one = sorted(every - default)[0]
    cases = {
        "": set(),
        " , ,": set(),
        "default": default,
        f"default,{one}": default | {one},
        f"  Default , {one.upper()} ": default | {one},
        f"per_step,-{one}": per_step - {one},
        "all,-default": every - default,
        f"-{one},{one}": {one},
        f"{one},-{one}": set(),
        f"all, - {one}": every - {one},
    }
    for spec, enabled in cases.items():
        assert base.resolve(spec) == enabled, spec


def test_removal_in_a_consumer_class() -> None:
    serve = fixture_classes()["serve"]
    own = sorted(serve.ALL_GROUPS - fixture_classes()["base"].ALL_GROUPS)[0]
    assert serve.resolve(f"all,-{own}") == serve.ALL_GROUPS - {own}


def test_unknown_name_lists_valid_names_and_suggests(base: type[SpanGroup]) -> None:
    with pytest.raises(ValueError) as info:
        base.resolve("per_step,chekpoint")
    message = str(info.value)
    assert message.startswith(
        "unknown span group or preset 'chekpoint' for SpanGroup "
        "(Unknown span group or preset: 'chekpoint'); did you mean 'checkpoint'?"
    )
    assert f"valid presets: {', '.join(sorted(base.PRESETS))}" in message
    assert f"valid groups: {', '.join(sorted(base.ALL_GROUPS))}" in message


def test_a_consumer_name_is_unknown_to_the_base_class() -> None:
    classes = fixture_classes()
    own = sorted(classes["serve"].ALL_GROUPS - classes["base"].ALL_GROUPS)[0]
    with pytest.raises(ValueError, match=f"'{own}' for SpanGroup"):
        classes["base"].resolve(own)


@pytest.mark.parametrize("spec", ["-", "default,-"])
def test_a_bare_minus_is_an_error(base: type[SpanGroup], spec: str) -> None:
    with pytest.raises(ValueError, match="removes nothing"):
        base.resolve(spec)


def test_a_non_string_spec_is_a_type_error(base: type[SpanGroup]) -> None:
    with pytest.raises(TypeError, match="must be a str"):
        base.resolve(["default"])  # type: ignore[arg-type]


def test_explain_says_which_entry_did_what(base: type[SpanGroup]) -> None:
    per_step = set(base.PRESETS["per_step"])
    one = sorted(per_step)[0]
    enabled, steps = base.explain(f"per_step,-{one},{one}")
    assert enabled == per_step
    assert [(s.entry, sorted(s.added), sorted(s.removed)) for s in steps] == [
        ("per_step", sorted(per_step), []),
        (f"-{one}", [], [one]),
        (one, [one], []),
    ]


# --- several classes at once (an RL job with a Megatron backend) ------------------------


def test_a_spec_resolves_against_the_union_of_several_classes() -> None:
    classes = list(CLASSES.values())
    union = frozenset().union(*(c.ALL_GROUPS for c in classes))
    assert resolve_for("all", classes) == union
    for preset in {"default", "per_step"}:
        expected_members = frozenset().union(
            *(c.resolve(preset) for c in classes if preset in c.PRESETS)
        )
        assert resolve_for(preset, classes) == expected_members
    own = {c: c.ALL_GROUPS - SpanGroup.ALL_GROUPS for c in classes}
    names = sorted(next(iter(sorted(g))) for g in own.values() if g)
    assert resolve_for(",".join(names), classes) == set(names)


def test_an_unknown_name_in_a_union_suggests_from_every_class() -> None:
    classes = list(CLASSES.values())
    consumer_only = sorted(classes[-1].ALL_GROUPS - SpanGroup.ALL_GROUPS)[0]
    misspelled = consumer_only[:-1] + ("x" if consumer_only[-1] != "x" else "y")
    with pytest.raises(ValueError) as info:
        resolve_for(misspelled, classes)
    message = str(info.value)
    assert f"(Unknown span group or preset: {misspelled!r})" in message
    assert " + ".join(c.__name__ for c in classes) in message
    assert f"did you mean {consumer_only!r}?" in message
    every = frozenset().union(*(c.ALL_GROUPS for c in classes))
    assert "valid groups: " + ", ".join(sorted(every)) in message


def test_the_first_class_decides_a_shared_groups_category() -> None:
    classes = list(CLASSES.values())
    for order in (classes, classes[::-1]):
        merged = categories_for(order)
        for group, category in merged.items():
            first = next(c for c in order if group in c.ALL_GROUPS)
            assert category == first.categories()[group]
