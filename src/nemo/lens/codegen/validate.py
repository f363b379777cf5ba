"""Load a schema file and check every rule, reporting all problems at once.

Validation is separate from rendering: :func:`load_schema` either returns a
:class:`~nemo.lens.codegen.model.Schema` that is safe to render, or raises
:class:`SchemaError` carrying every :class:`Problem` found (file, line, key path,
message, did-you-mean). Nothing is written on failure.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import keyword
import os
import re
import stat
import sys
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from nemo.lens.codegen.locate import KeyPath, Locator
from nemo.lens.codegen.model import (
    ALL_PRESET,
    BUCKETS,
    CATEGORIES,
    GOODPUT,
    IMPLICIT_PRESETS,
    METRIC_KINDS,
    PRODUCTION_PRESET,
    PROFILING,
    QUIET_TIERS,
    SIGNATURES_MODULE,
    TIERS,
    Catalogue,
    Group,
    GroupClass,
    Metric,
    MetricSection,
    Preset,
    Schema,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

BUNDLED_BASE = "nemo.lens"
"""`extends` value naming the base schema that ships beside this generator."""
BUNDLED_BASE_PATH = Path(__file__).resolve().parent / "schema" / "span_groups.toml"
MAX_SCHEMA_BYTES = 1 << 20
"""A schema is a short hand-written file; anything larger is a mistake (or /dev/zero)."""

SCHEMA_VERSION = 1
# Every pattern is matched with fullmatch: `$` would also match before a trailing newline.
NAME_RE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
MAX_NAME = 32
MAX_DESCRIPTION = 200
VERSION_RE = re.compile(r"\d+\.\d+(?:\.\d+)?")
CLASS_RE = re.compile(r"[A-Z][A-Za-z0-9]*")
MODULE_RE = re.compile(r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*")
BASE_CLASS = "SpanGroup"
BASE_MODULE = "nemo.lens.groups"
RUNTIME_PACKAGE = "nemo.lens"
CONSUMERS_PACKAGE = "nemo.lens.consumers"
"""The only part of nemo.lens a consumer module may be generated into."""

# `all` is the implicit preset; the upper-cased names would collide with the
# generated class attributes that hold the vocabulary.
RESERVED_NAMES = frozenset(
    {*IMPLICIT_PRESETS, "all_groups", "goodput_groups", "presets", "renamed", "group_info"}
)

TOP_KEYS = ("schema_version", "extends", "groups", "presets", "consumers", "metrics")
METRICS_KEYS = ("boundaries", "sections", "instruments")
SECTION_KEYS = ("title", "description")
INSTRUMENT_KEYS = (
    "name",
    "kind",
    "unit",
    "description",
    "section",
    "recorded_by",
    "boundaries",
    "non_negative",
)
METRIC_NAME_RE = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*")
GROUP_KEYS = ("description", "fires", "since", "category", "bucket", "deprecated")
DEPRECATED_KEYS = ("note", "renamed_to")
PRESET_KEYS = ("description", "groups", "extends", "replace", "allow_frequent")
CONSUMER_KEYS = ("class", "module", "description", "categories", "groups", "presets")


@dataclass(frozen=True)
class Problem:
    """One validation failure, located in its file."""

    file: str
    line: int | None
    path: KeyPath
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {format_path(self.path)}: {self.message}"


class SchemaError(Exception):
    """The schema is invalid; :attr:`problems` lists every reason."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        count = len(problems)
        lines = "\n".join(str(p) for p in problems)
        super().__init__(f"{count} problem{'s' if count != 1 else ''} in the schema:\n{lines}")


