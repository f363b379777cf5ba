"""Per-call costs, each timed against its baseline in this process (see :mod:`bench.harness`).

Three phases, run in this order because each changes process-wide state:

``disabled``
    Before any set-up: every group is off, as in a job that did not enable
    telemetry. Disabled ``managed_span`` against ``with nullcontext(): pass``;
    a disabled ``trace_fn`` call against the undecorated function.
``gating``
    The ``default`` preset enabled (``step`` stays off, the common case in
    production): ``is_span_group_enabled(g)`` against a function that tests
    ``g in <module-level frozenset>`` holding the same groups.
``enabled``
    ``setup_telemetry`` with every group on and an in-memory exporter (so a
    ``SimpleSpanProcessor``, exactly what set-up builds for it). The baseline is
    OpenTelemetry's ``tracer.start_as_current_span`` on the held tracer of the
    same provider. Each baseline starts the span its candidate starts -- same
    name, same attributes, including the ``lens.group`` and ``lens.span_category`` attributes the
    gated primitives add -- and :func:`_check_same_spans` verifies that before
    timing, so a ratio is the cost of nemo.lens's own work and nothing else.
    Informational rows: the issue's literal one-attribute baseline, a held
    tracer passed in, and the span encoder of the ``file`` and ``console``
    exporters against ``json.dumps`` of :func:`span_to_dict`'s dict (the
    straightforward encoding it replaces, byte-identical output).

``recording``
    ``setup_telemetry`` with the ``file`` exporter (writing to a temporary
    directory) and every group on: nemo.lens builds the pipeline itself, so the
    primitives record their spans the light way and the export thread builds,
    encodes and writes them (:mod:`nemo.lens._sdk.recording`). The baseline is
    what an application using the SDK directly pays: ``start_as_current_span``
    with the same attributes on a tracer of its own ``TracerProvider`` with a
    ``BatchSpanProcessor`` (its export thread discards the spans; its queue is
    large enough never to drop, which would log a warning per span). Only the
    emitting thread's CPU time counts, on both sides; between samples both
    pipelines are flushed, outside the timing. :func:`_check_recorded_spans`
    verifies, from the line written to the file, that each candidate makes the
    span its baseline makes.

``otlp``
    In the same set-up: the export thread's work for OpenTelemetry's OTLP
    exporter, a batch of 64 spans cleaned as nemo.lens's exporter wrapper hands
    them over and encoded with the OTLP encoder. The candidate is a batch of
    recorded spans (handed over as they are); the baseline, the same spans
    made by the SDK on a ``TracerProvider`` of the application's own with the
    same resource attributes (a plain ``Resource``). Informational: the issue
    asks that the OTLP encoder gain, not for a figure.

Statements are written as an instrumented module writes them
(``SpanGroup.STEP`` looked up at each call, keyword attributes).
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from bench.harness import Comparison, compare, compile_runner
from bench.throughput import file_config

__all__ = ["MicroCase", "MicroResult", "Timing", "run_micro"]

Phase = Literal["disabled", "gating", "enabled", "recording", "otlp"]


@dataclass(frozen=True)
class MicroCase:
    """One candidate statement and the baseline statement it is compared with."""

    key: str
    title: str
    candidate: str
    baseline_title: str
    baseline: str
    phase: Phase
    informational: bool = False


@dataclass(frozen=True)
class Timing:
    """How long and how often to sample each phase."""

    pairs: int
    sample_s: float


@dataclass(frozen=True)
class MicroResult:
    """A case and its comparison."""

    case: MicroCase
    comparison: Comparison

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "key": self.case.key,
            "title": self.case.title,
            "candidate": self.case.candidate,
            "baseline_title": self.case.baseline_title,
            "baseline": self.case.baseline,
            "phase": self.case.phase,
            "informational": self.case.informational,
            **self.comparison.as_dict(),
        }


def work(x: int) -> int:
    """The function the ``trace_fn`` cases decorate: as cheap as a call can be."""
    return x


def _frozenset_test(groups: frozenset[str]) -> Callable[[str], bool]:
    """``def contains(group): return group in ENABLED``, ``ENABLED`` a module-level global.

    Compiled into a namespace of its own so that the set is read as a global,
    as in the issue's baseline (and as nemo.lens.state keeps its set).
    """
    scope: dict[str, Any] = {"ENABLED": groups}
    exec("def contains(group):\n    return group in ENABLED\n", scope)
    return cast(Callable[[str], bool], scope["contains"])


def _cases(enabled_attributes: Mapping[str, str]) -> list[MicroCase]:
    # The attributes the gated primitives add on their own (the span group), as
    # literal dict entries: what a hand-written OpenTelemetry call would spell out.
    extra = "".join(f", {key!r}: {value!r}" for key, value in enabled_attributes.items())
    extra_only = "{" + extra.removeprefix(", ") + "}"
    return [
        MicroCase(
            "disabled_managed_span",
            "disabled managed_span with-block",
            "with managed_span(SpanGroup.STEP, 'bench.span'): pass",
            "with nullcontext(): pass",
            "with nullcontext(): pass",
            "disabled",
        ),
        MicroCase(
            "disabled_managed_span_attribute",
            "disabled managed_span, one attribute",
            "with managed_span(SpanGroup.STEP, 'bench.span', iteration=1): pass",
            "with nullcontext(): pass",
            "with nullcontext(): pass",
            "disabled",
            informational=True,
        ),
        MicroCase(
            "disabled_trace_fn",
            "disabled trace_fn-decorated call",
            "traced_work(1)",
            "the undecorated function",
            "work(1)",
            "disabled",
        ),
        MicroCase(
            "is_span_group_enabled",
            "is_span_group_enabled(g)",
            "is_span_group_enabled(GROUP)",
            "g in frozenset, in a function",
            "contains(GROUP)",
            "gating",
        ),
        MicroCase(
            "enabled_managed_span",
            "enabled managed_span, tracer=None, 1 attribute",
            "with managed_span(SpanGroup.STEP, 'bench.span', iteration=1): pass",
            "start_as_current_span, same span",
            f"with tracer.start_as_current_span('bench.span', "
            f"attributes={{'iteration': 1{extra}}}): pass",
            "enabled",
        ),
        MicroCase(
            "enabled_trace_fn",
            "enabled trace_fn call, tracer=None",
            "traced_work(1)",
            "start_as_current_span + call, same span",
            f"with tracer.start_as_current_span('bench.work', attributes={extra_only}): work(1)",
            "enabled",
        ),
        MicroCase(
            "enabled_span_cm",
            "enabled span_cm, tracer=None, 1 attribute",
            "with span_cm('bench.span', iteration=1): pass",
            "start_as_current_span, same span",
            "with tracer.start_as_current_span('bench.span', attributes={'iteration': 1}): pass",
            "enabled",
        ),
        MicroCase(
            "enabled_managed_span_literal",
            "enabled managed_span, tracer=None, 1 attribute",
            "with managed_span(SpanGroup.STEP, 'bench.span', iteration=1): pass",
            "start_as_current_span, 1 attribute",
            "with tracer.start_as_current_span('bench.span', attributes={'iteration': 1}): pass",
            "enabled",
            informational=True,
        ),
        MicroCase(
            "encode_span",
            "file/console exporter: encode_span(span)",
            "encode_span(SPAN)",
            "json.dumps(span_to_dict(span))",
            "dumps(span_to_dict(SPAN), separators=(',', ':'), ensure_ascii=False, allow_nan=False)",
            "enabled",
            informational=True,
        ),
        MicroCase(
            "recording_managed_span",
            "enabled managed_span, file exporter, 1 attribute",
            "with managed_span(SpanGroup.STEP, 'bench.span', iteration=1): pass",
            "SDK start_as_current_span + BatchSpanProcessor",
            f"with sdk_tracer.start_as_current_span('bench.span', "
            f"attributes={{'iteration': 1{extra}}}): pass",
            "recording",
        ),
        MicroCase(
            "recording_trace_fn",
            "enabled trace_fn call, file exporter",
            "traced_work(1)",
            "SDK start_as_current_span + BatchSpanProcessor + call",
            f"with sdk_tracer.start_as_current_span('bench.work', attributes={extra_only}): "
            "work(1)",
            "recording",
        ),
        MicroCase(
            "recording_span_cm",
            "enabled span_cm, file exporter, 1 attribute",
            "with span_cm('bench.span', iteration=1): pass",
            "SDK start_as_current_span + BatchSpanProcessor",
            "with sdk_tracer.start_as_current_span('bench.span', attributes={'iteration': 1}): "
            "pass",
            "recording",
        ),
        MicroCase(
            "otlp_encode_batch",
            "OTLP export thread: 64 recorded spans, handed over and encoded",
            "otlp_encode(RECORDED)",
            "64 SDK spans, plain Resource",
            "otlp_encode(SDK_SPANS)",
            "otlp",
            informational=True,
        ),
        MicroCase(
            "enabled_managed_span_held_tracer",
            "enabled managed_span, held tracer, 1 attribute",
            "with managed_span(SpanGroup.STEP, 'bench.span', tracer, iteration=1): pass",
            "start_as_current_span, same span",
            f"with tracer.start_as_current_span('bench.span', "
            f"attributes={{'iteration': 1{extra}}}): pass",
            "enabled",
            informational=True,
        ),
    ]


def _run_phase(
    cases: list[MicroCase],
    phase: Phase,
    namespace: Mapping[str, object],
    timing: Timing,
    between: Callable[[], None] | None,
    progress: Callable[[str], None],
) -> list[MicroResult]:
    results = []
    for case in cases:
        if case.phase != phase:
            continue
        progress(f"micro: {case.key}")
        candidate = compile_runner(case.candidate, namespace, name=f"{case.key} candidate")
        baseline = compile_runner(case.baseline, namespace, name=f"{case.key} baseline")
        comparison = compare(
            candidate,
            baseline,
            pairs=timing.pairs,
            sample_s=timing.sample_s,
            between=between,
            collect_garbage=between is not None,
        )
        results.append(MicroResult(case, comparison))
    return results


# Rows whose baseline deliberately differs: the literal baseline, and
# the encoder row, which starts no span at all.
_NOT_SAME_SPAN = frozenset({"enabled_managed_span_literal", "encode_span"})


def _span_signature(span: Any) -> tuple[object, ...]:
    return (span.name, span.kind, dict(span.attributes or {}), span.parent is None)


def _check_same_spans(
    cases: list[MicroCase], namespace: Mapping[str, object], exporter: Any
) -> None:
    """Fail unless each enabled baseline starts the same span as its candidate."""
    for case in cases:
        if case.phase != "enabled" or case.key in _NOT_SAME_SPAN:
            continue
        spans = []
        for statement in (case.candidate, case.baseline):
            exporter.clear()
            compile_runner(statement, namespace, name=case.key, unroll=1)(1)
            (span,) = exporter.get_finished_spans()
            spans.append(_span_signature(span))
        if spans[0] != spans[1]:
            raise RuntimeError(f"{case.key}: baseline span {spans[1]} differs from {spans[0]}")
    exporter.clear()


class _Discard:
    """A span exporter that keeps nothing: the baseline's export thread costs next to nothing."""

    def export(self, spans: Any) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        """Nothing to release."""

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Nothing buffered."""
        return True


def _last_line(path: Path) -> dict[str, Any]:
    lines = path.read_text(encoding="utf-8").splitlines()
    line: dict[str, Any] = json.loads(lines[-1])
    return line


def _check_recorded_spans(
    cases: list[MicroCase], namespace: Mapping[str, object], flush: Callable[[], None], path: Path
) -> None:
    """Fail unless each recording candidate writes the span its baseline starts."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    probe_provider = TracerProvider()
    probe_provider.add_span_processor(SimpleSpanProcessor(memory))
    probe = dict(namespace)
    probe["sdk_tracer"] = probe_provider.get_tracer("bench")
    for case in cases:
        if case.phase != "recording":
            continue
        compile_runner(case.candidate, namespace, name=case.key, unroll=1)(1)
        flush()
        line = _last_line(path)
        written = (line["name"], line["kind"], line["attributes"], line["parent_span_id"] is None)
        memory.clear()
        compile_runner(case.baseline, probe, name=case.key, unroll=1)(1)
        (span,) = memory.get_finished_spans()
        expected = (span.name, span.kind.name, dict(span.attributes or {}), span.parent is None)
        if written != expected:
            raise RuntimeError(f"{case.key}: baseline span {expected} differs from {written}")
    probe_provider.shutdown()


