"""Enabled spans through the ``file`` exporter and its batch processor, end to end.

Runs in its own interpreter (``python -m bench.throughput``) so its peak RSS
is its own. Set-up is the real one -- ``setup_telemetry`` with
``exporter="file"`` and every group on -- with the file exporter's default
batch settings (the parent clears every ``OTEL_*`` variable), writing to a
temporary directory. Spans are ``managed_span`` blocks with one attribute.

``burst``
    Emit ``--spans`` spans as fast as one thread can, then shut down (which
    flushes). Throughput is lines written over the time from the first span to
    the end of the flush.
    With ``--sdk`` the primitives make the SDK's spans instead of recording
    them (a span processor of the application's own is added, as a user
    would): the baseline the recording path is compared with.
``sustained``
    Emit ``--rate`` spans per second for ``--seconds`` seconds, paced in 5 ms
    ticks, sampling RSS every quarter second; then shut down.
``queued``
    The memory a queued span holds: set-up with an exporter whose ``export``
    blocks until shutdown, so every span emitted stays queued; ``--spans``
    spans are emitted under :mod:`tracemalloc` and the growth divided by
    their number.

Dropped spans are counted end to end: ``emitted - lines written``, whatever
batch processor set-up installed and whatever it reports. (The SDK's
``BatchSpanProcessor`` drops silently but for a warning per span, and its drop
counter is an SDK-internal metric that is off by default.) Warnings from the
``opentelemetry`` and ``nemo.lens`` loggers are kept off stderr; the SDK's
per-span drop warnings are counted as a cross-check and the first few other
warnings are kept in the results.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["DropCounter", "main", "rss_mib"]

_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def rss_mib() -> float:
    """This process's resident set size now, in MiB (the peak where /proc is missing)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * _PAGE_SIZE / 2**20
    except OSError:
        return _peak_rss_mib()


def _peak_rss_mib() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes.
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10


class DropCounter(logging.Handler):
    """Counts the SDK's per-span "queue full" warnings; keeps the first few others.

    The SDK's ``BatchSpanProcessor`` logs one warning per dropped span.
    nemo.lens's own processor logs the first drop and the total at shutdown;
    those messages are kept (``warnings``) as evidence next to the count.
    """

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.dropped = 0
        self.other: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        """Count a drop warning; remember the first few other messages."""
        message = record.getMessage()
        if message.startswith("Queue full"):
            self.dropped += 1
        elif len(self.other) < 5:
            self.other.append(message[:300])


def _count_lines(path: Path) -> tuple[int, int, bool]:
    """Span lines, bytes, and whether the last line is a complete JSON object.

    Only the lines of finished spans count (``end_time_unix_nano``): the file also
    holds its lifetime's header, and records of spans still open (docs/trace-format.md).
    """
    lines = 0
    last = b""
    with open(path, "rb") as stream:
        for line in stream:
            if b'"end_time_unix_nano":' in line:
                lines += 1
            last = line
    tail = last.rstrip(b"\n")
    try:
        complete = isinstance(json.loads(tail), dict) if tail else lines == 0
    except ValueError:
        complete = False
    return lines, path.stat().st_size, complete


def _emitter() -> Callable[[int, int], None]:
    from nemo.lens import managed_span
    from nemo.lens.groups import SpanGroup

    def emit(first: int, count: int) -> None:
        for iteration in range(first, first + count):
            with managed_span(SpanGroup.STEP, "bench.span", iteration=iteration):
                pass

    return emit


def _burst(emit: Callable[[int, int], None], spans: int) -> dict[str, Any]:
    samples = []
    chunk = 10_000
    start = time.perf_counter()
    for first in range(0, spans, chunk):
        emit(first, min(chunk, spans - first))
        samples.append(rss_mib())
    return {
        "emitted": spans,
        "emit_s": time.perf_counter() - start,
        "rss_max_during_mib": max(samples, default=rss_mib()),
        "_start": start,
    }


def _sustained(emit: Callable[[int, int], None], rate: int, seconds: float) -> dict[str, Any]:
    tick = 0.005
    emitted = 0
    rss_series: list[tuple[float, float]] = []
    next_sample = 0.0
    behind_ticks = 0
    start = time.perf_counter()
    while True:
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            break
        # At most four ticks' worth at once, so that a stall is followed by a
        # catch-up at a bounded pace and the clock is read often enough to stop.
        due = min(int(rate * elapsed) - emitted, max(1, int(rate * tick * 4)))
        if due > 0:
            emit(emitted, due)
            emitted += due
        if elapsed >= next_sample:
            rss_series.append((round(elapsed, 3), round(rss_mib(), 2)))
            while next_sample <= elapsed:
                next_sample += 0.25
        pause = tick - (time.perf_counter() - start - elapsed)
        if pause > 0:
            time.sleep(pause)
        else:
            behind_ticks += 1
    duration = time.perf_counter() - start
    warmup = min(2.0, seconds / 3)
    settled = [rss for t, rss in rss_series if t >= warmup]
    return {
        "emitted": emitted,
        "target_rate": rate,
        "seconds": seconds,
        "achieved_rate": emitted / duration,
        "ticks_behind": behind_ticks,
        "rss_series_mib": rss_series,
        "rss_warmup_s": warmup,
        "rss_growth_after_warmup_mib": (max(settled) - settled[0]) if settled else 0.0,
        "_start": start,
    }


