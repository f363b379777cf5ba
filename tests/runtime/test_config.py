"""NemoLensConfig: defaults, the from_env rules of SPEC section 5, and validation messages."""

from __future__ import annotations

import dataclasses
import math
import os
import re

import pytest

from nemo.lens.config import DEFAULT_TRACE_FILE, NemoLensConfig, default_run_id
from nemo.lens.consumers.megatron import MegatronSpanGroup
from nemo.lens.groups import SpanGroup
from nemo.lens.strategies import register_export_strategy, unregister_export_strategy


@pytest.fixture(autouse=True)
def _clean_env(clean_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    # And the prefixes these tests make up themselves.
    for key in list(os.environ):
        if key.startswith(("MYAPP_", "FALLBACK_")):
            monkeypatch.delenv(key)


# -- defaults -----------------------------------------------------------------------------


def test_defaults_are_those_of_the_spec() -> None:
    cfg = NemoLensConfig()
    assert cfg.enabled is False
    assert cfg.service_name == "nemo"
    assert cfg.export_strategy == "single_rank"
    assert cfg.export_rank == -1
    assert cfg.export_sample_rate == 1.0
    assert cfg.sampler_enabled is False
    assert cfg.traces_enabled is True
    assert cfg.metrics_enabled is True
    assert cfg.logs_enabled is False
    assert cfg.span_groups == "default"
    assert cfg.exporter == "otlp"
    assert cfg.run_id == ""
    assert cfg.user == ""
    assert cfg.wandb_entity == ""
    assert cfg.wandb_project == ""
    assert cfg.span_group_cls is SpanGroup
    assert cfg.trace_file == ""


def test_from_env_with_nothing_set_gives_the_defaults() -> None:
    assert NemoLensConfig.from_env() == NemoLensConfig()


# -- from_env ------------------------------------------------------------------------------


def test_from_env_reads_every_prefixed_field(monkeypatch: pytest.MonkeyPatch) -> None:
    values = {
        "NEMO_LENS_ENABLED": "1",
        "NEMO_LENS_EXPORT_STRATEGY": "all_ranks",
        "NEMO_LENS_EXPORT_RANK": "3",
        "NEMO_LENS_EXPORT_SAMPLE_RATE": "0.25",
        "NEMO_LENS_SAMPLER_ENABLED": "yes",
        "NEMO_LENS_TRACES_ENABLED": "off",
        "NEMO_LENS_METRICS_ENABLED": "false",
        "NEMO_LENS_LOGS_ENABLED": "on",
        "NEMO_LENS_SPAN_GROUPS": "per_step,-optimizer",
        "NEMO_LENS_EXPORTER": "console",
        "NEMO_LENS_RUN_ID": "run-42",
        "NEMO_LENS_USER_ID": "alice",
        "NEMO_LENS_TRACE_FILE": "out/{rank}.jsonl",
        "OTEL_SERVICE_NAME": "trainer",
        "WANDB_ENTITY": "team",
        "WANDB_PROJECT": "llm",
    }
    for key, value in values.items():
        monkeypatch.setenv(key, value)

    cfg = NemoLensConfig.from_env()

    assert cfg == NemoLensConfig(
        enabled=True,
        service_name="trainer",
        export_strategy="all_ranks",
        export_rank=3,
        export_sample_rate=0.25,
        sampler_enabled=True,
        traces_enabled=False,
        metrics_enabled=False,
        logs_enabled=True,
        span_groups="per_step,-optimizer",
        exporter="console",
        run_id="run-42",
        user="alice",
        wandb_entity="team",
        wandb_project="llm",
        trace_file="out/{rank}.jsonl",
    )


def test_user_comes_from_user_id_not_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEMO_LENS_USER", "wrong")
    assert NemoLensConfig.from_env().user == ""
    monkeypatch.setenv("NEMO_LENS_USER_ID", "bob")
    assert NemoLensConfig.from_env().user == "bob"


def test_service_name_comes_from_otel_service_name_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEMO_LENS_SERVICE_NAME", "ignored")
    assert NemoLensConfig.from_env().service_name == "nemo"
    monkeypatch.setenv("OTEL_SERVICE_NAME", "svc")
    assert NemoLensConfig.from_env().service_name == "svc"


def test_custom_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MYAPP_ENABLED", "true")
    monkeypatch.setenv("NEMO_LENS_EXPORTER", "file")  # another prefix: not read
    cfg = NemoLensConfig.from_env(prefix="MYAPP")
    assert cfg.enabled is True
    assert cfg.exporter == "otlp"


def test_fallback_prefix_fills_unset_and_blank_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MYAPP_ENABLED", "1")
    monkeypatch.setenv("MYAPP_EXPORTER", "   ")  # blank counts as unset
    monkeypatch.setenv("FALLBACK_EXPORTER", "console")
    monkeypatch.setenv("FALLBACK_ENABLED", "0")  # the primary prefix wins
    monkeypatch.setenv("FALLBACK_USER_ID", "carol")

    cfg = NemoLensConfig.from_env(prefix="MYAPP", fallback_prefix="FALLBACK")

    assert cfg.enabled is True
    assert cfg.exporter == "console"
    assert cfg.user == "carol"


def test_blank_everywhere_falls_back_to_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEMO_LENS_SPAN_GROUPS", "")
    monkeypatch.setenv("FALLBACK_SPAN_GROUPS", " ")
    monkeypatch.setenv("NEMO_LENS_EXPORT_RANK", "  ")
    cfg = NemoLensConfig.from_env(fallback_prefix="FALLBACK")
    assert cfg.span_groups == "default"
    assert cfg.export_rank == -1


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1", True),
        ("true", True),
        ("TRUE", True),
        ("Yes", True),
        ("on", True),
        (" On ", True),
        ("0", False),
        ("false", False),
        ("False", False),
        ("no", False),
        ("NO", False),
        ("off", False),
    ],
)
def test_boolean_spellings(monkeypatch: pytest.MonkeyPatch, raw: str, expected: bool) -> None:
    monkeypatch.setenv("NEMO_LENS_ENABLED", raw)
    assert NemoLensConfig.from_env().enabled is expected


