"""Cross-rank traces with real processes: torch.distributed over gloo on the CPU.

Each rank is a subprocess (``_rank_worker.py``) exporting to its own file; the
test reads the files back and checks that the ranks form one trace, parented
by rank 0's broadcast context, and that each pipeline stage links to the stage
before it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.trace_file import spans_in

torch = pytest.importorskip(
    "torch",
    reason="the multi-rank tests need torch: pip install 'nemo-lens[torch]' (CI installs it)",
)
if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
    pytest.skip("this torch build has no gloo backend", allow_module_level=True)

HERE = Path(__file__).resolve().parent
WORKER = HERE / "_rank_worker.py"
EXAMPLE = HERE.parents[1] / "examples" / "multi_rank.py"
WORLD_SIZE = 3
STEPS = 2  # as in _rank_worker.STEPS
DEADLINE_S = 90.0  # for all ranks together; a healthy run takes a few seconds


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _clean_env() -> dict[str, str]:
    """The test process's environment without anything that configures nemo.lens or torch."""
    blocked = ("NEMO_LENS_", "OTEL_", "MASTER_", "TORCHELASTIC_", "SLURM_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(blocked)}
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        env.pop(key, None)
    env["OMP_NUM_THREADS"] = "1"  # 2 cores, several ranks: no thread oversubscription
    env["PYTHONWARNINGS"] = "ignore"
    return env


def _run_all(commands: list[tuple[list[str], dict[str, str]]], logs: Path) -> None:
    """Start every command, wait for all within DEADLINE_S, kill what is left, fail on errors."""
    logs.mkdir(parents=True, exist_ok=True)
    processes: list[tuple[subprocess.Popen[bytes], Path]] = []
    try:
        for index, (argv, env) in enumerate(commands):
            log = logs / f"process{index}.log"
            with open(log, "wb") as sink:
                processes.append(
                    (
                        subprocess.Popen(
                            argv,
                            env=env,
                            stdin=subprocess.DEVNULL,
                            stdout=sink,
                            stderr=subprocess.STDOUT,
                            # Its own process group: a kill reaches the ranks it spawns too.
                            start_new_session=True,
                        ),
                        log,
                    )
                )
        deadline = time.monotonic() + DEADLINE_S
        for process, _ in processes:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        pytest.fail(f"ranks did not finish within {DEADLINE_S} s\n{_logs(processes)}")
    finally:
        for process, _ in processes:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
    failed = [p for p, _ in processes if p.returncode != 0]
    if failed:
        pytest.fail(f"{len(failed)} process(es) failed\n{_logs(processes)}")


def _logs(processes: list[tuple[subprocess.Popen[bytes], Path]]) -> str:
    return "\n".join(
        f"--- pid {p.pid} (exit {p.returncode}) ---\n{log.read_text(errors='replace')[-4000:]}"
        for p, log in processes
    )


def _read_spans(path: Path) -> list[dict[str, Any]]:
    assert path.exists(), f"{path.name} was not written"
    return spans_in(path)  # each span with its lifetime header's resource


def test_ranks_share_one_trace_and_pipeline_stages_link_to_their_peer(tmp_path: Path) -> None:
    run_id = "multirank-test"
    port = _free_port()
    commands = []
    for rank in range(WORLD_SIZE):
        env = _clean_env()
        env.update(
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=str(port),
            RANK=str(rank),
            WORLD_SIZE=str(WORLD_SIZE),
            LOCAL_RANK=str(rank),
        )
        commands.append(([sys.executable, str(WORKER), str(tmp_path), run_id], env))
    _run_all(commands, tmp_path / "logs")

    by_rank = {rank: _read_spans(tmp_path / f"rank{rank}.jsonl") for rank in range(WORLD_SIZE)}
    (job,) = [s for s in by_rank[0] if s["name"] == "train.job"]
    assert all(s["name"] != "train.job" for r in range(1, WORLD_SIZE) for s in by_rank[r])

    stage_of: dict[tuple[int, int], dict[str, Any]] = {}
    for rank, spans in by_rank.items():
        for span in spans:
            # Every rank's file, every span: this rank's resource, the job's trace.
            assert span["resource"]["nemo.rank"] == rank
            assert span["resource"]["nemo.run_id"] == run_id
            assert span["trace_id"] == job["trace_id"], (rank, span["name"])
        steps = sorted(
            (s for s in spans if s["name"] == "train.step"),
            key=lambda s: s["attributes"]["iteration"],
        )
        assert [s["attributes"]["iteration"] for s in steps] == list(range(STEPS))
        # Parent: rank 0's job span, known to ranks > 0 only through the broadcast.
        assert {s["parent_span_id"] for s in steps} == {job["span_id"]}
        for step in steps:
            (stage,) = [
                s
                for s in spans
                if s["name"] == "pipeline.stage"
                and s["attributes"]["iteration"] == step["attributes"]["iteration"]
            ]
            assert stage["parent_span_id"] == step["span_id"]  # local parent kept
            assert stage["attributes"]["stage"] == rank
            stage_of[(rank, step["attributes"]["iteration"])] = stage

    for (rank, iteration), stage in stage_of.items():
        links = [(link["trace_id"], link["span_id"]) for link in stage["links"]]
        if rank == 0:
            assert links == []
        else:
            peer = stage_of[(rank - 1, iteration)]
            assert links == [(peer["trace_id"], peer["span_id"])]


def test_the_multi_rank_example_runs_and_writes_one_trace(tmp_path: Path) -> None:
    env = _clean_env()
    command = [sys.executable, str(EXAMPLE), "--world-size", "2", "--out", str(tmp_path / "out")]
    _run_all([(command, env)], tmp_path / "logs")
    files = sorted((tmp_path / "out").glob("*.jsonl"))
    assert [f.name.rsplit("-", 1)[-1] for f in files] == ["rank0.jsonl", "rank1.jsonl"]
    spans = [span for f in files for span in _read_spans(f)]
    assert {span["trace_id"] for span in spans} == {spans[0]["trace_id"]}
    assert {"train.job", "train.step", "pipeline.stage"} <= {span["name"] for span in spans}
