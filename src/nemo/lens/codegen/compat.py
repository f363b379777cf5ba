"""Compatibility of a schema against a baseline: every change from OLD to NEW, classified.

:func:`compare` pairs the classes of two :class:`~nemo.lens.codegen.compat_model.Side`\\ s
(the base class, and consumers of the same key) and returns a
:class:`~nemo.lens.codegen.compat_model.Finding` for every change that users of OLD could
notice: ``breaking`` (a name they use is gone, or production loses spans), ``warning``
(more spans, or goodput figures that move) or ``compatible`` (additions, deprecations).
The rules live by subject: groups in :mod:`~nemo.lens.codegen.compat_groups`, presets and
consumers in :mod:`~nemo.lens.codegen.compat_presets`. docs/schema-compatibility.md
explains each kind of finding and its fix.
"""

from __future__ import annotations

from collections.abc import Sequence

from nemo.lens.codegen.compat_groups import group_findings
from nemo.lens.codegen.compat_model import BREAKING, SEVERITIES, Finding, Pair, Side
from nemo.lens.codegen.compat_presets import consumer_findings, preset_findings

__all__ = ["breaks", "compare", "counts"]


def compare(old: Side, new: Side) -> tuple[Finding, ...]:
    """Every change from *old* to *new*, most serious first, in a fixed order."""
    findings = list(consumer_findings(old, new))
    pairs = [Pair(old, new, old.schema.base, new.schema.base)]
    new_consumers = new.consumers
    for key, cls in sorted(old.consumers.items()):
        if key in new_consumers:
            pairs.append(Pair(old, new, cls, new_consumers[key]))
    for pair in pairs:
        findings += group_findings(pair)
        findings += preset_findings(pair)
    return tuple(sorted(findings, key=lambda f: f.sort_key))


def counts(findings: Sequence[Finding]) -> dict[str, int]:
    """How many findings of each severity, every severity listed."""
    return {s: sum(1 for f in findings if f.severity == s) for s in SEVERITIES}


def breaks(findings: Sequence[Finding]) -> bool:
    """Whether any finding breaks users of the old schema."""
    return any(f.severity == BREAKING for f in findings)