_OTLP_BATCH = 64


def _otlp_namespace(namespace: dict[str, object]) -> None:
    """``RECORDED`` and ``SDK_SPANS``: the same spans recorded by nemo.lens's set-up and
    made by the SDK on a provider with the same resource attributes; ``otlp_encode``."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from nemo.lens import managed_span
    from nemo.lens._core import state
    from nemo.lens._sdk.exporters.guard import SpanGuard
    from nemo.lens._sdk.exporters.health import ExportHealth
    from nemo.lens.groups import SpanGroup

    recorder: Any = state.recorder
    recorded: list[Any] = []
    sink, recorder.sink = recorder.sink, recorded.append
    try:
        for iteration in range(_OTLP_BATCH):
            with managed_span(SpanGroup.STEP, "bench.span", iteration=iteration):
                pass
    finally:
        recorder.sink = sink
    memory = InMemorySpanExporter()
    resource = recorded[0].resource
    provider = TracerProvider(resource=Resource(resource.attributes, resource.schema_url))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    scope = recorded[0].instrumentation_scope
    tracer = provider.get_tracer(scope.name, scope.version, scope.schema_url)
    for span in recorded:
        with tracer.start_as_current_span(span.name, attributes=span.attributes):
            pass
    provider.shutdown()
    guard = SpanGuard(OTLPSpanExporter(), ExportHealth())

    def otlp_encode(spans: list[Any]) -> bytes:
        encoded: bytes = encode_spans(guard.cleaned(spans, {})).SerializeToString()
        return encoded

    sdk_spans = list(memory.get_finished_spans())
    if len(otlp_encode(recorded)) != len(otlp_encode(sdk_spans)):
        raise RuntimeError("otlp_encode_batch: the recorded and SDK batches encode differently")
    namespace.update(RECORDED=recorded, SDK_SPANS=sdk_spans, otlp_encode=otlp_encode)


def _run_recording(
    cases: list[MicroCase],
    namespace: dict[str, object],
    timing: Timing,
    progress: Callable[[str], None],
) -> list[MicroResult]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from nemo.lens import setup_telemetry, testing

    with tempfile.TemporaryDirectory(prefix="nemo-lens-bench-") as directory:
        path = Path(directory) / "spans.jsonl"
        handle = setup_telemetry(file_config(path))
        provider = TracerProvider()
        processor = BatchSpanProcessor(_Discard(), max_queue_size=1 << 20)  # type: ignore[arg-type]
        provider.add_span_processor(processor)
        try:
            namespace["sdk_tracer"] = provider.get_tracer("bench")

            def flush() -> None:
                handle.force_flush(60_000)
                processor.force_flush(60_000)

            _check_recorded_spans(cases, namespace, flush, path)
            results = _run_phase(cases, "recording", namespace, timing, flush, progress)
            _otlp_namespace(namespace)
            return results + _run_phase(cases, "otlp", namespace, timing, None, progress)
        finally:
            handle.shutdown()
            provider.shutdown()
            testing.reset()


def run_micro(
    disabled: Timing, enabled: Timing, progress: Callable[[str], None]
) -> list[MicroResult]:
    """Run every micro case; leaves nemo.lens reset (no set-up, every group off)."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from nemo.lens import (
        NemoLensConfig,
        is_span_group_enabled,
        managed_span,
        set_enabled_span_groups,
        setup_telemetry,
        span_cm,
        testing,
        trace_fn,
    )
    from nemo.lens._sdk.exporters.encoding import encode_span, span_to_dict
    from nemo.lens.groups import SpanGroup

    testing.reset()
    default_groups = frozenset(SpanGroup.resolve("default"))
    namespace: dict[str, object] = {
        "SpanGroup": SpanGroup,
        "GROUP": SpanGroup.STEP,
        "managed_span": managed_span,
        "span_cm": span_cm,
        "is_span_group_enabled": is_span_group_enabled,
        "nullcontext": contextlib.nullcontext,
        "work": work,
        "traced_work": trace_fn(SpanGroup.STEP, "bench.work")(work),
        "contains": _frozenset_test(default_groups),
        "encode_span": encode_span,
        "span_to_dict": span_to_dict,
        "dumps": json.dumps,
    }

    exporter = InMemorySpanExporter()
    config = NemoLensConfig(
        enabled=True, span_groups="all", exporter="none", metrics_enabled=False, run_id="bench"
    )
    # Set up once to learn which attributes the gated primitives add, so the
    # baselines can spell them out; then back to the disabled state.
    handle = setup_telemetry(config, span_exporter=exporter)
    with managed_span(SpanGroup.STEP, "probe"):
        pass
    (probe,) = exporter.get_finished_spans()
    added = {str(k): str(v) for k, v in (probe.attributes or {}).items()}
    handle.shutdown()
    testing.reset()
    cases = _cases(added)

    results = _run_phase(cases, "disabled", namespace, disabled, None, progress)

    set_enabled_span_groups(default_groups)
    results += _run_phase(cases, "gating", namespace, disabled, None, progress)
    testing.reset()

    exporter = InMemorySpanExporter()
    handle = setup_telemetry(config, span_exporter=exporter)
    try:
        namespace["tracer"] = handle.tracer
        _check_same_spans(cases, namespace, exporter)
        with managed_span(SpanGroup.STEP, "train.step", iteration=1, loss=0.25):
            pass
        (namespace["SPAN"],) = exporter.get_finished_spans()
        exporter.clear()
        results += _run_phase(cases, "enabled", namespace, enabled, exporter.clear, progress)
    finally:
        handle.shutdown()
        testing.reset()
    results += _run_recording(cases, namespace, enabled, progress)
    return results