@pytest.mark.parametrize("raw", ["maybe", "2", "y", "enabled", "truee"])
def test_bad_boolean_names_the_variable_and_accepted_values(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv("NEMO_LENS_METRICS_ENABLED", raw)
    with pytest.raises(ValueError) as info:
        NemoLensConfig.from_env()
    message = str(info.value)
    assert f"NEMO_LENS_METRICS_ENABLED={raw!r} is not a boolean" in message
    assert "1/0, true/false, yes/no, on/off (any case)" in message


def test_bad_boolean_from_the_fallback_names_the_fallback_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FALLBACK_LOGS_ENABLED", "nope")
    with pytest.raises(ValueError, match=r"FALLBACK_LOGS_ENABLED='nope' is not a boolean"):
        NemoLensConfig.from_env(fallback_prefix="FALLBACK")


@pytest.mark.parametrize("raw", ["three", "1.5", "1_000", "0x10", "--1"])
def test_bad_integer(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("NEMO_LENS_EXPORT_RANK", raw)
    with pytest.raises(ValueError, match=re.escape(f"NEMO_LENS_EXPORT_RANK={raw!r} is not an int")):
        NemoLensConfig.from_env()


def test_integer_accepts_signs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEMO_LENS_EXPORT_RANK", "+7")
    assert NemoLensConfig.from_env().export_rank == 7
    monkeypatch.setenv("NEMO_LENS_EXPORT_RANK", "-1")
    assert NemoLensConfig.from_env().export_rank == -1


def test_bad_float(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEMO_LENS_EXPORT_SAMPLE_RATE", "half")
    with pytest.raises(ValueError, match=r"NEMO_LENS_EXPORT_SAMPLE_RATE='half' is not a number"):
        NemoLensConfig.from_env()


@pytest.mark.parametrize("raw", ["1.5", "-0.1", "nan", "inf"])
def test_sample_rate_out_of_range_from_env_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv("NEMO_LENS_EXPORT_SAMPLE_RATE", raw)
    with pytest.raises(ValueError) as info:
        NemoLensConfig.from_env()
    assert str(info.value).startswith(f"NEMO_LENS_EXPORT_SAMPLE_RATE={raw!r}: ")
    assert "must be between 0 and 1" in str(info.value)


def test_unknown_span_group_from_env_names_the_variable_and_suggests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NEMO_LENS_SPAN_GROUPS", "per_stpe")
    with pytest.raises(ValueError) as info:
        NemoLensConfig.from_env()
    message = str(info.value)
    assert message.startswith("NEMO_LENS_SPAN_GROUPS='per_stpe': invalid span_groups")
    assert "did you mean 'per_step'?" in message


def test_unknown_exporter_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEMO_LENS_EXPORTER", "jaeger")
    with pytest.raises(ValueError) as info:
        NemoLensConfig.from_env()
    assert "NEMO_LENS_EXPORTER='jaeger'" in str(info.value)
    assert "use one of: otlp, console, file, none" in str(info.value)


def test_from_env_resolves_against_the_given_span_group_class(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NEMO_LENS_SPAN_GROUPS", "per_step,layer")
    with pytest.raises(ValueError, match="unknown span group or preset 'layer'"):
        NemoLensConfig.from_env()
    cfg = NemoLensConfig.from_env(span_group_cls=MegatronSpanGroup)
    assert cfg.span_group_cls is MegatronSpanGroup
    assert "layer" in MegatronSpanGroup.resolve(cfg.span_groups)


# -- validation of values given in code -------------------------------------------------------


@pytest.mark.parametrize("value", ["yes", 1, 0, None, "False"])
def test_non_bool_enabled_is_a_type_error(value: object) -> None:
    with pytest.raises(TypeError) as info:
        NemoLensConfig(enabled=value)  # type: ignore[arg-type]
    message = str(info.value)
    assert "NemoLensConfig.enabled must be a bool (True or False)" in message
    assert "NemoLensConfig.from_env()" in message


def test_non_str_field_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"NemoLensConfig.service_name must be a str, got int 3"):
        NemoLensConfig(service_name=3)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["3", 1.0, True])
def test_export_rank_must_be_an_int(value: object) -> None:
    with pytest.raises(TypeError, match=r"NemoLensConfig\.export_rank must be an int"):
        NemoLensConfig(export_rank=value)  # type: ignore[arg-type]


def test_export_rank_below_minus_one_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"must be a rank >= 0 or -1 for the last rank, got -2"):
        NemoLensConfig(export_rank=-2)


@pytest.mark.parametrize("rate", [1.01, -0.5, math.nan, math.inf])
def test_sample_rate_out_of_range(rate: float) -> None:
    with pytest.raises(ValueError, match="export_sample_rate must be between 0 and 1"):
        NemoLensConfig(export_sample_rate=rate)


def test_sample_rate_must_be_a_number() -> None:
    with pytest.raises(TypeError, match="export_sample_rate must be a number"):
        NemoLensConfig(export_sample_rate="0.5")  # type: ignore[arg-type]


def test_integer_sample_rates_are_accepted() -> None:
    assert NemoLensConfig(export_sample_rate=0).export_sample_rate == 0
    assert NemoLensConfig(export_sample_rate=1).export_sample_rate == 1


def test_unknown_exporter() -> None:
    with pytest.raises(
        ValueError,
        match=r"unknown exporter 'zipkin' \(Unknown exporter type: 'zipkin'\); use one of: otlp, "
        "console",
    ):
        NemoLensConfig(exporter="zipkin")


def test_exporter_names_are_case_insensitive() -> None:
    assert NemoLensConfig(exporter=" Console ").exporter == " Console "


def test_bad_span_group_spec_lists_valid_names() -> None:
    with pytest.raises(ValueError) as info:
        NemoLensConfig(span_groups="defualt")
    message = str(info.value)
    assert message.startswith("invalid span_groups 'defualt': unknown span group or preset")
    assert "did you mean 'default'?" in message
    assert f"valid presets: {', '.join(sorted(SpanGroup.PRESETS))}" in message


def test_span_group_spec_is_checked_against_the_configured_class() -> None:
    with pytest.raises(ValueError, match="'communication'"):
        NemoLensConfig(span_groups="communication")
    assert NemoLensConfig(span_groups="communication", span_group_cls=MegatronSpanGroup)


def test_span_group_cls_must_be_a_class_with_resolve() -> None:
    with pytest.raises(TypeError, match="span_group_cls must be a span-group class"):
        NemoLensConfig(span_group_cls="SpanGroup")  # type: ignore[arg-type]


def test_trace_file_with_unknown_placeholder() -> None:
    with pytest.raises(ValueError) as info:
        NemoLensConfig(trace_file="out/{node}.jsonl")
    message = str(info.value)
    assert "unknown placeholder {node}" in message
    assert "{rank}, {run_id}, {service_name}" in message


def test_trace_file_with_unbalanced_brace() -> None:
    with pytest.raises(ValueError, match=r"is not a valid template .*write literal braces"):
        NemoLensConfig(trace_file="out/{rank.jsonl")


def test_trace_file_positional_placeholder_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"unknown placeholder \{\}"):
        NemoLensConfig(trace_file="out/{}.jsonl")


