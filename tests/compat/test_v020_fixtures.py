"""What the consumers' own test fixtures touch (written for nemo-lens v0.2.0) works here.

Megatron-LM, NeMo-RL and NeMo-Gym test their instrumentation with fixtures of their own:
they reset OpenTelemetry's globals by hand and set ``nemo.lens.handle._INITIALIZED =
False`` between tests, pass ``NemoLensConfig(_span_group_cls=...)``, and hand
``tracer=None`` spans a test tracer by monkeypatching ``nemo.lens.helpers.trace.get_tracer``.
Such a suite runs here in a process of its own, with nothing of this repository's
fixtures, as it runs in their CI.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import nemo.lens
import nemo.lens.handle as handle_module
from nemo.lens import helpers, state
from nemo.lens.config import NemoLensConfig
from nemo.lens.handle import setup_telemetry

_CONFTEST = """
import opentelemetry.metrics._internal as metrics_internal
import opentelemetry.trace as trace_module
import pytest
from opentelemetry.util._once import Once


def _forget_providers():
    trace_module._TRACER_PROVIDER = None
    trace_module._TRACER_PROVIDER_SET_ONCE = Once()
    metrics_internal._METER_PROVIDER = None
    metrics_internal._METER_PROVIDER_SET_ONCE = Once()
    import nemo.lens.handle

    nemo.lens.handle._INITIALIZED = False


@pytest.fixture(autouse=True)
def fresh_providers():
    _forget_providers()
    yield
    _forget_providers()


@pytest.fixture(autouse=True)
def no_groups():
    from nemo.lens.state import set_enabled_span_groups, set_pp_trace_carrier

    set_enabled_span_groups(frozenset())
    set_pp_trace_carrier(None)
    yield
    set_enabled_span_groups(frozenset())
    set_pp_trace_carrier(None)
"""

_TESTS = """
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import nemo.lens.handle
from nemo.lens import NemoLensConfig, managed_span, setup_telemetry, span_cm, trace_fn
from nemo.lens.consumers.megatron import MegatronSpanGroup
from nemo.lens.state import is_span_group_enabled, set_enabled_span_groups


_NAMES = ["block", "decorated", "managed"]


def _set_up(exporter, **fields):
    config = NemoLensConfig(enabled=True, exporter="none", span_groups="all", **fields)
    return setup_telemetry(config, span_exporter=exporter)


def _traced():
    @trace_fn("step", "decorated")
    def work():
        with span_cm("block"):
            pass

    with managed_span("step", "managed"):
        work()


def test_first_set_up():
    assert nemo.lens.handle._INITIALIZED is False
    exporter = InMemorySpanExporter()
    _set_up(exporter)
    assert nemo.lens.handle._INITIALIZED is True
    _traced()
    trace.get_tracer_provider().force_flush()
    assert sorted(s.name for s in exporter.get_finished_spans()) == _NAMES


def test_set_up_again_in_the_next_test():
    exporter = InMemorySpanExporter()
    _set_up(exporter)  # no _allow_reinit: the fixture reset the flag
    _traced()
    assert len(exporter.get_finished_spans()) == 3


def test_the_flag_refuses_a_second_set_up_until_reset():
    _set_up(InMemorySpanExporter())
    with pytest.raises(RuntimeError, match="has already been initialised"):
        _set_up(InMemorySpanExporter())
    nemo.lens.handle._INITIALIZED = False
    _set_up(InMemorySpanExporter())


def test_assigning_true_refuses_the_next_set_up():
    nemo.lens.handle._INITIALIZED = True
    with pytest.raises(RuntimeError, match="has already been initialised"):
        _set_up(InMemorySpanExporter())


def test_shutdown_clears_the_flag():
    handle = _set_up(InMemorySpanExporter())
    handle.shutdown()
    assert nemo.lens.handle._INITIALIZED is False


def _test_tracer(monkeypatch):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(
        "nemo.lens.helpers.trace.get_tracer", lambda *args, **kwargs: provider.get_tracer("test")
    )
    return exporter


def test_a_patched_get_tracer_makes_the_default_spans(monkeypatch):
    exporter = _test_tracer(monkeypatch)
    set_enabled_span_groups({"step"})
    _traced()
    assert sorted(s.name for s in exporter.get_finished_spans()) == _NAMES


def test_a_patched_get_tracer_wins_over_a_set_up(monkeypatch):
    ours = InMemorySpanExporter()
    _set_up(ours)
    exporter = _test_tracer(monkeypatch)
    _traced()
    assert len(exporter.get_finished_spans()) == 3
    assert ours.get_finished_spans() == ()


def test_the_v020_keyword_for_the_span_group_class():
    config = NemoLensConfig(enabled=True, _span_group_cls=MegatronSpanGroup, span_groups="per_step")
    assert config.span_group_cls is MegatronSpanGroup
    assert config._span_group_cls is MegatronSpanGroup
    handle = setup_telemetry(config, span_exporter=InMemorySpanExporter())
    assert handle.enabled_groups == MegatronSpanGroup.resolve("per_step")
    assert all(is_span_group_enabled(group) for group in MegatronSpanGroup.resolve("per_step"))
"""


def test_a_v020_consumer_suite_passes_with_its_own_fixtures(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(textwrap.dedent(_CONFTEST))
    (tmp_path / "test_consumer.py").write_text(textwrap.dedent(_TESTS))
    environment = {k: v for k, v in os.environ.items() if not k.startswith("NEMO_LENS_")}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{_TESTS.count('def test_')} passed" in result.stdout


# -- the public functions say which module they are imported from ---------------------


@pytest.mark.parametrize(
    ("module", "names"),
    [
        (helpers, ["managed_span", "trace_fn", "span_cm", "safe_set_span_attributes"]),
        (state, ["is_span_group_enabled", "set_enabled_span_groups", "set_pp_trace_carrier"]),
    ],
)
def test_what_consumers_check_names_the_public_module(module: object, names: list[str]) -> None:
    for name in names:
        assert getattr(module, name).__module__ == module.__name__  # type: ignore[attr-defined]


def test_no_public_function_or_class_names_a_private_module() -> None:
    import importlib
    import pkgutil

    private: list[str] = []
    for info in pkgutil.walk_packages(nemo.lens.__path__, "nemo.lens."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        if info.name.startswith(("nemo.lens.contrib.", "nemo.lens.cli", "nemo.lens.codegen")):
            continue  # optional extras; command-line entry points
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if callable(value) and getattr(value, "__module__", "").startswith("nemo.lens._"):
                private.append(f"{info.name}.{name} ({value.__module__})")
    assert private == []


def test_the_handle_module_flag_follows_set_up() -> None:
    assert handle_module._INITIALIZED is False
    handle = setup_telemetry(
        NemoLensConfig(enabled=True, exporter="none"), span_exporter=InMemorySpanExporter()
    )
    assert handle_module._INITIALIZED is True
    handle.shutdown()
    assert handle_module._INITIALIZED is False
