"""The logging bridge: stdlib log records exported with the trace context they were logged in."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry._logs import SeverityNumber
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from nemo.lens.config import NemoLensConfig
from nemo.lens.handle import TelemetryHandle, setup_telemetry
from nemo.lens.helpers import span_cm
from nemo.lens.logging_bridge import (
    LoggingBridgeHandler,
    TraceContextFilter,
    remove_logging_bridge,
    setup_logging_bridge,
)

_APP = "nemo_lens_test_app"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in list(os.environ):
        if key.startswith(("NEMO_LENS_", "OTEL_")):
            monkeypatch.delenv(key)
    loggers = [logging.getLogger(), logging.getLogger(_APP), logging.getLogger(f"{_APP}.child")]
    saved = [(logger, logger.level, list(logger.handlers), logger.propagate) for logger in loggers]
    for logger in loggers[1:]:
        logger.setLevel(logging.DEBUG)
    yield
    for logger, level, handlers, propagate in saved:
        for handler in list(logger.handlers):
            if handler not in handlers:
                logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate


def _set_up(logs: InMemoryLogRecordExporter, **fields: Any) -> TelemetryHandle:
    fields.setdefault("enabled", True)
    fields.setdefault("exporter", "none")
    fields.setdefault("metrics_enabled", False)
    fields.setdefault("logs_enabled", True)
    return setup_telemetry(
        NemoLensConfig(**fields), span_exporter=InMemorySpanExporter(), log_exporter=logs
    )


def _exporter() -> InMemoryLogRecordExporter:
    # The SDK leaves this constructor unannotated; keep the one ignore here.
    exporter: InMemoryLogRecordExporter = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
    return exporter


def _records(logs: InMemoryLogRecordExporter) -> list[ReadableLogRecord]:
    return list(logs.get_finished_logs())


def _bridges(name: str = "") -> list[logging.Handler]:
    return [h for h in logging.getLogger(name).handlers if isinstance(h, LoggingBridgeHandler)]


# -- what arrives ---------------------------------------------------------------------


def test_a_record_logged_inside_a_span_carries_its_trace_and_span_id() -> None:
    logs = _exporter()
    _set_up(logs)
    setup_logging_bridge(_APP)

    with span_cm("train.step") as span:
        logging.getLogger(_APP).info("loss is %.2f", 0.25, extra={"iteration": 7})
    context = span.get_span_context()

    (exported,) = _records(logs)
    record = exported.log_record
    assert context.is_valid
    assert (record.trace_id, record.span_id) == (context.trace_id, context.span_id)
    assert record.body == "loss is 0.25"
    assert (record.severity_number, record.severity_text) == (SeverityNumber.INFO, "INFO")
    assert exported.instrumentation_scope is not None
    assert exported.instrumentation_scope.name == _APP
    attributes = dict(record.attributes or {})
    assert attributes["iteration"] == 7
    assert attributes["code.function.name"] == (
        "test_a_record_logged_inside_a_span_carries_its_trace_and_span_id"
    )
    assert attributes["code.file.path"] == __file__
    assert isinstance(attributes["code.line.number"], int)
    # The stamps for formatters are not exported: the record has real id fields.
    assert not {"otelTraceID", "otelSpanID", "otelTraceSampled"} & set(attributes)


def test_a_record_outside_any_span_has_no_trace_context() -> None:
    logs = _exporter()
    _set_up(logs)
    setup_logging_bridge(_APP)

    logging.getLogger(_APP).warning("no span here")

    (exported,) = _records(logs)
    assert not exported.log_record.trace_id
    assert not exported.log_record.span_id
    assert exported.log_record.severity_number == SeverityNumber.WARN


def test_the_root_bridge_exports_records_of_every_propagating_logger() -> None:
    logs = _exporter()
    _set_up(logs)
    logging.getLogger().setLevel(logging.INFO)
    setup_logging_bridge()

    logging.getLogger(f"{_APP}.child").info("from below")

    (exported,) = _records(logs)
    assert exported.log_record.body == "from below"
    assert exported.instrumentation_scope is not None
    assert exported.instrumentation_scope.name == f"{_APP}.child"


def test_a_logged_exception_becomes_exception_attributes() -> None:
    logs = _exporter()
    _set_up(logs)
    setup_logging_bridge(_APP)

    try:
        empty: dict[str, int] = {}
        empty["missing"]
    except KeyError:
        logging.getLogger(_APP).exception("lookup failed")

    (exported,) = _records(logs)
    attributes = dict(exported.log_record.attributes or {})
    assert exported.log_record.severity_number == SeverityNumber.ERROR
    assert attributes["exception.type"] == "KeyError"
    assert attributes["exception.message"] == "'missing'"
    assert "Traceback (most recent call last)" in str(attributes["exception.stacktrace"])
    assert "KeyError: 'missing'" in str(attributes["exception.stacktrace"])


def test_extra_values_that_are_not_attribute_values_are_sent_as_text() -> None:
    logs = _exporter()
    _set_up(logs)
    setup_logging_bridge(_APP)

    logging.getLogger(_APP).info(
        "x", extra={"shape": (2, 3), "config": {"lr": 0.1}, "mixed": [1, "a"], "nothing": None}
    )

    attributes = dict(_records(logs)[0].log_record.attributes or {})
    shape = attributes["shape"]
    assert isinstance(shape, Sequence)
    assert list(shape) == [2, 3]
    assert attributes["config"] == "{'lr': 0.1}"
    assert attributes["mixed"] == "[1, 'a']"
    assert "nothing" not in attributes


@pytest.mark.parametrize(
    ("level", "severity"),
    [
        (logging.DEBUG, SeverityNumber.DEBUG),
        (logging.INFO, SeverityNumber.INFO),
        (25, SeverityNumber.INFO3),  # a custom level between INFO and WARNING keeps its place
        (logging.WARNING, SeverityNumber.WARN),
        (logging.ERROR, SeverityNumber.ERROR),
        (logging.CRITICAL, SeverityNumber.FATAL),
    ],
)
def test_levels_map_to_severity_numbers(level: int, severity: SeverityNumber) -> None:
    logs = _exporter()
    _set_up(logs)
    setup_logging_bridge(_APP, level=logging.DEBUG)

    logging.getLogger(_APP).log(level, "x")

    assert _records(logs)[0].log_record.severity_number == severity


def test_the_handler_level_filters() -> None:
    logs = _exporter()
    _set_up(logs)
    setup_logging_bridge(_APP, level="warning")

    logging.getLogger(_APP).info("quiet")
    logging.getLogger(_APP).error("loud")

    assert [r.log_record.body for r in _records(logs)] == ["loud"]


def test_a_record_passing_two_bridges_is_exported_once() -> None:
    logs = _exporter()
    _set_up(logs)
    logging.getLogger().setLevel(logging.INFO)
    setup_logging_bridge()
    setup_logging_bridge(_APP)

    logging.getLogger(_APP).info("once")

    assert [r.log_record.body for r in _records(logs)] == ["once"]


# -- trace ids for the application's own handlers -------------------------------------


def test_other_handlers_can_print_the_trace_ids() -> None:
    logs = _exporter()
    _set_up(logs)
    stream = io.StringIO()
    console = logging.StreamHandler(stream)
    console.addFilter(TraceContextFilter())
    console.setFormatter(logging.Formatter("%(otelTraceID)s %(otelSpanID)s %(message)s"))
    logger = logging.getLogger(_APP)
    logger.addHandler(console)  # before the bridge: stamps come from its own filter
    setup_logging_bridge(_APP)

    with span_cm("step") as span:
        logger.info("inside")
    logger.info("outside")

    context = span.get_span_context()
    assert stream.getvalue().splitlines() == [
        f"{trace.format_trace_id(context.trace_id)} {trace.format_span_id(context.span_id)} inside",
        "0 0 outside",
    ]


def test_handlers_after_the_bridge_see_the_stamps_without_a_filter() -> None:
    logs = _exporter()
    _set_up(logs)
    setup_logging_bridge(_APP)
    stream = io.StringIO()
    later = logging.StreamHandler(stream)
    later.setFormatter(logging.Formatter("%(otelTraceSampled)s %(message)s"))
    logging.getLogger(_APP).addHandler(later)

    with span_cm("step"):
        logging.getLogger(_APP).info("sampled")

    assert stream.getvalue() == "True sampled\n"


# -- installing and removing ----------------------------------------------------------


def test_set_up_does_not_install_the_bridge() -> None:
    _set_up(_exporter())

    assert _bridges() == []


def test_without_a_logger_provider_nothing_is_installed(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="nemo.lens.logging_bridge"):
        assert setup_logging_bridge(_APP) is None
        setup_telemetry(NemoLensConfig(enabled=True, exporter="none", metrics_enabled=False))
        assert setup_logging_bridge(_APP) is None

    assert _bridges(_APP) == []
    assert "telemetry is not set up" in caplog.text
    assert "logs_enabled=False" in caplog.text


def test_setting_up_twice_keeps_one_handler_and_takes_the_new_level() -> None:
    _set_up(_exporter())

    first = setup_logging_bridge(_APP)
    second = setup_logging_bridge(_APP, level=logging.ERROR)

    assert first is second
    assert _bridges(_APP) == [first]
    assert first is not None and first.level == logging.ERROR


def test_an_sdk_provider_the_application_installed_gets_one_handler(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from opentelemetry import _logs as otel_logs
    from opentelemetry.sdk._logs import LoggerProvider

    class AppProvider(LoggerProvider):  # a subclass counts, as in 0.1.0
        pass

    provider = AppProvider()
    monkeypatch.setattr(otel_logs, "get_logger_provider", lambda: provider)

    first = setup_logging_bridge(_APP, level=logging.WARNING)
    second = setup_logging_bridge(_APP, level=logging.WARNING)

    assert first is not None and first is second
    assert _bridges(_APP) == [first]
    assert first.level == logging.WARNING
    assert first._provider is provider
    provider.shutdown()


def test_a_provider_that_is_not_the_sdks_gets_no_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry import _logs as otel_logs

    monkeypatch.setattr(otel_logs, "get_logger_provider", object)

    assert setup_logging_bridge(_APP) is None
    assert _bridges(_APP) == []


def test_remove_stops_the_export() -> None:
    logs = _exporter()
    _set_up(logs)
    setup_logging_bridge(_APP)
    logging.getLogger(_APP).info("kept")

    assert remove_logging_bridge(_APP) is True
    assert remove_logging_bridge(_APP) is False
    logging.getLogger(_APP).info("after removal")

    assert [r.log_record.body for r in _records(logs)] == ["kept"]
    assert _bridges(_APP) == []


def test_the_bridge_follows_reinitialisation_and_goes_quiet_after_shutdown() -> None:
    first, second = _exporter(), _exporter()
    _set_up(first)
    setup_logging_bridge(_APP)
    logging.getLogger(_APP).info("one")

    handle = setup_telemetry(
        NemoLensConfig(enabled=True, exporter="none", metrics_enabled=False, logs_enabled=True),
        log_exporter=second,
        _allow_reinit=True,
    )
    logging.getLogger(_APP).info("two")
    handle.shutdown()
    logging.getLogger(_APP).info("three")  # nowhere to go: dropped, no error

    assert [r.log_record.body for r in _records(first)] == ["one"]
    assert [r.log_record.body for r in _records(second)] == ["two"]


def test_bad_arguments_are_rejected_with_the_fix() -> None:
    with pytest.raises(ValueError, match="unknown logging level 'LOUD'; use DEBUG, INFO"):
        setup_logging_bridge(_APP, level="LOUD")
    with pytest.raises(TypeError, match="logger_name must be a str"):
        setup_logging_bridge(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="level must be a logging level"):
        setup_logging_bridge(_APP, level=2.5)  # type: ignore[arg-type]


def test_importing_the_bridge_stays_off_the_sdk() -> None:
    code = textwrap.dedent(
        """
        import json, sys
        from nemo.lens.logging_bridge import setup_logging_bridge
        installed = setup_logging_bridge()
        print(json.dumps({
            "installed": installed is not None,
            "sdk": sorted(m for m in sys.modules if m.startswith("opentelemetry.sdk")),
        }))
        """
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout.strip().splitlines()[-1]) == {"installed": False, "sdk": []}
