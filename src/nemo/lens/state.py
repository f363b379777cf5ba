"""The process-wide set of enabled span groups (public names; the state is in ``_core``).

Also the spec resolved through ``SpanRegistry`` (upstream's next API), the span-group classes
whose categories tag spans, and 0.1.0's pipeline-parallel trace carrier.
"""

from __future__ import annotations

from nemo.lens._core.state import (
    enabled_span_groups,
    get_pp_trace_carrier,
    group_tags,
    is_span_group_enabled,
    pending_span_groups,
    refresh_enabled_span_groups,
    set_enabled_span_groups,
    set_pp_trace_carrier,
    set_span_group_classes,
    set_span_group_spec,
    span_group_classes,
)
from nemo.lens._names import rehome

__all__ = [
    "enabled_span_groups",
    "get_pp_trace_carrier",
    "group_tags",
    "is_span_group_enabled",
    "pending_span_groups",
    "refresh_enabled_span_groups",
    "set_enabled_span_groups",
    "set_pp_trace_carrier",
    "set_span_group_classes",
    "set_span_group_spec",
    "span_group_classes",
]

rehome(globals(), __all__)
