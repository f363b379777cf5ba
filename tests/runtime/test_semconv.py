"""nemo.lens.semconv: the names the library emits, defined once and used everywhere."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import nemo.lens
from nemo.lens import semconv
from nemo.lens.config import NemoLensConfig
from nemo.lens.groups import SpanGroup
from nemo.lens.handle import setup_telemetry
from nemo.lens.helpers import managed_span
from nemo.lens.resources import attributes as resource_attributes
from nemo.lens.semconv import attributes, metrics, resource
from tests.catalogue import catalogue, resource_names, upstream_constants

_SOURCE = Path(semconv.__file__)
"""The package: it only gathers the generated modules' names."""
_GENERATED = tuple(Path(str(module.__file__)) for module in (attributes, resource, metrics))
"""The names: generated from the schema's [attributes] and [metrics] catalogues."""
_PACKAGE = Path(nemo.lens.__file__).parent


def _constants() -> dict[str, str]:
    return {
        name: getattr(semconv, name)
        for name in semconv.__all__
        if isinstance(getattr(semconv, name), str)
    }


def test_every_name_is_a_documented_final_string_listed_in_all() -> None:
    defined: list[str] = []
    undocumented: list[str] = []
    for source in _GENERATED:
        text = source.read_text(encoding="utf-8")
        assert text.startswith("# DO NOT EDIT: generated from "), source.name
        found, missing = _documented_finals(ast.parse(text))
        defined += found
        undocumented += missing
    assert undocumented == []
    assert sorted(defined) == sorted(n for n in semconv.__all__ if n in _constants())
    # Nothing is written by hand: the package defines no name of its own.
    assert _documented_finals(ast.parse(_SOURCE.read_text(encoding="utf-8"))) == ([], [])
    # Each module's names in order, and each generated module's sorted.
    modules = (attributes, resource, metrics)
    assert semconv.__all__ == [name for module in modules for name in module.__all__]
    for module in modules:
        assert module.__all__ == sorted(module.__all__), module.__name__
    assert len(set(semconv.__all__)) == len(semconv.__all__)


def _documented_finals(tree: ast.Module) -> tuple[list[str], list[str]]:
    defined: list[str] = []
    undocumented: list[str] = []
    for index, node in enumerate(tree.body):
        # The names; not the generated module's catalogue table and bucket boundaries.
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and not node.target.id.startswith("_")
            and node.target.id != "INSTRUMENTS"
        ):
            assert ast.unparse(node.annotation) == "Final", node.target.id
            assert isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            defined.append(node.target.id)
            following = tree.body[index + 1] if index + 1 < len(tree.body) else None
            documented = (
                isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
                and following.value.value.strip()
            )
            if not documented:
                undocumented.append(node.target.id)
    return defined, undocumented


def test_every_upstream_name_is_here_with_upstreams_value() -> None:
    # Code written against upstream nemo-lens imports these: each must exist, with the
    # value upstream gives it (the catalogue marks which constants are upstream's).
    expected = upstream_constants()
    assert expected, "the catalogue marks no upstream constant"
    found = {name: getattr(semconv, name, None) for name in expected}
    assert found == expected
    assert set(expected) <= set(semconv.__all__)


def test_two_names_share_a_value_only_where_the_catalogue_says_so() -> None:
    # A second constant for one attribute is deliberate (upstream's GENAI_* beside the
    # GEN_AI_* of the conventions) only when the catalogue marks it as an alias; metric
    # names are a namespace of their own (upstream named some attributes like metrics).
    aliases = {n.constant for n in catalogue().names if n.alias_of}
    # A fixed value ("input") is a value of its attribute: only those of one attribute clash.
    scope = {n.constant: (n.kind, n.of) for n in catalogue().names}
    holders: dict[object, list[str]] = defaultdict(list)
    for name in [*attributes.__all__, *resource.__all__]:
        if name not in aliases:
            kind, of = scope[name]
            holders[(kind, of, getattr(semconv, name))].append(name)
    assert {key: names for key, names in holders.items() if len(names) > 1} == {}
    for name in aliases:
        target = next(n for n in catalogue().names if n.constant == name).alias_of
        assert getattr(semconv, name) == getattr(semconv, target.upper())
    metric_names = [metrics.INSTRUMENTS[name].name for name in metrics.INSTRUMENTS]
    assert len(metric_names) == len(set(metric_names)) == len(metrics.__all__) - 1


def test_the_resource_module_holds_the_catalogues_resource_names() -> None:
    assert sorted(resource.__all__) == sorted(n.constant for n in resource_names())
    assert not set(resource.__all__) & set(attributes.__all__)


def test_the_names_users_query_by() -> None:
    # Dashboards, alerts and the CLI depend on these exact strings.
    assert semconv.SPAN_GROUP == "lens.group"
    assert semconv.SPAN_CATEGORY == "lens.span_category"
    assert semconv.LEGACY_SPAN_GROUP == "nemo.span_group"
    assert semconv.SPAN_TRUNCATED == "nemo.span.truncated"
    assert semconv.RANK == "nemo.rank"
    assert semconv.WORLD_SIZE == "nemo.world_size"
    assert semconv.RUN_ID == "nemo.run_id"
    assert semconv.SERVICE_INSTANCE_ID == "service.instance.id"
    assert semconv.USER == "nemo.user"
    assert semconv.WANDB_ENTITY == "wandb.entity"
    assert semconv.WANDB_PROJECT == "wandb.project"
    assert semconv.LOG_TRACE_ID == "otelTraceID"
    assert semconv.LOG_SPAN_ID == "otelSpanID"
    assert semconv.GEN_AI_CLIENT_TOKEN_USAGE == "gen_ai.client.token.usage"
    assert semconv.GEN_AI_TOKEN_TYPE == "gen_ai.token.type"
    assert semconv.GEN_AI_SERVER_TIME_TO_FIRST_TOKEN == "gen_ai.server.time_to_first_token"
    # nemo.lens's own RL gauge kept its name when upstream's RL_REWARD_MEAN took the constant.
    assert semconv.NEMO_RL_REWARD_MEAN == "nemo.rl.reward.mean"


