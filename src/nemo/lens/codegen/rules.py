"""The rules of the span-group vocabulary (groups, presets, the base class, consumers): each
reads its part of the TOML, reports through the Checker and returns the model of what is valid."""

from __future__ import annotations

import builtins
import keyword
import sys
from collections.abc import Mapping
from typing import Any, NamedTuple

from nemo.lens.codegen.checker import Checker, did_you_mean
from nemo.lens.codegen.json_schema import (
    CLASS_RE,
    CONSUMER,
    DEPRECATED,
    GROUP,
    MODULE_RE,
    PRESET,
    VERSION_RE,
    keys,
)
from nemo.lens.codegen.model import (
    ALL_PRESET,
    BASE_CLASS,
    BASE_MODULE,
    BUCKETS,
    CATEGORIES,
    GOODPUT,
    IMPLICIT_PRESETS,
    PRODUCTION_PRESET,
    PROFILING,
    QUIET_TIERS,
    TIERS,
    Group,
    GroupClass,
    KeyPath,
    Preset,
    format_path,
)

MAX_DESCRIPTION = 200
RUNTIME_PACKAGE = "nemo.lens"
CONSUMERS_PACKAGE = "nemo.lens.consumers"
_CATEGORY = ("category", "categories")
STDLIB_MODULES = frozenset(sys.stdlib_module_names)
# What a generated consumer module imports (consumer.py.j2; a test keeps the two agreed): a
# class of the same name would replace it there and break the module.
GENERATED_MODULE_NAMES = frozenset(
    {
        "AbstractContextManager",
        "Any",
        "Callable",
        "ClassVar",
        "DynamicSpanGroup",
        "Final",
        "GroupInfo",
        "Link",
        "Literal",
        "Mapping",
        "MappingProxyType",
        "RenamedGroup",
        "Sequence",
        "Span",
        "SpanKind",
        "TypeAlias",
        "TypeVar",
        "Tracer",
    }
)
IMPLICIT_MEANING = {
    ALL_PRESET: "every group of the class",
    GOODPUT: "the groups whose category is goodput",
    PROFILING: "every group of the class, for profiling",
}


def read_groups(
    chk: Checker, raw: object, path: KeyPath, inherited: Mapping[str, Group], promotable: bool
) -> dict[str, Group]:
    """The valid groups of *raw*. A name of *inherited* is an error, unless *promotable*
    (the base comes from another file): then it is read for the caller to set aside."""
    groups: dict[str, Group] = {}
    for name, body in chk.table(raw, path).items():
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
        chk.known_keys(body, keys(GROUP), gpath)
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
        note = renamed_to = ""
        if "deprecated" in body:
            dpath = (*gpath, "deprecated")
            deprecated = body["deprecated"]
            if chk.expect(deprecated, dict, dpath):
                chk.known_keys(deprecated, keys(DEPRECATED), dpath)
                note = chk.text(deprecated, "note", dpath, required=True)
                renamed_to = chk.text(deprecated, "renamed_to", dpath, required=False)
        # A group is goodput only when the schema says so (upstream's rule), so schemas
        # written before categories existed stay valid.
        category = PROFILING
        if "category" in body:
            category = chk.one_of(body["category"], (*gpath, "category"), CATEGORIES, _CATEGORY)
            category = category or PROFILING
        bucket = ""
        if "bucket" in body:
            bucket = chk.one_of(body["bucket"], (*gpath, "bucket"), BUCKETS, ("bucket", "buckets"))
        if bucket and category != GOODPUT:
            chk.error(
                (*gpath, "bucket"),
                'only a goodput group feeds a goodput bucket; add category = "goodput" or '
                "remove the bucket",
            )
            bucket = ""
        sync = chk.flag(body, "sync", gpath, default=False)
        if description and fires and since:
            groups[name] = Group(
                name, description, fires, since, note, renamed_to, category, bucket, sync
            )
        else:
            chk.broken.add(name)
    return groups


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


def name_list(
    chk: Checker, body: Mapping[str, Any], key: str, path: KeyPath, required: bool
) -> list[str]:
    if key not in body:
        if required:
            chk.error(path, f"missing required key {key!r}")
        return []
    value = body[key]
    if not chk.expect(value, list, (*path, key)):
        return []
    return [item for i, item in enumerate(value) if chk.expect(item, str, (*path, key, i))]


class _Declared(NamedTuple):
    members: list[str]
    extends: list[str]
    description: str
    allow: dict[str, str]
    replace: bool


