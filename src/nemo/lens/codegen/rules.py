"""The rules of a schema's vocabulary: groups (names, tiers, categories, buckets, renames),
the base class, and consumers (their modules, their own groups and categories). Presets,
promoted groups and the metric catalogue have modules of their own
(:mod:`~nemo.lens.codegen.rules_presets`, :mod:`~nemo.lens.codegen.rules_promoted`,
:mod:`~nemo.lens.codegen.rules_metrics`).

A consumer never redefines a base group of the same schema file (an error). A consumer
of a schema that ``extends`` another may still define a group that base has since taken
in (promoted): that is valid, the base definition wins, and it is a warning
(:func:`~nemo.lens.codegen.rules_promoted.warn_promoted`).

Each rule reads its part of the parsed TOML, reports every problem through a
:class:`~nemo.lens.codegen.checker.Checker`, and returns the model of what is valid.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Mapping
from typing import Any

from nemo.lens.codegen.checker import Checker, did_you_mean, format_path
from nemo.lens.codegen.locate import KeyPath
from nemo.lens.codegen.model import (
    BUCKETS,
    CATEGORIES,
    GOODPUT,
    PRODUCTION_PRESET,
    PROFILING,
    TIERS,
    Group,
    GroupClass,
)
from nemo.lens.codegen.rules_presets import read_presets
from nemo.lens.codegen.rules_promoted import warn_promoted

__all__ = ["BASE_CLASS", "BASE_MODULE", "check_renames", "read_base", "read_consumers"]

MAX_DESCRIPTION = 200
VERSION_RE = re.compile(r"\d+\.\d+(?:\.\d+)?")
CLASS_RE = re.compile(r"[A-Z][A-Za-z0-9]*")
MODULE_RE = re.compile(r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*")
BASE_CLASS = "SpanGroup"
BASE_MODULE = "nemo.lens.groups"
RUNTIME_PACKAGE = "nemo.lens"
CONSUMERS_PACKAGE = "nemo.lens.consumers"
GROUP_KEYS = ("description", "fires", "since", "category", "bucket", "deprecated")
DEPRECATED_KEYS = ("note", "renamed_to")
PRESET_KEYS = ("description", "groups", "extends", "replace", "allow_frequent")
CONSUMER_KEYS = ("class", "module", "description", "categories", "groups", "presets")


def read_groups(
    chk: Checker,
    raw: object,
    path: KeyPath,
    inherited: Mapping[str, Group],
    *,
    promotable: bool = False,
) -> dict[str, Group]:
    """The valid groups of *raw*. A name of *inherited* is an error, unless *promotable*
    (the base comes from another file): then it is read like any other, for the caller to
    set aside as promoted."""
    groups: dict[str, Group] = {}
    if not chk.expect(raw, dict, path):
        return groups
    assert isinstance(raw, dict)
    for name, body in raw.items():
        gpath = (*path, name)
        if not chk.name(name, gpath, "group"):
            chk.broken.add(name)
            continue
        if name in inherited and not promotable:
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
        fires = chk.choice(body, "fires", gpath, TIERS, ("frequency", "tiers"))
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
            category = read_category(chk, body["category"], (*gpath, "category")) or PROFILING
        bucket = read_bucket(chk, body, gpath, category)
        if description and fires and since:
            groups[name] = Group(
                name, description, fires, since, note, renamed_to, category, bucket
            )
        else:
            chk.broken.add(name)
    return groups


def read_category(chk: Checker, value: object, path: KeyPath) -> str | None:
    """A valid category, or None after reporting why not."""
    if not chk.expect(value, str, path):
        return None
    if value not in CATEGORIES:
        chk.unknown(path, "category", str(value), CATEGORIES, "categories")
        return None
    return str(value)


def read_bucket(chk: Checker, body: Mapping[str, Any], path: KeyPath, category: str) -> str:
    """The goodput bucket a goodput group's time feeds (see `nemo-lens goodput`)."""
    if "bucket" not in body:
        return ""
    bpath = (*path, "bucket")
    value = body["bucket"]
    if not chk.expect(value, str, bpath):
        return ""
    if value not in BUCKETS:
        chk.unknown(bpath, "bucket", str(value), BUCKETS, "buckets")
        return ""
    if category != GOODPUT:
        chk.error(
            bpath,
            'only a goodput group feeds a goodput bucket; add category = "goodput" or '
            "remove the bucket",
        )
        return ""
    return str(value)


def check_renames(
    chk: Checker, own: Mapping[str, Group], known: Mapping[str, Group], path: KeyPath
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


def check_module(chk: Checker, module: str, path: KeyPath) -> bool:
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


def read_categories(
    chk: Checker, raw: object, path: KeyPath, base: GroupClass
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
        category = read_category(chk, value, gpath)
        if category is None:
            continue
        if category == base.category(group):
            chk.error(gpath, f"{group!r} is {category} in the base vocabulary already; remove this")
            continue
        out.append((group, category))
    return tuple(sorted(out))


def read_consumers(
    chk: Checker,
    raw: object,
    base: GroupClass,
    taken: dict[str, KeyPath],
    *,
    base_source: str = "",
) -> tuple[GroupClass, ...]:
    """The consumers of *raw*, subclasses of *base*; *base_source* names the file the base
    comes from when it is not this one (``extends``), which lets a consumer still define a
    group the base has since taken in."""
    path: KeyPath = ("consumers",)
    if not chk.expect(raw, dict, path):
        return ()
    assert isinstance(raw, dict)
    inherited = {g.name: g for g in base.groups}
    base_presets = {p.name: p for p in base.presets}
    consumers = []
    for key, body, cpath in chk.tables(raw, path, "consumer", CONSUMER_KEYS):
        class_name = chk.text(body, "class", cpath, required=True)
        if class_name and not CLASS_RE.fullmatch(class_name):
            chk.error(
                (*cpath, "class"), f"class {class_name!r} is not a CamelCase Python identifier"
            )
            class_name = ""
        module = chk.text(body, "module", cpath, required=True)
        if module and not check_module(chk, module, (*cpath, "module")):
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
        gpath = (*cpath, "groups")
        own = read_groups(
            chk, body.get("groups", {}), gpath, inherited, promotable=bool(base_source)
        )
        promoted = {name: own.pop(name) for name in list(own) if name in inherited}
        known = {**{n: g for n, g in inherited.items()}, **own}
        check_renames(chk, own, known, gpath)
        recategorized = read_categories(
            chk, body.get("categories", {}), (*cpath, "categories"), base
        )
        for name, local in promoted.items():
            warn_promoted(
                chk, (*gpath, name), key, class_name, local, base, dict(recategorized), base_source
            )
        presets = read_presets(
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


def read_base(chk: Checker, data: Mapping[str, Any]) -> GroupClass:
    groups = read_groups(chk, data.get("groups", {}), ("groups",), {})
    if "groups" not in data:
        chk.error((), "missing the [groups] table of the base vocabulary")
    check_renames(chk, groups, groups, ("groups",))
    if "presets" not in data:
        chk.error((), f"missing the [presets] table (at least {PRODUCTION_PRESET!r})")
    presets = read_presets(chk, data.get("presets", {}), ("presets",), groups)
    return GroupClass(
        key="base",
        class_name=BASE_CLASS,
        module=BASE_MODULE,
        description="The base span-group vocabulary, meaningful to every consumer.",
        groups=tuple(sorted(groups.values(), key=lambda g: g.sort_key)),
        presets=presets,
    )
