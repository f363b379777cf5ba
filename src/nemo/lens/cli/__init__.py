"""The ``nemo-lens`` command line (docs/cli.md): span groups, and the traces the exporters write.

``main`` runs one command and returns its exit status: 0 success, 1 an input cannot be used
or the output cannot be written, 2 bad usage, 141 standard output closed early (``| head``).
Also runnable as ``python -m nemo.lens.cli``.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence
from typing import TextIO, cast

from nemo.lens.cli import _classes
from nemo.lens.cli._classes import span_group_classes
from nemo.lens.cli._common import (
    EXIT_BAD_INPUT,
    EXIT_CLOSED_PIPE,
    EXIT_OK,
    EXIT_USAGE,
    PROG,
    GuardedStream,
    OutputError,
    fail,
)

__all__ = ["EXIT_BAD_INPUT", "EXIT_OK", "EXIT_USAGE", "main", "span_group_classes"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    streams = sys.stdout, sys.stderr
    sys.stdout = cast(TextIO, GuardedStream(streams[0], "standard output"))
    sys.stderr = cast(TextIO, GuardedStream(streams[1], "standard error"))
    try:
        status = _run(arguments)
        sys.stdout.flush()  # here, where a failure is reported, not at the interpreter's exit
        return status
    except OutputError as error:
        sys.stdout, sys.stderr = streams
        return _cannot_write(error, streams)
    except KeyboardInterrupt:
        return 130
    finally:
        sys.stdout, sys.stderr = streams


def _cannot_write(error: OutputError, streams: tuple[TextIO | None, TextIO | None]) -> int:
    """End as Unix tools do when an output fails: quietly for a closed pipe (the reader has
    what it wanted), with one line on standard error for anything else."""
    failed = streams[0] if error.name == "standard output" else streams[1]
    # The interpreter flushes the stream once more as it exits: let that flush go nowhere
    # rather than print "Exception ignored" (or, in a test, do nothing to a captured stream).
    with contextlib.suppress(AttributeError, OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, cast(TextIO, failed).fileno())
        os.close(devnull)
    if isinstance(error.error, BrokenPipeError):
        return EXIT_CLOSED_PIPE
    if failed is streams[0]:
        with contextlib.suppress(OSError, AttributeError):  # standard error may be gone too
            fail(str(error))
    return EXIT_BAD_INPUT


def _run(arguments: list[str]) -> int:
    if arguments[:1] == ["generate"]:
        # The generator has its own parser, and imports Jinja2 only when it runs.
        from nemo.lens.codegen.command import main as generate

        return generate(arguments[1:])
    if arguments[:1] == ["diff-schema"]:
        # Schema files only: it must run while the generated modules are stale, too.
        from nemo.lens.codegen.command import diff_schema

        return diff_schema(arguments[1:])
    if arguments[:1] == ["adopt"]:
        # Beside the generator, whose schema it writes; the source is read, never imported.
        from nemo.lens.codegen.adopt import main as adopt

        return adopt(arguments[1:])
    from nemo.lens.cli._parser import build_parser, command_names

    parser = build_parser(sorted(_classes.span_group_classes()))
    try:
        args = parser.parse_args(arguments)
        if args.command is None:
            parser.print_usage(sys.stderr)
            first = ("groups", "summarize", "convert")
            others = ", ".join(name for name in command_names(parser) if name not in first)
            print(
                f"{PROG}: error: name a command: groups, summarize or convert (or {others}); "
                f"`{PROG} --help` lists every command",
                file=sys.stderr,
            )
            return EXIT_USAGE
        # Each command reports usage errors through its own parser, so the message
        # shows that command's usage line (`nemo-lens convert [-h] ...`).
        status: int = args.run(args, args.command_parser)
    except SystemExit as exit_:  # argparse's usage errors (2), --help and --version (0)
        code = exit_.code
        return code if isinstance(code, int) else EXIT_USAGE
    return status
