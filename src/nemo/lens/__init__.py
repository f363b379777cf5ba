"""nemo.lens: OpenTelemetry instrumentation for distributed training, RL and inference jobs.

This package only re-exports, lazily (PEP 562): ``import nemo.lens.fallbacks`` works with no
OpenTelemetry package installed, and ``import nemo.lens`` never imports the SDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Written once, in _version (which imports nothing).
from nemo.lens._version import __version__

_EXPORTS: dict[str, str] = {
    "SpanGroup": "nemo.lens.groups",
    "NemoLensConfig": "nemo.lens.config",
    "TelemetryHandle": "nemo.lens.handle",
    "setup_telemetry": "nemo.lens.handle",
    "get_tracer": "nemo.lens.handle",
    "get_meter": "nemo.lens.handle",
    "is_telemetry_initialized": "nemo.lens.handle",
    "encode_resource_attributes": "nemo.lens.resources",
    "managed_span": "nemo.lens.helpers",
    "trace_fn": "nemo.lens.helpers",
    "span_cm": "nemo.lens.helpers",
    "emit_span": "nemo.lens.span_utilities",
    "safe_set_span_attributes": "nemo.lens.helpers",
    "redact_value": "nemo.lens.helpers",
    "DEFAULT_REDACT_KEYS": "nemo.lens.helpers",
    "is_span_group_enabled": "nemo.lens.state",
    "set_enabled_span_groups": "nemo.lens.state",
    "inject_context": "nemo.lens.propagation",
    "extract_context": "nemo.lens.propagation",
    "create_linked_span": "nemo.lens.propagation",
    "continue_trace": "nemo.lens.propagation",
    "broadcast_trace_context": "nemo.lens.distributed",
    "ExportStrategy": "nemo.lens.strategies",
    "register_export_strategy": "nemo.lens.strategies",
    "unregister_export_strategy": "nemo.lens.strategies",
    "registered_strategies": "nemo.lens.strategies",
    "record_inference_metrics": "nemo.lens.instruments",
    "record_rl_step_metrics": "nemo.lens.instruments",
    "record_gym_rollout_metrics": "nemo.lens.instruments",
    # Upstream v0.2.0's package metadata (the version is imported above).
    "__package_name__": "nemo.lens.package_info",
    "__contact_names__": "nemo.lens.package_info",
    "__contact_emails__": "nemo.lens.package_info",
    "__homepage__": "nemo.lens.package_info",
    "__repository_url__": "nemo.lens.package_info",
    "__download_url__": "nemo.lens.package_info",
}

# Spelled out (not derived from _EXPORTS) so linters and IDEs can read it.
__all__ = [
    "DEFAULT_REDACT_KEYS",
    "ExportStrategy",
    "NemoLensConfig",
    "SpanGroup",
    "TelemetryHandle",
    "__contact_emails__",
    "__contact_names__",
    "__download_url__",
    "__homepage__",
    "__package_name__",
    "__repository_url__",
    "__version__",
    "broadcast_trace_context",
    "continue_trace",
    "create_linked_span",
    "emit_span",
    "encode_resource_attributes",
    "extract_context",
    "get_meter",
    "get_tracer",
    "inject_context",
    "is_span_group_enabled",
    "is_telemetry_initialized",
    "managed_span",
    "record_gym_rollout_metrics",
    "record_inference_metrics",
    "record_rl_step_metrics",
    "redact_value",
    "register_export_strategy",
    "registered_strategies",
    "safe_set_span_attributes",
    "set_enabled_span_groups",
    "setup_telemetry",
    "span_cm",
    "trace_fn",
    "unregister_export_strategy",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'nemo.lens' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


if TYPE_CHECKING:
    from nemo.lens.config import NemoLensConfig
    from nemo.lens.distributed import broadcast_trace_context
    from nemo.lens.groups import SpanGroup
    from nemo.lens.handle import (
        TelemetryHandle,
        get_meter,
        get_tracer,
        is_telemetry_initialized,
        setup_telemetry,
    )
    from nemo.lens.helpers import (
        DEFAULT_REDACT_KEYS,
        managed_span,
        redact_value,
        safe_set_span_attributes,
        span_cm,
        trace_fn,
    )
    from nemo.lens.instruments import (
        record_gym_rollout_metrics,
        record_inference_metrics,
        record_rl_step_metrics,
    )
    from nemo.lens.package_info import (
        __contact_emails__,
        __contact_names__,
        __download_url__,
        __homepage__,
        __package_name__,
        __repository_url__,
    )
    from nemo.lens.propagation import (
        continue_trace,
        create_linked_span,
        extract_context,
        inject_context,
    )
    from nemo.lens.resources import encode_resource_attributes
    from nemo.lens.span_utilities import emit_span
    from nemo.lens.state import is_span_group_enabled, set_enabled_span_groups
    from nemo.lens.strategies import (
        ExportStrategy,
        register_export_strategy,
        registered_strategies,
        unregister_export_strategy,
    )