def format_path(path: KeyPath) -> str:
    """Render a key path as `a.b[2].c`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out or "(top level)"


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """`; did you mean 'x'?` for the closest candidate, or an empty string."""
    found = difflib.get_close_matches(word, sorted(candidates), n=1, cutoff=0.6)
    return f"; did you mean {found[0]!r}?" if found else ""


def canonical_digest(data: Mapping[str, Any]) -> str:
    """sha256 of the parsed content with sorted keys: formatting-independent."""
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


# Control, surrogate, line/paragraph separator and format characters (bidi overrides,
# zero-width marks): none belongs in a description, and each could change what the
# generated source means or how it reads.
_NOT_TEXT = frozenset({"Cc", "Cs", "Zl", "Zp", "Cf"})

# Names whose constant (I, O) or whose own spelling (l) reads like a digit (ruff's E741).
_AMBIGUOUS = frozenset({"i", "l", "o"})

_TYPE_NAMES = {
    str: "a string",
    list: "an array",
    dict: "a table",
    int: "an integer",
    bool: "a boolean",
    float: "a float",
}


def _type_name(value: object) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


class _DeclaredPreset(NamedTuple):
    members: list[str]
    extends: list[str]
    description: str
    allow: dict[str, str]
    replace: bool


_IMPLICIT_MEANING = {
    ALL_PRESET: "every group of the class",
    GOODPUT: "the groups whose category is goodput",
    PROFILING: "every group of the class, for profiling",
}


@dataclass
class _Checker:
    file: str
    locator: Locator
    problems: list[Problem] = field(default_factory=list)
    broken: set[str] = field(default_factory=set)
    """Groups that are defined but invalid: reported once, not again where used."""

    def error(self, path: KeyPath, message: str) -> None:
        self.problems.append(Problem(self.file, self.locator.line(path), path, message))

    def expect(self, value: object, kind: type, path: KeyPath) -> bool:
        # bool is an int subclass in Python; TOML keeps them apart, and so do we.
        if isinstance(value, kind) and not (kind is int and isinstance(value, bool)):
            return True
        self.error(path, f"expected {_TYPE_NAMES[kind]}, got {_type_name(value)}")
        return False

    def known_keys(self, table: Mapping[str, Any], allowed: tuple[str, ...], path: KeyPath) -> None:
        for key in table:
            if key not in allowed:
                self.error(
                    (*path, key),
                    f"unknown key {key!r}{did_you_mean(key, allowed)}"
                    f" (allowed: {', '.join(allowed)})",
                )

    def text(self, table: Mapping[str, Any], key: str, path: KeyPath, required: bool) -> str:
        if key not in table:
            if required:
                self.error(path, f"missing required key {key!r}")
            return ""
        value = table[key]
        if not self.expect(value, str, (*path, key)):
            return ""
        if required and not value.strip():
            self.error((*path, key), f"{key!r} must not be empty")
        if not self.inert(value, (*path, key), key):
            return ""
        return str(value).strip()

    def inert(self, value: str, path: KeyPath, what: str) -> bool:
        """Schema text becomes docstrings and docs: it must be plain, printable text."""
        for index, char in enumerate(value):
            if char == "\n" and what == "description":
                continue  # reported as "must be a single line"
            if unicodedata.category(char) in _NOT_TEXT:
                self.error(
                    path,
                    f"{what!r} holds the control or format character U+{ord(char):04X} at "
                    f"position {index}; write plain printable text (it is copied into "
                    "generated code and docs)",
                )
                return False
        return True

    def name(self, name: str, path: KeyPath, what: str, longest: int = MAX_NAME) -> bool:
        if not NAME_RE.fullmatch(name):
            suggestion = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
            hint = f"; try {suggestion!r}" if suggestion and NAME_RE.fullmatch(suggestion) else ""
            self.error(
                path,
                f"{what} name {name!r} is not lowercase snake_case "
                f"(letters, digits and single underscores, starting with a letter){hint}",
            )
            return False
        if len(name) > longest:
            self.error(path, f"{what} name {name!r} is longer than {longest} characters")
            return False
        if name in _AMBIGUOUS:
            self.error(
                path,
                f"{what} name {name!r} becomes the constant {name.upper()!r}, which reads like "
                "a digit; pick a longer name",
            )
            return False
        if keyword.iskeyword(name) or keyword.issoftkeyword(name):
            self.error(path, f"{what} name {name!r} is a Python keyword; pick another word")
            return False
        if name in RESERVED_NAMES:
            self.error(
                path,
                f"{what} name {name!r} is reserved "
                f"({', '.join(sorted(RESERVED_NAMES))} have a meaning already)",
            )
            return False
        return True


def _read_groups(
    chk: _Checker, raw: object, path: KeyPath, inherited: Mapping[str, Group]
) -> dict[str, Group]:
    groups: dict[str, Group] = {}
    if not chk.expect(raw, dict, path):
        return groups
    assert isinstance(raw, dict)
    for name, body in raw.items():
        gpath = (*path, name)
        if not chk.name(name, gpath, "group"):
            chk.broken.add(name)
            continue
        if name in inherited:
            chk.error(
                gpath,
                f"group {name!r} is already a base group of {BASE_CLASS}; consumers inherit "
                "base groups, so remove this definition",
            )
            continue
        if not chk.expect(body, dict, gpath):
            chk.broken.add(name)
            continue
        chk.known_keys(body, GROUP_KEYS, gpath)
        description = chk.text(body, "description", gpath, required=True)
        if len(description) > MAX_DESCRIPTION:
            chk.error(
                (*gpath, "description"),
                f"description is {len(description)} characters; keep it under "
                f"{MAX_DESCRIPTION} (longer notes belong in the docs)",
            )
        if "\n" in description:
            chk.error((*gpath, "description"), "description must be a single line")
        fires = chk.text(body, "fires", gpath, required=True)
        if fires and fires not in TIERS:
            chk.error(
                (*gpath, "fires"),
                f"unknown frequency {fires!r}{did_you_mean(fires, TIERS)}"
                f" (tiers: {', '.join(TIERS)})",
            )
            fires = ""
        since = chk.text(body, "since", gpath, required=True)
        if since and not VERSION_RE.fullmatch(since):
            chk.error((*gpath, "since"), f"'since' must be a version like '0.2.0', got {since!r}")
        note, renamed_to = "", ""
        if "deprecated" in body:
            dpath = (*gpath, "deprecated")
            deprecated = body["deprecated"]
            if chk.expect(deprecated, dict, dpath):
                chk.known_keys(deprecated, DEPRECATED_KEYS, dpath)
                note = chk.text(deprecated, "note", dpath, required=True)
                renamed_to = chk.text(deprecated, "renamed_to", dpath, required=False)
        # A group is goodput only when the schema says so (upstream's rule), so schemas
        # written before categories existed stay valid.
        category = PROFILING
        if "category" in body:
            category = _category(chk, body["category"], (*gpath, "category")) or PROFILING
        bucket = _bucket(chk, body, gpath, category)
        if description and fires and since:
            groups[name] = Group(
                name, description, fires, since, note, renamed_to, category, bucket
            )
        else:
            chk.broken.add(name)
    return groups


def _category(chk: _Checker, value: object, path: KeyPath) -> str | None:
    """A valid category, or None after reporting why not."""
    if not chk.expect(value, str, path):
        return None
    if value not in CATEGORIES:
        chk.error(
            path,
            f"unknown category {value!r}{did_you_mean(str(value), CATEGORIES)}"
            f" (categories: {', '.join(CATEGORIES)})",
        )
        return None
    return str(value)


def _bucket(chk: _Checker, body: Mapping[str, Any], path: KeyPath, category: str) -> str:
    """The goodput bucket a goodput group's time feeds (see `nemo-lens goodput`)."""
    if "bucket" not in body:
        return ""
    bpath = (*path, "bucket")
    value = body["bucket"]
    if not chk.expect(value, str, bpath):
        return ""
    if value not in BUCKETS:
        chk.error(
            bpath,
            f"unknown bucket {value!r}{did_you_mean(str(value), BUCKETS)}"
            f" (buckets: {', '.join(BUCKETS)})",
        )
        return ""
    if category != GOODPUT:
        chk.error(
            bpath,
            'only a goodput group feeds a goodput bucket; add category = "goodput" or '
            "remove the bucket",
        )
        return ""
    return str(value)


