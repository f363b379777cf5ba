"""View models of the generated span-group modules: one per class, and the signatures module."""

from __future__ import annotations

from dataclasses import dataclass

from nemo.lens.codegen.model import (
    ALL_PRESET,
    GOODPUT,
    IMPLICIT_PRESETS,
    PRODUCTION_PRESET,
    PROFILING,
    TIER_MEANING,
    Group,
    GroupClass,
    Schema,
)
from nemo.lens.codegen.text import (
    decorator,
    docstring,
    header,
    pystr,
    pystr_block,
    ruff_sorted,
    string_lines,
    with_trailing_comma,
)


def group_doc(group: Group) -> str:
    category = f"{group.category}, feeds {group.bucket}" if group.bucket else group.category
    text = (
        f"{group.description.rstrip('.')}. Fires {group.fires} "
        f"({TIER_MEANING[group.fires]}); {category}; since {group.since}."
    )
    if group.renamed_to:
        text = f"Deprecated: renamed to {group.renamed_to!r}. {group.deprecated_note}"
    elif group.deprecated_note:
        text += f" Deprecated: {group.deprecated_note}"
    return text


@dataclass(frozen=True)
class GroupView:
    constant: str
    literal: str
    doc: str
    fires: str
    since: str
    description: str
    deprecated: str
    renamed_to: str
    """Expression of the new group's constant, for renamed groups."""
    category: str
    """The category literal; empty when it is the default (`profiling`)."""
    bucket: str
    """The goodput bucket literal; empty when the group feeds none."""


@dataclass(frozen=True)
class RenameView:
    """A renamed group: its old constant becomes a deprecated descriptor."""

    constant: str
    """The old constant (`ITERATION`)."""
    descriptor: str
    """The generated descriptor class the constant is typed as (`_RenamedIteration`)."""
    old: str
    """The old name, as a literal."""
    new_expr: str
    """Expression of the new group's constant in the class body (`STEP`)."""
    new_literal: str
    """The new name, as a literal (the type of reading the old constant)."""
    decorator: str
    """`@deprecated(...)` with the message, wrapped to the line length (at 8 spaces)."""
    message_lines: tuple[str, ...]
    """The same message as string-literal lines for the descriptor's argument."""
    doc: str


@dataclass(frozen=True)
class DeprecatedNameView:
    """A deprecated group name: one `@deprecated` overload of each group-taking primitive."""

    literal: str
    decorator: str
    """`@deprecated(...)` with the message, wrapped to the line length (at 4 spaces)."""


@dataclass(frozen=True)
class PrimitivesView:
    """The group-checked declarations of `managed_span`, `trace_fn`, `is_span_group_enabled`."""

    group_type: str
    """What the group parameter takes (a `Literal` alias or'ed with `DynamicSpanGroup`)."""
    renamed: tuple[DeprecatedNameView, ...]
    managed_span_doc: str
    trace_fn_doc: str
    is_enabled_doc: str


@dataclass(frozen=True)
class PresetView:
    literal: str
    description: str
    members: tuple[str, ...]
    """Member expressions (`JOB` or `SpanGroup.JOB`); empty for `all` and `profiling`."""
    is_all: bool
    """Every group: `all`, and `profiling`, which is every group too."""
    constant: str
    """The module-level `Final` frozenset of the preset (`PER_STEP_PRESET`)."""
    is_goodput: bool = False
    """The ``goodput`` preset: the class's goodput groups."""
    same_as: str = ""
    """Another preset constant with the very same members (`all` is `profiling`)."""
    every_group: bool = False
    """A declared preset that enables every group of the class: rendered as ``ALL_GROUPS``."""


