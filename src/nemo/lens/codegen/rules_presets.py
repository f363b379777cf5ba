"""The rules of presets: members that exist, ``extends`` without cycles, inheritance from the
base preset of the same name (``replace`` to opt out), and the preset contract."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from nemo.lens.codegen.checker import Checker
from nemo.lens.codegen.locate import KeyPath
from nemo.lens.codegen.model import (
    ALL_PRESET,
    GOODPUT,
    IMPLICIT_PRESETS,
    PRODUCTION_PRESET,
    PROFILING,
    QUIET_TIERS,
    Group,
    Preset,
)

__all__ = ["PRESET_KEYS", "name_list", "read_presets"]

PRESET_KEYS = ("description", "groups", "extends", "replace", "allow_frequent")


class DeclaredPreset(NamedTuple):
    members: list[str]
    extends: list[str]
    description: str
    allow: dict[str, str]
    replace: bool


IMPLICIT_MEANING = {
    ALL_PRESET: "every group of the class",
    GOODPUT: "the groups whose category is goodput",
    PROFILING: "every group of the class, for profiling",
}


def read_presets(
    chk: Checker,
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
    declared: dict[str, DeclaredPreset] = {}
    for name, body in raw.items():
        ppath = (*path, name)
        if name in IMPLICIT_PRESETS:
            chk.error(
                ppath,
                f"{name!r} is implicit ({IMPLICIT_MEANING[name]}); remove this preset",
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
        members = name_list(chk, body, "groups", ppath, required=name not in base)
        extends = name_list(chk, body, "extends", ppath, required=False)
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
        declared[name] = DeclaredPreset(members, extends, description, allow, replace)

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
            check_contract(
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


def check_contract(
    chk: Checker,
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
    names = []
    for index, item in enumerate(value):
        if chk.expect(item, str, (*path, key, index)):
            names.append(item)
    return names