def _check_renames(
    chk: _Checker, own: Mapping[str, Group], known: Mapping[str, Group], path: KeyPath
) -> None:
    for group in own.values():
        if not group.renamed_to:
            continue
        rpath = (*path, group.name, "deprecated", "renamed_to")
        target = known.get(group.renamed_to)
        if target is None:
            chk.error(
                rpath,
                f"renamed_to {group.renamed_to!r} points nowhere: no such group"
                f"{did_you_mean(group.renamed_to, known)}",
            )
        elif target.renamed_to:
            chk.error(
                rpath,
                f"renamed_to {group.renamed_to!r} is itself renamed to {target.renamed_to!r}; "
                f"point at {target.renamed_to!r} directly",
            )


def _read_presets(
    chk: _Checker,
    raw: object,
    path: KeyPath,
    groups: Mapping[str, Group],
    inherited: Mapping[str, Preset] | None = None,
) -> tuple[Preset, ...]:
    """The presets of one class.

    *inherited* holds the base presets when the class is a consumer: a consumer
    preset with the name of a base preset adds to the base preset's groups unless
    it says ``replace = true``, and a base preset the consumer does not mention is
    inherited as it is. So a group added to the base ``per_step`` reaches every
    consumer's ``per_step`` with no second edit.
    """
    if not chk.expect(raw, dict, path):
        return ()
    assert isinstance(raw, dict)
    base = inherited or {}
    declared: dict[str, _DeclaredPreset] = {}
    for name, body in raw.items():
        ppath = (*path, name)
        if name in IMPLICIT_PRESETS:
            chk.error(
                ppath,
                f"{name!r} is implicit ({_IMPLICIT_MEANING[name]}); remove this preset",
            )
            continue
        if not chk.name(name, ppath, "preset"):
            continue
        if name in groups:
            chk.error(
                ppath, f"preset {name!r} has the name of a group; a spec could not tell them apart"
            )
            continue
        if not chk.expect(body, dict, ppath):
            continue
        chk.known_keys(body, PRESET_KEYS, ppath)
        description = chk.text(body, "description", ppath, required=name not in base)
        replace = False
        if "replace" in body and chk.expect(body["replace"], bool, (*ppath, "replace")):
            replace = bool(body["replace"])
            if name not in base:
                chk.error(
                    (*ppath, "replace"),
                    f"'replace' applies only to a preset that the base vocabulary also has "
                    f"(base presets: {', '.join(sorted(base)) or 'none'}); remove it",
                )
        members = _name_list(chk, body, "groups", ppath, required=name not in base)
        extends = _name_list(chk, body, "extends", ppath, required=False)
        allow: dict[str, str] = {}
        if "allow_frequent" in body:
            apath = (*ppath, "allow_frequent")
            if chk.expect(body["allow_frequent"], dict, apath):
                for group, reason in body["allow_frequent"].items():
                    if chk.expect(reason, str, (*apath, group)):
                        if not reason.strip():
                            chk.error((*apath, group), "the reason must not be empty")
                        if chk.inert(reason, (*apath, group), "reason"):
                            allow[group] = reason.strip()
        if not description and name in base:
            description = base[name].description
        declared[name] = _DeclaredPreset(members, extends, description, allow, replace)

    for name, preset in declared.items():
        for index, member in enumerate(preset.members):
            mpath = (*path, name, "groups", index)
            group = groups.get(member)
            if member in chk.broken:
                pass
            elif group is None:
                chk.error(mpath, f"unknown group {member!r}{did_you_mean(member, groups)}")
            elif group.renamed_to:
                chk.error(
                    mpath,
                    f"group {member!r} was renamed to {group.renamed_to!r}; "
                    f"list {group.renamed_to!r}",
                )
            if preset.members.index(member) != index:
                chk.error(mpath, f"group {member!r} is listed twice")
        for index, parent in enumerate(preset.extends):
            if parent not in declared and parent not in base and parent != ALL_PRESET:
                chk.error(
                    (*path, name, "extends", index),
                    f"unknown preset {parent!r}{did_you_mean(parent, {*declared, *base})}",
                )

    resolved: dict[str, frozenset[str]] = {}
    current = frozenset(n for n, g in groups.items() if not g.renamed_to)

    def from_base(name: str) -> frozenset[str]:
        if name not in base or (name in declared and declared[name].replace):
            return frozenset()
        return base[name].members

    def expand(name: str, trail: tuple[str, ...]) -> frozenset[str]:
        if name == ALL_PRESET:
            return current
        if name in resolved:
            return resolved[name]
        if name not in declared:
            return from_base(name)
        if name in trail:
            cycle = " -> ".join((*trail[trail.index(name) :], name))
            chk.error((*path, name, "extends"), f"'extends' forms a cycle: {cycle}")
            return frozenset()
        preset = declared[name]
        out = set(m for m in preset.members if m in current) | from_base(name)
        for parent in preset.extends:
            if parent in declared or parent in base or parent == ALL_PRESET:
                out |= expand(parent, (*trail, name))
        resolved[name] = frozenset(out)
        return resolved[name]

    presets: list[Preset] = []
    for name in sorted({*declared, *base}):
        enabled = expand(name, ())
        inherited_members = from_base(name)
        if name in declared:
            preset = declared[name]
            allow = dict(preset.allow)
            # A frequent base member kept on purpose stays kept, for the same reason.
            if not preset.replace and name in base:
                for group, reason in base[name].allow_frequent:
                    allow.setdefault(group, reason)
            _check_contract(
                chk, (*path, name), name, enabled, preset.members, preset.allow, allow, groups
            )
            description = preset.description
        else:
            allow = dict(base[name].allow_frequent)
            description = base[name].description
        presets.append(
            Preset(
                name,
                description,
                enabled,
                tuple(sorted(allow.items())),
                from_base=inherited_members,
                replaces_base=name in declared and declared[name].replace,
            )
        )
    if (
        PRODUCTION_PRESET not in declared
        and PRODUCTION_PRESET not in base
        and not any(p.path[: len(path) + 1] == (*path, PRODUCTION_PRESET) for p in chk.problems)
    ):
        chk.error(
            path,
            f"no {PRODUCTION_PRESET!r} preset: every class needs one, it is what a job "
            "enables when nobody chose",
        )
    return tuple(presets)


