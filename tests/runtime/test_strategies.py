"""Export strategies: the built-in rules, the registry, and what set-up does with them."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState

from nemo.lens import is_span_group_enabled, managed_span
from nemo.lens.config import NemoLensConfig
from nemo.lens.groups import SpanGroup
from nemo.lens.handle import TelemetryHandle, setup_telemetry
from nemo.lens.sampling import RankAwareSampler
from nemo.lens.state import enabled_span_groups
from nemo.lens.strategies import (
    BUILTIN_STRATEGIES,
    LOCAL_RANK_VARIABLES,
    AllRanksStrategy,
    ExportStrategy,
    FirstRankPerNodeStrategy,
    SampledStrategy,
    SingleRankStrategy,
    export_decision,
    get_export_strategy,
    rank_sample_fraction,
    register_export_strategy,
    registered_strategies,
    unregister_export_strategy,
)
from nemo.lens.testing import reset as _reset_for_testing

pytestmark = pytest.mark.usefixtures("clean_env")


def _exporting_ranks(strategy: ExportStrategy, world_size: int, cfg: NemoLensConfig) -> list[int]:
    return [r for r in range(world_size) if export_decision(strategy, cfg, r, world_size)]


# -- built-in rules -----------------------------------------------------------------------


def test_single_rank_defaults_to_the_last_rank() -> None:
    assert _exporting_ranks(SingleRankStrategy(), 8, NemoLensConfig()) == [7]
    assert _exporting_ranks(SingleRankStrategy(), 1, NemoLensConfig()) == [0]


def test_single_rank_honours_export_rank() -> None:
    assert _exporting_ranks(SingleRankStrategy(), 8, NemoLensConfig(export_rank=2)) == [2]
    assert _exporting_ranks(SingleRankStrategy(), 8, NemoLensConfig(export_rank=0)) == [0]


def test_all_ranks() -> None:
    assert _exporting_ranks(AllRanksStrategy(), 5, NemoLensConfig()) == [0, 1, 2, 3, 4]


def test_sampled_extremes() -> None:
    none = NemoLensConfig(run_id="r", export_sample_rate=0.0)
    every = NemoLensConfig(run_id="r", export_sample_rate=1.0)
    assert _exporting_ranks(SampledStrategy(), 64, none) == []
    assert _exporting_ranks(SampledStrategy(), 64, every) == list(range(64))


def test_sampled_is_deterministic_and_close_to_the_rate() -> None:
    cfg = NemoLensConfig(run_id="job-1", export_sample_rate=0.25)
    first = _exporting_ranks(SampledStrategy(), 2000, cfg)
    again = _exporting_ranks(SampledStrategy(), 2000, cfg)
    assert first == again
    assert 400 <= len(first) <= 600  # 25 % of 2000, with a wide margin
    # Each decision is the documented hash rule.
    assert first == [r for r in range(2000) if rank_sample_fraction("job-1", r) < 0.25]


def test_sampled_depends_on_the_run_id() -> None:
    a = _exporting_ranks(SampledStrategy(), 200, NemoLensConfig(run_id="a", export_sample_rate=0.5))
    b = _exporting_ranks(SampledStrategy(), 200, NemoLensConfig(run_id="b", export_sample_rate=0.5))
    assert a != b


def test_sampled_fraction_is_pinned_so_restarts_keep_their_decision() -> None:
    # sha256 of "run_id:rank", first 8 bytes as a fraction: the same in every
    # process and release (hash() would change with PYTHONHASHSEED).
    assert rank_sample_fraction("run", 0) == 0.7005869479804229
    assert rank_sample_fraction("run", 1) == 0.19677313918324174
    cfg = NemoLensConfig(run_id="run", export_sample_rate=0.5)
    assert SampledStrategy().should_export(0, 2, cfg) is False
    assert SampledStrategy().should_export(1, 2, cfg) is True


def test_first_rank_per_node_reads_local_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    strategy = FirstRankPerNodeStrategy()
    cfg = NemoLensConfig()
    monkeypatch.setenv("LOCAL_RANK", "0")
    assert strategy.should_export(8, 16, cfg) is True
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert strategy.should_export(8, 16, cfg) is False


def test_first_rank_per_node_falls_back_to_slurm_localid(monkeypatch: pytest.MonkeyPatch) -> None:
    strategy = FirstRankPerNodeStrategy()
    monkeypatch.setenv("SLURM_LOCALID", "1")
    assert strategy.should_export(5, 8, NemoLensConfig()) is False
    monkeypatch.setenv("LOCAL_RANK", "0")  # LOCAL_RANK wins
    assert strategy.should_export(5, 8, NemoLensConfig()) is True


@pytest.mark.parametrize("variable", ["OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"])
def test_first_rank_per_node_under_mpi_launchers(
    monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    strategy = FirstRankPerNodeStrategy()
    monkeypatch.setenv(variable, "2")
    assert strategy.should_export(2, 4, NemoLensConfig()) is False
    monkeypatch.setenv(variable, "0")
    assert strategy.should_export(2, 4, NemoLensConfig()) is True


def test_first_rank_per_node_variables_are_read_in_documented_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every variable says "not first" except the one under test, which says "first";
    # it must decide exactly when no variable before it in the list is set.
    assert LOCAL_RANK_VARIABLES == (
        "LOCAL_RANK",
        "SLURM_LOCALID",
        "OMPI_COMM_WORLD_LOCAL_RANK",
        "MPI_LOCALRANKID",
    )
    for index, variable in enumerate(LOCAL_RANK_VARIABLES):
        for other in LOCAL_RANK_VARIABLES:
            monkeypatch.delenv(other, raising=False)
        for later in LOCAL_RANK_VARIABLES[index + 1 :]:
            monkeypatch.setenv(later, "1")
        monkeypatch.setenv(variable, "0")
        assert FirstRankPerNodeStrategy().should_export(0, 2, NemoLensConfig()) is True, variable


def test_first_rank_per_node_without_variables_exports() -> None:
    assert FirstRankPerNodeStrategy().should_export(3, 4, NemoLensConfig()) is True


def test_first_rank_per_node_with_garbage_local_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_RANK", "zero")
    with pytest.raises(ValueError, match=r"LOCAL_RANK='zero' is not an integer"):
        FirstRankPerNodeStrategy().should_export(0, 1, NemoLensConfig())


# -- registry -----------------------------------------------------------------------------


def test_builtins_are_registered() -> None:
    assert sorted(registered_strategies()) == [
        "all_ranks",
        "first_rank_per_node",
        "sampled",
        "single_rank",
    ]
    assert isinstance(get_export_strategy("single_rank"), SingleRankStrategy)
    assert isinstance(get_export_strategy(" ALL_RANKS "), AllRanksStrategy)


def test_register_an_object_and_a_function() -> None:
    class EvenRanks:
        def should_export(self, rank: int, world_size: int, config: NemoLensConfig) -> bool:
            return rank % 2 == 0

    register_export_strategy("even", EvenRanks())
    register_export_strategy("Tail", lambda rank, world_size, config: rank >= world_size - 2)

    assert _exporting_ranks(get_export_strategy("even"), 6, NemoLensConfig()) == [0, 2, 4]
    assert _exporting_ranks(get_export_strategy("tail"), 6, NemoLensConfig()) == [4, 5]
    assert {"even", "tail"} <= set(registered_strategies())


def test_registered_strategies_is_a_read_only_snapshot() -> None:
    snapshot = registered_strategies()
    with pytest.raises(TypeError):
        snapshot["x"] = AllRanksStrategy()  # type: ignore[call-overload]
    register_export_strategy("later", AllRanksStrategy())
    assert "later" not in snapshot
    assert "later" in registered_strategies()


def test_duplicate_registration_is_an_error() -> None:
    register_export_strategy("mine", AllRanksStrategy())
    with pytest.raises(ValueError) as info:
        register_export_strategy("MINE", AllRanksStrategy())
    assert "export strategy 'mine' is already registered" in str(info.value)
    assert "unregister_export_strategy('mine') first" in str(info.value)


def test_builtins_cannot_be_replaced_or_removed() -> None:
    with pytest.raises(ValueError, match="'single_rank' is built in and cannot be replaced"):
        register_export_strategy("single_rank", AllRanksStrategy())
    with pytest.raises(ValueError, match="'sampled' is built in and cannot be unregistered"):
        unregister_export_strategy("sampled")
    assert "sampled" in registered_strategies()


def test_unregister_unknown_suggests_the_closest() -> None:
    register_export_strategy("per_node", AllRanksStrategy())
    with pytest.raises(ValueError) as info:
        unregister_export_strategy("per_nod")
    assert (
        "unknown export strategy 'per_nod' (Unknown export_strategy 'per_nod': 'per_nod' is not "
        "registered); did you mean 'per_node'?"
    ) in str(info.value)


def test_unregister_then_register_again() -> None:
    register_export_strategy("swap", AllRanksStrategy())
    unregister_export_strategy("swap")
    assert "swap" not in registered_strategies()
    register_export_strategy("swap", SingleRankStrategy())
    assert isinstance(get_export_strategy("swap"), SingleRankStrategy)


def test_bad_names_and_objects() -> None:
    with pytest.raises(ValueError, match="is not valid"):
        register_export_strategy("has space", AllRanksStrategy())
    with pytest.raises(ValueError, match="is not valid"):
        register_export_strategy("", AllRanksStrategy())
    with pytest.raises(TypeError, match="must have a should_export"):
        register_export_strategy("obj", object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="name must be a str"):
        register_export_strategy(3, AllRanksStrategy())  # type: ignore[arg-type]


def test_registering_a_class_instead_of_an_instance_names_the_fix() -> None:
    class EveryOther:
        def should_export(self, rank: int, world_size: int, config: NemoLensConfig) -> bool:
            return rank % 2 == 0

    with pytest.raises(TypeError) as info:
        register_export_strategy("every_other", EveryOther)  # type: ignore[arg-type]
    assert "is the class EveryOther, not an instance" in str(info.value)
    assert "register_export_strategy('every_other', EveryOther())" in str(info.value)
    assert "every_other" not in registered_strategies()


def test_unknown_name_lists_registered() -> None:
    with pytest.raises(ValueError) as info:
        get_export_strategy("single")
    assert "did you mean 'single_rank'?" in str(info.value)
    assert "register_export_strategy(name, strategy)" in str(info.value)


def test_reset_forgets_custom_strategies() -> None:
    register_export_strategy("temporary", AllRanksStrategy())
    _reset_for_testing()
    assert "temporary" not in registered_strategies()


# -- what set-up does with the decision -----------------------------------------------------


def _setup(
    rank: int, world_size: int, **fields: object
) -> tuple[TelemetryHandle, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    cfg = NemoLensConfig(enabled=True, exporter="none", metrics_enabled=False, **fields)  # type: ignore[arg-type]
    handle = setup_telemetry(cfg, rank=rank, world_size=world_size, span_exporter=exporter)
    with handle.tracer.start_as_current_span("work"):
        pass
    return handle, exporter


def test_only_the_selected_rank_exports() -> None:
    handle, exporter = _setup(rank=2, world_size=4)  # single_rank -> rank 3
    assert handle.is_exporting is False
    assert exporter.get_finished_spans() == ()
    handle.shutdown()

    handle, exporter = _setup(rank=3, world_size=4)
    assert handle.is_exporting is True
    assert [s.name for s in exporter.get_finished_spans()] == ["work"]


def test_a_non_exporting_rank_enables_no_group_and_makes_no_span() -> None:
    # v0.2.0's rule: the ranks that send nothing pay nothing.
    cfg = NemoLensConfig(enabled=True, exporter="none", span_groups="all")
    handle = setup_telemetry(cfg, rank=0, world_size=2, span_exporter=InMemorySpanExporter())
    assert handle.is_exporting is False
    assert handle.enabled_groups == frozenset()
    assert enabled_span_groups() == frozenset()
    assert not is_span_group_enabled(SpanGroup.JOB)
    with managed_span(SpanGroup.STEP, "step") as span:
        assert span is None
    assert not handle.tracer.start_span("x").get_span_context().is_valid
    assert "not exporting" in repr(handle)
    # It is set up all the same: a second set-up is refused as on any rank.
    with pytest.raises(RuntimeError, match="has already been initialised"):
        setup_telemetry(cfg, rank=0, world_size=2)
    handle.shutdown()


def test_a_non_exporting_rank_imports_nothing_of_the_sdk(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import sys
        from nemo.lens import NemoLensConfig, managed_span, setup_telemetry
        handle = setup_telemetry(
            NemoLensConfig(enabled=True, exporter="file", span_groups="all"), rank=0, world_size=8
        )
        with managed_span("step", "step") as span:
            assert span is None
        handle.shutdown()
        sdk = ("opentelemetry.sdk", "nemo.lens._sdk")
        print(sorted(m for m in sys.modules if m.startswith(sdk)))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert out.stdout.strip() == "[]", out.stderr
    assert list(tmp_path.iterdir()) == []  # no trace file either


def test_spans_on_every_rank_keeps_real_propagatable_spans_on_non_exporting_ranks() -> None:
    handle, exporter = _setup(rank=0, world_size=2, spans_on_every_rank=True)
    assert handle.is_exporting is False
    assert handle.enabled_groups == SpanGroup.resolve("default")
    span = handle.tracer.start_span("ctx")
    context = span.get_span_context()
    span.end()
    assert context.is_valid
    assert context.trace_flags.sampled  # children on exporting ranks are not silenced
    assert exporter.get_finished_spans() == ()  # and nothing leaves the rank


@pytest.mark.parametrize("export_rank", [4, 100])
def test_an_export_rank_beyond_the_world_is_no_rank(export_rank: int) -> None:
    # v0.2.0: not an error; no rank matches it under single_rank ...
    for rank in range(4):
        handle, exporter = _setup(rank=rank, world_size=4, export_rank=export_rank)
        assert handle.is_exporting is False
        assert exporter.get_finished_spans() == ()
        handle.shutdown()
    # ... and an export_strategy= override still decides.
    handle = setup_telemetry(
        NemoLensConfig(enabled=True, exporter="none", export_rank=export_rank),
        rank=1,
        world_size=4,
        span_exporter=InMemorySpanExporter(),
        export_strategy="all_ranks",
    )
    assert handle.is_exporting is True
    handle.shutdown()


def test_builtin_strategies_is_a_frozenset_of_the_four_names() -> None:
    assert isinstance(BUILTIN_STRATEGIES, frozenset)
    assert BUILTIN_STRATEGIES == frozenset(
        {"single_rank", "all_ranks", "sampled", "first_rank_per_node"}
    )
    # Still a mapping to the strategies, as it was here before.
    assert isinstance(BUILTIN_STRATEGIES["all_ranks"], AllRanksStrategy)
    assert dict(BUILTIN_STRATEGIES.items()) == {
        name: get_export_strategy(name) for name in BUILTIN_STRATEGIES
    }


def test_strategy_by_config_name_and_by_argument() -> None:
    register_export_strategy("rank_one", lambda rank, world_size, config: rank == 1)
    handle, exporter = _setup(rank=1, world_size=4, export_strategy="rank_one")
    assert len(exporter.get_finished_spans()) == 1
    handle.shutdown()

    exporter = InMemorySpanExporter()
    handle = setup_telemetry(
        NemoLensConfig(enabled=True, exporter="none", metrics_enabled=False),
        rank=0,
        world_size=4,
        span_exporter=exporter,
        export_strategy=AllRanksStrategy(),
    )
    assert handle.is_exporting is True
    handle.shutdown()

    handle = setup_telemetry(
        NemoLensConfig(enabled=True, exporter="none", metrics_enabled=False),
        rank=2,
        world_size=4,
        span_exporter=InMemorySpanExporter(),
        export_strategy=lambda rank, world_size, config: rank == 2,
    )
    assert handle.is_exporting is True
    with pytest.raises(TypeError, match="export_strategy must be a registered strategy name"):
        setup_telemetry(NemoLensConfig(enabled=True), export_strategy=42, _allow_reinit=True)  # type: ignore[arg-type]


def test_custom_strategy_gets_the_resolved_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_JOB_ID", "777")
    seen: list[str] = []

    def record(rank: int, world_size: int, config: NemoLensConfig) -> bool:
        seen.append(config.run_id)
        return True

    register_export_strategy("record", record)
    _setup(rank=0, world_size=1, export_strategy="record")
    assert seen == ["777"]


def test_sampled_strategy_at_set_up_follows_the_hash_rule() -> None:
    for rank in range(6):
        handle, exporter = _setup(
            rank=rank, world_size=6, export_strategy="sampled", export_sample_rate=0.5, run_id="r7"
        )
        expected = rank_sample_fraction("r7", rank) < 0.5
        assert handle.is_exporting is expected
        assert len(exporter.get_finished_spans()) == (1 if expected else 0)
        handle.shutdown()


def test_first_rank_per_node_at_set_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_RANK", "1")
    handle, exporter = _setup(rank=5, world_size=8, export_strategy="first_rank_per_node")
    assert handle.is_exporting is False
    assert exporter.get_finished_spans() == ()
    handle.shutdown()

    monkeypatch.setenv("LOCAL_RANK", "0")
    handle, exporter = _setup(rank=4, world_size=8, export_strategy="first_rank_per_node")
    assert handle.is_exporting is True
    assert len(exporter.get_finished_spans()) == 1


def test_a_bad_local_rank_fails_set_up_before_anything_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LOCAL_RANK", "first")
    cfg = NemoLensConfig(
        enabled=True,
        exporter="none",
        metrics_enabled=False,
        span_groups="per_step",
        export_strategy="first_rank_per_node",
    )
    with pytest.raises(ValueError, match=r"LOCAL_RANK='first' is not an integer"):
        setup_telemetry(cfg, rank=0, world_size=2)
    assert is_span_group_enabled("step") is False
    monkeypatch.setenv("LOCAL_RANK", "0")
    assert setup_telemetry(cfg, rank=0, world_size=2).enabled is True  # a first call again


# -- RankAwareSampler ---------------------------------------------------------------------


def _sampled_provider(sampled: bool) -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=RankAwareSampler(sampled, rank=0))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def test_rank_aware_sampler_samples_everything_or_nothing() -> None:
    on, on_exporter = _sampled_provider(True)
    off, off_exporter = _sampled_provider(False)
    for provider in (on, off):
        tracer = provider.get_tracer("t")
        for i in range(20):
            with tracer.start_as_current_span(f"s{i}"):
                pass
    assert len(on_exporter.get_finished_spans()) == 20
    assert off_exporter.get_finished_spans() == ()


def test_rank_aware_sampler_ignores_an_unsampled_parent() -> None:
    provider, exporter = _sampled_provider(True)
    parent = NonRecordingSpan(
        SpanContext(trace_id=1, span_id=2, is_remote=True, trace_flags=TraceFlags(0))
    )
    context = trace.set_span_in_context(parent)
    provider.get_tracer("t").start_span("child", context=context).end()
    (span,) = exporter.get_finished_spans()
    assert span.context is not None and span.context.trace_id == 1


def test_rank_aware_sampler_keeps_the_parent_trace_state() -> None:
    provider, exporter = _sampled_provider(True)
    state = TraceState([("vendor", "opaque")])
    parent = NonRecordingSpan(
        SpanContext(
            trace_id=5, span_id=6, is_remote=True, trace_flags=TraceFlags(1), trace_state=state
        )
    )
    provider.get_tracer("t").start_span("child", context=trace.set_span_in_context(parent)).end()
    (span,) = exporter.get_finished_spans()
    assert span.context is not None and span.context.trace_state == state


def test_rank_aware_sampler_takes_one_decision_per_rank() -> None:
    # One sampler per rank, each the strategy's answer for that rank: a world of
    # samplers reproduces the strategy's selection exactly.
    cfg = NemoLensConfig(run_id="job", export_strategy="sampled", export_sample_rate=0.3)
    samplers = [RankAwareSampler.for_rank(rank, 40, cfg) for rank in range(40)]
    assert [r for r, s in enumerate(samplers) if s.sampled] == _exporting_ranks(
        SampledStrategy(), 40, cfg
    )


def test_rank_aware_sampler_from_the_strategy() -> None:
    cfg = NemoLensConfig()
    assert RankAwareSampler.for_rank(3, 4, cfg).sampled is True
    assert RankAwareSampler.for_rank(2, 4, cfg).sampled is False
    assert RankAwareSampler.for_rank(2, 4, cfg, AllRanksStrategy()).sampled is True
    assert (
        RankAwareSampler(True, rank=5).get_description() == "RankAwareSampler{rank=5,sampled=True}"
    )


def test_sampler_enabled_makes_non_exporting_ranks_record_nothing() -> None:
    handle, _ = _setup(rank=0, world_size=2, sampler_enabled=True, spans_on_every_rank=True)
    with handle.tracer.start_as_current_span("x") as span:
        assert span.is_recording() is False
        assert span.get_span_context().is_valid
    handle.shutdown()

    handle, exporter = _setup(rank=1, world_size=2, sampler_enabled=True)
    with handle.tracer.start_as_current_span("y") as span:
        assert span.is_recording() is True
    assert [s.name for s in exporter.get_finished_spans()] == ["work", "y"]
