"""View models of the metric catalogue: the generated module and `docs/metrics.md`."""

from __future__ import annotations

from dataclasses import dataclass

from nemo.lens.codegen.model import Catalogue, Metric, Schema
from nemo.lens.codegen.text import docstring, header, markdown_text, pystr, pystr_block, ruff_sorted


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
    esc = markdown_text if markdown else (lambda s: s)
    return MetricView(
        constant=metric.constant,
        literal=pystr(metric.name),
        doc=docstring(text, 0),
        kind=pystr(metric.kind) if not markdown else metric.kind.replace("_", "-"),
        unit=pystr(metric.unit) if not markdown else (f"`{metric.unit}`" if metric.unit else ""),
        description=(
            pystr_block(metric.description, 8, 0) if not markdown else esc(metric.description)
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
            title=markdown_text(s.title) if markdown else s.title,
            description=markdown_text(s.description) if markdown else s.description,
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