def read_presets(
    chk: Checker,
    raw: object,
    path: KeyPath,
    groups: Mapping[str, Group],
    inherited: Mapping[str, Preset] | None = None,
) -> tuple[Preset, ...]:
    """The presets of one class; *inherited*: the base presets, which a consumer's presets
    of the same name add to (unless ``replace = true``) and which it otherwise inherits."""
    if not chk.expect(raw, dict, path):
        return ()
    base = inherited or {}
    declared: dict[str, _Declared] = {}
    for name, body in raw.items():
        ppath = (*path, name)
        if name in IMPLICIT_PRESETS:
            chk.error(ppath, f"{name!r} is implicit ({IMPLICIT_MEANING[name]}); remove this preset")
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
        chk.known_keys(body, keys(PRESET), ppath)
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
        members = name_list(chk, body, "groups", ppath, required=name not in base)
        extends = name_list(chk, body, "extends", ppath, required=False)
        allow: dict[str, str] = {}
        if "allow_frequent" in body:
            apath = (*ppath, "allow_frequent")
            for kept, reason in chk.table(body["allow_frequent"], apath).items():
                if chk.expect(reason, str, (*apath, kept)):
                    if not reason.strip():
                        chk.error((*apath, kept), "the reason must not be empty")
                    if chk.inert(reason, (*apath, kept), "reason"):
                        allow[kept] = reason.strip()
        if not description and name in base:
            description = base[name].description
        declared[name] = _Declared(members, extends, description, allow, replace)

    for name, preset in declared.items():
        for index, member in enumerate(preset.members):
            mpath = (*path, name, "groups", index)
            group = groups.get(member)
            if member in chk.broken:
                pass
            elif group is None:
                chk.unknown(mpath, "group", member, groups)
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
                chk.unknown((*path, name, "extends", index), "preset", parent, {*declared, *base})

    resolved: dict[str, frozenset[str]] = {}
    current = frozenset(n for n, g in groups.items() if not g.renamed_to)
    cyclic: set[str] = set()
    inherited_broken = chk.broken_presets if inherited is not None else set()

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
            cyclic.update(trail[trail.index(name) :])
            return frozenset()
        preset = declared[name]
        out = set(m for m in preset.members if m in current) | from_base(name)
        for parent in preset.extends:
            if parent in declared or parent in base or parent == ALL_PRESET:
                out |= expand(parent, (*trail, name))
        resolved[name] = frozenset(out)
        return resolved[name]

    def unknown(name: str, seen: tuple[str, ...] = ()) -> bool:
        """Whether the members of *name* went through a cycle: then they are not what the
        schema means, and checking them only repeats the cycle as other problems."""
        replaced = name in declared and declared[name].replace
        if name in cyclic or (name in inherited_broken and not replaced):
            return True
        if name in seen or name not in declared:
            return False
        return any(unknown(parent, (*seen, name)) for parent in declared[name].extends)

    presets: list[Preset] = []
    for name in sorted({*declared, *base}):
        enabled = expand(name, ())
        if name in declared:
            preset = declared[name]
            allow = dict(preset.allow)
            # A frequent base member kept on purpose stays kept, for the same reason.
            if not preset.replace and name in base:
                for kept, reason in base[name].allow_frequent:
                    allow.setdefault(kept, reason)
            if not unknown(name):
                check_contract(chk, (*path, name), name, enabled, preset, allow, groups)
            description = preset.description
        else:
            allow = dict(base[name].allow_frequent)
            description = base[name].description
        replaces = name in declared and declared[name].replace
        allowed = tuple(sorted(allow.items()))
        presets.append(Preset(name, description, enabled, allowed, from_base(name), replaces))
        if inherited is None and unknown(name):
            chk.broken_presets.add(name)
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


def check_contract(
    chk: Checker,
    path: KeyPath,
    name: str,
    members: frozenset[str],
    preset: _Declared,
    allow: Mapping[str, str],
    groups: Mapping[str, Group],
) -> None:
    """The preset contract: `default` holds only quiet groups, or says why (*allow*, with
    what its base preset stated)."""
    for group in sorted(preset.allow):
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
            listed = preset.members
            where = (*path, "groups", listed.index(group)) if group in listed else path
            chk.error(
                where,
                f"group {group!r} fires {fires}, too often for the production preset "
                f"{PRODUCTION_PRESET!r}: move it to 'per_step' or 'all', or state why it belongs "
                f'here with allow_frequent = {{ {group} = "reason" }}',
            )


def read_base(chk: Checker, data: Mapping[str, Any]) -> GroupClass:
    groups = read_groups(chk, data.get("groups", {}), ("groups",), {}, promotable=False)
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


def check_module(chk: Checker, module: str, path: KeyPath) -> bool:
    """A consumer module must be a module of its own: a dotted Python module path, never part
    of nemo.lens's runtime, never a name the standard library has (docs/schema.md)."""
    parts = module.split(".")
    if not MODULE_RE.fullmatch(module) or any(keyword.iskeyword(p) for p in parts):
        chk.error(
            path,
            f"module {module!r} is not a dotted Python module path (lowercase identifiers "
            "joined by dots, no Python keywords); e.g. 'mylib.lens_groups'",
        )
        return False
    if parts[0] in STDLIB_MODULES:
        # Only the first name can shadow: `mylib.json` is mylib's own, `json.groups` is not.
        chk.error(
            path,
            f"module {module!r} would shadow the standard library's {parts[0]!r} (a top-level "
            f"{parts[0]} on sys.path hides it, or is hidden by it); put it in your own package, "
            f"e.g. {own_package(parts)!r}",
        )
        return False
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


