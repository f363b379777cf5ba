"""Shape the validated schema into view models and render the templates.

Templates receive ready-made strings (Python literals already quoted, docstrings
already wrapped, member expressions already qualified), so they hold nothing but
loops and ifs. Output is deterministic: everything is sorted, nothing depends on
time, paths or the order of keys in the TOML file, and the templates are written
to be stable under ``ruff format``.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import jinja2

from nemo.lens.codegen.model import (
    ALL_PRESET,
    GOODPUT,
    IMPLICIT_PRESETS,
    METRICS_MODULE,
    PRODUCTION_PRESET,
    PROFILING,
    SIGNATURES_MODULE,
    TIER_MEANING,
    Catalogue,
    Group,
    GroupClass,
    Metric,
    Preset,
    Schema,
)

TEMPLATES = Path(__file__).resolve().parent / "templates"
LINE = 100


_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def pystr(text: str) -> str:
    """A Python string literal of *text*, quoted as ruff format quotes it.

    Double quotes, unless the text holds more double quotes than single ones (then
    single quotes need fewer escapes, and ruff would switch). Non-ASCII stays
    readable; backslashes, the quote and anything unprintable are escaped.
    """
    quote = "'" if text.count('"') > text.count("'") else '"'
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif char == quote:
            out.append("\\" + char)
        elif not char.isprintable():
            code = ord(char)
            out.append(
                f"\\x{code:02x}"
                if code < 0x100
                else f"\\u{code:04x}"
                if code < 0x10000
                else f"\\U{code:08x}"
            )
        else:
            out.append(char)
    return quote + "".join(out) + quote


def _fit(
    text: str,
    width: int,
    limit: int,
    render: Callable[[str], str],
    *,
    drop_whitespace: bool = True,
    break_on_hyphens: bool = True,
) -> list[str]:
    """Wrap *text* at *width* so that every rendered line is at most *limit* characters.

    Escapes make a rendered line longer than its text; wrap narrower until it fits.
    """
    while True:
        chunks = textwrap.wrap(
            text,
            width=width,
            drop_whitespace=drop_whitespace,
            break_on_hyphens=break_on_hyphens,
        )
        lines = [render(chunk) for chunk in chunks]
        longest = max((len(line) for line in lines), default=0)
        if width <= 20 or longest <= limit:
            return lines
        width -= longest - limit


def pystr_block(text: str, indent: int, prefix: int) -> str:
    """A string literal that fits the line after *prefix* characters of code.

    Too long, it becomes parenthesized parts, which ruff format keeps as they are.
    """
    literal = pystr(text)
    if indent + prefix + len(literal) + 1 <= LINE:
        return literal
    pad = " " * (indent + 4)
    chunks = _fit(
        text,
        LINE - indent - 8,
        LINE - indent - 6,
        pystr,
        drop_whitespace=False,
        break_on_hyphens=False,
    )
    body = "\n".join(pad + chunk for chunk in chunks)
    return "(\n" + body + "\n" + " " * indent + ")"


def _inert(line: str) -> str:
    """*line* as the body of a docstring that reads back as exactly *line*.

    Backslashes and double quotes are escaped, so no schema text can end the string,
    start an escape sequence (``\\x``, ``\\N``, a backslash before the closing quotes)
    or become code. Applied after wrapping, so a line break never splits an escape.
    """
    return line.replace("\\", "\\\\").replace('"', '\\"')


def docstring(text: str, indent: int) -> str:
    """A triple-quoted docstring wrapped to the line length; its text is always inert."""
    pad = " " * indent
    lines = _fit(text, LINE - indent - 6, LINE - indent - 6, _inert) or [""]
    if len(lines) == 1:
        return f'{pad}"""{lines[0]}"""'
    body = "\n".join(pad + line for line in lines[1:])
    return f'{pad}"""{lines[0]}\n{body}\n{pad}"""'


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
    names: tuple[str, ...]
    """The member names as literals, for that frozenset."""
    same_as: str = ""
    """Another preset constant with the very same members (`all` is `profiling`)."""


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


def decorator(name: str, text: str, indent: int) -> str:
    """`@name("text")` at *indent*, the text split into implicitly joined literals if too long."""
    pad = " " * indent
    one_line = f"{pad}@{name}({pystr(text)})"
    if len(one_line) <= LINE:
        return one_line
    lines = string_lines(text, indent + 4)
    return f"{pad}@{name}(\n" + "\n".join(lines) + f"\n{pad})"


def string_lines(text: str, indent: int) -> tuple[str, ...]:
    """*text* as string literals, one per line at *indent*, that together fit the line length."""
    pad = " " * indent
    if indent + len(pystr(text)) + 1 <= LINE:
        return (pad + pystr(text),)
    chunks = _fit(text, LINE - indent - 4, LINE - indent - 2, pystr, drop_whitespace=False)
    return tuple(pad + chunk for chunk in chunks)


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


def _ordered_presets(cls: GroupClass) -> list[str]:
    names = sorted(p.name for p in cls.presets if p.name != PRODUCTION_PRESET)
    return [PRODUCTION_PRESET, *names, *IMPLICIT_PRESETS]


def _members(cls: GroupClass, name: str) -> frozenset[str]:
    """Every group a preset of *cls* enables, the implicit presets included."""
    if name in (ALL_PRESET, PROFILING):
        return frozenset(g.name for g in cls.all_groups)
    if name == GOODPUT:
        return cls.goodput
    return next(p.members for p in cls.presets if p.name == name)


def _one_line(text: str) -> str:
    """*text* safe inside a one-line comment: no line breaks, no control characters."""
    return json.dumps(text, ensure_ascii=False)[1:-1].replace("-->", "--\\>")


def header(schema: Schema, command: str, comment: str = "#") -> str:
    lines = [
        f"DO NOT EDIT: generated from {_one_line(schema.source)} by nemo-lens generate.",
        f"Edit the schema, then run `{_one_line(command)}`.",
        f"schema-sha256: {schema.digest}",
    ]
    if comment == "#":
        return "\n".join(f"# {line}" for line in lines)
    return "<!--\n" + "\n".join(lines) + "\n-->"


_IMPLICIT_TEXT = {
    GOODPUT: "The goodput groups: semantic boundaries of useful or resiliency time.",
    PROFILING: "Every group: the fine-grained detail too, for profiling.",
    ALL_PRESET: "Every group of the class.",
}


def _preset_description(cls: GroupClass, name: str) -> str:
    if name in _IMPLICIT_TEXT:
        text = _IMPLICIT_TEXT[name]
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
    for name in _ordered_presets(cls):
        members = ordered(_members(cls, name))
        every = name in (ALL_PRESET, PROFILING)
        presets.append(
            PresetView(
                literal=pystr(name),
                description=docstring(_preset_description(cls, name), 0),
                members=() if every else tuple(_expr(cls, m) for m in members),
                is_all=every,
                constant=f"{name.upper()}_PRESET",
                names=tuple(pystr(m) for m in members),
                same_as=f"{PROFILING.upper()}_PRESET" if name == ALL_PRESET else "",
            )
        )
    groups = tuple(
        GroupView(
            constant=g.constant,
            literal=pystr(g.name),
            doc=docstring(group_doc(g), 4),
            fires=pystr(g.fires),
            since=pystr(g.since),
            description=pystr_block(g.description, 16, len("description=")),
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
        preset_names=tuple(pystr(p) for p in _ordered_presets(cls)),
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


def ruff_sorted(names: set[str]) -> tuple[str, ...]:
    """*names* in the order ruff keeps an ``__all__``: CONSTANTS, then Classes, then the rest."""

    def order(name: str) -> tuple[int, str]:
        kind = 0 if name.isupper() else 1 if name[0].isupper() else 2
        return (kind, name)

    return tuple(sorted(names, key=order))


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
        message_lines=_with_trailing_comma(string_lines(message, 8)),
        doc=docstring(group_doc(group), 4),
    )


def _with_trailing_comma(lines: tuple[str, ...]) -> tuple[str, ...]:
    return (*lines[:-1], lines[-1] + ",")


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


def _md(text: str) -> str:
    """Schema text as inert Markdown table text: no cell breaks, no HTML."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


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
    text = _md(preset.description)
    if cls.base is not None and preset.replaces_base:
        text += f" Replaces the base `{preset.name}`."
    for group, reason in preset.allow_frequent:
        text += f" Kept in `{preset.name}` on purpose: `{group}`: {_md(reason)}"
    return text


