"""Shape the validated schema into view models and render the templates.

Templates get ready-made strings (literals quoted, docstrings wrapped, expressions
qualified) and hold only loops and ifs; output is sorted and the same on every machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import jinja2

from nemo.lens.codegen.model import (
    ALL_PRESET,
    ATTRIBUTES_MODULE,
    GOODPUT,
    IMPLICIT_PRESETS,
    METRICS_MODULE,
    PRODUCTION_PRESET,
    PROFILING,
    RESOURCE_MODULE,
    SIGNATURES_MODULE,
    TIER_MEANING,
    Catalogue,
    Group,
    GroupClass,
    Metric,
    Name,
    NameCatalogue,
    Preset,
    Schema,
    Section,
)
from nemo.lens.codegen.text import (
    decorator,
    docstring,
    header,
    markdown_text,
    pystr,
    pystr_block,
    region_note,
    ruff_sorted,
    string_lines,
)

TEMPLATES = Path(__file__).resolve().parent / "templates"
IMPLICIT_PRESET_TEXT = {
    GOODPUT: "The goodput groups: semantic boundaries of useful or resiliency time.",
    PROFILING: "Every group: the fine-grained detail too, for profiling.",
    ALL_PRESET: "Every group of the class.",
}
_NAMES_MODULE_DOCS = {
    False: "The names nemo.lens emits and reads, other than the resource's and the metrics': "
    "span and log attributes, metric attributes and fixed values, and upstream's names.",
    True: "The resource attributes nemo.lens sets on every signal, and what each one holds.",
}


@dataclass(frozen=True)
class GroupView:
    constant: str
    literal: str
    doc: str
    fires: str
    since: str
    description: str
    deprecated: str
    category: str
    """The category literal; empty when it is the default (`profiling`)."""
    bucket: str
    sync: bool


@dataclass(frozen=True)
class RenameView:
    """A renamed group: its old constant becomes a deprecated descriptor."""

    constant: str
    descriptor: str
    """The generated descriptor class the constant is typed as (`_RenamedIteration`)."""
    old: str
    new_expr: str
    new_literal: str
    decorator: str
    message_lines: tuple[str, ...]
    """The decorator's message as string-literal lines for the descriptor's argument."""
    doc: str


@dataclass(frozen=True)
class PrimitivesView:
    """The group-checked declarations of `managed_span`, `trace_fn`, `is_span_group_enabled`."""

    group_type: str
    renamed: tuple[tuple[str, str], ...]
    """(literal, decorator) of each deprecated name: an overload of each primitive."""
    managed_span_doc: str
    trace_fn_doc: str
    is_enabled_doc: str


@dataclass(frozen=True)
class PresetView:
    literal: str
    description: str
    members: tuple[str, ...]
    """Member expressions (`JOB` or `SpanGroup.JOB`)."""
    implicit: bool
    constant: str
    """The module-level `Final` frozenset of the preset (`PER_STEP_PRESET`)."""
    same_as: str
    """Another preset constant with the very same members (`all` is `profiling`)."""
    every_group: bool


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
    groups: tuple[GroupView, ...]
    """The class's own groups, renamed ones left out."""
    presets: tuple[PresetView, ...]
    goodput: tuple[str, ...]
    sync: tuple[str, ...]
    recategorized: tuple[tuple[str, str], ...]
    """(inherited group's expression, category literal): the class's own view of them."""
    renames: tuple[RenameView, ...]
    primitives: PrimitivesView
    exports: tuple[str, ...]
    any_names: tuple[str, ...]
    """Every group name of every class in the schema (the base module only)."""


@dataclass(frozen=True)
class DocsClass:
    title: str
    module: str
    description: str
    preset_names: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    preset_rows: tuple[tuple[str, str, str], ...]


@dataclass(frozen=True)
class EntryView:
    """A metric or a name of a catalogue, for its module (or, with markdown, its page)."""

    constant: str
    literal: str
    doc: str
    description: str
    name: str = ""
    kind: str = ""
    unit: str = ""
    boundaries: str = ""
    non_negative: bool = True
    recorded_by: str = ""
    value: str = ""
    type: str = ""
    upstream: str = ""


@dataclass(frozen=True)
class SectionView:
    title: str
    description: str
    module: str
    entries: tuple[EntryView, ...]