def own_package(parts: list[str]) -> str:
    """*parts* of a module path moved into a package of the consumer's own, for a message."""
    return ".".join(("mylib", *parts[1:], *(["lens_groups"] if len(parts) == 1 else [])))


def check_class(chk: Checker, class_name: str, path: KeyPath) -> bool:
    """A consumer's class name: a CamelCase identifier that replaces nothing in its module."""
    if not CLASS_RE.fullmatch(class_name):
        chk.error(path, f"class {class_name!r} is not a CamelCase Python identifier")
        return False
    if keyword.iskeyword(class_name):
        chk.error(
            path, f"class {class_name!r} is a Python keyword; name the class, e.g. 'MySpanGroup'"
        )
        return False
    if class_name in GENERATED_MODULE_NAMES or hasattr(builtins, class_name):
        what = (
            "a builtin" if hasattr(builtins, class_name) else "a name its generated module imports"
        )
        chk.error(
            path,
            f"class {class_name!r} is {what}, which the class would replace; name the "
            f"class for its consumer, e.g. {class_name + 'SpanGroup'!r}",
        )
        return False
    return True


def read_categories(
    chk: Checker, raw: object, path: KeyPath, base: GroupClass
) -> tuple[tuple[str, str], ...]:
    """A consumer's own view of inherited groups' categories (Megatron: evaluate is profiling)."""
    inherited = {g.name for g in base.current_groups}
    out = []
    for group, value in chk.table(raw, path).items():
        gpath = (*path, group)
        if group not in inherited:
            chk.error(
                gpath,
                f"{group!r} is not a base group{did_you_mean(group, inherited)}; the category of "
                "a consumer's own group is its 'category' key",
            )
            continue
        category = chk.one_of(value, gpath, CATEGORIES, _CATEGORY)
        if not category:
            continue
        if category == base.category(group):
            chk.error(gpath, f"{group!r} is {category} in the base vocabulary already; remove this")
            continue
        out.append((group, category))
    return tuple(sorted(out))


def read_consumers(
    chk: Checker, raw: object, base: GroupClass, taken: dict[str, KeyPath], base_source: str
) -> tuple[GroupClass, ...]:
    """The consumers of *raw*; *base_source*: the file *base* comes from when it is not this
    one, and a consumer may still define a group the base has since taken in (a warning)."""
    inherited = {g.name: g for g in base.groups}
    base_presets = {p.name: p for p in base.presets}
    consumers = []
    for key, body, cpath in chk.tables(raw, ("consumers",), "consumer", keys(CONSUMER)):
        class_name = chk.text(body, "class", cpath, required=True)
        if class_name and not check_class(chk, class_name, (*cpath, "class")):
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
        own = read_groups(chk, body.get("groups", {}), gpath, inherited, bool(base_source))
        promoted = {name: own.pop(name) for name in list(own) if name in inherited}
        known = {**inherited, **own}
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


def _value(text: str) -> str:
    return repr(text) if text else "none"


def warn_promoted(
    chk: Checker,
    path: KeyPath,
    consumer: str,
    class_name: str,
    local: Group,
    base_class: GroupClass,
    overrides: Mapping[str, str],
    base_source: str,
) -> None:
    """Warn that *local*, a consumer's group, is a group of *base_class* now, which wins; say
    where the two differ in behaviour (*overrides*: the consumer's categories)."""
    table = f"consumers.{consumer}"
    name = local.name
    base = next(g for g in base_class.groups if g.name == name)
    where = f"{base_class.class_name}.{base.constant} of {base_source}"
    if base.renamed_to:
        where += f", deprecated there: renamed to {base.renamed_to!r}"
    message = (
        f"group {name!r} is a base group since {base.since} ({where}), which "
        f"{class_name or consumer} inherits"
    )
    found = []
    if local.fires != base.fires:
        found.append(f"fires is {base.fires!r} in the base, {local.fires!r} here")
    category = overrides.get(name, base.category)
    if local.category != category and name in overrides:
        # Two categories only: the override says the other one, the local one is the base's.
        found.append(
            f"category is {category!r} by the categories of [{table}], {local.category!r} "
            f"here (to keep {local.category!r}, remove {name!r} from those categories)"
        )
    elif local.category != category:
        found.append(
            f"category is {category!r} in the base, {local.category!r} here (to keep "
            f'{local.category!r}, write categories = {{ {name} = "{local.category}" }} '
            f"in [{table}])"
        )
    if local.bucket != base.bucket:
        found.append(f"bucket is {_value(base.bucket)} in the base, {_value(local.bucket)} here")
    if local.renamed_to != base.renamed_to:
        text = (
            f"renamed_to is {_value(base.renamed_to)} in the base, {_value(local.renamed_to)} here"
        )
        if not base.renamed_to:
            text += f" ({name!r} now names the base group, not an old name)"
        found.append(text)
    if found:
        message += "; the base definition wins where the two differ: " + "; ".join(found)
    message += (
        f"; this definition can go: delete the [{table}.groups.{name}] table "
        f"(keep {name!r} in the presets that list it)"
    )
    chk.warn(path, message)
