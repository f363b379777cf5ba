"""Shape the validated schema into view models and render the templates.

Templates receive ready-made strings (Python literals already quoted, docstrings
already wrapped, member expressions already qualified), so they hold nothing but
loops and ifs. Output is deterministic: everything is sorted, nothing depends on
time, paths or the order of keys in the TOML file, and the templates are written
to be stable under ``ruff format``.
"""

from __future__ import annotations

from pathlib import Path

import jinja2

from nemo.lens.codegen.attribute_views import names_view
from nemo.lens.codegen.class_views import class_view, signatures_view
from nemo.lens.codegen.docs_views import docs_class
from nemo.lens.codegen.metric_views import catalogue_view
from nemo.lens.codegen.model import (
    ATTRIBUTES_MODULE,
    METRICS_MODULE,
    RESOURCE_MODULE,
    SIGNATURES_MODULE,
    TIER_MEANING,
    Schema,
)
from nemo.lens.codegen.text import header, pystr, region_note

TEMPLATES = Path(__file__).resolve().parent / "templates"


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


def render_all(
    schema: Schema, out_root: Path, docs: Path | None, command: str, *, docs_region: bool = False
) -> dict[Path, str]:
    """Every generated file of *schema*: path -> exact content.

    *command* is what the headers tell a reader to run to regenerate them. With
    *docs_region*, what *docs* maps to is the region of a page the author keeps (see
    :mod:`~nemo.lens.codegen.docs_region`): no page header or title, a note instead.
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
    if schema.names is not None:
        names = env.get_template("attributes.py.j2")
        for resource, module in ((False, ATTRIBUTES_MODULE), (True, RESOURCE_MODULE)):
            files[module_path(out_root, module)] = names.render(
                view=names_view(schema, schema.names, command, resource=resource)
            )
        if docs is not None:
            page = names_view(schema, schema.names, command, resource=None)
            files[docs.with_name("attributes.md")] = env.get_template("attributes.md.j2").render(
                header=page.header, sections=page.sections, command=command
            )
    if docs is not None:
        tiers = tuple((tier, meaning) for tier, meaning in TIER_MEANING.items())
        files[docs] = env.get_template("span-groups.md.j2").render(
            header=region_note(schema, command)
            if docs_region
            else header(schema, command, comment="<!--"),
            region=docs_region,
            classes=[docs_class(c) for c in classes],
            tiers=tiers,
            command=command,
        )
    return files