def test_validate_checks_fields_assigned_after_construction() -> None:
    cfg = NemoLensConfig()
    cfg.span_groups = "nonsense"
    with pytest.raises(ValueError, match="invalid span_groups 'nonsense'"):
        cfg.validate()


def test_validate_checks_the_strategy_is_registered_at_validation_time() -> None:
    cfg = NemoLensConfig(export_strategy="every_other")  # not registered yet: allowed here
    with pytest.raises(ValueError) as info:
        cfg.validate()
    assert "NemoLensConfig.export_strategy: unknown export strategy 'every_other'" in str(
        info.value
    )
    assert "registered strategies: all_ranks, first_rank_per_node, sampled, single_rank" in str(
        info.value
    )
    register_export_strategy("every_other", lambda rank, world_size, config: rank % 2 == 0)
    try:
        cfg.validate()
    finally:
        unregister_export_strategy("every_other")


# -- derived values ------------------------------------------------------------------------------


def test_run_id_defaults_to_slurm_job_id(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_JOB_ID", "98765")
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "elastic")
    assert NemoLensConfig().resolved().run_id == "98765"


def test_run_id_falls_back_to_torchelastic_then_random(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "none")  # torchrun's placeholder
    first = default_run_id()
    assert re.fullmatch(r"[0-9a-f]{12}", first)
    assert default_run_id() != first
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "abc-123")
    assert default_run_id() == "abc-123"


