"""The trace file's file system fails in the middle of a run: full, removed, locked.

A job keeps running whatever the disk does. What a user must see: the spans
that could not be written are counted exactly (``handle.undelivered``, the
shutdown summary) and said once on stderr; no line in the file is broken (a
write cut short by a full disk is taken back, not left for the next line to
join); and writing resumes by itself -- when space returns, and when the file
or its directory was removed or replaced (the path is opened again).

The full disk is real: a tmpfs of 256 KiB mounted for the test and filled to
the brim by it. Mounting needs root (CI runs as root); elsewhere those tests are
skipped, unless ``NEMO_LENS_REQUIRE_TMPFS=1`` (CI) makes that a failure.
"""

from __future__ import annotations

import collections
import errno
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from nemo.lens._sdk.exporters.jsonl import FileSink
from tests.reliability.conftest import Job, RunningJob, read_spans

REQUIRE_VARIABLE = "NEMO_LENS_REQUIRE_TMPFS"
_FS_BYTES = 256 * 1024
_PAGE = 4096
_NOBODY = 65534

# Each command line "NAME COUNT" emits COUNT spans named NAME (each about 1.3 KB in the
# file), then flushes and says "done"; an empty line ends the job. With an argument,
# the job first drops to that user id, so that file permissions apply to it -- after
# importing every module of the package, which may live where that user cannot read
# (a checkout under root's own temporary directory).
_DRIVEN_JOB = """
if len(sys.argv) > 1:
    import importlib, pkgutil, nemo.lens
    for module in pkgutil.walk_packages(nemo.lens.__path__, "nemo.lens."):
        try:
            importlib.import_module(module.name)
        except ImportError:
            pass  # an optional dependency that is not installed: not used here either
    os.setegid(int(sys.argv[1]))
    os.seteuid(int(sys.argv[1]))
from nemo.lens import NemoLensConfig, managed_span, setup_telemetry

handle = setup_telemetry(NemoLensConfig.from_env())
flushed = []
while line := sys.stdin.readline().strip():
    name, count = line.split()
    for i in range(int(count)):
        with managed_span("step", name, i=i, pad="x" * 1000):
            pass
    flushed.append(handle.force_flush())
    print("done", flush=True)
report(flushed=flushed, finished=handle.shutdown(), undelivered=dict(handle.undelivered))
"""


def _env(trace_file: Path) -> dict[str, str]:
    return {
        "NEMO_LENS_ENABLED": "1",
        "NEMO_LENS_EXPORTER": "file",
        "NEMO_LENS_TRACE_FILE": str(trace_file),
        "NEMO_LENS_SPAN_GROUPS": "all",
    }


class _Driven:
    """A running :data:`_DRIVEN_JOB`."""

    def __init__(self, env: Mapping[str, str], *args: str) -> None:
        self.job = RunningJob(_DRIVEN_JOB, *args, env=env, interactive=True)

    def emit(self, name: str, count: int) -> None:
        self.job.send(f"{name} {count}")
        self.job.wait_for("done")

    def finish(self) -> Job:
        self.job.send("")
        return self.job.finish()


def _names(path: Path) -> collections.Counter[str]:
    # read_spans fails on any line that is not one whole JSON object.
    return collections.Counter(span["name"] for span in read_spans(path))


@pytest.fixture
def tiny_fs(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs of the test's own, unmounted afterwards."""
    mount_point = tmp_path / "fs"
    mount_point.mkdir()
    problem = None
    if os.geteuid() != 0:
        problem = "mounting a tmpfs needs root"
    else:
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={_FS_BYTES}", "nemo-lens-test", mount_point],
            capture_output=True,
            text=True,
            check=False,
        )
        if mounted.returncode != 0:
            problem = f"mount -t tmpfs failed: {mounted.stderr.strip()}"
    if problem is not None:
        if os.environ.get(REQUIRE_VARIABLE, "").strip() == "1":
            pytest.fail(f"{problem} ({REQUIRE_VARIABLE}=1)")
        pytest.skip(f"{problem}; set {REQUIRE_VARIABLE}=1 to make this a failure")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", mount_point], check=False)


