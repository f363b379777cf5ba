"""Compatibility of presets and consumers: what a job owner's spec enables, and the classes
and modules users import.

A class's presets are compared as a job owner gets them: a consumer's ``default`` with the
members it inherits from the base ``default``. A change that comes from the base preset is
reported once, at the base; a consumer reports what changed in its own part (its own
members, or ``replace = true`` that drops the inherited ones).
"""

from __future__ import annotations

from collections.abc import Iterator

from nemo.lens.codegen.compat_groups import NOTHING_TO_DO
from nemo.lens.codegen.compat_model import (
    BREAKING,
    COMPATIBLE,
    Finding,
    Pair,
    Side,
    presets,
    quoted,
    vocabulary,
)
from nemo.lens.codegen.model import PRODUCTION_PRESET, Preset

__all__ = ["consumer_findings", "preset_findings"]


def _inherited_only(preset: Preset) -> bool:
    """The consumer preset is the base preset of its name, with nothing of its own."""
    return preset.members == preset.from_base and not preset.replaces_base


def _who_runs(name: str) -> str:
    if name == PRODUCTION_PRESET:
        return f"production jobs (the {PRODUCTION_PRESET!r} preset, what a job runs unless told)"
    return f"jobs that run {name!r}"


def _inherit_note(pair: Pair, name: str, them: str) -> str:
    if not pair.is_base:
        return ""
    return (
        f"; consumers inherit {name!r} by name, so theirs lose {them} too (unless they replace it)"
    )


def _explained(pair: Pair, name: str) -> tuple[frozenset[str], frozenset[str]]:
    """(lost, gained) members of a consumer's preset that its base preset lost or gained."""
    base_old, base_new = presets(pair.old.schema.base), presets(pair.new.schema.base)
    old, new = presets(pair.old_cls)[name], presets(pair.new_cls)[name]
    if (
        pair.is_base
        or name not in base_old
        or name not in base_new
        or old.replaces_base
        or new.replaces_base
    ):
        return frozenset(), frozenset()
    before, after = base_old[name].members, base_new[name].members
    return before - after, after - before


def _members(pair: Pair, name: str) -> Iterator[Finding]:
    old, new = presets(pair.old_cls)[name], presets(pair.new_cls)[name]
    new_vocabulary = vocabulary(pair.new_cls)
    base_lost, base_gained = _explained(pair, name)
    lost = []
    for member in sorted(old.members - new.members - base_lost):
        group = new_vocabulary.get(member)
        if group is None:
            continue  # the group is gone: reported as such
        if group.renamed_to and group.renamed_to in new.members:
            continue  # a spec naming it enables the group it was renamed to
        lost.append(member)
    subject = pair.subject("presets", name)
    if lost:
        replaced = ""
        if new.replaces_base and not old.replaces_base:
            replaced = f" (it now says replace = true: it no longer inherits the base {name!r})"
        them, they = ("it", "it") if len(lost) == 1 else ("them", "they")
        where = "drop replace = true, or list" if replaced else "list"
        origin = ""
        if not all(pair.old.lists(pair.old_cls, name, m) for m in lost):
            origin = f" (or where {pair.title}'s {name!r} had {them} from: a preset it extends"
            origin += ", the base preset)" if not pair.is_base else ")"
        yield Finding(
            "preset_members_removed",
            BREAKING,
            subject,
            f"{quoted(lost)} left preset {name!r} of {pair.title}{replaced}: "
            f"{_who_runs(name)} stop emitting {'its' if them == 'it' else 'their'} spans"
            f"{_inherit_note(pair, name, them)}",
            f"{where} {', '.join(repr(m) for m in lost)} in [{subject}] again{origin}; "
            f"if {they} must leave {name!r}, that is a breaking "
            f"release: say so in the release notes (a job keeps {them} with "
            f"NEMO_LENS_SPAN_GROUPS={name},{','.join(lost)})",
            pair.old.preset(pair.old_cls, name, lost[0]),
            pair.new.preset(pair.new_cls, name, lost[0]),
        )
    gained = sorted(new.members - old.members - base_gained)
    if gained:
        yield Finding(
            "preset_members_added",
            COMPATIBLE,
            subject,
            f"{quoted(gained)} joined preset {name!r} of {pair.title}",
            NOTHING_TO_DO,
            pair.old.preset(pair.old_cls, name),
            pair.new.preset(pair.new_cls, name, gained[0]),
        )


def preset_findings(pair: Pair) -> Iterator[Finding]:
    """Every change to the presets of one class: presets and members, removed or added."""
    old_presets, new_presets = presets(pair.old_cls), presets(pair.new_cls)
    base_old, base_new = presets(pair.old.schema.base), presets(pair.new.schema.base)
    for name in sorted(set(old_presets) - set(new_presets)):
        if not pair.is_base and name not in base_new and _inherited_only(old_presets[name]):
            continue  # the base preset went, and with it the inherited one: reported there
        subject = pair.subject("presets", name)
        yield Finding(
            "preset_removed",
            BREAKING,
            subject,
            f"preset {name!r} of {pair.title} was removed: jobs whose spec names it "
            f"(NEMO_LENS_SPAN_GROUPS={name}) fail at start-up with an unknown name"
            + _inherit_note(pair, name, "it"),
            f"keep [{subject}]; a preset has no deprecation, so remove one only in a "
            "breaking release and name the spec that replaces it in the release notes",
            pair.old.preset(pair.old_cls, name),
            None,
        )
    for name in sorted(set(new_presets) - set(old_presets)):
        if not pair.is_base and name not in base_old and _inherited_only(new_presets[name]):
            continue
        yield Finding(
            "preset_added",
            COMPATIBLE,
            pair.subject("presets", name),
            f"preset {name!r} was added to {pair.title}",
            NOTHING_TO_DO,
            None,
            pair.new.preset(pair.new_cls, name),
        )
    for name in sorted(set(old_presets) & set(new_presets)):
        yield from _members(pair, name)


def consumer_findings(old: Side, new: Side) -> Iterator[Finding]:
    """Consumers removed or added, and changes to the class and module users import."""
    old_classes, new_classes = old.consumers, new.consumers
    for key in sorted(set(old_classes) - set(new_classes)):
        cls = old_classes[key]
        yield Finding(
            "consumer_removed",
            BREAKING,
            f"consumers.{key}",
            f"consumer {key!r} was removed: code that imports {cls.class_name} from "
            f"{cls.module} breaks, and its groups and presets are gone",
            f"keep [consumers.{key}]; to retire it, deprecate its groups for a release first",
            old.consumer(key),
            None,
        )
    for key in sorted(set(new_classes) - set(old_classes)):
        cls = new_classes[key]
        yield Finding(
            "consumer_added",
            COMPATIBLE,
            f"consumers.{key}",
            f"consumer {key!r} was added ({cls.class_name} in {cls.module})",
            NOTHING_TO_DO,
            None,
            new.consumer(key),
        )
    for key in sorted(set(old_classes) & set(new_classes)):
        before, after = old_classes[key], new_classes[key]
        for what, was, now in (
            ("class", before.class_name, after.class_name),
            ("module", before.module, after.module),
        ):
            if was != now:
                yield Finding(
                    f"consumer_{what}_changed",
                    BREAKING,
                    f"consumers.{key}.{what}",
                    f"the {what} of consumer {key!r} is now {now!r} (was {was!r}): "
                    f"`from {before.module} import {before.class_name}` stops working",
                    f'keep {what} = "{was}"',
                    old.consumer(key, what),
                    new.consumer(key, what),
                )