@dataclass(frozen=True)
class ClassView:
    header: str
    module_doc: str
    class_name: str
    base_class: str
    class_doc: str
    name_alias: str
    preset_alias: str
    group_names: tuple[str, ...]
    preset_names: tuple[str, ...]
    groups: tuple[GroupView, ...]
    inherited: tuple[str, ...]
    """Expressions of the inherited groups (for documentation only)."""
    presets: tuple[PresetView, ...]
    goodput: tuple[str, ...]
    """Expressions of the class's goodput groups."""
    recategorized: tuple[tuple[str, str], ...]
    """(inherited group's expression, category literal): the class's own view of them."""
    renames: tuple[tuple[str, str], ...]
    renamed_constants: tuple[RenameView, ...]
    primitives: PrimitivesView
    exports: tuple[str, ...]
    """The module's `__all__`, in the order ruff keeps it."""
    any_names: tuple[str, ...] = ()
    """Every group name of every class in the schema (the base module only)."""
    own_constants: tuple[str, ...] = ()
    """The constants of the groups the class defines itself, renamed ones left out (none for
    a consumer whose every group the base has taken in)."""


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def rename_message(owner: str, old: str, targets: list[tuple[str, str]]) -> str:
    """What a type checker (and the run-time warning) says about a renamed group's old name.

    *targets* are (class name, new name) pairs: the same old name may have been
    renamed by more than one class.
    """
    uses = " or ".join(f"{cls}.{new.upper()}" for cls, new in targets)
    if len({new for _, new in targets}) == 1:
        what = f"span group {old!r} was renamed to {targets[0][1]!r}"
    else:
        what = f"span group {old!r} was renamed"
    return f"{owner}{what}; use {uses}"


def primitives_view(
    group_type: str, owner: str, renames: list[tuple[str, list[tuple[str, str]]]]
) -> PrimitivesView:
    """The declarations of the three primitives for one vocabulary.

    *renames* are (old name, [(class name, new name), ...]) pairs, each becoming
    a `@deprecated` overload that names the new group.
    """

    def doc(primitive: str) -> str:
        return docstring(
            f":func:`nemo.lens.{primitive}`, checked against the groups of {owner}.", 8
        )

    return PrimitivesView(
        group_type=group_type,
        managed_span_doc=doc("managed_span"),
        trace_fn_doc=doc("trace_fn"),
        is_enabled_doc=doc("is_span_group_enabled"),
        renamed=tuple(
            DeprecatedNameView(
                literal=pystr(old), decorator=decorator("deprecated", rename_message("", old, t), 4)
            )
            for old, t in renames
        ),
    )


def _expr(cls: GroupClass, name: str) -> str:
    own = {g.name for g in cls.groups}
    constant = name.upper()
    if name in own or cls.base is None:
        return constant
    return f"{cls.base.class_name}.{constant}"


def ordered_presets(cls: GroupClass) -> list[str]:
    names = sorted(p.name for p in cls.presets if p.name != PRODUCTION_PRESET)
    return [PRODUCTION_PRESET, *names, *IMPLICIT_PRESETS]


def preset_members(cls: GroupClass, name: str) -> frozenset[str]:
    """Every group a preset of *cls* enables, the implicit presets included."""
    if name in (ALL_PRESET, PROFILING):
        return frozenset(g.name for g in cls.all_groups)
    if name == GOODPUT:
        return cls.goodput
    return next(p.members for p in cls.presets if p.name == name)


IMPLICIT_PRESET_TEXT = {
    GOODPUT: "The goodput groups: semantic boundaries of useful or resiliency time.",
    PROFILING: "Every group: the fine-grained detail too, for profiling.",
    ALL_PRESET: "Every group of the class.",
}


def _preset_description(cls: GroupClass, name: str) -> str:
    if name in IMPLICIT_PRESET_TEXT:
        text = IMPLICIT_PRESET_TEXT[name]
    else:
        text = next(p.description for p in cls.presets if p.name == name)
    text = text[0].upper() + text[1:]
    return f"The {name!r} preset of {cls.class_name}. {text.rstrip('.')}."