def _fill(directory: Path, leave_pages: int = 0) -> Path:
    """Fill the file system of *directory* to the brim (one file), then free
    *leave_pages* pages of it again."""
    filler = directory / "filler"
    with filler.open("ab", buffering=0) as out:
        for size in (1 << 16, _PAGE, 1):
            try:
                while True:
                    out.write(b"\0" * size)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc
    assert os.statvfs(directory).f_bavail == 0
    if leave_pages:
        pages = -(-filler.stat().st_size // _PAGE)
        os.truncate(filler, (pages - leave_pages) * _PAGE)
    return filler


def test_a_full_disk_loses_what_it_refused_counted_and_writing_resumes(tiny_fs: Path) -> None:
    path = tiny_fs / "traces" / "spans.jsonl"
    job = _Driven(_env(path))
    job.emit("before", 50)
    # One page free: the next batch (about 260 KB) is cut short by the full disk
    # and must be taken back, not left for the next line to join.
    filler = _fill(tiny_fs, leave_pages=1)
    job.emit("cut_short", 200)
    _fill(tiny_fs)  # nothing free at all
    job.emit("refused", 30)
    filler.unlink()  # space returns
    job.emit("after", 70)
    finished = job.finish()

    assert finished.returncode == 0, finished.stderr
    assert finished.result == {
        "flushed": [True, False, False, True],
        "finished": False,
        "undelivered": {"traces": 230},
    }
    assert _names(path) == {"before": 50, "after": 70}
    # Said once as it happened, totalled once at shutdown; no line per batch, no stall.
    (warning,) = finished.stderr_lines(f"cannot export traces to {path}")
    assert "No space left on device" in warning and "file system full" in warning
    (summary,) = finished.stderr_lines("could not deliver")
    assert summary.endswith(f"230 span(s) failed to export to {path}")
    assert len(finished.stderr.splitlines()) == 2, finished.stderr


def test_a_batch_of_several_writes_is_taken_back_whole(tiny_fs: Path) -> None:
    # A sink whose buffer holds 8 lines: a batch of 40 is five writes, and the disk
    # has room for two of them. What the first two wrote goes too: the exporter
    # counts the whole batch as lost, so none of it may stay.
    sink = FileSink(tiny_fs / "spans.jsonl", buffer_bytes=8 * 1024)
    lines = [f'{{"n":{n},"pad":"{"x" * 1000}"}}\n' for n in range(40)]
    sink.write_texts(lines[:3])
    filler = _fill(tiny_fs, leave_pages=4)
    with pytest.raises(OSError) as failed:
        sink.write_texts(lines[3:])
    assert failed.value.errno == errno.ENOSPC
    assert (tiny_fs / "spans.jsonl").read_text() == "".join(lines[:3])
    filler.unlink()
    sink.write_texts(lines[3:])
    sink.close()
    assert (tiny_fs / "spans.jsonl").read_text() == "".join(lines)


def test_a_trace_file_removed_with_its_directory_is_created_again(tmp_path: Path) -> None:
    directory = tmp_path / "traces"
    path = directory / "spans.jsonl"
    job = _Driven(_env(path))
    job.emit("before", 20)
    shutil.rmtree(directory)
    job.emit("after", 30)
    finished = job.finish()

    assert finished.returncode == 0, finished.stderr
    assert finished.result == {"flushed": [True, True], "finished": True, "undelivered": {}}
    # What was removed went with the file; nothing after it went to a file nobody can open.
    assert _names(path) == {"after": 30}
    assert finished.stderr == ""


def test_a_rotated_trace_file_goes_on_in_the_file_now_at_its_path(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    job = _Driven(_env(path))
    job.emit("before", 20)
    path.rename(tmp_path / "spans.jsonl.1")  # moved away: the job makes a new one
    job.emit("between", 10)
    path.rename(tmp_path / "spans.jsonl.2")
    path.write_text("")  # moved away, and a new empty file put in its place
    job.emit("after", 30)
    finished = job.finish()

    assert finished.returncode == 0, finished.stderr
    assert finished.result == {"flushed": [True, True, True], "finished": True, "undelivered": {}}
    assert _names(tmp_path / "spans.jsonl.1") == {"before": 20}
    assert _names(tmp_path / "spans.jsonl.2") == {"between": 10}
    assert _names(path) == {"after": 30}
    assert finished.stderr == ""


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory user ``nobody`` may reach and owns (``tmp_path``'s parents are root's)."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to run the job as another user")
    top = Path(tempfile.mkdtemp(prefix="nemo-lens-perm-"))
    try:
        top.chmod(0o755)
        directory = top / "traces"
        directory.mkdir()
        os.chown(directory, _NOBODY, _NOBODY)
        yield directory
    finally:
        (top / "traces").chmod(0o755)
        shutil.rmtree(top)


def test_a_directory_made_unwritable_under_a_non_root_writer(shared_dir: Path) -> None:
    path = shared_dir / "spans.jsonl"
    job = _Driven(_env(path), str(_NOBODY))
    job.emit("before", 20)
    path.chmod(0o444)  # the file is open: writing goes on
    job.emit("read_only", 10)
    assert _names(path) == {"before": 20, "read_only": 10}
    path.unlink()
    shared_dir.chmod(0o555)  # the file cannot be made again
    job.emit("locked", 15)
    shared_dir.chmod(0o755)
    job.emit("after", 25)
    finished = job.finish()

    assert finished.returncode == 0, finished.stderr
    assert finished.result == {
        "flushed": [True, True, False, True],
        "finished": False,
        "undelivered": {"traces": 15},
    }
    assert _names(path) == {"after": 25}
    assert stat.S_IMODE(path.stat().st_mode) & 0o200  # a new file, writable again
    (warning,) = finished.stderr_lines(f"cannot export traces to {path}")
    assert "Permission denied" in warning
    (summary,) = finished.stderr_lines("could not deliver")
    assert summary.endswith(f"15 span(s) failed to export to {path}")
    assert len(finished.stderr.splitlines()) == 2, finished.stderr