def test_explicit_run_id_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_JOB_ID", "1")
    cfg = NemoLensConfig(run_id="mine")
    assert cfg.resolved() is cfg


def test_resolved_does_not_change_the_original() -> None:
    cfg = NemoLensConfig()
    assert cfg.resolved().run_id != ""
    assert cfg.run_id == ""


def test_trace_file_default_and_placeholders() -> None:
    cfg = NemoLensConfig(service_name="svc", run_id="r1")
    assert DEFAULT_TRACE_FILE == "traces/{service_name}-{run_id}-rank{rank}.jsonl"
    assert cfg.format_trace_file(3) == "traces/svc-r1-rank3.jsonl"
    custom = NemoLensConfig(run_id="r1", trace_file="/tmp/x/{run_id}/{rank:03d}.jsonl")
    assert custom.format_trace_file(7) == "/tmp/x/r1/007.jsonl"


def test_trace_file_with_a_bad_format_spec_fails_when_filled_in() -> None:
    cfg = NemoLensConfig(run_id="abc", trace_file="{run_id:d}.jsonl")
    with pytest.raises(ValueError, match=r"trace_file '\{run_id:d\}.jsonl' cannot be filled in"):
        cfg.format_trace_file(0)


def test_new_fields_come_after_the_ones_a_positional_call_may_pass() -> None:
    # A field added in the middle would shift every later positional argument: fields are
    # only ever appended (the order as released before profiler and goodput_metrics).
    released = [
        *("enabled", "service_name", "export_strategy", "export_rank", "export_sample_rate"),
        *("sampler_enabled", "traces_enabled", "metrics_enabled", "logs_enabled"),
        *("span_groups", "exporter", "run_id", "user", "wandb_entity", "wandb_project"),
        *("span_group_cls", "trace_file", "handle_signals", "console_format"),
        "spans_on_every_rank",
    ]
    names = [field.name for field in dataclasses.fields(NemoLensConfig)]
    assert names[: len(released)] == released
