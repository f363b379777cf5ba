"""Shared helpers for the command-line tests: hand-made trace lines and a CLI runner.

Hand-made lines have exact, round durations, so a test can state the table a
user would see; traces from the real exporters (see the ``real_trace``
fixture) check that the reader and the writer agree on the format.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nemo.lens import NemoLensConfig, managed_span, semconv, setup_telemetry, span_cm
from nemo.lens.cli import main
from nemo.lens.groups import SpanGroup

MS = 1_000_000
"""Nanoseconds per millisecond."""
EPOCH = 1_700_000_000_000_000_000
"""A start time for hand-made spans (late 2023, in nanoseconds)."""


def span_dict(
    name: str,
    *,
    start_ms: float,
    end_ms: float,
    group: str | None = None,
    rank: int | None = 0,
    run: str = "run1",
    span_id: str | None = None,
    parent: str | None = None,
    trace_id: str = "ab" * 16,
    attributes: dict[str, Any] | None = None,
    events: Sequence[dict[str, Any]] = (),
    status: tuple[str, str | None] = ("UNSET", None),
) -> dict[str, Any]:
    """One span in the shape of nemo.lens._sdk.exporters.encoding, times in ms after EPOCH."""
    attrs = dict(attributes or {})
    if group is not None:
        attrs[semconv.SPAN_GROUP] = group
    resource: dict[str, Any] = {"service.name": "svc", "nemo.run_id": run}
    if rank is not None:
        resource["nemo.rank"] = rank
    return {
        "name": name,
        "trace_id": trace_id,
        "span_id": span_id,
        "parent_span_id": parent,
        "kind": "INTERNAL",
        "start_time_unix_nano": EPOCH + round(start_ms * MS),
        "end_time_unix_nano": EPOCH + round(end_ms * MS),
        "status": {"code": status[0], "description": status[1]},
        "attributes": attrs,
        "events": list(events),
        "links": [],
        "resource": resource,
        "scope": {"name": "nemo.lens", "version": "0.2.0"},
    }


def line(record: dict[str, Any]) -> str:
    """The record as the exporters write it: compact JSON on one line."""
    return json.dumps(record, separators=(",", ":"))


def write_lines(path: Path, lines: Sequence[str]) -> Path:
    """Write ``lines`` (each gets a newline) to ``path`` and return it."""
    path.write_text("".join(item + "\n" for item in lines), encoding="utf-8")
    return path


@dataclass
class Result:
    """What a user sees from one command: the exit status and both streams."""

    status: int
    out: str
    err: str

    @property
    def out_lines(self) -> list[str]:
        return self.out.splitlines()

    @property
    def err_lines(self) -> list[str]:
        return self.err.splitlines()


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    """Run ``nemo-lens ARGS...`` in-process and capture what it printed."""

    def invoke(*argv: str) -> Result:
        capsys.readouterr()  # drop anything printed before the command
        status = main(list(argv))
        captured = capsys.readouterr()
        return Result(status, captured.out, captured.err)

    return invoke


def record_training(steps: int) -> None:
    """Emit the spans of a tiny instrumented job through the real primitives."""
    with managed_span(SpanGroup.JOB, "train.job"):
        with managed_span(SpanGroup.MODEL_INIT, "train.model_init"):
            pass
        for iteration in range(1, steps + 1):
            with managed_span(SpanGroup.STEP, "train.step", iteration=iteration):
                with managed_span(SpanGroup.FORWARD_BACKWARD, "train.forward_backward"):
                    pass
                with managed_span(SpanGroup.OPTIMIZER, "train.optimizer"):
                    pass
        with managed_span(SpanGroup.CHECKPOINT, "train.checkpoint"):
            pass
        with span_cm("ungated.helper"):  # no group: summarized under (none)
            pass


@pytest.fixture
def real_trace(tmp_path: Path) -> Iterator[Callable[..., Path]]:
    """Write traces with the real ``file`` exporter: ``make(rank=0, world_size=1, steps=3)``."""

    def make(rank: int = 0, world_size: int = 1, steps: int = 3) -> Path:
        config = NemoLensConfig(
            enabled=True,
            exporter="file",
            span_groups="per_step",
            metrics_enabled=False,
            export_strategy="all_ranks",
            run_id="testrun",
            trace_file=str(tmp_path / "trace-rank{rank}.jsonl"),
        )
        handle = setup_telemetry(config, rank=rank, world_size=world_size, _allow_reinit=True)
        try:
            record_training(steps)
        finally:
            handle.shutdown()
        return tmp_path / f"trace-rank{rank}.jsonl"

    yield make