def _check_contract(
    chk: _Checker,
    path: KeyPath,
    name: str,
    members: frozenset[str],
    listed: list[str],
    declared_allow: Mapping[str, str],
    allow: Mapping[str, str],
    groups: Mapping[str, Group],
) -> None:
    """The preset contract: `default` holds only quiet groups, or says why.

    *declared_allow* is what this preset states itself (checked for sense);
    *allow* adds what an inherited base preset stated.
    """
    for group in sorted(declared_allow):
        apath = (*path, "allow_frequent", group)
        if name != PRODUCTION_PRESET:
            chk.error(apath, f"allow_frequent only applies to the {PRODUCTION_PRESET!r} preset")
        elif group not in members:
            chk.error(apath, f"allow_frequent names {group!r}, which this preset does not enable")
        elif groups[group].fires in QUIET_TIERS:
            chk.error(
                apath,
                f"group {group!r} fires {groups[group].fires}, which is quiet already; "
                "remove the override",
            )
    if name != PRODUCTION_PRESET:
        return
    for group in sorted(members - set(allow)):
        fires = groups[group].fires
        if fires not in QUIET_TIERS:
            # Point at the listing when there is one; an inherited member has none.
            where = (*path, "groups", listed.index(group)) if group in listed else path
            chk.error(
                where,
                f"group {group!r} fires {fires}, too often for the production preset "
                f"{PRODUCTION_PRESET!r}: move it to 'per_step' or 'all', or state why it belongs "
                f'here with allow_frequent = {{ {group} = "reason" }}',
            )


