"""The ``nemo-lens`` argument parser: every command's arguments, and the function that runs it."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Sequence
from typing import Final

from nemo.lens._version import __version__
from nemo.lens.cli._common import PERFETTO_URL, PROG

__all__ = ["build_parser", "command_names"]

Runner = Callable[[argparse.Namespace, argparse.ArgumentParser], int]
"""What runs a command: its parsed arguments and its parser in, the exit status out."""


def _runner(module: str, name: str) -> Runner:
    """The function *name* of ``nemo.lens.cli.<module>``, imported when its command runs: a
    command imports its own module only (importing them all costs ~12 ms of every start)."""

    def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        command: Runner = getattr(importlib.import_module(f"nemo.lens.cli.{module}"), name)
        return command(args, parser)

    return run


FORMATS: Final = ("table", "csv", "json")
SQL_UNSAFE_HELP: Final = (
    "let the statement read and write files other than the traces, attach databases and "
    "install or load extensions (by default it reads only the traces; docs/sql.md)"
)

TRACES_HELP = (
    "a trace from the file exporter, or captured output of the console exporter; "
    "'-' reads standard input; several inputs (one per rank) are read together"
)
SKIP_HELP = (
    "skip lines that are not span records (a program's own output, a line cut short) "
    "and empty inputs, with a warning, instead of stopping at the first"
)
ITERATION_HELP = (
    "the step spans' attribute that holds the iteration number (default: iteration); "
    "an iteration executed again after a restart makes its earlier execution wasted "
    "progress"
)
CLASS_HELP = (
    "the span-group classes whose groups fill the span_groups and span_group_presets "
    "views; repeat for a process hosting several consumers (default: every shipped class, "
    "the base first)"
)


def _iteration_attribute(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("the attribute name is empty; the default is 'iteration'")
    return text.strip()


def _reading_traces(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    *,
    help: str,
    description: str,
    epilog: str | None = None,
    first: Sequence[str] = (),
) -> argparse.ArgumentParser:
    """A command that reads traces: its parser, the *first* positionals, then the inputs."""
    command = commands.add_parser(name, help=help, description=description, epilog=epilog)
    for argument, help in zip(first[::2], first[1::2], strict=True):
        command.add_argument(argument.lower(), metavar=argument, help=help)
    command.add_argument("traces", nargs="+", metavar="TRACE", help=TRACES_HELP)
    return command


def _last_options(
    command: argparse.ArgumentParser,
    run: Runner,
    *,
    iterations: bool = False,
    formats: str = "",
) -> None:
    """The options a trace-reading command ends with, and what runs it."""
    if formats:
        command.add_argument("--format", choices=FORMATS, default="table", help=formats)
    if iterations:
        command.add_argument(
            "--iteration-attribute",
            metavar="NAME",
            type=_iteration_attribute,
            default="iteration",
            help=ITERATION_HELP,
        )
    command.add_argument("--skip-invalid", action="store_true", help=SKIP_HELP)
    command.set_defaults(run=run, command_parser=command)


def _class_option(command: argparse.ArgumentParser, classes: Sequence[str]) -> None:
    command.add_argument(
        "--class", dest="class_name", choices=classes, action="append", help=CLASS_HELP
    )


def _output(command: argparse.ArgumentParser, help: str) -> None:
    command.add_argument("-o", "--output", metavar="OUT", help=help)


def build_parser(classes: Sequence[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Inspect nemo.lens span groups and the traces its exporters write.",
        epilog=(
            "Exit status: 0 success, 1 an input cannot be used or the output cannot be "
            "written, 2 bad usage, 141 the reader of standard output went away (| head)."
        ),
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    groups = commands.add_parser(
        "groups",
        help="list span groups and presets, or explain what a spec enables",
        description=(
            "List the span groups of a class with their descriptions and how often they fire, "
            "and its presets. With --spec, show which groups that spec enables and which "
            "entry of it turned each one on or off."
        ),
    )
    groups.add_argument(
        "--class",
        dest="class_name",
        choices=classes,
        action="append",
        help="the span-group class: the base vocabulary or a consumer's (default: base); "
        "repeat it for a process that hosts several consumers (an RL job with a Megatron "
        "backend: --class rl --class megatron), whose spec names groups of all of them",
    )
    groups.add_argument(
        "--spec",
        help="a span-group spec as in NEMO_LENS_SPAN_GROUPS, e.g. 'per_step,-optimizer'",
    )
    groups.set_defaults(run=_runner("_groups_cmd", "cmd_groups"), command_parser=groups)

    summarize = _reading_traces(
        commands,
        "summarize",
        help="per-rank, per-group span counts and durations of a trace",
        description=(
            "Print, for every rank and span group, the number of spans and their total, "
            "mean, median (p50) and 99th-percentile (p99) durations."
        ),
    )
    _last_options(summarize, _runner("_summary", "cmd_summarize"))

    goodput = _reading_traces(
        commands,
        "goodput",
        help="how much of a run trained the model, and where the rest went",
        description=(
            "Account every second of each run, from its first span's start to its last "
            "span's end, to one bucket: productive (steps whose iteration was not executed "
            "again later), initialization, checkpoint_save, evaluation, wasted_progress, "
            "restart (between one process lifetime and the next) or unaccounted. Where "
            "spans overlap the innermost wins. Per rank, and for the run: the slowest rank "
            "bounds it. Several files of one run (ranks, lifetimes after a crash and "
            "resume) are read together."
        ),
    )
    goodput.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object per run (wall_s, productive_s, goodput, badput, and "
        "per-rank detail under ranks) instead of tables",
    )
    _last_options(goodput, _runner("_goodput", "cmd_goodput"), iterations=True)

    stragglers = _reading_traces(
        commands,
        "stragglers",
        help="which ranks arrive late at the sync points, and whether always the same",
        description=(
            "For every iteration and every group that marks a synchronisation point (sync = "
            "true in the schema: step, optimizer, communication), compare when each rank "
            "started there with the median rank. Per run, group and rank: how often it was "
            "the last to arrive, its median lateness, a score from 0 to 1 (1: on time) and "
            "whether it is persistently last or one of rotating late-comers. A rank whose "
            "steps are as long as everyone's, because the collectives make them so, is found "
            "by its late start."
        ),
    )
    stragglers.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object per run, group and rank (run_id, span_group, rank, node, "
        "iterations, times_last, last_share, median_lateness_ns, max_lateness_ns, score, "
        "pattern) instead of tables",
    )
    _last_options(stragglers, _runner("_stragglers", "cmd_stragglers"), iterations=True)

    report = _reading_traces(
        commands,
        "report",
        help="one self-contained HTML page: goodput, a timeline and step durations",
        description=(
            "Write one HTML file, everything inline (it opens from the file system with no "
            "network): the goodput breakdown as a chart with its figures, a timeline of "
            "every rank and span group with hover details, and step duration over "
            "iterations per rank, so a slow-down or a straggler stands out."
        ),
    )
    _output(
        report, "the HTML file to write (default: the first input with .jsonl replaced by .html)"
    )
    report.add_argument("--title", help="the page's title (default: from the input's name)")
    _last_options(report, _runner("_report", "cmd_report"), iterations=True)

    convert = _reading_traces(
        commands,
        "convert",
        help="convert a trace to Chrome trace-event JSON or a Perfetto trace for Perfetto UI",
        description=(
            "Write the spans as Chrome trace-event JSON or Perfetto's protobuf trace format: "
            "one process per rank, one row per span group, nesting preserved. Open the result "
            "at " + PERFETTO_URL + "."
        ),
    )
    convert.add_argument(
        "--to",
        choices=("chrome", "perfetto", "parquet"),
        default="chrome",
        help="the output format (default: chrome): Chrome trace-event JSON; Perfetto's "
        "protobuf trace (.pftrace: smaller, and native to Perfetto UI); or a "
        "Hive-partitioned Parquet dataset (a directory: run_id=.../rank=.../*.parquet) that "
        "every command, DuckDB and Spark read (docs/trace-tables.md)",
    )
    _output(
        convert,
        "where to write ('-' for standard output; default: the first input with .jsonl "
        "replaced by .chrome.json, or .pftrace with --to perfetto)",
    )
    _last_options(convert, _runner("_convert", "cmd_convert"))

    sql = _reading_traces(
        commands,
        "sql",
        first=("QUERY", "the SQL statement to run"),
        help="run a SQL query over a trace's spans and steps",
        description=(
            "Run one SQL statement (DuckDB's dialect) over views of the traces: spans (one "
            "row per span), steps (one row per step execution, with its iteration, rank "
            "and duration), span_groups and span_group_presets (the classes' schema)."
        ),
        epilog=(
            f'Example: {PROG} sql "SELECT rank, count(*) AS steps, median(duration_ns) '
            'FROM steps GROUP BY rank ORDER BY rank" trace.jsonl. '
            f'`{PROG} sql "DESCRIBE spans" TRACE` lists a view\'s columns; docs/sql.md '
            "says what each holds and gives the straggler query. Exit status: 0 success, "
            "1 an input cannot be used, 2 bad usage or a statement the engine rejects."
        ),
    )
    _class_option(sql, classes)
    sql.add_argument("--allow-external-access", action="store_true", help=SQL_UNSAFE_HELP)
    _last_options(
        sql,
        _runner("_sql_cmd", "cmd_sql"),
        formats="table (default), csv (a header row, then the rows) or json (one object a line)",
    )

    check = _reading_traces(
        commands,
        "check",
        help="measure each span group's rate against the tier its schema declares",
        description=(
            "Measure, per span group, how often it fired (spans per iteration, the worst "
            "rank's; spans per process lifetime) and flag a group that fires more often "
            "than its schema's tier allows, a group of the default preset that fires every "
            "iteration, and (with --spec) an enabled group the trace never holds."
        ),
        epilog=(
            "Exit status: 0 clean, 1 something flagged or an input cannot be used, 2 bad "
            "usage. The trace does not record which groups were enabled: give the job's "
            "NEMO_LENS_SPAN_GROUPS as --spec. Nor does it record the job's span-group class: "
            "without --class, --spec leaves out the groups of a consumer class none of whose "
            "own groups the trace holds; name the job's class with --class to check them."
        ),
    )
    _class_option(check, classes)
    check.add_argument(
        "--spec",
        help="the span-group spec the job ran with (its NEMO_LENS_SPAN_GROUPS, e.g. "
        "'per_step'): groups it enables that fire every iteration must appear",
    )
    _last_options(
        check,
        _runner("_sql_cmd", "cmd_check"),
        formats="table (default), csv or json (one object a line), as `sql` prints",
    )

    emit = commands.add_parser(
        "emit-spans",
        help="emit a tree of finished spans (e.g. from scheduler records) through the "
        "configured exporter",
        description=(
            "Emit finished spans over the given intervals through the exporter the usual "
            "configuration names (NEMO_LENS_EXPORTER, NEMO_LENS_TRACE_FILE, OTEL_*), as one "
            "process of service NAME. Parents may be listed in any order. Everything is "
            "checked first: invalid spans emit nothing."
        ),
        epilog=(
            "Exit status: 0 emitted, 1 invalid input (a malformed field, a duplicate name, "
            "a missing parent, a cycle, a time that is not finite), 2 set-up or export "
            "failure. Example: --span job,1767225600,1767232800 "
            "--span queue,1767225600,1767225900,job"
        ),
    )
    emit.add_argument("--service", metavar="NAME", help="the spans' service.name")
    emit.add_argument(
        "--span",
        dest="spans",
        action="append",
        metavar="NAME,START,END[,PARENT]",
        help="one span: its name, start and end in Unix-epoch seconds (decimal, kept to the "
        "nanosecond) and optionally the name of its parent span; repeat for each span",
    )
    emit.set_defaults(run=_runner("_emit_spans", "cmd_emit_spans"), command_parser=emit)

    # Listed for --help only: main() hands these to their own parsers.
    commands.add_parser(
        "generate",
        help="render a span-group schema into classes and docs, or --check them "
        "(needs the [codegen] extra; see nemo-lens generate --help)",
        add_help=False,
    )
    commands.add_parser(
        "diff-schema",
        help="compare two span-group schemas: what breaks users of the old one, what only "
        "warns (see nemo-lens diff-schema --help)",
        add_help=False,
    )
    commands.add_parser(
        "adopt",
        help="write the lens.toml that generates a hand-written SpanGroup class or a "
        "SpanRegistry.register call's groups (see nemo-lens adopt --help)",
        add_help=False,
    )
    return parser


def command_names(parser: argparse.ArgumentParser) -> list[str]:
    """Every command of :func:`build_parser`'s *parser*, in the order ``--help`` lists them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    return []
