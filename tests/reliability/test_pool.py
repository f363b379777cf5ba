"""``with multiprocessing.Pool() as pool: pool.map(...)`` keeps every finished span.

Leaving the ``with`` block calls ``pool.terminate()``: the workers are killed
by SIGTERM the moment the last result is in, with no ``atexit``, no
``multiprocessing`` finalizer and no flush. Spans a worker had finished but
not yet written were lost: 0 of 4,000 arrived (1,000 with ``handle_signals``).

What a user must see: every span a task finished is in the trace when
``map`` returns, with no change to the code -- for workers forked from a
process that set telemetry up (``fork``, the default on Linux) and for
workers that set it up themselves in the pool's ``initializer`` (``spawn``,
``forkserver``, or a pool started before set-up). The ``file`` exporter in
a worker process writes each span before ``end()`` returns.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path

import pytest

from tests.reliability.conftest import JOB_PRELUDE, read_spans, run_job

TASKS = 40
SPANS_PER_TASK = 100

_POOL_JOB = """
import multiprocessing
from nemo.lens import NemoLensConfig, managed_span, setup_telemetry

method, where = sys.argv[1], sys.argv[2]
tasks, per_task = int(sys.argv[3]), int(sys.argv[4])


def set_up():
    setup_telemetry(NemoLensConfig.from_env())


def task(n):
    with managed_span("step", "task", task=n):
        for i in range(per_task - 1):
            with managed_span("step", "item", task=n, i=i):
                pass
    return os.getpid()


if __name__ == "__main__":
    handle = setup_telemetry(NemoLensConfig.from_env()) if where == "parent" else None
    initializer = set_up if where == "initializer" else None
    context = multiprocessing.get_context(method)
    with context.Pool(4, initializer=initializer) as pool:
        workers = set(pool.map(task, range(tasks)))
    finished = handle.shutdown() if handle is not None else None
    report(workers=len(workers), finished=finished)
"""


@pytest.mark.parametrize(
    ("method", "where"),
    [("fork", "parent"), ("fork", "initializer"), ("spawn", "initializer")],
    ids=["fork-after-set-up", "fork-set-up-in-initializer", "spawn-set-up-in-initializer"],
)
def test_a_pool_left_by_its_with_block_delivers_every_finished_span(
    tmp_path: Path, method: str, where: str
) -> None:
    path = tmp_path / "spans.jsonl"
    script = tmp_path / "job.py"
    # spawn re-imports __main__ in each worker: the job must be a file.
    script.write_text(textwrap.dedent(JOB_PRELUDE) + _POOL_JOB, encoding="utf-8")
    job = run_job(
        f"import runpy; runpy.run_path({str(script)!r}, run_name='__main__')",
        method,
        where,
        str(TASKS),
        str(SPANS_PER_TASK),
        env={
            "NEMO_LENS_ENABLED": "1",
            "NEMO_LENS_EXPORTER": "file",
            "NEMO_LENS_TRACE_FILE": str(path),
            "NEMO_LENS_SPAN_GROUPS": "all",
            "NEMO_LENS_METRICS_ENABLED": "0",
        },
        timeout=180,
    )
    assert job.returncode == 0, job.stderr
    assert job.result["workers"] >= 1
    assert job.result["finished"] in (True, None)
    spans = read_spans(path)
    per_task = Counter(span["attributes"]["task"] for span in spans)
    assert per_task == dict.fromkeys(range(TASKS), SPANS_PER_TASK)
    assert job.stderr == ""