def class_view(
    schema: Schema, cls: GroupClass, command: str, any_names: tuple[str, ...] = ()
) -> ClassView:
    order = {g.name: g.sort_key for g in cls.all_groups}

    def ordered(names: frozenset[str]) -> list[str]:
        return sorted(names, key=order.__getitem__)

    presets = []
    for name in ordered_presets(cls):
        members = ordered(preset_members(cls, name))
        every = name in (ALL_PRESET, PROFILING)
        presets.append(
            PresetView(
                literal=pystr(name),
                description=docstring(_preset_description(cls, name), 0),
                members=() if every else tuple(_expr(cls, m) for m in members),
                is_all=every,
                constant=f"{name.upper()}_PRESET",
                is_goodput=name == GOODPUT,
                same_as=f"{PROFILING.upper()}_PRESET" if name == ALL_PRESET else "",
                every_group=len(members) == len(cls.all_groups),
            )
        )
    groups = tuple(
        GroupView(
            constant=g.constant,
            literal=pystr(g.name),
            doc=docstring(group_doc(g), 4),
            fires=pystr(g.fires),
            since=pystr(g.since),
            description=pystr_block(g.description, 12, 0),
            deprecated=pystr(g.deprecated_note),
            renamed_to=_expr(cls, g.renamed_to) if g.renamed_to else "",
            category=pystr(g.category) if g.category != PROFILING else "",
            bucket=pystr(g.bucket) if g.bucket else "",
        )
        for g in cls.groups
    )
    is_base = cls.base is None
    module_doc = (
        "The base span-group vocabulary of nemo.lens."
        if is_base
        else f"{cls.class_name}, the span groups of the {cls.key!r} consumer."
    )
    return ClassView(
        header=header(schema, command),
        module_doc=docstring(module_doc, 0),
        class_name=cls.class_name,
        base_class=cls.base.class_name if cls.base else "",
        class_doc=docstring(cls.description, 4),
        name_alias=f"{cls.class_name}Name",
        preset_alias=f"{cls.class_name}PresetName",
        group_names=tuple(pystr(g.name) for g in cls.all_groups),
        preset_names=tuple(pystr(p) for p in ordered_presets(cls)),
        groups=groups,
        inherited=tuple(_expr(cls, g.name) for g in (cls.base.current_groups if cls.base else ())),
        presets=tuple(presets),
        goodput=tuple(_expr(cls, g) for g in ordered(cls.goodput)),
        recategorized=tuple((_expr(cls, g), pystr(c)) for g, c in cls.recategorized),
        renames=tuple(
            (pystr(g.name), _expr(cls, g.renamed_to)) for g in cls.groups if g.renamed_to
        ),
        renamed_constants=tuple(_rename_view(cls, g) for g in cls.groups if g.renamed_to),
        any_names=any_names,
        own_constants=tuple(g.constant for g in cls.current_groups),
        exports=_exports(cls, presets),
        primitives=primitives_view(
            f"{cls.class_name}Name | DynamicSpanGroup",
            f":class:`{cls.class_name}`",
            [(g.name, [(cls.class_name, g.renamed_to)]) for g in _renamed_groups(cls)],
        ),
    )


def _exports(cls: GroupClass, presets: list[PresetView]) -> tuple[str, ...]:
    names = {cls.class_name, f"{cls.class_name}Name", f"{cls.class_name}PresetName"}
    names |= {p.constant for p in presets}
    if cls.base is None:
        names |= {"AnySpanGroupName", "DynamicSpanGroup", "GroupInfo", "SpanGroupArg"}
    else:
        names |= {"is_span_group_enabled", "managed_span", "trace_fn"}

    return ruff_sorted(names)


def _renamed_groups(cls: GroupClass) -> list[Group]:
    """Every renamed group a class answers to, inherited ones included, by name."""
    inherited = cls.base.groups if cls.base else ()
    return sorted((g for g in (*inherited, *cls.groups) if g.renamed_to), key=lambda g: g.name)


def _rename_view(cls: GroupClass, group: Group) -> RenameView:
    message = rename_message(
        f"{cls.class_name}.{group.constant}: ",
        group.name,
        [(cls.class_name, group.renamed_to)],
    )
    return RenameView(
        constant=group.constant,
        descriptor=f"_Renamed{_camel(group.name)}",
        old=pystr(group.name),
        new_expr=_expr(cls, group.renamed_to),
        new_literal=pystr(group.renamed_to),
        decorator=decorator("deprecated", message, 8),
        message_lines=with_trailing_comma(string_lines(message, 8)),
        doc=docstring(group_doc(group), 4),
    )


@dataclass(frozen=True)
class SignaturesView:
    header: str
    module_doc: str
    primitives: PrimitivesView


def signatures_view(schema: Schema, classes: list[GroupClass], command: str) -> SignaturesView:
    """The module that types nemo.lens's own primitives: every group of every class."""
    current = sorted({g.name for cls in classes for g in cls.all_groups})
    targets: dict[str, list[tuple[str, str]]] = {}
    for cls in classes:
        for g in cls.groups:
            if g.renamed_to:
                targets.setdefault(g.name, []).append((cls.class_name, g.renamed_to))
    # A name still current in another class is not deprecated as such: only that
    # class's own module (and its constant) can say it was renamed.
    renames = [(old, sorted(t)) for old, t in sorted(targets.items()) if old not in current]
    names = ", ".join(cls.class_name for cls in classes)
    return SignaturesView(
        header=header(schema, command),
        module_doc=docstring(
            "The group-checked signatures of nemo.lens's primitives, for type checkers.", 0
        ),
        primitives=primitives_view("SpanGroupArg", f"any span-group class ({names})", renames),
    )