def _name_list(
    chk: _Checker, body: Mapping[str, Any], key: str, path: KeyPath, required: bool
) -> list[str]:
    if key not in body:
        if required:
            chk.error(path, f"missing required key {key!r}")
        return []
    value = body[key]
    if not chk.expect(value, list, (*path, key)):
        return []
    names = []
    for index, item in enumerate(value):
        if chk.expect(item, str, (*path, key, index)):
            names.append(item)
    return names


def _check_module(chk: _Checker, module: str, path: KeyPath) -> bool:
    """A consumer module must be a module of its own: never part of nemo.lens's runtime."""
    if not MODULE_RE.fullmatch(module) or any(keyword.iskeyword(p) for p in module.split(".")):
        chk.error(path, f"module {module!r} is not a dotted Python module path")
        return False
    parts = module.split(".")
    in_runtime = module == RUNTIME_PACKAGE or module.startswith(RUNTIME_PACKAGE + ".")
    a_consumer_module = module.startswith(CONSUMERS_PACKAGE + ".") and len(parts) == 4
    if in_runtime and not a_consumer_module:
        chk.error(
            path,
            f"module {module!r} is part of nemo.lens itself; a consumer's module must be "
            f"new: {CONSUMERS_PACKAGE}.NAME here, or a module of your own package "
            "(e.g. 'mylib.lens_groups')",
        )
        return False
    if parts[-1].startswith("_"):
        chk.error(
            path,
            f"module {module!r} names a private or special module; name a public one "
            f"(e.g. {'.'.join((*parts[:-1], parts[-1].strip('_') or 'groups'))!r})",
        )
        return False
    return True