@dataclass(frozen=True)
class CatalogueView:
    header: str
    module_doc: str
    exports: tuple[str, ...]
    sections: tuple[SectionView, ...]
    metrics: tuple[EntryView, ...] = ()
    boundaries: tuple[tuple[str, str], ...] = ()


def group_doc(group: Group) -> str:
    category = f"{group.category}, feeds {group.bucket}" if group.bucket else group.category
    if group.sync:
        category += ", a synchronisation point"
    text = (
        f"{group.description.rstrip('.')}. Fires {group.fires} "
        f"({TIER_MEANING[group.fires]}); {category}; since {group.since}."
    )
    if group.renamed_to:
        text = f"Deprecated: renamed to {group.renamed_to!r}. {group.deprecated_note}"
    elif group.deprecated_note:
        text += f" Deprecated: {group.deprecated_note}"
    return text


def rename_message(owner: str, old: str, targets: list[tuple[str, str]]) -> str:
    """What a type checker (and the run-time warning) says about a renamed group's old name;
    *targets* are (class name, new name) pairs: more than one class may have renamed it."""
    uses = " or ".join(f"{cls}.{new.upper()}" for cls, new in targets)
    if len({new for _, new in targets}) == 1:
        what = f"span group {old!r} was renamed to {targets[0][1]!r}"
    else:
        what = f"span group {old!r} was renamed"
    return f"{owner}{what}; use {uses}"


def primitives_view(
    group_type: str, owner: str, renames: list[tuple[str, list[tuple[str, str]]]]
) -> PrimitivesView:
    """The three primitives for one vocabulary; *renames*: (old name, [(class, new name)])."""

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
            (pystr(old), decorator("deprecated", rename_message("", old, t), 4))
            for old, t in renames
        ),
    )


def _expr(cls: GroupClass, name: str) -> str:
    if cls.base is None or any(g.name == name for g in cls.groups):
        return name.upper()
    return f"{cls.base.class_name}.{name.upper()}"


def ordered_presets(cls: GroupClass) -> list[str]:
    names = sorted(p.name for p in cls.presets if p.name != PRODUCTION_PRESET)
    return [PRODUCTION_PRESET, *names, *IMPLICIT_PRESETS]


def preset_members(cls: GroupClass, name: str) -> frozenset[str]:
    """Every group a preset of *cls* enables, the implicit presets included."""
    if name in (ALL_PRESET, PROFILING):
        return frozenset(g.name for g in cls.all_groups)
    return cls.goodput if name == GOODPUT else cls.preset(name).members


def _preset_view(cls: GroupClass, name: str, members: list[str]) -> PresetView:
    text = IMPLICIT_PRESET_TEXT.get(name) or cls.preset(name).description
    text = (text[0].upper() + text[1:]).rstrip(".")
    text = f"The {name!r} preset of {cls.class_name}. {text}."
    return PresetView(
        literal=pystr(name),
        description=docstring(text, 0),
        members=tuple(_expr(cls, m) for m in members),
        implicit=name in IMPLICIT_PRESETS,
        constant=f"{name.upper()}_PRESET",
        same_as=f"{PROFILING.upper()}_PRESET" if name == ALL_PRESET else "",
        every_group=len(members) == len(cls.all_groups),
    )


def _group_view(cls: GroupClass, g: Group) -> GroupView:
    return GroupView(
        constant=g.constant,
        literal=pystr(g.name),
        doc=docstring(group_doc(g), 4),
        fires=pystr(g.fires),
        since=pystr(g.since),
        description=pystr_block(g.description, 12),
        deprecated=pystr(g.deprecated_note),
        category=pystr(g.category) if g.category != PROFILING else "",
        bucket=pystr(g.bucket) if g.bucket else "",
        sync=g.sync,
    )


def _rename_view(cls: GroupClass, group: Group) -> RenameView:
    message = rename_message(
        f"{cls.class_name}.{group.constant}: ", group.name, [(cls.class_name, group.renamed_to)]
    )
    lines = string_lines(message, 8)
    return RenameView(
        constant=group.constant,
        descriptor="_Renamed" + "".join(part.capitalize() for part in group.name.split("_")),
        old=pystr(group.name),
        new_expr=_expr(cls, group.renamed_to),
        new_literal=pystr(group.renamed_to),
        decorator=decorator("deprecated", message, 8),
        message_lines=(*lines[:-1], lines[-1] + ","),
        doc=docstring(group_doc(group), 4),
    )


