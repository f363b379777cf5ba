"""How long a process's threads waited for a CPU or a disk: the delay a busy machine imposes.

Tests of a bound in wall time (a killed rank's file holds what ended 100 ms before) measure
it, so as to check the bound in the time the machine gave the process: as stated on an
idle machine, stretched by exactly the machine's delay on a busy one.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import signal
import threading
import time
from pathlib import Path

__all__ = ["CpuWaits"]

_NS_PER_TICK = 1_000_000_000 // os.sysconf("SC_CLK_TCK")


class CpuWaits:
    """How long the threads of process *pid* waited for a CPU they were ready to run on,
    or for the disk.

    Three delays nothing in the process could have avoided. Two the kernel counts: a
    thread's wait in the run queue (the second field of ``/proc/PID/task/TID/schedstat``),
    and the time a hypervisor took a virtual CPU away (``steal`` in ``/proc/stat``). The
    third is sampled: a thread seen in uninterruptible sleep (state ``D`` in
    ``/proc/PID/task/TID/stat``: a page fault or a write waiting on a loaded disk, which
    the kernel's delay accounting, often off, would count) is counted as delayed since the
    sample before. Where the kernel counts none, they read as 0 (and a bound is checked as
    stated). Sampled every *every_s* seconds by a thread of the test (``None``: only when
    :meth:`sample` is called), since a killed process can no longer be asked; *proc* is
    where ``/proc`` is.
    """

    def __init__(self, pid: int, every_s: float | None = 0.002, proc: Path = Path("/proc")) -> None:
        self.pid = pid
        self._tasks = proc / str(pid) / "task"
        self._stat = proc / "stat"
        # (instant, {"task <tid>" or "cpu<n>": its wait or steal so far}), in ns
        self._samples: list[tuple[int, dict[str, int]]] = []
        self._asleep: dict[str, int] = {}  # "task <tid>": its time in state D so far
        self._lock = threading.Lock()  # the samples stay in order of their instants
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.sample()
        if every_s is not None:
            self._thread = threading.Thread(target=self._run, args=(every_s,), daemon=True)
            self._thread.start()

    def _run(self, every_s: float) -> None:
        while not self._stop.wait(every_s):
            self.sample()

    def sample(self) -> int:
        """Take a sample now (the process still running) and return its instant."""
        with self._lock:
            counts: dict[str, int] = {}
            now = time.time_ns()
            since = self._samples[-1][0] if self._samples else now
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                for task in os.listdir(self._tasks):
                    with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                        schedstat = (self._tasks / task / "schedstat").read_text()
                        key = f"task {task}"
                        if self._state(task) == "D":
                            self._asleep[key] = self._asleep.get(key, 0) + now - since
                        counts[key] = int(schedstat.split()[1]) + self._asleep.get(key, 0)
            if not counts:  # the process is gone (or not counted): the last sample stands
                return now
            with contextlib.suppress(OSError), open(self._stat, encoding="ascii") as stat:
                for line in stat:
                    # cpuN user nice system idle iowait irq softirq steal ...
                    fields = line.split()
                    if fields[0].startswith("cpu") and fields[0] != "cpu" and len(fields) > 8:
                        counts[fields[0]] = int(fields[8]) * _NS_PER_TICK
            self._samples.append((now, counts))
            return now

    def waited_ns(self, since_ns: int, until_ns: int) -> int:
        """The machine's delay from *since_ns* to *until_ns*: the longest one thread
        waited in the run queue or the disk, plus the most any CPU was stolen.

        The export thread runs when it has a CPU and, for Python code, the GIL: the
        machine delays it by its own wait, and by the wait of the thread holding the GIL
        when it asks; the longer of the two threads' waits is between those bounds.
        Counted from the sample at or before *since_ns* to the one at or after *until_ns*.
        """
        before = self._at(since_ns, after=False)
        after = self._at(until_ns, after=True)
        grown = {key: count - before.get(key, 0) for key, count in after.items()}
        waited = max((n for key, n in grown.items() if key.startswith("task ")), default=0)
        stolen = max((n for key, n in grown.items() if not key.startswith("task ")), default=0)
        return min(max(waited + stolen, 0), max(until_ns - since_ns, 0))

    def ran_ns(self, since_ns: int, until_ns: int) -> int:
        """The time from *since_ns* to *until_ns*, less the machine's delay in it."""
        return until_ns - since_ns - self.waited_ns(since_ns, until_ns)

    def wait_until_ran(self, since_ns: int, seconds: float, timeout: float = 60) -> None:
        """Sleep until the process has had *seconds* since *since_ns* without the
        machine delaying it (so on an idle machine: until *seconds* have passed)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.ran_ns(since_ns, self.sample()) >= seconds * 1e9:
                return
            time.sleep(0.001)
        raise AssertionError(f"the process did not get {seconds} s of a CPU in {timeout} s")

    def stop(self, timeout: float = 60) -> int:
        """Stop the process (SIGSTOP) and, once every thread has, take the last sample;
        return the instant the signal was sent, after which the process runs no code.

        The kernel counts a thread's wait for a CPU only when it gets one, which a process
        killed while waiting never does. To stop, every thread gets one: the last sample
        holds every wait up to the stop (and what a thread waited after it, until it
        stopped: the delay is never undercounted).
        """
        sent = time.time_ns()
        os.kill(self.pid, signal.SIGSTOP)
        deadline = time.monotonic() + timeout
        while not self._stopped():
            if time.monotonic() > deadline:
                raise AssertionError(f"process {self.pid} did not stop within {timeout} s")
            time.sleep(0.0005)
        self.sample()
        return sent

    def _stopped(self) -> bool:
        try:
            for task in os.listdir(self._tasks):
                with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                    if self._state(task) not in "TtZX":
                        return False
        except (FileNotFoundError, ProcessLookupError):
            pass  # gone altogether
        return True

    def _state(self, task: str) -> str:
        """The thread's state letter (``R``, ``S``, ``D``, ``T``...), after its name."""
        line = (self._tasks / task / "stat").read_text()
        return line[line.rindex(")") + 2]

    def _at(self, instant_ns: int, *, after: bool) -> dict[str, int]:
        # The sample before or after the instant, whichever counts more of the delay: a
        # test blames nothing on the process that it cannot tell from the machine's.
        with self._lock:
            if not self._samples:
                return {}
            if after:
                index = bisect.bisect_left(self._samples, instant_ns, key=lambda s: s[0])
                return self._samples[min(index, len(self._samples) - 1)][1]
            index = bisect.bisect_right(self._samples, instant_ns, key=lambda s: s[0])
            return self._samples[max(index - 1, 0)][1]

    def close(self) -> None:
        """Stop sampling (the samples taken stay)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
