"""SIGTERM mid-run: with ``handle_signals`` the job flushes and marks open spans truncated.

Each scenario is a real process killed by a real signal while its spans sit in
the file exporter's queue (the export timer is set to a minute so nothing would
leave the queue on its own) and two spans are still open. What a user must see:

* opted in, no handler of its own: every finished span arrives, the open ones
  arrive marked ``nemo.span.truncated``, and the process still dies *by
  SIGTERM* (the scheduler sees the same status as without nemo.lens);
* not opted in: the queue is lost (the control: the handler is what saves it);
* an application handler is chained, after the flush, not replaced: one that
  exits gets its exit status, one that lets the job finish its step keeps
  telemetry running;
* SIGKILL cannot be handled: exactly what was written before it survives.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from nemo.lens._core import signals as _signals
from nemo.lens.config import NemoLensConfig
from nemo.lens.handle import setup_telemetry
from nemo.lens.semconv import SPAN_TRUNCATED
from nemo.lens.state import is_span_group_enabled
from tests.reliability.conftest import RunningJob, read_spans

FINISHED = 3000  # fewer than one batch: only a flush writes them before a minute is up

_JOB = """
from nemo.lens import NemoLensConfig, managed_span, setup_telemetry

path, spans, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
resume = threading.Event()
if mode == "app-exits":
    def on_term(signum, frame):
        with open(path, encoding="utf-8") as written:
            report(lines_before_app_handler=sum('"end_time_unix_nano"' in line for line in written))
        sys.exit(143)
    signal.signal(signal.SIGTERM, on_term)
elif mode == "app-continues":
    def on_term(signum, frame):
        resume.set()  # like a trainer that checkpoints at the next step boundary
    signal.signal(signal.SIGTERM, on_term)

handle = setup_telemetry(NemoLensConfig.from_env())
report(handler_installed=signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL)
with managed_span("job", "train.job"):
    for i in range(spans):
        with managed_span("step", "train.step", iteration=i):
            pass
    if mode == "kill":
        handle.force_flush()
        for i in range(spans, 2 * spans):
            with managed_span("step", "train.step", iteration=i):
                pass
    with managed_span("step", "train.open"):
        print("READY", flush=True)
        while not resume.wait(0.01):
            pass
    with managed_span("checkpoint", "train.checkpoint"):
        pass