def _read_categories(
    chk: _Checker, raw: object, path: KeyPath, base: GroupClass
) -> tuple[tuple[str, str], ...]:
    """A consumer's own view of inherited groups' categories (Megatron: evaluate is profiling)."""
    if not chk.expect(raw, dict, path):
        return ()
    assert isinstance(raw, dict)
    inherited = {g.name for g in base.current_groups}
    out = []
    for group, value in raw.items():
        gpath = (*path, group)
        if group not in inherited:
            chk.error(
                gpath,
                f"{group!r} is not a base group{did_you_mean(group, inherited)}; the category of "
                "a consumer's own group is its 'category' key",
            )
            continue
        category = _category(chk, value, gpath)
        if category is None:
            continue
        if category == base.category(group):
            chk.error(gpath, f"{group!r} is {category} in the base vocabulary already; remove this")
            continue
        out.append((group, category))
    return tuple(sorted(out))


def _read_consumers(
    chk: _Checker, raw: object, base: GroupClass, taken: dict[str, KeyPath]
) -> tuple[GroupClass, ...]:
    path: KeyPath = ("consumers",)
    if not chk.expect(raw, dict, path):
        return ()
    assert isinstance(raw, dict)
    inherited = {g.name: g for g in base.groups}
    base_presets = {p.name: p for p in base.presets}
    consumers = []
    for key, body in raw.items():
        cpath = (*path, key)
        if not chk.name(key, cpath, "consumer"):
            continue
        if not chk.expect(body, dict, cpath):
            continue
        chk.known_keys(body, CONSUMER_KEYS, cpath)
        class_name = chk.text(body, "class", cpath, required=True)
        if class_name and not CLASS_RE.fullmatch(class_name):
            chk.error(
                (*cpath, "class"), f"class {class_name!r} is not a CamelCase Python identifier"
            )
            class_name = ""
        module = chk.text(body, "module", cpath, required=True)
        if module and not _check_module(chk, module, (*cpath, "module")):
            module = ""
        for value, what in ((class_name, "class"), (module, "module")):
            if not value:
                continue
            if value in taken:
                chk.error(
                    (*cpath, what),
                    f"{what} {value!r} is already used by {format_path(taken[value])}",
                )
            taken[value] = (*cpath, what)
        description = chk.text(body, "description", cpath, required=True)
        own = _read_groups(chk, body.get("groups", {}), (*cpath, "groups"), inherited)
        known = {**{n: g for n, g in inherited.items()}, **own}
        _check_renames(chk, own, known, (*cpath, "groups"))
        recategorized = _read_categories(
            chk, body.get("categories", {}), (*cpath, "categories"), base
        )
        presets = _read_presets(
            chk, body.get("presets", {}), (*cpath, "presets"), known, inherited=base_presets
        )
        if class_name and module and description:
            consumers.append(
                GroupClass(
                    key=key,
                    class_name=class_name,
                    module=module,
                    description=description,
                    groups=tuple(sorted(own.values(), key=lambda g: g.sort_key)),
                    presets=presets,
                    base=base,
                    recategorized=recategorized,
                    module_line=chk.locator.line((*cpath, "module")),
                )
            )
    return tuple(consumers)


