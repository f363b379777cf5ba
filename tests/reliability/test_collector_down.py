"""The collector is down: the job runs on, memory stays bounded, one warning says so.

A job emits 100,000 spans to an OTLP endpoint that refuses connections. What a
user must see: the loop finishes, memory stops growing once the span queue is
full (the queue limit holds: the rest are dropped and counted), ``shutdown()``
returns within its timeout, the exit status is the job's own, and stderr holds
one warning about the collector -- not one per span, batch or retry.
"""

from __future__ import annotations

import re
import time

import pytest

from nemo.lens.handle import DEFAULT_SHUTDOWN_TIMEOUT_MS
from nemo.lens.providers import OTLP_MAX_EXPORT_BATCH_SIZE, OTLP_MAX_QUEUE_SIZE
from tests.reliability.conftest import run_job

SPANS = 100_000
WARM_AT = 20_000  # by now the queue is full: memory must not grow after this
SHUTDOWN_TIMEOUT_MS = 2000

# Peak memory growth allowed between the warm mark and the end of the loop.
# Each queued span holds about 3 KB; without the queue limit the 80,000 spans
# after the mark would add over 200 MB.
MAX_GROWTH_MB = 25

_EMIT = """
from nemo.lens import NemoLensConfig, managed_span, setup_telemetry

spans, warm_at, timeout_ms = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
explicit_shutdown, exit_status = sys.argv[4] == "shutdown", int(sys.argv[5])
handle = setup_telemetry(NemoLensConfig.from_env())
rss_warm = None
started = time.monotonic()
with managed_span("job", "train.job"):
    for i in range(spans - 1):
        with managed_span("step", "train.step", iteration=i):
            pass
        if i == warm_at:
            rss_warm = rss_mb()
loop_s = time.monotonic() - started
rss_end = rss_mb()
shutdown_s = finished = None
if explicit_shutdown:
    before = time.monotonic()
    finished = handle.shutdown(timeout_ms=timeout_ms)
    shutdown_s = time.monotonic() - before
report(loop_s=loop_s, rss_warm=rss_warm, rss_end=rss_end, shutdown_s=shutdown_s,
       finished=finished, ended_at=time.time())
sys.exit(exit_status)
"""


def _otlp_env(endpoint: str, protocol: str) -> dict[str, str]:
    return {
        "NEMO_LENS_ENABLED": "1",
        "NEMO_LENS_EXPORTER": "otlp",
        "NEMO_LENS_SPAN_GROUPS": "all",
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
    }


def _summary_count(stderr: str, what: str) -> int:
    found = re.search(rf"(\d+) span\(s\) {what}", stderr)
    return int(found.group(1)) if found else 0


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_a_refusing_collector_costs_bounded_memory_and_one_warning(
    dead_endpoint: str, protocol: str
) -> None:
    job = run_job(
        _EMIT,
        str(SPANS),
        str(WARM_AT),
        str(SHUTDOWN_TIMEOUT_MS),
        "shutdown",
        "0",
        env=_otlp_env(dead_endpoint, protocol),
    )
    assert job.returncode == 0, job.stderr
    result = job.result

    # shutdown() kept its promise, and said that not everything got out.
    assert result["shutdown_s"] < SHUTDOWN_TIMEOUT_MS / 1000 + 1.5
    assert result["finished"] is False

    # The queue limit holds: memory is flat once the queue is full ...
    assert result["rss_end"] - result["rss_warm"] < MAX_GROWTH_MB, result
    # ... because everything beyond the queue (and the one batch being retried)
    # was dropped and counted, not kept. A batch whose export gave up while the
    # job still ran (its retries outlast a loop slowed by a loaded machine) made
    # room that later spans took: what was kept at the end is what neither
    # dropped nor failed, and that fits in the queue plus one batch.
    dropped = _summary_count(job.stderr, r"dropped \(queue full\)")
    failed = _summary_count(job.stderr, "failed to export")
    assert dropped > 0, job.stderr
    assert SPANS - dropped - failed <= OTLP_MAX_QUEUE_SIZE + OTLP_MAX_EXPORT_BATCH_SIZE, job.stderr
    accounted = dropped + failed + _summary_count(job.stderr, "still queued")
    assert accounted <= SPANS

    # One warning about the collector, one about dropping, one summary (and the
    # shutdown timeout): nothing per span, per batch or per retry, and nothing
    # from the SDK's exporters ("Transient error ... retrying", "Queue full").
    lines = job.stderr.splitlines()
    assert len(job.stderr_lines("cannot export traces")) == 1, job.stderr
    assert len(job.stderr_lines("span queue is full")) == 1, job.stderr
    assert len(job.stderr_lines("could not deliver")) == 1, job.stderr
    assert all(line.startswith("nemo.lens: ") for line in lines), job.stderr
    assert len(lines) <= 4, job.stderr
    # The warning names the endpoint and the cause, so the reader knows what to fix.
    (warning,) = job.stderr_lines("cannot export traces")
    assert dead_endpoint.removeprefix("http://") in warning
    assert "refused" in warning.lower() or "unavailable" in warning.lower()


def test_exit_status_is_the_jobs_own_and_exit_is_bounded(silent_endpoint: str) -> None:
    # No shutdown() call: the exit hook does it, bounded by its default timeout,
    # although this collector would keep every export waiting for 10 s.
    job = run_job(
        _EMIT,
        "20000",
        "10000",
        "0",
        "no-shutdown",
        "3",
        env=_otlp_env(silent_endpoint, "grpc"),
    )
    exited_at = time.time()
    assert job.returncode == 3, job.stderr
    exit_delay = exited_at - job.result["ended_at"]
    assert exit_delay < DEFAULT_SHUTDOWN_TIMEOUT_MS / 1000 + 3.0
    assert "Traceback" not in job.stderr
