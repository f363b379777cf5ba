"""View model of the span-group reference page (`docs/span-groups.md`)."""

from __future__ import annotations

from dataclasses import dataclass

from nemo.lens.codegen.class_views import IMPLICIT_PRESET_TEXT, ordered_presets, preset_members
from nemo.lens.codegen.model import GOODPUT, GroupClass, Preset
from nemo.lens.codegen.text import markdown_text


@dataclass(frozen=True)
class DocsClass:
    title: str
    module: str
    description: str
    preset_names: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    preset_rows: tuple[tuple[str, str, str], ...]


def _preset_text(cls: GroupClass, preset: Preset) -> str:
    """A preset's description, with what it inherits and what it keeps on purpose."""
    text = markdown_text(preset.description)
    if cls.base is not None and preset.replaces_base:
        text += f" Replaces the base `{preset.name}`."
    for group, reason in preset.allow_frequent:
        text += f" Kept in `{preset.name}` on purpose: `{group}`: {markdown_text(reason)}"
    return text


def _preset_members(cls: GroupClass, preset: Preset) -> str:
    if cls.base is None or not preset.from_base:
        return ", ".join(sorted(preset.members))
    added = sorted(preset.members - preset.from_base)
    text = f"from the base `{preset.name}`: {', '.join(sorted(preset.from_base))}"
    return text + (f"; added here: {', '.join(added)}" if added else "")


def docs_class(cls: GroupClass) -> DocsClass:
    names = ordered_presets(cls)
    by_name = {p.name: p for p in cls.presets}
    members = {n: preset_members(cls, n) for n in names}
    own = {g.name for g in cls.groups}
    rows = []
    for g in cls.all_groups:
        origin = "" if g.name in own or cls.base is None else " (base)"
        marks = tuple("✓" if g.name in members[n] else "" for n in names)
        category = cls.category(g.name)
        if category == GOODPUT and g.bucket:
            category += f" ({g.bucket})"
        row = (f"`{g.name}`{origin}", g.fires, category, markdown_text(g.description))
        rows.append((*row, *marks))
    for g in cls.groups:
        if g.renamed_to:
            note = f"renamed to `{g.renamed_to}`. {g.deprecated_note}".strip()
            blank = ("" for _ in names)
            rows.append((f"`{g.name}`", "—", "—", markdown_text(f"Deprecated: {note}"), *blank))
    preset_rows = []
    for n in names:
        if n in IMPLICIT_PRESET_TEXT:
            preset_rows.append((n, IMPLICIT_PRESET_TEXT[n], ", ".join(sorted(members[n]))))
        else:
            preset = by_name[n]
            preset_rows.append((n, _preset_text(cls, preset), _preset_members(cls, preset)))
    return DocsClass(
        title=cls.class_name,
        module=cls.module,
        description=markdown_text(cls.description),
        preset_names=tuple(names),
        rows=tuple(rows),
        preset_rows=tuple(preset_rows),
    )
