"""The process-wide set of enabled span groups (public names; the state is in ``_core``).

Set-up resolves the job owner's spec string once into a ``frozenset``; every
instrumentation site then asks only whether its group is in it. Before set-up the
set is empty: every group is disabled and instrumented code does no
OpenTelemetry work at all. :func:`set_enabled_span_groups` replaces it (tests,
run-time overrides); :func:`set_span_group_classes` says which classes' categories
tag spans. Also here: the pipeline-parallel trace carrier of 0.1.0.
"""

from __future__ import annotations

from nemo.lens._core.state import (
    enabled_span_groups,
    get_pp_trace_carrier,
    group_tags,
    is_span_group_enabled,
    set_enabled_span_groups,
    set_pp_trace_carrier,
    set_span_group_classes,
    span_group_classes,
)
from nemo.lens._names import rehome

__all__ = [
    "enabled_span_groups",
    "get_pp_trace_carrier",
    "group_tags",
    "is_span_group_enabled",
    "set_enabled_span_groups",
    "set_pp_trace_carrier",
    "set_span_group_classes",
    "span_group_classes",
]

rehome(globals(), __all__)
