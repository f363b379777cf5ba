"""Progress bars: drawn on a terminal for long work, never in a pipe or a log file."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from nemo.lens.cli import _progress
from nemo.lens.cli._progress import progress

from .conftest import Result

Run = Callable[..., Result]


class Terminal(io.StringIO):
    """A stream that says it is a terminal, and keeps what was drawn on it."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def no_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    """Draw bars at once instead of after DELAY_SECONDS, so a quick test sees them."""
    monkeypatch.setattr(_progress, "DELAY_SECONDS", 0)


def test_no_bar_when_the_stream_is_not_a_terminal(no_delay: None) -> None:
    stream = io.StringIO()
    with progress("reading", total=10, stream=stream) as bar:
        bar.update(10)
    assert not bar.enabled
    assert stream.getvalue() == ""


def test_a_bar_on_a_terminal_shows_the_total_and_clears_itself(no_delay: None) -> None:
    stream = Terminal()
    with progress("reading", total=4, stream=stream) as bar:
        assert bar.enabled
        for _ in range(4):
            bar.update()
    drawn = stream.getvalue()
    assert "reading:" in drawn
    assert "0/4" in drawn  # tqdm redraws at most every 0.1 s; the first draw is certain
    assert drawn.endswith("\r")  # leave=False: the finished bar is wiped off the line


def test_without_tqdm_a_bar_is_a_silent_no_op(
    monkeypatch: pytest.MonkeyPatch, no_delay: None
) -> None:
    monkeypatch.setattr(_progress, "_tqdm_class", lambda: None)
    terminal = Terminal()
    with progress("reading", total=1, stream=terminal, enabled=True) as bar:
        bar.update()
    assert not bar.enabled
    assert terminal.getvalue() == ""


def test_convert_draws_a_bar_for_each_phase_on_a_terminal(
    run: Run,
    real_trace: Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    no_delay: None,
) -> None:
    trace = real_trace(steps=2)
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)

    result = run("convert", str(trace), "-o", str(tmp_path / "out.json"))

    assert result.status == 0
    drawn = terminal.getvalue()
    for phase in ("reading:", "laying out:", "writing:"):
        assert phase in drawn


def test_convert_draws_nothing_when_stderr_is_not_a_terminal(
    run: Run, real_trace: Callable[..., Path], tmp_path: Path, no_delay: None
) -> None:
    trace = real_trace(steps=2)

    result = run("convert", str(trace), "-o", str(tmp_path / "out.json"))

    assert result.status == 0
    assert result.err == ""


@pytest.mark.parametrize("command", ["summarize", "goodput", "report"])
def test_the_streaming_commands_draw_a_reading_bar_on_a_terminal(
    run: Run,
    real_trace: Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    no_delay: None,
    command: str,
) -> None:
    trace = real_trace(steps=2)
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)

    result = run(command, str(trace), *(["-o", str(tmp_path / "r.html")] * (command == "report")))

    assert result.status == 0
    assert "reading:" in terminal.getvalue()