def _queued(spans: int) -> dict[str, Any]:
    import gc
    import threading
    import tracemalloc

    from opentelemetry.sdk.trace.export import SpanExportResult

    from nemo.lens import NemoLensConfig, setup_telemetry

    release = threading.Event()

    class Stalled:
        def export(self, batch: Any) -> SpanExportResult:
            release.wait()
            return SpanExportResult.SUCCESS

        def shutdown(self) -> None:
            release.set()

        def force_flush(self, timeout_millis: int = 30_000) -> bool:
            return True

    config = NemoLensConfig(enabled=True, span_groups="all", metrics_enabled=False, run_id="bench")
    handle = setup_telemetry(config, span_exporter=Stalled())  # type: ignore[arg-type]
    emit = _emitter()
    emit(0, 100)  # warm up: the export thread takes these and stalls on them
    time.sleep(0.5)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    emit(100, spans)
    gc.collect()
    growth = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    release.set()
    handle.shutdown(timeout_ms=600_000)
    return {"mode": "queued", "emitted": spans, "bytes_per_queued_span": growth / spans}


def file_config(path: Path) -> Any:
    """The configuration every file-exporter benchmark sets up: every group on, no metrics."""
    from nemo.lens import NemoLensConfig

    return NemoLensConfig(
        enabled=True,
        exporter="file",
        trace_file=str(path),
        span_groups="all",
        metrics_enabled=False,
        run_id="bench",
    )


def run(mode: str, spans: int, rate: int, seconds: float, sdk: bool = False) -> dict[str, Any]:
    """Set up, emit, shut down, and measure; see the module docstring."""
    from opentelemetry.sdk.trace import SpanProcessor

    from nemo.lens import setup_telemetry

    if mode == "queued":
        return _queued(spans)
    from nemo.lens._sdk.processors import (
        FILE_MAX_EXPORT_BATCH_SIZE,
        FILE_MAX_QUEUE_SIZE,
        FILE_SCHEDULE_DELAY_MILLIS,
    )

    counter = DropCounter()
    for name in ("opentelemetry", "nemo.lens"):
        logger = logging.getLogger(name)
        logger.addHandler(counter)
        logger.propagate = False  # one SDK warning per dropped span would flood stderr

    with tempfile.TemporaryDirectory(prefix="nemo-lens-bench-") as directory:
        path = Path(directory) / "spans.jsonl"
        handle = setup_telemetry(file_config(path))
        provider: Any = handle.tracer_provider
        if sdk:
            # A processor of the application's own: the primitives make SDK spans.
            provider.add_span_processor(SpanProcessor())
        recording = bool(provider.records)
        emit = _emitter()
        emit(0, 1000)  # warm up; flushed with the rest and subtracted below
        warm = 1000
        rss_before = rss_mib()
        cpu_start = time.process_time()
        emitter_cpu_start = time.thread_time()
        result = _burst(emit, spans) if mode == "burst" else _sustained(emit, rate, seconds)
        emitter_cpu = time.thread_time() - emitter_cpu_start
        start = result.pop("_start")
        flush_start = time.perf_counter()
        flushed = handle.shutdown(timeout_ms=600_000)
        end = time.perf_counter()
        cpu = time.process_time() - cpu_start
        lines, size, complete = _count_lines(path)

    written = lines - warm
    emitted = int(result["emitted"])
    result.update(
        {
            "mode": mode,
            "recording": recording,
            "written": written,
            "dropped": emitted - written,
            "dropped_logged": counter.dropped,
            "warnings": counter.other,
            "flush_s": end - flush_start,
            "total_s": end - start,
            "spans_per_s": written / (end - start),
            # CPU time is what a busy machine does not distort: the cost of a
            # span to its emitting thread, and to the process (export included).
            "cpu_s": cpu,
            "cpu_us_per_span": 1e6 * cpu / max(emitted, 1),
            "emitter_cpu_us_per_span": 1e6 * emitter_cpu / max(emitted, 1),
            "export_cpu_us_per_span": 1e6 * (cpu - emitter_cpu) / max(emitted, 1),
            "spans_per_cpu_s": emitted / cpu if cpu else 0.0,
            "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
            "bytes_per_span": size / lines if lines else 0.0,
            "last_line_complete": complete,
            "shutdown_in_time": flushed,
            "rss_before_mib": rss_before,
            "rss_peak_mib": _peak_rss_mib(),
            "queue_size": FILE_MAX_QUEUE_SIZE,
            "batch_size": FILE_MAX_EXPORT_BATCH_SIZE,
            "schedule_delay_ms": FILE_SCHEDULE_DELAY_MILLIS,
        }
    )
    return result


def main(argv: Sequence[str] | None = None) -> None:
    """Print the measurements as one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=("burst", "sustained", "queued"))
    parser.add_argument("--spans", type=int, default=1_000_000)
    parser.add_argument("--rate", type=int, default=20_000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--sdk", action="store_true", help="the SDK's spans (the baseline)")
    args = parser.parse_args(argv)
    print(json.dumps(run(args.mode, args.spans, args.rate, args.seconds, args.sdk)))


if __name__ == "__main__":
    main()
