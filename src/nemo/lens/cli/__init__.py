"""The ``nemo-lens`` command line (docs/cli.md): span groups, and the traces the exporters write.

``main`` runs one command and returns its exit status: 0 success, 1 an input cannot be used
or the output cannot be written, 2 bad usage. Also runnable as ``python -m nemo.lens.cli``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from nemo.lens.cli import _classes
from nemo.lens.cli._classes import span_group_classes
from nemo.lens.cli._common import EXIT_BAD_INPUT, EXIT_OK, EXIT_USAGE, PROG

__all__ = ["EXIT_BAD_INPUT", "EXIT_OK", "EXIT_USAGE", "main", "span_group_classes"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["generate"]:
        # The generator has its own parser, and imports Jinja2 only when it runs.
        from nemo.lens.codegen.command import main as generate

        return generate(arguments[1:])
    if arguments[:1] == ["diff-schema"]:
        # Schema files only: it must run while the generated modules are stale, too.
        from nemo.lens.codegen.command import diff_schema

        return diff_schema(arguments[1:])
    from nemo.lens.cli._parser import build_parser

    parser = build_parser(sorted(_classes.span_group_classes()))
    try:
        args = parser.parse_args(arguments)
        if args.command is None:
            parser.print_usage(sys.stderr)
            print(
                f"{PROG}: error: name a command: groups, summarize or convert (or goodput, "
                f"report, emit-spans, generate, diff-schema); `{PROG} --help` lists every command",
                file=sys.stderr,
            )
            return EXIT_USAGE
        # Each command reports usage errors through its own parser, so the message
        # shows that command's usage line (`nemo-lens convert [-h] ...`).
        status: int = args.run(args, args.command_parser)
        sys.stdout.flush()
    except SystemExit as exit_:  # argparse's usage errors (2), --help and --version (0)
        code = exit_.code
        return code if isinstance(code, int) else EXIT_USAGE
    except BrokenPipeError:
        # The reader went away (`nemo-lens groups | head`): not worth a traceback.
        # Point stdout at devnull so the interpreter's final flush does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    return status
