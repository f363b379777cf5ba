"""What every ``nemo-lens`` command shares: exit codes, messages, the engine, outputs."""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, BinaryIO, Final, Literal, TextIO, overload

from nemo.lens.cli._engine._careful import TraceInputError
from nemo.lens.cli._engine._connect import STDIN
from nemo.lens.cli._table import visible

if TYPE_CHECKING:
    from nemo.lens.cli._engine import Engine

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_CLOSED_PIPE",
    "EXIT_OK",
    "EXIT_USAGE",
    "PERFETTO_URL",
    "PROG",
    "STDIN",
    "GuardedStream",
    "NotWritable",
    "OutputError",
    "Process",
    "fail",
    "output_file",
    "plural",
    "print_json_lines",
    "print_lines",
    "with_engine",
    "write_output",
]

EXIT_OK: Final = 0
"""The command did what it was asked."""
EXIT_BAD_INPUT: Final = 1
"""An input could not be used, or the output could not be written."""
EXIT_USAGE: Final = 2
"""The command line itself was wrong (argparse's own status for usage errors)."""
EXIT_CLOSED_PIPE: Final = 128 + 13
"""The reader of standard output went away (``| head``): the status a shell reports for a
tool that SIGPIPE ended, so ``cmd | head || [ $? -eq 141 ]`` works as with any other."""

PROG: Final = "nemo-lens"
PERFETTO_URL: Final = "https://ui.perfetto.dev"

MAX_PROBLEMS_SHOWN: Final = 5


@dataclass(frozen=True)
class Process:
    """The process a span came from: one rank of one run of one service."""

    rank: int | None
    run_id: str
    service: str

    def sort_key(self) -> tuple[bool, int, str, str]:
        """Order by rank (unknown last), then run and service."""
        return (self.rank is None, self.rank or 0, self.run_id, self.service)

    def label(self, *, with_run: bool = False) -> str:
        """``rank 0`` (``unknown rank`` without ``dl.rank``, ``nemo.rank`` or ``nv.dl.rank``),
        and its run when asked."""
        text = "unknown rank" if self.rank is None else f"rank {self.rank}"
        if with_run and self.run_id:
            text += f" of run {self.run_id}"
        return text


def print_lines(lines: Sequence[str], stream: TextIO | None = None) -> None:
    """Write *lines* of text for a person (standard output by default), each :func:`visible`:
    what a trace holds never drives the terminal. Data (JSON, CSV) is written as it is."""
    out = sys.stdout if stream is None else stream
    out.write("".join(visible(line) + "\n" for line in lines))


def print_json_lines(records: Iterable[Mapping[str, Any]]) -> None:
    """Write *records* to standard output as JSON lines: data, written as it is."""
    sys.stdout.write("".join(json.dumps(record, allow_nan=False) + "\n" for record in records))


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def message(kind: str, text: str) -> None:
    """Say ``nemo-lens: KIND: TEXT`` on standard error, the text :func:`visible`."""
    print_lines([f"{PROG}: {kind}: {text}"], sys.stderr)


def fail(text: str, hint: str = "") -> int:
    message("error", text)
    if hint:
        print_lines([f"  hint: {hint}"], sys.stderr)
    return EXIT_BAD_INPUT


class OutputError(Exception):
    """Standard output or standard error could not be written (a full disk, a closed pipe)."""

    def __init__(self, name: str, error: OSError) -> None:
        super().__init__(f"cannot write {name}: {error.strerror or error}")
        self.name = name
        self.error = error


class GuardedStream:
    """A standard stream whose write errors raise :class:`OutputError`, so ``main`` tells the
    output failing from an input failing (both are ``OSError``), wherever the write was."""

    def __init__(self, stream: TextIO | None, name: str) -> None:
        self.stream = stream
        self.name = name

    def write(self, text: str) -> int:
        try:
            if self.stream is None:  # the shell closed it: `nemo-lens ... >&-`
                raise OSError(errno.EBADF, "it is closed")
            return self.stream.write(text)
        except OSError as error:
            raise OutputError(self.name, error) from error

    def flush(self) -> None:
        try:
            if self.stream is not None:
                self.stream.flush()
        except OSError as error:
            raise OutputError(self.name, error) from error

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding...
        return getattr(self.stream, name)