def _read_text(path: Path) -> str:
    # Open first and ask the open file: a FIFO, a device (`extends = "/dev/zero"`) or a
    # file that grows without end is refused instead of read until memory runs out.
    # (Asked before opening too: opening a FIFO would wait for a writer.)
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise OSError(0, "not a regular file (a schema is a TOML file)")
    with path.open("rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(0, "not a regular file (a schema is a TOML file)")
        data = handle.read(MAX_SCHEMA_BYTES + 1)
    if len(data) > MAX_SCHEMA_BYTES:
        raise OSError(
            0, f"larger than {MAX_SCHEMA_BYTES // 1024} KiB; a schema is a short TOML file"
        )
    return data.decode("utf-8")


def _read_metrics(chk: _Checker, raw: object) -> Catalogue | None:
    """The metric catalogue: named histogram boundaries, doc sections and instruments."""
    path: KeyPath = ("metrics",)
    if not chk.expect(raw, dict, path):
        return None
    assert isinstance(raw, dict)
    chk.known_keys(raw, METRICS_KEYS, path)
    boundaries: dict[str, tuple[float, ...]] = {}
    raw_boundaries = raw.get("boundaries", {})
    if chk.expect(raw_boundaries, dict, (*path, "boundaries")):
        for name, values in raw_boundaries.items():
            bpath = (*path, "boundaries", name)
            if not chk.name(name, bpath, "boundaries"):
                continue
            if not chk.expect(values, list, bpath):
                continue
            numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
            if len(numbers) != len(values) or not numbers:
                chk.error(bpath, "boundaries must be a non-empty array of numbers")
            elif any(b <= a for a, b in itertools.pairwise(numbers)):
                chk.error(bpath, "boundaries must increase strictly, from the lowest up")
            else:
                boundaries[name] = tuple(float(v) for v in numbers)
    sections: dict[str, MetricSection] = {}
    raw_sections = raw.get("sections", {})
    if chk.expect(raw_sections, dict, (*path, "sections")):
        for key, body in raw_sections.items():
            spath = (*path, "sections", key)
            if not chk.name(key, spath, "section") or not chk.expect(body, dict, spath):
                continue
            chk.known_keys(body, SECTION_KEYS, spath)
            title = chk.text(body, "title", spath, required=True)
            description = chk.text(body, "description", spath, required=False)
            sections[key] = MetricSection(key, title, description)
    metrics: list[Metric] = []
    names: dict[str, KeyPath] = {}
    raw_instruments = raw.get("instruments", {})
    if chk.expect(raw_instruments, dict, (*path, "instruments")):
        for key, body in raw_instruments.items():
            ipath = (*path, "instruments", key)
            if not chk.name(key, ipath, "instrument", longest=64):
                continue
            if not chk.expect(body, dict, ipath):
                continue
            chk.known_keys(body, INSTRUMENT_KEYS, ipath)
            name = chk.text(body, "name", ipath, required=True)
            if name and not METRIC_NAME_RE.fullmatch(name):
                chk.error((*ipath, "name"), f"metric name {name!r} is not dotted lowercase")
            elif name in names:
                chk.error(
                    (*ipath, "name"), f"metric {name!r} is already {format_path(names[name])}"
                )
            names.setdefault(name, ipath)
            kind = chk.text(body, "kind", ipath, required=True)
            if kind and kind not in METRIC_KINDS:
                chk.error(
                    (*ipath, "kind"),
                    f"unknown kind {kind!r}{did_you_mean(kind, METRIC_KINDS)}"
                    f" (kinds: {', '.join(METRIC_KINDS)})",
                )
            unit = chk.text(body, "unit", ipath, required=False)
            description = chk.text(body, "description", ipath, required=True)
            section = chk.text(body, "section", ipath, required=True)
            if section and section not in sections:
                chk.error(
                    (*ipath, "section"),
                    f"unknown section {section!r}{did_you_mean(section, sections)}",
                )
            recorded_by = chk.text(body, "recorded_by", ipath, required=True)
            bounds = chk.text(body, "boundaries", ipath, required=False)
            if kind == "histogram" and not bounds:
                chk.error(ipath, "a histogram names its boundaries (see [metrics.boundaries])")
            elif bounds and kind != "histogram":
                chk.error((*ipath, "boundaries"), "only a histogram has boundaries")
            elif bounds and bounds not in boundaries:
                chk.error(
                    (*ipath, "boundaries"),
                    f"unknown boundaries {bounds!r}{did_you_mean(bounds, boundaries)}",
                )
            non_negative = body.get("non_negative", True)
            if not chk.expect(non_negative, bool, (*ipath, "non_negative")):
                non_negative = True
            metrics.append(
                Metric(
                    key, name, kind, unit, description, section, recorded_by, bounds, non_negative
                )
            )
    # Sorted, like everything generated: the order of the TOML file changes nothing.
    return Catalogue(
        boundaries=tuple(sorted(boundaries.items())),
        sections=tuple(sorted(sections.values(), key=lambda s: s.key)),
        metrics=tuple(sorted(metrics, key=lambda m: m.name)),
    )


def _parse(path: Path, shown: str) -> tuple[dict[str, Any], Locator]:
    try:
        text = _read_text(path)
    except UnicodeDecodeError as exc:
        raise SchemaError(
            [Problem(shown, None, (), f"the schema is not UTF-8 text: {exc.reason}")]
        ) from exc
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        reason = getattr(exc, "strerror", None) or str(exc)
        raise SchemaError([Problem(shown, None, (), f"cannot read the schema: {reason}")]) from exc
    try:
        data = tomllib.loads(text)
    except RecursionError as exc:
        # tomllib parses nested arrays and inline tables recursively.
        raise SchemaError(
            [Problem(shown, None, (), "not valid TOML here: arrays or tables nested too deeply")]
        ) from exc
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None)
        match = re.search(r"line (\d+)", str(exc))
        if line is None and match:
            line = int(match.group(1))
        # The position is reported as the problem's line; keep the message short.
        message = re.sub(r"\s*\(at line \d+, column \d+\)$", "", getattr(exc, "msg", str(exc)))
        raise SchemaError([Problem(shown, line, (), f"not valid TOML: {message}")]) from exc
    return data, Locator(text)


