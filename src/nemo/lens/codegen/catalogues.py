"""The rules of the two catalogues of ``nemo.lens.semconv``, metrics and attribute names,
which share one namespace of constants."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from nemo.lens.codegen.checker import Checker
from nemo.lens.codegen.json_schema import (
    ATTRIBUTES,
    DOTTED_RE,
    INSTRUMENT,
    LONG_NAME,
    METRIC_SECTION,
    METRICS,
    NAME,
    NAME_SECTION,
    RELEASE_RE,
    keys,
)
from nemo.lens.codegen.model import (
    ATTRIBUTE_TYPES,
    METRIC_KINDS,
    NAME_KINDS,
    Catalogue,
    KeyPath,
    Metric,
    Name,
    NameCatalogue,
    Section,
    format_path,
)

RESERVED_CONSTANTS = frozenset({"INSTRUMENTS"})
"""Names of ``nemo.lens.semconv`` that are not catalogue constants."""
_NAMES: KeyPath = ("attributes", "names")


def _sections(
    chk: Checker, raw: object, path: KeyPath, keys: tuple[str, ...]
) -> dict[str, Section]:
    sections = {}
    for key, body, spath in chk.tables(raw, path, "section", keys):
        title = chk.text(body, "title", spath, required=True)
        description = chk.text(body, "description", spath, required=False)
        resource = "resource" in keys and chk.flag(body, "resource", spath, False)
        sections[key] = Section(key, title, description, resource)
    return sections


def _boundaries(chk: Checker, raw: object, path: KeyPath) -> dict[str, tuple[float, ...]]:
    boundaries = {}
    for name, values in chk.table(raw, path).items():
        bpath = (*path, name)
        if not chk.name(name, bpath, "boundaries") or not chk.expect(values, list, bpath):
            continue
        numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if len(numbers) != len(values) or not numbers:
            chk.error(bpath, "boundaries must be a non-empty array of numbers")
        elif any(b <= a for a, b in itertools.pairwise(numbers)):
            chk.error(bpath, "boundaries must increase strictly, from the lowest up")
        else:
            boundaries[name] = tuple(float(v) for v in numbers)
    return boundaries


def read_metrics(chk: Checker, raw: object) -> Catalogue | None:
    """The metric catalogue: named histogram boundaries, doc sections and instruments."""
    path: KeyPath = ("metrics",)
    if not chk.expect(raw, dict, path):
        return None
    chk.known_keys(raw, keys(METRICS), path)
    boundaries = _boundaries(chk, raw.get("boundaries", {}), (*path, "boundaries"))
    sections = _sections(chk, raw.get("sections", {}), (*path, "sections"), keys(METRIC_SECTION))
    metrics: list[Metric] = []
    names: dict[str, KeyPath] = {}
    ipaths = (*path, "instruments")
    instruments = raw.get("instruments", {})
    for key, body, ipath in chk.tables(
        instruments, ipaths, "instrument", keys(INSTRUMENT), LONG_NAME
    ):
        name = chk.text(body, "name", ipath, required=True)
        if name and not DOTTED_RE.fullmatch(name):
            chk.error((*ipath, "name"), f"metric name {name!r} is not dotted lowercase")
        elif name in names:
            chk.error((*ipath, "name"), f"metric {name!r} is already {format_path(names[name])}")
        names.setdefault(name, ipath)
        kind = chk.choice(body, "kind", ipath, METRIC_KINDS, ("kind", "kinds"))
        unit = chk.text(body, "unit", ipath, required=False)
        description = chk.text(body, "description", ipath, required=True)
        section = chk.text(body, "section", ipath, required=True)
        if section and section not in sections:
            chk.unknown((*ipath, "section"), "section", section, sections)
        recorded_by = chk.text(body, "recorded_by", ipath, required=True)
        bounds = chk.text(body, "boundaries", ipath, required=False)
        if kind == "histogram" and not bounds:
            chk.error(ipath, "a histogram names its boundaries (see [metrics.boundaries])")
        elif bounds and kind != "histogram":
            chk.error((*ipath, "boundaries"), "only a histogram has boundaries")
        elif bounds and bounds not in boundaries:
            chk.unknown((*ipath, "boundaries"), "boundaries", bounds, boundaries)
        non_negative = chk.flag(body, "non_negative", ipath, True)
        metrics.append(
            Metric(key, name, kind, unit, description, section, recorded_by, bounds, non_negative)
        )
    # Sorted, like everything generated: the order of the TOML file changes nothing.
    return Catalogue(
        boundaries=tuple(sorted(boundaries.items())),
        sections=tuple(sorted(sections.values(), key=lambda s: s.key)),
        metrics=tuple(sorted(metrics, key=lambda m: m.name)),
    )


def _value_problem(kind: str, value: str) -> str:
    """Why *value* cannot be a name of *kind*; empty when it can."""
    if kind in ("attribute", "event", "scope") and not DOTTED_RE.fullmatch(value):
        return f"{kind} name {value!r} is not dotted lowercase (like 'dl.rank' or 'k8s.pod.name')"
    if kind == "field" and not (value.isascii() and value.isidentifier()):
        return f"field name {value!r} is not a Python identifier (a LogRecord field)"
    if kind == "version" and not RELEASE_RE.fullmatch(value):
        return f"version {value!r} is not a release like '1.29.0'"
    return ""


def _release(chk: Checker, body: Mapping[str, Any], key: str, path: KeyPath) -> str:
    release = chk.text(body, key, path, required=False)
    if release and not RELEASE_RE.fullmatch(release):
        chk.error((*path, key), f"{key!r} must be a release like '0.2.0', got {release!r}")
        return ""
    return release


def _name(
    chk: Checker, key: str, body: Mapping[str, Any], path: KeyPath, sections: dict[str, Section]
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
    alias_of = chk.text(body, "alias_of", path, required=False)
    upstream = _release(chk, body, "upstream", path)
    return Name(
        key, value, section_key, description, kind, type_, of, alias_of, upstream, upstream_resource
    )


def _check_references(
    chk: Checker, names: dict[str, Name], broken: set[str], metrics: Catalogue | None
) -> None:
    """What an entry says about others (`of`, `alias_of`, a value or constant held twice)."""
    taken: dict[str, KeyPath] = {}
    if metrics is not None:
        taken = {m.constant: ("metrics", "instruments", m.key) for m in metrics.metrics}
    first: dict[tuple[str, str, str], str] = {}
    for key, name in names.items():
        path = (*_NAMES, key)
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
                f"{name.kind} {name.value!r} is already {format_path((*_NAMES, earlier))}; a "
                f"second constant for it says alias_of = {earlier!r}",
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
    path: KeyPath = ("attributes",)
    if not chk.expect(raw, dict, path):
        return None
    chk.known_keys(raw, keys(ATTRIBUTES), path)
    sections = _sections(chk, raw.get("sections", {}), (*path, "sections"), keys(NAME_SECTION))
    names: dict[str, Name] = {}
    broken: set[str] = set()
    entries = chk.tables(raw.get("names", {}), _NAMES, "entry", keys(NAME), LONG_NAME)
    for key, body, npath in entries:
        name = _name(chk, key, body, npath, sections)
        if name is None:
            broken.add(key)
        else:
            names[key] = name
    _check_references(chk, names, broken, metrics)
    return NameCatalogue(
        sections=tuple(sorted(sections.values(), key=lambda s: s.key)),
        names=tuple(sorted(names.values(), key=lambda n: n.constant)),
    )
