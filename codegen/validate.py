"""Load a schema file and check every rule, reporting all problems at once.

Validation is separate from rendering: :func:`load_schema` either returns a
:class:`~codegen.model.Schema` that is safe to render, or raises
:class:`SchemaError` carrying every :class:`Problem` found (file, line, key path,
message, did-you-mean). Nothing is written on failure.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import keyword
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codegen.locate import KeyPath, Locator
from codegen.model import (
    ALL_PRESET,
    PRODUCTION_PRESET,
    QUIET_TIERS,
    TIERS,
    Group,
    GroupClass,
    Preset,
    Schema,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

BUNDLED_BASE = "nemo.lens"
"""`extends` value naming the base schema that ships beside this generator."""
BUNDLED_BASE_PATH = Path(__file__).resolve().parent.parent / "schema" / "span_groups.toml"

SCHEMA_VERSION = 1
NAME_RE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")
MAX_NAME = 32
MAX_DESCRIPTION = 200
VERSION_RE = re.compile(r"^\d+\.\d+(?:\.\d+)?$")
CLASS_RE = re.compile(r"^[A-Z][A-Za-z0-9]*$")
MODULE_RE = re.compile(r"^[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*$")
BASE_CLASS = "SpanGroup"
BASE_MODULE = "nemo.lens.groups"

# `all` is the implicit preset; the upper-cased names would collide with the
# generated class attributes that hold the vocabulary.
RESERVED_NAMES = frozenset({ALL_PRESET, "all_groups", "presets", "renamed", "group_info"})

TOP_KEYS = ("schema_version", "extends", "groups", "presets", "consumers")
GROUP_KEYS = ("description", "fires", "since", "deprecated")
DEPRECATED_KEYS = ("note", "renamed_to")
PRESET_KEYS = ("description", "groups", "extends", "allow_frequent")
CONSUMER_KEYS = ("class", "module", "description", "groups", "presets")


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
        return str(value).strip()

    def name(self, name: str, path: KeyPath, what: str) -> bool:
        if not NAME_RE.match(name):
            suggestion = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
            hint = f"; try {suggestion!r}" if suggestion and NAME_RE.match(suggestion) else ""
            self.error(
                path,
                f"{what} name {name!r} is not lowercase snake_case "
                f"(letters, digits and single underscores, starting with a letter){hint}",
            )
            return False
        if len(name) > MAX_NAME:
            self.error(path, f"{what} name {name!r} is longer than {MAX_NAME} characters")
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
        if since and not VERSION_RE.match(since):
            chk.error((*gpath, "since"), f"'since' must be a version like '0.2.0', got {since!r}")
        note, renamed_to = "", ""
        if "deprecated" in body:
            dpath = (*gpath, "deprecated")
            deprecated = body["deprecated"]
            if chk.expect(deprecated, dict, dpath):
                chk.known_keys(deprecated, DEPRECATED_KEYS, dpath)
                note = chk.text(deprecated, "note", dpath, required=True)
                renamed_to = chk.text(deprecated, "renamed_to", dpath, required=False)
        if description and fires and since:
            groups[name] = Group(name, description, fires, since, note, renamed_to)
        else:
            chk.broken.add(name)
    return groups


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
    chk: _Checker, raw: object, path: KeyPath, groups: Mapping[str, Group]
) -> tuple[Preset, ...]:
    if not chk.expect(raw, dict, path):
        return ()
    assert isinstance(raw, dict)
    declared: dict[str, tuple[list[str], list[str], str, dict[str, str]]] = {}
    for name, body in raw.items():
        ppath = (*path, name)
        if name == ALL_PRESET:
            chk.error(ppath, "'all' is implicit (every group of the class); remove this preset")
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
        description = chk.text(body, "description", ppath, required=True)
        members = _name_list(chk, body, "groups", ppath, required=True)
        extends = _name_list(chk, body, "extends", ppath, required=False)
        allow: dict[str, str] = {}
        if "allow_frequent" in body:
            apath = (*ppath, "allow_frequent")
            if chk.expect(body["allow_frequent"], dict, apath):
                for group, reason in body["allow_frequent"].items():
                    if chk.expect(reason, str, (*apath, group)):
                        if not reason.strip():
                            chk.error((*apath, group), "the reason must not be empty")
                        allow[group] = reason.strip()
        declared[name] = (members, extends, description, allow)

    for name, (members, _, _, _) in declared.items():
        for index, member in enumerate(members):
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
            if members.index(member) != index:
                chk.error(mpath, f"group {member!r} is listed twice")
        for index, parent in enumerate(declared[name][1]):
            if parent not in declared and parent != ALL_PRESET:
                chk.error(
                    (*path, name, "extends", index),
                    f"unknown preset {parent!r}{did_you_mean(parent, declared)}",
                )

    resolved: dict[str, frozenset[str]] = {}
    current = frozenset(n for n, g in groups.items() if not g.renamed_to)

    def expand(name: str, trail: tuple[str, ...]) -> frozenset[str]:
        if name == ALL_PRESET:
            return current
        if name in resolved:
            return resolved[name]
        if name in trail:
            cycle = " -> ".join((*trail[trail.index(name) :], name))
            chk.error((*path, name, "extends"), f"'extends' forms a cycle: {cycle}")
            return frozenset()
        members, extends, _, _ = declared[name]
        out = set(m for m in members if m in current)
        for parent in extends:
            if parent in declared or parent == ALL_PRESET:
                out |= expand(parent, (*trail, name))
        resolved[name] = frozenset(out)
        return resolved[name]

    presets: list[Preset] = []
    for name, (_, _, description, allow) in declared.items():
        enabled = expand(name, ())
        listed = declared[name][0]
        _check_contract(chk, (*path, name), name, enabled, listed, allow, groups)
        presets.append(Preset(name, description, enabled, tuple(sorted(allow.items()))))
    if PRODUCTION_PRESET not in declared and not any(
        p.path[: len(path) + 1] == (*path, PRODUCTION_PRESET) for p in chk.problems
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
    allow: Mapping[str, str],
    groups: Mapping[str, Group],
) -> None:
    """The preset contract: `default` holds only quiet groups, or says why."""
    for group in sorted(allow):
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


def _read_consumers(
    chk: _Checker, raw: object, base: GroupClass, taken: dict[str, KeyPath]
) -> tuple[GroupClass, ...]:
    path: KeyPath = ("consumers",)
    if not chk.expect(raw, dict, path):
        return ()
    assert isinstance(raw, dict)
    inherited = {g.name: g for g in base.groups}
    consumers = []
    for key, body in raw.items():
        cpath = (*path, key)
        if not chk.name(key, cpath, "consumer"):
            continue
        if not chk.expect(body, dict, cpath):
            continue
        chk.known_keys(body, CONSUMER_KEYS, cpath)
        class_name = chk.text(body, "class", cpath, required=True)
        if class_name and not CLASS_RE.match(class_name):
            chk.error(
                (*cpath, "class"), f"class {class_name!r} is not a CamelCase Python identifier"
            )
            class_name = ""
        module = chk.text(body, "module", cpath, required=True)
        if module and (
            not MODULE_RE.match(module) or any(keyword.iskeyword(p) for p in module.split("."))
        ):
            chk.error((*cpath, "module"), f"module {module!r} is not a dotted Python module path")
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
        if "presets" not in body:
            chk.error(cpath, f"missing required key 'presets' (at least {PRODUCTION_PRESET!r})")
        presets = _read_presets(chk, body.get("presets", {}), (*cpath, "presets"), known)
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
                )
            )
    return tuple(consumers)


def _parse(path: Path, shown: str) -> tuple[dict[str, Any], Locator]:
    try:
        text = path.read_text(encoding="utf-8")
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

    taken: dict[str, KeyPath] = {BASE_CLASS: ("groups",), BASE_MODULE: ("groups",)}
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
    )
