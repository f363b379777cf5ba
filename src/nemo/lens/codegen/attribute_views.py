"""View models of the attribute-name catalogue: the two generated modules and `docs/attributes.md`.

The resource sections become :data:`~nemo.lens.codegen.model.RESOURCE_MODULE`, the others
:data:`~nemo.lens.codegen.model.ATTRIBUTES_MODULE`; the page shows every section.
"""

from __future__ import annotations

from dataclasses import dataclass

from nemo.lens.codegen.model import (
    ATTRIBUTES_MODULE,
    RESOURCE_MODULE,
    Name,
    NameCatalogue,
    NameSection,
    Schema,
)
from nemo.lens.codegen.text import docstring, header, markdown_text, pystr, ruff_sorted

_MODULE_DOCS = {
    False: "The names nemo.lens emits and reads, other than the resource's and the metrics': "
    "span and log attributes, metric attributes and fixed values, and upstream's names.",
    True: "The resource attributes nemo.lens sets on every signal, and what each one holds.",
}


@dataclass(frozen=True)
class NameView:
    constant: str
    literal: str
    doc: str
    value: str
    type: str
    upstream: str
    description: str


@dataclass(frozen=True)
class NameSectionView:
    title: str
    description: str
    module: str
    names: tuple[NameView, ...]


@dataclass(frozen=True)
class NamesView:
    header: str
    module_doc: str
    exports: tuple[str, ...]
    sections: tuple[NameSectionView, ...]


def _notes(name: Name, by_key: dict[str, Name], *, markdown: bool) -> str:
    """What the entry's fields say, as sentences after its description (on the page, the
    type and upstream have columns of their own)."""
    notes = []
    if name.kind == "value":
        notes.append(f"A value of `{by_key[name.of].value}`.")
    if name.alias_of:
        notes.append(f"The same value as `{by_key[name.alias_of].constant}`.")
    if markdown:
        return " ".join(notes)
    if name.type:
        notes.append(f"Type: `{name.type}`.")
    if name.upstream:
        notes.append(f"Upstream nemo.lens {name.upstream} defines this constant with this value.")
    if name.upstream_resource:
        notes.append(f"Upstream nemo.lens {name.upstream_resource} sends this key too.")
    return " ".join(notes)


def _upstream(name: Name) -> str:
    found = []
    if name.upstream:
        found.append(f"constant ({name.upstream})")
    if name.upstream_resource:
        found.append(f"resource ({name.upstream_resource})")
    return ", ".join(found)


def _name_view(name: Name, by_key: dict[str, Name], *, markdown: bool) -> NameView:
    notes = _notes(name, by_key, markdown=markdown)
    text = f"{name.description.rstrip('.')}." + (f" {notes}" if notes else "")
    return NameView(
        constant=name.constant,
        literal=pystr(name.value),
        doc=docstring(text, 0),
        value=f"`{name.value}`" if markdown else name.value,
        type=name.type,
        upstream=_upstream(name),
        description=markdown_text(text) if markdown else text,
    )


def _section_view(
    section: NameSection, catalogue: NameCatalogue, by_key: dict[str, Name], *, markdown: bool
) -> NameSectionView:
    return NameSectionView(
        title=markdown_text(section.title) if markdown else section.title,
        description=markdown_text(section.description) if markdown else section.description,
        module=RESOURCE_MODULE if section.resource else ATTRIBUTES_MODULE,
        names=tuple(
            _name_view(n, by_key, markdown=markdown)
            for n in catalogue.names
            if n.section == section.key
        ),
    )


def names_view(
    schema: Schema,
    catalogue: NameCatalogue,
    command: str,
    *,
    resource: bool | None,
) -> NamesView:
    """The resource module's view (*resource* true), the other module's (false), or the
    docs page's, every section (``None``)."""
    markdown = resource is None
    by_key = {n.key: n for n in catalogue.names}
    sections = catalogue.sections if markdown else catalogue.in_module(bool(resource))
    views = tuple(_section_view(s, catalogue, by_key, markdown=markdown) for s in sections)
    return NamesView(
        header=header(schema, command, comment="<!--" if markdown else "#"),
        module_doc=docstring(_MODULE_DOCS[bool(resource)], 0),
        exports=ruff_sorted({n.constant for s in views for n in s.names}),
        sections=views,
    )