def with_engine(args: argparse.Namespace, work: Callable[[Engine], int], **options: Any) -> int:
    """Read ``args.traces`` into the engine (:func:`nemo.lens.cli._engine.connect`, with
    *options*), say on stderr what was skipped (the first few: a bad file can have millions)
    and how many spans a dead process left open, and run *work*: its exit status. An input
    that cannot be used exits 1 with the reader's message; without DuckDB (``[cli]``), 2."""
    from nemo.lens.cli._classes import selected_classes
    from nemo.lens.cli._engine import EngineUnavailable, connect

    classes = getattr(args, "class_name", None)
    if STDIN in args.traces and sys.stdin is not None and sys.stdin.isatty():
        # Not a silent wait: someone typed `-` by habit, or meant to pipe a file in.
        message(
            "note",
            "reading a trace from standard input, this terminal (JSON lines, a span record "
            "a line); end it with Ctrl-D, or name a file instead of -",
        )
    try:
        engine = connect(
            args.traces,
            skip_invalid=args.skip_invalid,
            span_group_classes=selected_classes(classes) if classes else None,
            **options,
        )
    except EngineUnavailable as error:
        fail(str(error), error.hint)
        return EXIT_USAGE
    except TraceInputError as error:
        return fail(str(error), error.hint)
    for warning in engine.warnings:
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    for problem in engine.problems[:MAX_PROBLEMS_SHOWN]:
        message("warning", f"skipped {problem}")
    if len(engine.problems) > MAX_PROBLEMS_SHOWN:
        message("warning", f"skipped {len(engine.problems) - MAX_PROBLEMS_SHOWN} more")
    if engine.reconstructed:
        # The trace alone cannot tell a job still running from one killed or crashed.
        message(
            "note",
            f"{plural(engine.reconstructed, 'span')} never ended: they were open when the "
            "trace was read (the job may still be running, or it was killed or crashed); "
            "read as ending at their process lifetime's last record, marked "
            "nemo.span.truncated",
        )
    with engine:
        return work(engine)


def output_file(
    args: argparse.Namespace, parser: argparse.ArgumentParser, suffix: str, unnamed: str
) -> str:
    """Where a command writes: ``-o``, else the first input with ``.jsonl`` replaced by
    *suffix*. A usage error when it reads standard input and is not told where (*unnamed*
    says how), or when the output would overwrite an input."""
    output: str | None = args.output
    if output is None:
        first: str = args.traces[0]
        if first == STDIN:
            parser.error(f"reading standard input: {unnamed}")
        output = (first[: -len(".jsonl")] if first.endswith(".jsonl") else first) + suffix
    if output != STDIN and any(path != STDIN and _same_file(path, output) for path in args.traces):
        parser.error(f"-o {output} would overwrite an input; choose another output file")
    return output


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)  # through symlinks and hard links
    except OSError:  # one does not exist (yet)
        return os.path.realpath(a) == os.path.realpath(b)


class NotWritable(Exception):
    """The output path names something a trace cannot be written to."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.hint = hint


SPECIAL_ROOTS: Final = ("/dev/", "/proc/")
"""Where paths are views of open files and devices: written through, never renamed onto."""


def _open(target: str | int, binary: bool) -> IO[Any]:
    """*target* (a path or an open descriptor) for writing bytes or UTF-8 text."""
    if binary:
        return open(target, "wb")
    return open(target, "w", encoding="utf-8", newline="\n")


@overload
def write_output(path: str, write: Callable[[TextIO], object]) -> None: ...


@overload
def write_output(
    path: str, write: Callable[[BinaryIO], object], *, binary: Literal[True]
) -> None: ...


def write_output(path: str, write: Callable[[Any], object], *, binary: bool = False) -> None:
    """Write text (bytes when *binary*) to what *path* names: a new regular file atomically,
    through a temporary file beside it (keeping an existing file's permissions; a symlink's
    target is replaced and the link stays), so a failed write never leaves half a file; a
    pipe, a character device and anything under ``/dev`` or ``/proc`` directly. Raises
    :class:`NotWritable` for a directory, a block device or a socket."""
    try:
        found = os.stat(path)
    except FileNotFoundError:
        found = None
    mode = found.st_mode if found is not None else stat.S_IFREG
    if stat.S_ISDIR(mode):
        example = "trace.pftrace" if binary else "trace.chrome.json"
        raise NotWritable("is a directory", f"name a file to write, e.g. -o {example}")
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)):
        raise NotWritable(
            f"is {'a block device' if stat.S_ISBLK(mode) else 'a socket'}, not a file",
            "write to a regular file, a pipe or a character device such as /dev/stdout",
        )
    real = os.path.realpath(path)
    if (
        not stat.S_ISREG(mode)
        or os.path.abspath(path).startswith(SPECIAL_ROOTS)
        or real.startswith(SPECIAL_ROOTS)
    ):
        with _open(path, binary) as stream:
            write(stream)
        return
    if found is None:  # the permissions a plain open() would give it
        umask = os.umask(0)
        os.umask(umask)
        permissions = 0o666 & ~umask
    else:
        permissions = stat.S_IMODE(found.st_mode)
    handle, temporary = tempfile.mkstemp(
        prefix=f".{os.path.basename(real)}.", suffix=".tmp", dir=os.path.dirname(real) or "."
    )
    try:
        os.chmod(temporary, permissions)
        with _open(handle, binary) as stream:
            write(stream)
        os.replace(temporary, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