def test_the_genai_names_match_opentelemetrys_semantic_conventions() -> None:
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes
    from opentelemetry.semconv._incubating.metrics import gen_ai_metrics
    from opentelemetry.semconv.attributes import code_attributes, error_attributes

    for name in (
        "GEN_AI_CLIENT_TOKEN_USAGE",
        "GEN_AI_CLIENT_OPERATION_DURATION",
        "GEN_AI_SERVER_REQUEST_DURATION",
        "GEN_AI_SERVER_TIME_TO_FIRST_TOKEN",
        "GEN_AI_SERVER_TIME_PER_OUTPUT_TOKEN",
    ):
        assert getattr(semconv, name) == getattr(gen_ai_metrics, name)
    for name in (
        "GEN_AI_OPERATION_NAME",
        "GEN_AI_PROVIDER_NAME",
        "GEN_AI_REQUEST_MODEL",
        "GEN_AI_RESPONSE_MODEL",
        "GEN_AI_TOKEN_TYPE",
    ):
        assert getattr(semconv, name) == getattr(gen_ai_attributes, name)
    token_types = gen_ai_attributes.GenAiTokenTypeValues
    assert semconv.GEN_AI_TOKEN_TYPE_INPUT == token_types.INPUT.value
    assert semconv.GEN_AI_TOKEN_TYPE_OUTPUT == token_types.OUTPUT.value
    assert semconv.ERROR_TYPE == error_attributes.ERROR_TYPE
    assert semconv.CODE_FILE_PATH == code_attributes.CODE_FILE_PATH
    assert semconv.CODE_FUNCTION_NAME == code_attributes.CODE_FUNCTION_NAME
    assert semconv.CODE_LINE_NUMBER == code_attributes.CODE_LINE_NUMBER


def test_resources_attributes_still_offers_the_resource_names() -> None:
    assert resource_attributes.__all__ == resource.__all__
    for name in resource_attributes.__all__:
        assert getattr(resource_attributes, name) == getattr(semconv, name)


def test_importing_semconv_imports_nothing_of_opentelemetry() -> None:
    code = textwrap.dedent(
        """
        import json, sys
        import nemo.lens.semconv
        print(json.dumps(sorted(m for m in sys.modules if m.startswith("opentelemetry"))))
        """
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout.strip().splitlines()[-1]) == []


def test_the_library_spells_no_name_as_a_literal() -> None:
    # Every emitted name comes from semconv; a literal elsewhere can drift from it.
    # SCOPE_NAME is exempt: "nemo.lens" is also the package's import name.
    names = {
        value: name for name, value in _constants().items() if "." in value and name != "SCOPE_NAME"
    }
    found: list[str] = []
    for path in sorted(_PACKAGE.rglob("*.py")):
        if path in _GENERATED:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in names:
                where = path.relative_to(_PACKAGE)
                found.append(
                    f"{where}:{node.lineno}: {node.value!r} (use semconv.{names[node.value]})"
                )
    assert found == []


def test_spans_and_resources_carry_the_semconv_names() -> None:
    exporter = InMemorySpanExporter()
    handle = setup_telemetry(
        NemoLensConfig(
            enabled=True,
            exporter="none",
            metrics_enabled=False,
            span_groups="per_step",
            run_id="run42",
            user="ada",
            wandb_entity="lab",
            wandb_project="rl",
        ),
        rank=1,
        world_size=2,
        export_strategy="all_ranks",
        span_exporter=exporter,
    )
    with managed_span(SpanGroup.STEP, "train.step"):
        pass
    open_span = handle.tracer.start_span("left.open")
    handle.shutdown()

    step, truncated = sorted(
        exporter.get_finished_spans(), key=lambda span: span.name != "train.step"
    )
    assert step.attributes is not None and truncated.attributes is not None
    assert step.attributes[semconv.SPAN_GROUP] == "step"
    assert step.attributes[semconv.SPAN_CATEGORY] == SpanGroup.categories()[SpanGroup.STEP]
    assert truncated.name == "left.open" and open_span.get_span_context().is_valid
    assert truncated.attributes[semconv.SPAN_TRUNCATED] is True
    resource = step.resource.attributes
    assert resource[semconv.RANK] == resource[semconv.DL_RANK] == 1
    assert resource[semconv.WORLD_SIZE] == resource[semconv.DL_WORLD_SIZE] == 2
    assert resource[semconv.RUN_ID] == resource[semconv.NEMO_RUN_ID] == "run42"
    assert resource[semconv.SERVICE_INSTANCE_ID] == "run42-rank1"
    assert resource[semconv.USER] == resource[semconv.NEMO_USER_ID] == "ada"
    assert resource[semconv.WANDB_ENTITY] == "lab"
    assert resource[semconv.WANDB_PROJECT] == "rl"
    assert step.instrumentation_scope is not None
    assert step.instrumentation_scope.name == semconv.SCOPE_NAME
