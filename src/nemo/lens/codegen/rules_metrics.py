"""The rules of the metric catalogue: named boundaries, doc sections and instruments."""

from __future__ import annotations

import itertools
import re

from nemo.lens.codegen.checker import Checker, format_path
from nemo.lens.codegen.locate import KeyPath
from nemo.lens.codegen.model import (
    METRIC_KINDS,
    Catalogue,
    Metric,
    MetricSection,
)

__all__ = ["read_metrics"]

METRICS_KEYS = ("boundaries", "sections", "instruments")
SECTION_KEYS = ("title", "description")
INSTRUMENT_KEYS = (
    "name",
    "kind",
    "unit",
    "description",
    "section",
    "recorded_by",
    "boundaries",
    "non_negative",
)
METRIC_NAME_RE = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*")


def read_metrics(chk: Checker, raw: object) -> Catalogue | None:
    """The metric catalogue: named histogram boundaries, doc sections and instruments."""
    path: KeyPath = ("metrics",)
    if not chk.expect(raw, dict, path):
        return None
    assert isinstance(raw, dict)
    chk.known_keys(raw, METRICS_KEYS, path)
    boundaries: dict[str, tuple[float, ...]] = {}
    raw_boundaries = raw.get("boundaries", {})
    if chk.expect(raw_boundaries, dict, (*path, "boundaries")):
        for name, values in raw_boundaries.items():
            bpath = (*path, "boundaries", name)
            if not chk.name(name, bpath, "boundaries"):
                continue
            if not chk.expect(values, list, bpath):
                continue
            numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
            if len(numbers) != len(values) or not numbers:
                chk.error(bpath, "boundaries must be a non-empty array of numbers")
            elif any(b <= a for a, b in itertools.pairwise(numbers)):
                chk.error(bpath, "boundaries must increase strictly, from the lowest up")
            else:
                boundaries[name] = tuple(float(v) for v in numbers)
    sections: dict[str, MetricSection] = {}
    raw_sections = raw.get("sections", {})
    if chk.expect(raw_sections, dict, (*path, "sections")):
        spaths = (*path, "sections")
        for key, body, spath in chk.tables(raw_sections, spaths, "section", SECTION_KEYS):
            title = chk.text(body, "title", spath, required=True)
            description = chk.text(body, "description", spath, required=False)
            sections[key] = MetricSection(key, title, description)
    metrics: list[Metric] = []
    names: dict[str, KeyPath] = {}
    raw_instruments = raw.get("instruments", {})
    if chk.expect(raw_instruments, dict, (*path, "instruments")):
        ipaths = (*path, "instruments")
        for key, body, ipath in chk.tables(
            raw_instruments, ipaths, "instrument", INSTRUMENT_KEYS, longest=64
        ):
            name = chk.text(body, "name", ipath, required=True)
            if name and not METRIC_NAME_RE.fullmatch(name):
                chk.error((*ipath, "name"), f"metric name {name!r} is not dotted lowercase")
            elif name in names:
                chk.error(
                    (*ipath, "name"), f"metric {name!r} is already {format_path(names[name])}"
                )
            names.setdefault(name, ipath)
            kind = chk.choice(body, "kind", ipath, METRIC_KINDS, ("kind", "kinds"))
            unit = chk.text(body, "unit", ipath, required=False)
            description = chk.text(body, "description", ipath, required=True)
            section = chk.text(body, "section", ipath, required=True)
            if section and section not in sections:
                chk.unknown((*ipath, "section"), "section", section, sections)
            recorded_by = chk.text(body, "recorded_by", ipath, required=True)
            bounds = chk.text(body, "boundaries", ipath, required=False)
            if kind == "histogram" and not bounds:
                chk.error(ipath, "a histogram names its boundaries (see [metrics.boundaries])")
            elif bounds and kind != "histogram":
                chk.error((*ipath, "boundaries"), "only a histogram has boundaries")
            elif bounds and bounds not in boundaries:
                chk.unknown((*ipath, "boundaries"), "boundaries", bounds, boundaries)
            non_negative = body.get("non_negative", True)
            if not chk.expect(non_negative, bool, (*ipath, "non_negative")):
                non_negative = True
            metrics.append(
                Metric(
                    key, name, kind, unit, description, section, recorded_by, bounds, non_negative
                )
            )
    # Sorted, like everything generated: the order of the TOML file changes nothing.
    return Catalogue(
        boundaries=tuple(sorted(boundaries.items())),
        sections=tuple(sorted(sections.values(), key=lambda s: s.key)),
        metrics=tuple(sorted(metrics, key=lambda m: m.name)),
    )