def class_view(
    schema: Schema, cls: GroupClass, command: str, any_names: tuple[str, ...] = ()
) -> ClassView:
    order = {g.name: g.sort_key for g in cls.all_groups}
    presets = [
        _preset_view(cls, name, sorted(preset_members(cls, name), key=order.__getitem__))
        for name in ordered_presets(cls)
    ]
    # Every renamed group the class answers to, inherited ones included, by name.
    answers = sorted((g for g in cls.vocabulary.values() if g.renamed_to), key=lambda g: g.name)
    exports = {cls.class_name, f"{cls.class_name}Name", f"{cls.class_name}PresetName"}
    exports |= {p.constant for p in presets}
    if cls.base is None:
        exports |= {
            "AnySpanGroupName",
            "DynamicSpanGroup",
            "GroupInfo",
            "SpanGroupArg",
            "SpanRegistry",
        }
        module_doc = "The base span-group vocabulary of nemo.lens."
    else:
        exports |= {"is_span_group_enabled", "managed_span", "trace_fn"}
        module_doc = f"{cls.class_name}, the span groups of the {cls.key!r} consumer."
    return ClassView(
        header=header(schema, command),
        module_doc=docstring(module_doc, 0),
        class_name=cls.class_name,
        base_class=cls.base.class_name if cls.base else "",
        class_doc=docstring(cls.description, 4),
        name_alias=f"{cls.class_name}Name",
        preset_alias=f"{cls.class_name}PresetName",
        group_names=tuple(pystr(g.name) for g in cls.all_groups),
        groups=tuple(_group_view(cls, g) for g in cls.current_groups),
        presets=tuple(presets),
        goodput=tuple(_expr(cls, g) for g in sorted(cls.goodput, key=order.__getitem__)),
        sync=tuple(_expr(cls, g) for g in sorted(cls.sync, key=order.__getitem__)),
        recategorized=tuple((_expr(cls, g), pystr(c)) for g, c in cls.recategorized),
        renames=tuple(_rename_view(cls, g) for g in cls.groups if g.renamed_to),
        any_names=any_names,
        exports=ruff_sorted(exports),
        primitives=primitives_view(
            f"{cls.class_name}Name | DynamicSpanGroup",
            f":class:`{cls.class_name}`",
            [(g.name, [(cls.class_name, g.renamed_to)]) for g in answers],
        ),
    )


def signatures_view(classes: list[GroupClass]) -> PrimitivesView:
    """The primitives of the module that types nemo.lens's own: every group of every class."""
    current = {g.name for cls in classes for g in cls.all_groups}
    targets: dict[str, list[tuple[str, str]]] = {}
    for cls in classes:
        for g in cls.groups:
            if g.renamed_to:
                targets.setdefault(g.name, []).append((cls.class_name, g.renamed_to))
    # A name still current in another class is not deprecated as such: only that
    # class's own module (and its constant) can say it was renamed.
    renames = [(old, sorted(t)) for old, t in sorted(targets.items()) if old not in current]
    names = ", ".join(cls.class_name for cls in classes)
    return primitives_view("SpanGroupArg", f"any span-group class ({names})", renames)


def _preset_row(cls: GroupClass, name: str, members: frozenset[str]) -> tuple[str, str, str]:
    """A preset's row of the page: what it is for, what it inherits and keeps on purpose."""
    if name in IMPLICIT_PRESET_TEXT:
        return (name, IMPLICIT_PRESET_TEXT[name], ", ".join(sorted(members)))
    preset: Preset = cls.preset(name)
    text = markdown_text(preset.description)
    if cls.base is not None and preset.replaces_base:
        text += f" Replaces the base `{name}`."
    for group, reason in preset.allow_frequent:
        text += f" Kept in `{name}` on purpose: `{group}`: {markdown_text(reason)}"
    listed = ", ".join(sorted(members))
    if cls.base is not None and preset.from_base:
        added = sorted(members - preset.from_base)
        listed = f"from the base `{name}`: {', '.join(sorted(preset.from_base))}"
        listed += f"; added here: {', '.join(added)}" if added else ""
    return (name, text, listed)


