"""The rules of the attribute-name catalogue: its sections, and every name of nemo.lens.semconv.

Each entry of ``[attributes.names]`` becomes one ``Final`` constant (its key upper-cased)
holding its ``value``, documented by its ``description``. What a value may look like
depends on its ``kind``; two constants may hold the same value only when the second says
which one it repeats (``alias_of``), so an accidental duplicate is an error while a
deliberate second spelling (upstream's ``GENAI_*`` beside ``GEN_AI_*``) is not. The
constants share one namespace with the metric catalogue's (``nemo.lens.semconv``
re-exports both), so a constant of one may not be a constant of the other.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from nemo.lens.codegen.checker import Checker, format_path
from nemo.lens.codegen.locate import KeyPath
from nemo.lens.codegen.model import (
    ATTRIBUTE_TYPES,
    NAME_KINDS,
    Catalogue,
    Name,
    NameCatalogue,
    NameSection,
)

__all__ = ["read_names"]

ATTRIBUTES_KEYS = ("sections", "names")
SECTION_KEYS = ("title", "description", "resource")
NAME_KEYS = (
    "value",
    "section",
    "description",
    "kind",
    "type",
    "of",
    "alias_of",
    "upstream",
    "upstream_resource",
)
DOTTED_RE = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*")
"""Attribute keys and scope names, as OpenTelemetry spells them: dotted lowercase."""
RELEASE_RE = re.compile(r"\d+\.\d+\.\d+")
RESERVED_CONSTANTS = frozenset({"INSTRUMENTS"})
"""Names of ``nemo.lens.semconv`` that are not catalogue constants."""


def _value_problem(kind: str, value: str) -> str:
    """Why *value* cannot be a name of *kind*; empty when it can."""
    if kind in ("attribute", "event", "scope") and not DOTTED_RE.fullmatch(value):
        return f"{kind} name {value!r} is not dotted lowercase (like 'dl.rank' or 'k8s.pod.name')"
    if kind == "field" and not (value.isascii() and value.isidentifier()):
        return f"field name {value!r} is not a Python identifier (a LogRecord field)"
    if kind == "version" and not RELEASE_RE.fullmatch(value):
        return f"version {value!r} is not a release like '1.29.0'"
    return ""


def _sections(chk: Checker, raw: object, path: KeyPath) -> dict[str, NameSection]:
    sections: dict[str, NameSection] = {}
    if not chk.expect(raw, dict, path):
        return sections
    assert isinstance(raw, dict)
    for key, body, spath in chk.tables(raw, path, "section", SECTION_KEYS):
        title = chk.text(body, "title", spath, required=True)
        description = chk.text(body, "description", spath, required=False)
        resource = body.get("resource", False)
        if not chk.expect(resource, bool, (*spath, "resource")):
            resource = False
        sections[key] = NameSection(key, title, description, resource)
    return sections


def _release(chk: Checker, body: Mapping[str, Any], key: str, path: KeyPath) -> str:
    release = chk.text(body, key, path, required=False)
    if release and not RELEASE_RE.fullmatch(release):
        chk.error((*path, key), f"{key!r} must be a release like '0.2.0', got {release!r}")
        return ""
    return release


def _name(
    chk: Checker, key: str, body: Mapping[str, Any], path: KeyPath, sections: dict[str, NameSection]
) -> Name | None:
    """One entry, its own fields checked (the ones naming other entries are checked later)."""
    kind = "attribute"
    if "kind" in body:
        kind = chk.choice(body, "kind", path, NAME_KINDS, ("kind", "kinds"))
    value = chk.text(body, "value", path, required=True)
    if value and kind and (problem := _value_problem(kind, value)):
        chk.error((*path, "value"), problem)
    description = chk.text(body, "description", path, required=True)
    if "\n" in description:
        chk.error((*path, "description"), "description must be a single line")
    section_key = chk.text(body, "section", path, required=True)
    section = sections.get(section_key)
    if section_key and section is None:
        chk.unknown((*path, "section"), "section", section_key, sections)
    type_ = chk.text(body, "type", path, required=False)
    if type_ and type_ not in ATTRIBUTE_TYPES:
        chk.unknown((*path, "type"), "type", type_, ATTRIBUTE_TYPES, "types")
        type_ = ""
    elif type_ and kind != "attribute":
        chk.error((*path, "type"), f"only an attribute has a type, not a {kind}")
    of = chk.text(body, "of", path, required=False)
    if kind == "value" and not of:
        chk.error(path, 'a value names the attribute it is a value of: of = "KEY"')
    elif of and kind != "value":
        chk.error((*path, "of"), 'only a value (kind = "value") is a value of an attribute')
    upstream_resource = _release(chk, body, "upstream_resource", path)
    if section is not None and section.resource:
        if kind != "attribute":
            chk.error(path, f"section {section_key!r} holds resource attributes, not a {kind}")
        elif not type_:
            chk.error(path, 'a resource attribute states its type (type = "string", ...)')
    elif upstream_resource:
        chk.error(
            (*path, "upstream_resource"),
            f"only a resource attribute is sent in the resource; section {section_key!r} "
            "is not a resource section (resource = true)",
        )
    if not (value and description and section is not None and kind):
        return None
    return Name(
        key,
        value,
        section_key,
        description,
        kind=kind,
        type=type_,
        of=of,
        alias_of=chk.text(body, "alias_of", path, required=False),
        upstream=_release(chk, body, "upstream", path),
        upstream_resource=upstream_resource,
    )


def _check_references(
    chk: Checker,
    names: dict[str, Name],
    paths: dict[str, KeyPath],
    broken: set[str],
    metrics: Catalogue | None,
) -> None:
    """What an entry says about others: `of`, `alias_of`, a value held twice, a constant
    another catalogue already has. An entry that names a *broken* one (defined, but
    invalid, and reported already) is not reported again."""
    taken: dict[str, KeyPath] = {}
    if metrics is not None:
        taken = {m.constant: ("metrics", "instruments", m.key) for m in metrics.metrics}
    first: dict[tuple[str, str, str], str] = {}
    for key, name in names.items():
        path = paths[key]
        if name.constant in RESERVED_CONSTANTS:
            chk.error(path, f"constant {name.constant!r} is reserved: nemo.lens.semconv has one")
        elif name.constant in taken:
            chk.error(
                path,
                f"constant {name.constant!r} is already {format_path(taken[name.constant])} "
                "(nemo.lens.semconv exports both catalogues' constants); pick another key",
            )
        if name.of and name.of not in broken:
            target = names.get(name.of)
            if target is None:
                chk.unknown((*path, "of"), "attribute", name.of, names)
            elif target.kind != "attribute":
                chk.error((*path, "of"), f"{name.of!r} is a {target.kind}, not an attribute")
        if name.alias_of:
            if name.alias_of not in broken:
                _check_alias(chk, name, names, (*path, "alias_of"))
            continue
        # Only the entries that are not aliases hold a value of their own.
        namespace = (name.kind, name.of, name.value)
        if namespace in first:
            earlier = first[namespace]
            chk.error(
                (*path, "value"),
                f"{name.kind} {name.value!r} is already {format_path(paths[earlier])}; a second "
                f"constant for it says alias_of = {earlier!r}",
            )
        else:
            first[namespace] = key


def _check_alias(chk: Checker, name: Name, names: dict[str, Name], path: KeyPath) -> None:
    target = names.get(name.alias_of)
    if target is None or target is name:
        others = {k: n for k, n in names.items() if n is not name}
        chk.unknown(path, "entry", name.alias_of, others)
    elif target.alias_of:
        chk.error(path, f"{name.alias_of!r} is an alias itself; say alias_of = {target.alias_of!r}")
    elif (target.kind, target.of, target.value) != (name.kind, name.of, name.value):
        chk.error(
            path,
            f"an alias holds the same value as the entry it repeats: {name.alias_of!r} holds "
            f"{target.value!r}, this entry {name.value!r}",
        )


def read_names(chk: Checker, raw: object, metrics: Catalogue | None) -> NameCatalogue | None:
    """The attribute-name catalogue: sections and names (see the module docstring)."""
    path: KeyPath = ("attributes",)
    if not chk.expect(raw, dict, path):
        return None
    assert isinstance(raw, dict)
    chk.known_keys(raw, ATTRIBUTES_KEYS, path)
    sections = _sections(chk, raw.get("sections", {}), (*path, "sections"))
    names: dict[str, Name] = {}
    paths: dict[str, KeyPath] = {}
    broken: set[str] = set()
    raw_names = raw.get("names", {})
    if chk.expect(raw_names, dict, (*path, "names")):
        npaths = (*path, "names")
        for key, body, npath in chk.tables(raw_names, npaths, "entry", NAME_KEYS, longest=64):
            name = _name(chk, key, body, npath, sections)
            if name is None:
                broken.add(key)
            else:
                names[key] = name
                paths[key] = npath
    _check_references(chk, names, paths, broken, metrics)
    # Sorted, like everything generated: the order of the TOML file changes nothing.
    return NameCatalogue(
        sections=tuple(sorted(sections.values(), key=lambda s: s.key)),
        names=tuple(sorted(names.values(), key=lambda n: n.constant)),
    )
