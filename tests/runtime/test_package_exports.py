"""The top-level package exports the SPEC's public surface, lazily and consistently."""

from __future__ import annotations

import pytest

import nemo.lens

# SPEC §5: what `nemo.lens` exports at least.
SPEC_EXPORTS = {
    "NemoLensConfig",
    "SpanGroup",
    "TelemetryHandle",
    "setup_telemetry",
    "managed_span",
    "trace_fn",
    "span_cm",
    "safe_set_span_attributes",
    "redact_value",
    "DEFAULT_REDACT_KEYS",
    "is_span_group_enabled",
    "set_enabled_span_groups",
    "inject_context",
    "extract_context",
    "get_tracer",
    "get_meter",
    "broadcast_trace_context",
    "create_linked_span",
    "ExportStrategy",
    "register_export_strategy",
    "unregister_export_strategy",
    "registered_strategies",
    "__version__",
}


def test_all_lists_the_spec_surface_and_matches_the_lazy_table() -> None:
    assert SPEC_EXPORTS <= set(nemo.lens.__all__)
    # __all__ is spelled out for linters; it must not drift from what __getattr__ serves.
    assert set(nemo.lens.__all__) - {"__version__"} == set(nemo.lens._EXPORTS)


def test_every_exported_name_resolves() -> None:
    for name in nemo.lens.__all__:
        assert getattr(nemo.lens, name) is not None, name


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        nemo.lens.no_such_name  # noqa: B018  (the access is the test)


def test_the_facade_serves_the_very_objects_of_their_home_modules() -> None:
    # What the façade added in 0.2: one import for the trace continuation and the
    # metric recorders, the same objects the submodules define (not wrappers).
    from nemo.lens import instruments, propagation

    assert nemo.lens.continue_trace is propagation.continue_trace
    for recorder in (
        "record_inference_metrics",
        "record_rl_step_metrics",
        "record_gym_rollout_metrics",
    ):
        assert getattr(nemo.lens, recorder) is getattr(instruments, recorder), recorder