def docs_class(cls: GroupClass) -> DocsClass:
    names = ordered_presets(cls)
    members = {n: preset_members(cls, n) for n in names}
    own = {g.name for g in cls.groups}
    rows = []
    for g in cls.all_groups:
        origin = "" if g.name in own or cls.base is None else " (base)"
        marks = tuple("✓" if g.name in members[n] else "" for n in names)
        category = cls.category(g.name)
        if category == GOODPUT and g.bucket:
            category += f" ({g.bucket})"
        if g.sync:
            category += ", sync"
        rows.append(
            (f"`{g.name}`{origin}", g.fires, category, markdown_text(g.description), *marks)
        )
    for g in cls.groups:
        if g.renamed_to:
            note = f"renamed to `{g.renamed_to}`. {g.deprecated_note}".strip()
            blank = ("" for _ in names)
            rows.append((f"`{g.name}`", "—", "—", markdown_text(f"Deprecated: {note}"), *blank))
    return DocsClass(
        title=cls.class_name,
        module=cls.module,
        description=markdown_text(cls.description),
        preset_names=tuple(names),
        rows=tuple(rows),
        preset_rows=tuple(_preset_row(cls, n, members[n]) for n in names),
    )


def _metric_view(metric: Metric, *, markdown: bool) -> EntryView:
    kind = metric.kind.replace("_", "-")
    text = f"{metric.description.rstrip('.')}. A {kind} in `{metric.unit or '1'}`"
    text += f", recorded from {metric.recorded_by}."
    if markdown:
        unit = f"`{metric.unit}`" if metric.unit else ""
        description = markdown_text(metric.description)
    else:
        kind, unit = pystr(metric.kind), pystr(metric.unit)
        description = pystr_block(metric.description, 8)
    return EntryView(
        constant=metric.constant,
        literal=pystr(metric.name),
        doc=docstring(text, 0),
        description=description,
        name=metric.name,
        kind=kind,
        unit=unit,
        boundaries=metric.boundaries,
        non_negative=metric.non_negative,
        recorded_by=markdown_text(metric.recorded_by) if markdown else metric.recorded_by,
    )


def _section_view(
    section: Section, module: str, entries: list[EntryView], *, markdown: bool
) -> SectionView:
    if markdown:
        title, description = markdown_text(section.title), markdown_text(section.description)
        return SectionView(title, description, module, tuple(entries))
    return SectionView(section.title, section.description, module, tuple(entries))


def catalogue_view(
    schema: Schema, catalogue: Catalogue, command: str, *, markdown: bool = False
) -> CatalogueView:
    metrics = {m.key: _metric_view(m, markdown=markdown) for m in catalogue.metrics}
    sections = tuple(
        _section_view(
            s,
            METRICS_MODULE,
            [metrics[m.key] for m in catalogue.metrics if m.section == s.key],
            markdown=markdown,
        )
        for s in catalogue.sections
    )
    if markdown:
        boundaries = tuple((n, ", ".join(f"{v:g}" for v in vs)) for n, vs in catalogue.boundaries)
    else:
        boundaries = tuple(
            (n, "\n".join(f"    {v!r}," for v in vs)) for n, vs in catalogue.boundaries
        )
    return CatalogueView(
        header=header(schema, command, comment="<!--" if markdown else "#"),
        module_doc=docstring(
            "The metric catalogue of nemo.lens: every instrument its recorders create.", 0
        ),
        exports=ruff_sorted({"INSTRUMENTS", *(m.constant for m in metrics.values())}),
        sections=sections,
        metrics=tuple(metrics.values()),
        boundaries=boundaries,
    )