def _preset_members(cls: GroupClass, preset: Preset) -> str:
    if cls.base is None or not preset.from_base:
        return ", ".join(sorted(preset.members))
    added = sorted(preset.members - preset.from_base)
    text = f"from the base `{preset.name}`: {', '.join(sorted(preset.from_base))}"
    return text + (f"; added here: {', '.join(added)}" if added else "")


def docs_class(cls: GroupClass) -> DocsClass:
    names = _ordered_presets(cls)
    by_name = {p.name: p for p in cls.presets}
    members = {n: _members(cls, n) for n in names}
    own = {g.name for g in cls.groups}
    rows = []
    for g in cls.all_groups:
        origin = "" if g.name in own or cls.base is None else " (base)"
        marks = tuple("✓" if g.name in members[n] else "" for n in names)
        category = cls.category(g.name)
        if category == GOODPUT and g.bucket:
            category += f" ({g.bucket})"
        row = (f"`{g.name}`{origin}", g.fires, category, _md(g.description))
        rows.append((*row, *marks))
    for g in cls.groups:
        if g.renamed_to:
            note = f"renamed to `{g.renamed_to}`. {g.deprecated_note}".strip()
            blank = ("" for _ in names)
            rows.append((f"`{g.name}`", "—", "—", _md(f"Deprecated: {note}"), *blank))
    preset_rows = []
    for n in names:
        if n in _IMPLICIT_TEXT:
            preset_rows.append((n, _IMPLICIT_TEXT[n], ", ".join(sorted(members[n]))))
        else:
            preset = by_name[n]
            preset_rows.append((n, _preset_text(cls, preset), _preset_members(cls, preset)))
    return DocsClass(
        title=cls.class_name,
        module=cls.module,
        description=_md(cls.description),
        preset_names=tuple(names),
        rows=tuple(rows),
        preset_rows=tuple(preset_rows),
    )