def _read_base(chk: _Checker, data: Mapping[str, Any]) -> GroupClass:
    groups = _read_groups(chk, data.get("groups", {}), ("groups",), {})
    if "groups" not in data:
        chk.error((), "missing the [groups] table of the base vocabulary")
    _check_renames(chk, groups, groups, ("groups",))
    if "presets" not in data:
        chk.error((), f"missing the [presets] table (at least {PRODUCTION_PRESET!r})")
    presets = _read_presets(chk, data.get("presets", {}), ("presets",), groups)
    return GroupClass(
        key="base",
        class_name=BASE_CLASS,
        module=BASE_MODULE,
        description="The base span-group vocabulary, meaningful to every consumer.",
        groups=tuple(sorted(groups.values(), key=lambda g: g.sort_key)),
        presets=presets,
    )


def load_schema(
    path: Path, shown: str | None = None, *, _extending: tuple[Path, ...] = ()
) -> Schema:
    """Parse and validate the schema at *path*; raise :class:`SchemaError` on any problem.

    *shown* is how the file is named in messages and headers (default: as given).
    A schema with ``extends`` defines consumers only and builds on the base
    vocabulary of another file (``"nemo.lens"`` names the one bundled here).
    *_extending* lists the files that extend this one, to report a cycle.
    """
    shown = shown or path.as_posix()
    data, locator = _parse(path, shown)
    chk = _Checker(shown, locator)
    chk.known_keys(data, TOP_KEYS, ())
    version = data.get("schema_version")
    if version is None:
        chk.error((), f"missing 'schema_version = {SCHEMA_VERSION}'")
    elif version != SCHEMA_VERSION:
        chk.error(
            ("schema_version",),
            f"unsupported schema_version {version!r}; this generator reads {SCHEMA_VERSION}",
        )

    extends = data.get("extends")
    base: GroupClass
    base_digest = ""
    if extends is not None:
        if not chk.expect(extends, str, ("extends",)):
            raise SchemaError(chk.problems)
        for key in ("groups", "presets"):
            if key in data:
                chk.error(
                    (key,),
                    f"a schema that extends another defines consumers only; move [{key}] "
                    "into a consumer table or into the base schema",
                )
        base_path = BUNDLED_BASE_PATH if extends == BUNDLED_BASE else (path.parent / extends)
        try:
            chain = (*_extending, path.resolve())
            cycle = base_path.resolve() in chain
        except (OSError, ValueError) as exc:  # a NUL byte, a symlink loop
            chk.error(("extends",), f"extends {extends!r} is not a usable path: {exc}")
            raise SchemaError(chk.problems) from None
        if cycle:
            chk.error(
                ("extends",),
                f"extends {extends!r} leads back to this schema (an extends cycle); "
                "extend the base schema instead",
            )
            raise SchemaError(chk.problems)
        try:
            parent = load_schema(
                base_path,
                BUNDLED_BASE if extends == BUNDLED_BASE else extends,
                _extending=chain,
            )
        except SchemaError as exc:
            raise SchemaError([*chk.problems, *exc.problems]) from None
        base, base_digest = parent.base, parent.digest
    else:
        base = _read_base(chk, data)

    catalogue = None
    if "metrics" in data:
        if extends is not None:
            chk.error(("metrics",), "[metrics] belongs to the base schema, not to a consumer's")
        else:
            catalogue = _read_metrics(chk, data["metrics"])
    taken: dict[str, KeyPath] = {
        BASE_CLASS: ("groups",),
        BASE_MODULE: ("groups",),
        SIGNATURES_MODULE: ("groups",),
    }
    consumers = _read_consumers(chk, data.get("consumers", {}), base, taken)
    if extends is not None and not data.get("consumers"):
        chk.error((), "a schema that extends another must define at least one [consumers.NAME]")
    if chk.problems:
        raise SchemaError(sorted(chk.problems, key=lambda p: (p.file, p.line or 0)))
    digest = canonical_digest({"schema": data, "base": base_digest})
    return Schema(
        source=shown,
        digest=digest,
        base=base,
        consumers=tuple(sorted(consumers, key=lambda c: c.key)),
        extends_base=extends is not None,
        catalogue=catalogue,
    )