handle.shutdown()
report(done=True)
"""


def _env(path: Path, *, handle_signals: bool) -> dict[str, str]:
    env = {
        "NEMO_LENS_ENABLED": "1",
        "NEMO_LENS_EXPORTER": "file",
        "NEMO_LENS_TRACE_FILE": str(path),
        "NEMO_LENS_SPAN_GROUPS": "all",
        "NEMO_LENS_METRICS_ENABLED": "0",
        # Nothing leaves the queue by timer during the test: only a flush writes.
        "OTEL_BSP_SCHEDULE_DELAY": "60000",
    }
    if handle_signals:
        env["NEMO_LENS_HANDLE_SIGNALS"] = "1"
    return env


def _run_and_signal(
    tmp_path: Path, mode: str, signum: int, *, handle_signals: bool = True
) -> tuple[Any, list[dict[str, Any]]]:
    path = tmp_path / "spans.jsonl"
    job = RunningJob(
        _JOB, str(path), str(FINISHED), mode, env=_env(path, handle_signals=handle_signals)
    )
    job.wait_for("READY")
    job.process.send_signal(signum)
    done = job.finish(timeout=60)
    return done, read_spans(path) if path.exists() else []


def _by_name(spans: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        found.setdefault(span["name"], []).append(span)
    return found


def test_sigterm_flushes_truncates_and_still_dies_by_sigterm(tmp_path: Path) -> None:
    job, spans = _run_and_signal(tmp_path, "default", signal.SIGTERM)
    assert job.returncode == -signal.SIGTERM, job.stderr
    assert "Traceback" not in job.stderr
    names = _by_name(spans)
    assert len(names["train.step"]) == FINISHED
    assert not any(SPAN_TRUNCATED in s["attributes"] for s in names["train.step"])
    for still_open in ("train.open", "train.job"):
        (span,) = names[still_open]
        assert span["attributes"][SPAN_TRUNCATED] is True
        assert [(e["name"], e["attributes"]) for e in span["events"]] == [
            (
                "nemo.span.truncated",
                {"nemo.span.truncated.reason": "still open at telemetry shutdown"},
            )
        ]
    assert "train.checkpoint" not in names


def test_without_opting_in_sigterm_loses_the_queue(tmp_path: Path) -> None:
    job, spans = _run_and_signal(tmp_path, "default", signal.SIGTERM, handle_signals=False)
    assert job.returncode == -signal.SIGTERM
    assert job.result["handler_installed"] is False
    assert spans == []


def test_an_application_handler_runs_after_the_flush_and_decides_the_exit(
    tmp_path: Path,
) -> None:
    job, spans = _run_and_signal(tmp_path, "app-exits", signal.SIGTERM)
    assert job.returncode == 143, job.stderr
    # The application's handler was chained, not replaced, and ran after the
    # finished spans were on disk.
    assert job.result["lines_before_app_handler"] == FINISHED
    # Its SystemExit unwound the open spans, which ended then; the exit hook
    # exported them.
    names = _by_name(spans)
    assert len(names["train.step"]) == FINISHED
    assert len(names["train.open"]) == 1
    assert len(names["train.job"]) == 1


def test_an_application_handler_that_continues_keeps_telemetry_running(tmp_path: Path) -> None:
    job, spans = _run_and_signal(tmp_path, "app-continues", signal.SIGTERM)
    assert job.returncode == 0, job.stderr
    assert job.result["done"] is True
    names = _by_name(spans)
    assert len(names["train.step"]) == FINISHED
    # The step after the signal was still traced, and nothing was cut short.
    assert len(names["train.checkpoint"]) == 1
    assert not any(SPAN_TRUNCATED in span["attributes"] for span in spans)


def test_sigkill_keeps_exactly_what_was_written_before_it(tmp_path: Path) -> None:
    # What docs/reliability.md promises for SIGKILL: spans already written stay
    # (whole lines); queued spans and open spans are gone.
    job, spans = _run_and_signal(tmp_path, "kill", signal.SIGKILL)
    assert job.returncode == -signal.SIGKILL
    assert [span["attributes"]["iteration"] for span in spans] == list(range(FINISHED))


# -- in-process: the opt-in itself ------------------------------------------------------


def _on_term(signum: int, frame: object) -> None:
    """An application's handler (never called here)."""


@pytest.fixture
def application_handler() -> Any:
    original = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, _on_term)
    try:
        yield _on_term
    finally:
        signal.signal(signal.SIGTERM, original)


def test_set_up_chains_and_shutdown_restores_the_application_handler(
    application_handler: Any,
) -> None:
    handle = setup_telemetry(NemoLensConfig(enabled=True, exporter="none", handle_signals=True))
    assert _signals.installed()
    assert signal.getsignal(signal.SIGTERM) is not application_handler
    handle.shutdown()
    assert signal.getsignal(signal.SIGTERM) is application_handler


def test_signals_are_left_alone_unless_asked(application_handler: Any) -> None:
    handle = setup_telemetry(NemoLensConfig(enabled=True, exporter="none"))
    assert signal.getsignal(signal.SIGTERM) is application_handler
    handle.shutdown()


def test_handle_signals_outside_the_main_thread_is_refused_before_anything_changes() -> None:
    errors: list[BaseException] = []

    def set_up() -> None:
        try:
            setup_telemetry(
                NemoLensConfig(
                    enabled=True, exporter="none", span_groups="all", handle_signals=True
                )
            )
        except BaseException as exc:
            errors.append(exc)

    before = signal.getsignal(signal.SIGTERM)
    thread = threading.Thread(target=set_up)
    thread.start()
    thread.join()
    (error,) = errors
    assert isinstance(error, RuntimeError)
    assert "main thread" in str(error) and "handle_signals" in str(error)
    assert not is_span_group_enabled("step")
    assert signal.getsignal(signal.SIGTERM) is before


def test_the_environment_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEMO_LENS_HANDLE_SIGNALS", "yes")
    assert NemoLensConfig.from_env().handle_signals is True
    monkeypatch.setenv("NEMO_LENS_HANDLE_SIGNALS", "sometimes")
    with pytest.raises(ValueError, match="NEMO_LENS_HANDLE_SIGNALS='sometimes' is not a boolean"):
        NemoLensConfig.from_env()
    with pytest.raises(TypeError, match="handle_signals must be a bool"):
        NemoLensConfig(handle_signals="yes")  # type: ignore[arg-type]
