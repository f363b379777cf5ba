"""Eight threads emit spans while another toggles span groups: no error, no span lost.

Each emitting thread records the id of every span it actually got -- a
``managed_span`` that yielded a span, a ``trace_fn`` call that ran inside a new
span -- while a ninth thread keeps replacing the enabled set. A group switched
off between the check and the span's end must not break anything, and the
spans in the file must be exactly the ones the threads got: none missing (every
span emitted while its group was on arrives), none extra.
"""

from __future__ import annotations

from pathlib import Path

from tests.reliability.conftest import read_spans, run_job

_JOB = """
import random
from opentelemetry import trace
from nemo.lens import NemoLensConfig, managed_span, setup_telemetry, trace_fn
from nemo.lens.state import set_enabled_span_groups

iterations = int(sys.argv[1])
# Switch threads as often as CPython allows: interleavings at more points.
sys.setswitchinterval(1e-5)
GROUPS = ["step", "forward_backward", "optimizer", "checkpoint"]
handle = setup_telemetry(NemoLensConfig.from_env())
got = [[] for _ in range(8)]
skipped = [0] * 8
errors = []
done = threading.Event()

def span_id():
    context = trace.get_current_span().get_span_context()
    return format(context.span_id, "016x") if context.is_valid else None

@trace_fn("optimizer", "threads.fn")
def traced(worker):
    return span_id()

def emit(worker):
    try:
        for i in range(iterations):
            group = GROUPS[i % len(GROUPS)]
            if i % 3 == 0:
                found = traced(worker)  # a span only when "optimizer" was on
            else:
                with managed_span(group, "threads.span", worker=worker, i=i) as span:
                    found = None if span is None else span_id()
            if found is None:
                skipped[worker] += 1
            else:
                got[worker].append(found)
    except BaseException as exc:
        errors.append(repr(exc))

def toggle():
    toggles = 0
    rng = random.Random(0)
    while not done.is_set():
        # Every other set has every group on, so each state lasts a while.
        on = GROUPS if toggles % 2 else rng.sample(GROUPS, rng.randint(0, len(GROUPS) - 1))
        set_enabled_span_groups(on)
        toggles += 1
    report_toggles.append(toggles)

report_toggles = []
toggler = threading.Thread(target=toggle)
toggler.start()
workers = [threading.Thread(target=emit, args=(w,)) for w in range(8)]
for thread in workers:
    thread.start()
for thread in workers:
    thread.join()
done.set()
toggler.join()
finished = handle.shutdown()
report(got=got, skipped=skipped, errors=errors, toggles=report_toggles[0], finished=finished)
"""


def test_toggling_groups_under_eight_emitting_threads(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    env = {
        "NEMO_LENS_ENABLED": "1",
        "NEMO_LENS_EXPORTER": "file",
        "NEMO_LENS_TRACE_FILE": str(path),
        "NEMO_LENS_SPAN_GROUPS": "all",
        "NEMO_LENS_METRICS_ENABLED": "0",
    }
    job = run_job(_JOB, "4000", env=env)
    assert job.returncode == 0, job.stderr
    assert job.stderr == ""
    result = job.result
    assert result["errors"] == []
    assert result["finished"] is True
    # The toggling really interleaved with the emitting: groups changed many
    # times while the threads ran, which found them on and off.
    assert result["toggles"] > 100
    assert sum(len(ids) for ids in result["got"]) > 100
    assert sum(result["skipped"]) > 100

    emitted = [span_id for ids in result["got"] for span_id in ids]
    exported = [span["span_id"] for span in read_spans(path)]
    assert len(set(emitted)) == len(emitted)
    assert sorted(exported) == sorted(emitted)