@dataclass(frozen=True)
class MetricView:
    constant: str
    literal: str
    doc: str
    kind: str
    unit: str
    description: str
    boundaries: str
    non_negative: bool
    name: str
    recorded_by: str


@dataclass(frozen=True)
class MetricSectionView:
    title: str
    description: str
    metrics: tuple[MetricView, ...]


@dataclass(frozen=True)
class CatalogueView:
    header: str
    module_doc: str
    exports: tuple[str, ...]
    boundaries: tuple[tuple[str, tuple[str, ...]], ...]
    sections: tuple[MetricSectionView, ...]
    metrics: tuple[MetricView, ...]


def _metric_view(metric: Metric, *, markdown: bool) -> MetricView:
    unit = metric.unit or "1"
    text = f"{metric.description.rstrip('.')}. A {metric.kind.replace('_', '-')} in `{unit}`"
    text += f", recorded from {metric.recorded_by}."
    esc = _md if markdown else (lambda s: s)
    return MetricView(
        constant=metric.constant,
        literal=pystr(metric.name),
        doc=docstring(text, 0),
        kind=pystr(metric.kind) if not markdown else metric.kind.replace("_", "-"),
        unit=pystr(metric.unit) if not markdown else (f"`{metric.unit}`" if metric.unit else ""),
        description=(
            pystr_block(metric.description, 12, len("description="))
            if not markdown
            else esc(metric.description)
        ),
        boundaries=metric.boundaries,
        non_negative=metric.non_negative,
        name=metric.name,
        recorded_by=esc(metric.recorded_by),
    )


def catalogue_view(
    schema: Schema, catalogue: Catalogue, command: str, *, markdown: bool = False
) -> CatalogueView:
    metrics = tuple(_metric_view(m, markdown=markdown) for m in catalogue.metrics)
    by_key = {m.key: view for m, view in zip(catalogue.metrics, metrics, strict=True)}
    sections = tuple(
        MetricSectionView(
            title=_md(s.title) if markdown else s.title,
            description=_md(s.description) if markdown else s.description,
            metrics=tuple(by_key[m.key] for m in catalogue.metrics if m.section == s.key),
        )
        for s in catalogue.sections
    )
    boundaries: tuple[tuple[str, tuple[str, ...]], ...]
    if markdown:
        boundaries = tuple(
            (n, (", ".join(f"{v:g}" for v in vs),)) for n, vs in catalogue.boundaries
        )
    else:
        boundaries = tuple((n, tuple(f"{v!r}," for v in vs)) for n, vs in catalogue.boundaries)
    return CatalogueView(
        header=header(schema, command, comment="<!--" if markdown else "#"),
        module_doc=docstring(
            "The metric catalogue of nemo.lens: every instrument its recorders create.", 0
        ),
        exports=ruff_sorted({"INSTRUMENTS", *(m.constant for m in metrics)}),
        boundaries=boundaries,
        sections=sections,
        metrics=metrics,
    )


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def module_path(out_root: Path, module: str) -> Path:
    return out_root.joinpath(*module.split(".")).with_suffix(".py")


def render_all(schema: Schema, out_root: Path, docs: Path | None, command: str) -> dict[Path, str]:
    """Every generated file of *schema*: path -> exact content.

    *command* is what the headers tell a reader to run to regenerate them.
    """
    env = _environment()
    files: dict[Path, str] = {}
    classes = [] if schema.extends_base else [schema.base]
    classes += list(schema.consumers)
    every = tuple(pystr(n) for n in sorted({g.name for c in classes for g in c.all_groups}))
    for cls in classes:
        template = env.get_template("base.py.j2" if cls.base is None else "consumer.py.j2")
        view = class_view(schema, cls, command, every if cls.base is None else ())
        files[module_path(out_root, cls.module)] = template.render(view=view)
    if not schema.extends_base:
        files[module_path(out_root, SIGNATURES_MODULE)] = env.get_template(
            "signatures.py.j2"
        ).render(view=signatures_view(schema, classes, command))
    if schema.catalogue is not None:
        files[module_path(out_root, METRICS_MODULE)] = env.get_template("metrics.py.j2").render(
            view=catalogue_view(schema, schema.catalogue, command)
        )
        if docs is not None:
            table = catalogue_view(schema, schema.catalogue, command, markdown=True)
            files[docs.with_name("metrics.md")] = env.get_template("metrics.md.j2").render(
                header=table.header,
                sections=table.sections,
                boundaries=[(name, values[0]) for name, values in table.boundaries],
                command=command,
            )
    if docs is not None:
        tiers = tuple((tier, meaning) for tier, meaning in TIER_MEANING.items())
        files[docs] = env.get_template("span-groups.md.j2").render(
            header=header(schema, command, comment="<!--"),
            classes=[docs_class(c) for c in classes],
            tiers=tiers,
            command=command,
        )
    return files