def _name_view(name: Name, by_key: dict[str, Name], *, markdown: bool) -> EntryView:
    notes = []
    if name.kind == "value":
        notes.append(f"A value of `{by_key[name.of].value}`.")
    if name.alias_of:
        notes.append(f"The same value as `{by_key[name.alias_of].constant}`.")
    # On the page, the type and upstream have columns of their own.
    if not markdown and name.type:
        notes.append(f"Type: `{name.type}`.")
    if not markdown and name.upstream:
        notes.append(f"Upstream nemo.lens {name.upstream} defines this constant with this value.")
    if not markdown and name.upstream_resource:
        notes.append(f"Upstream nemo.lens {name.upstream_resource} sends this key too.")
    text = " ".join((f"{name.description.rstrip('.')}.", *notes))
    upstream = [f"constant ({name.upstream})"] if name.upstream else []
    if name.upstream_resource:
        upstream.append(f"resource ({name.upstream_resource})")
    return EntryView(
        constant=name.constant,
        literal=pystr(name.value),
        doc=docstring(text, 0),
        value=f"`{name.value}`" if markdown else name.value,
        type=name.type,
        upstream=", ".join(upstream),
        description=markdown_text(text) if markdown else text,
    )


def names_view(
    schema: Schema, catalogue: NameCatalogue, command: str, *, resource: bool | None
) -> CatalogueView:
    """The resource module's view (*resource* true), the other module's (false), or the
    docs page's, every section (``None``)."""
    markdown = resource is None
    by_key = {n.key: n for n in catalogue.names}
    views = {n.key: _name_view(n, by_key, markdown=markdown) for n in catalogue.names}
    sections = tuple(
        _section_view(
            s,
            RESOURCE_MODULE if s.resource else ATTRIBUTES_MODULE,
            [views[n.key] for n in catalogue.names if n.section == s.key],
            markdown=markdown,
        )
        for s in catalogue.sections
        if markdown or s.resource == resource
    )
    return CatalogueView(
        header=header(schema, command, comment="<!--" if markdown else "#"),
        module_doc=docstring(_NAMES_MODULE_DOCS[bool(resource)], 0),
        exports=ruff_sorted({n.constant for s in sections for n in s.entries}),
        sections=sections,
    )


def module_path(out_root: Path, module: str) -> Path:
    return out_root.joinpath(*module.split(".")).with_suffix(".py")


def render_all(
    schema: Schema, out_root: Path, docs: Path | None, command: str, *, docs_region: bool = False
) -> dict[Path, str]:
    """Every generated file of *schema*: path -> exact content. *command* is what the headers
    tell a reader to run to regenerate them. With *docs_region*, *docs* maps to the region of
    a page the author keeps: no page header or title, a note instead."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )

    def render(template: str, **context: object) -> str:
        return env.get_template(template).render(command=command, **context)

    classes = [] if schema.extends_base else [schema.base]
    classes += list(schema.consumers)
    every = tuple(pystr(n) for n in sorted({g.name for c in classes for g in c.all_groups}))
    files = {
        module_path(out_root, cls.module): render(
            "consumer.py.j2" if cls.base else "base.py.j2",
            view=class_view(schema, cls, command, () if cls.base else every),
        )
        for cls in classes
    }
    if not schema.extends_base:
        doc = "The group-checked signatures of nemo.lens's primitives, for type checkers."
        files[module_path(out_root, SIGNATURES_MODULE)] = render(
            "signatures.py.j2",
            header=header(schema, command),
            module_doc=docstring(doc, 0),
            primitives=signatures_view(classes),
        )
    if schema.catalogue is not None:
        view = catalogue_view(schema, schema.catalogue, command)
        files[module_path(out_root, METRICS_MODULE)] = render("metrics.py.j2", view=view)
        if docs is not None:
            table = catalogue_view(schema, schema.catalogue, command, markdown=True)
            files[docs.with_name("metrics.md")] = render("metrics.md.j2", view=table)
    if schema.names is not None:
        for resource, module in ((False, ATTRIBUTES_MODULE), (True, RESOURCE_MODULE)):
            view = names_view(schema, schema.names, command, resource=resource)
            files[module_path(out_root, module)] = render("attributes.py.j2", view=view)
        if docs is not None:
            page = names_view(schema, schema.names, command, resource=None)
            files[docs.with_name("attributes.md")] = render("attributes.md.j2", view=page)
    if docs is not None:
        files[docs] = render(
            "span-groups.md.j2",
            header=region_note(schema, command)
            if docs_region
            else header(schema, command, comment="<!--"),
            region=docs_region,
            classes=[docs_class(c) for c in classes],
            tiers=tuple(TIER_MEANING.items()),
        )
    return files
