"""CpuWaits counts what the machine took from a process: run-queue waits, stolen time, and
time in uninterruptible sleep (state D), read from a ``/proc`` the test writes."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cpu_waits import CpuWaits

MS = 1_000_000


class FakeProc:
    """A ``/proc`` holding process 7 with threads 7 and 8, a clock the test moves, and the
    CpuWaits that reads them (every sample taken by :meth:`after`)."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self.now = 1_000 * MS
        monkeypatch.setattr(time, "time_ns", lambda: self.now)
        for tid in (7, 8):
            (root / "7" / "task" / str(tid)).mkdir(parents=True)
            self.thread(tid, "R", waited_ns=0)
        self.steal(0)
        self.waits = CpuWaits(7, every_s=None, proc=root)

    def thread(self, tid: int, state: str, waited_ns: int) -> None:
        task = self.root / "7" / "task" / str(tid)
        (task / "schedstat").write_text(f"123 {waited_ns} 4\n")
        (task / "stat").write_text(f"{tid} (a (b) c) {state} 1 2 3\n")

    def steal(self, ticks: int) -> None:
        (self.root / "stat").write_text(
            f"cpu 1 2 3 4 5 6 7 {ticks} 0 0\ncpu0 1 2 3 4 5 6 7 {ticks} 0 0\nintr 1\n"
        )

    def after(self, ms: int) -> int:
        self.now += ms * MS
        return self.waits.sample()


@pytest.fixture
def proc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProc]:
    fake = FakeProc(tmp_path, monkeypatch)
    yield fake
    fake.waits.close()


def test_a_thread_in_disk_sleep_counts_as_delayed_since_the_sample_before(
    proc: FakeProc,
) -> None:
    waits, start = proc.waits, proc.now
    proc.thread(7, "D", waited_ns=0)  # a page fault waiting on the disk
    proc.after(10)
    proc.after(10)
    proc.thread(7, "R", waited_ns=5 * MS)  # then 5 ms in the run queue
    middle = proc.after(10)
    proc.thread(8, "S", waited_ns=0)  # a sleep is the process's own doing
    end = proc.after(10)
    assert waits.waited_ns(start, end) == 25 * MS
    assert waits.ran_ns(start, end) == 15 * MS
    assert waits.waited_ns(middle, end) == 0


def test_the_longest_thread_delay_and_the_most_stolen_add_up(proc: FakeProc) -> None:
    waits, start = proc.waits, proc.now
    proc.thread(7, "R", waited_ns=3 * MS)
    proc.thread(8, "D", waited_ns=1 * MS)
    proc.steal(1)
    end = proc.after(20)
    assert waits.waited_ns(start, end) == 20 * MS  # never more than the time between
    proc.thread(8, "S", waited_ns=1 * MS)
    tick = 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    assert waits.waited_ns(start, proc.after(1_000)) == 21 * MS + tick
