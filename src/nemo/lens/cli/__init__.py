"""The ``nemo-lens`` command line: list span groups, summarize, convert and emit traces.

::

    nemo-lens groups [--class megatron|rl|gym] [--spec "per_step,-optimizer"]
    nemo-lens summarize TRACE... [--skip-invalid]
    nemo-lens goodput TRACE... [--json] [--iteration-attribute NAME] [--skip-invalid]
    nemo-lens report TRACE... [-o OUT] [--iteration-attribute NAME] [--skip-invalid]
    nemo-lens convert TRACE... [--to chrome] [-o OUT] [--skip-invalid]
    nemo-lens emit-spans --service NAME --span NAME,START,END[,PARENT] ...
    nemo-lens generate [--schema PATH --out-root DIR] [--docs PATH] [--check]

``TRACE`` is what the ``file`` exporter writes (one JSON span per line), or
standard output captured from the ``console`` exporter; ``-`` reads standard
input. Several inputs (one per rank, say) are read as one trace.

Exit status: 0 on success, 1 when an input cannot be used (missing, empty, a
garbled line: the message names the file and the line) or the output cannot
be written, 2 on bad usage (an unknown option, class or span group).
``emit-spans`` exits 1 on invalid spans (nothing is emitted) and 2 when set-up
or the export fails (see :mod:`nemo.lens.cli._emit_spans`). Also runnable as
``python -m nemo.lens.cli``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import pkgutil
import shlex
import stat
import sys
import tempfile
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Final, TextIO

from nemo.lens import __version__
from nemo.lens.cli._table import format_table
from nemo.lens.cli._trace_io import (
    STDIN,
    Problem,
    Trace,
    TraceInputError,
    TraceStream,
    read_traces,
)

if TYPE_CHECKING:
    # Imported when used: `nemo-lens generate` must run even while the generated
    # modules are stale or broken.
    from nemo.lens.cli._classify import Classifier
    from nemo.lens.groups import SpanGroup
    from nemo.lens.spec import GroupInfo

__all__ = ["EXIT_BAD_INPUT", "EXIT_OK", "EXIT_USAGE", "main", "span_group_classes"]

EXIT_OK: Final = 0
"""The command did what it was asked."""
EXIT_BAD_INPUT: Final = 1
"""An input could not be used, or the output could not be written."""
EXIT_USAGE: Final = 2
"""The command line itself was wrong (argparse's own status for usage errors)."""

PROG: Final = "nemo-lens"
PERFETTO_URL: Final = "https://ui.perfetto.dev"

_BASE_CLASS: Final = "base"
_MAX_PROBLEMS_SHOWN: Final = 5


def span_group_classes() -> dict[str, type[SpanGroup]]:
    """Return ``{"base": SpanGroup, "megatron": MegatronSpanGroup, ...}``.

    Consumers are found by scanning :mod:`nemo.lens.consumers`, so a consumer
    added to the schema shows up in ``--class`` after ``make generate`` with no
    edit here.
    """
    import nemo.lens.consumers as consumers
    from nemo.lens.groups import SpanGroup

    classes: dict[str, type[SpanGroup]] = {_BASE_CLASS: SpanGroup}
    for module_info in sorted(pkgutil.iter_modules(consumers.__path__), key=lambda m: m.name):
        if module_info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{consumers.__name__}.{module_info.name}")
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, SpanGroup)
                and value.__module__ == module.__name__
            ):
                classes[module_info.name] = value
    return classes


# --- output helpers -------------------------------------------------------------------------


def _print_lines(lines: Sequence[str], stream: TextIO | None = None) -> None:
    out = sys.stdout if stream is None else stream
    out.write("".join(line + "\n" for line in lines))


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _fail(message: str, hint: str = "") -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    if hint:
        print(f"  hint: {hint}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _report_problems(problems: Sequence[Problem]) -> None:
    # One line per problem, each naming its file and line, so the warnings can be
    # grepped; a long list is cut short, as one bad file could have millions.
    for problem in problems[:_MAX_PROBLEMS_SHOWN]:
        print(f"{PROG}: warning: skipped {problem}", file=sys.stderr)
    if len(problems) > _MAX_PROBLEMS_SHOWN:
        more = len(problems) - _MAX_PROBLEMS_SHOWN
        print(f"{PROG}: warning: skipped {more} more", file=sys.stderr)


def _read(paths: Sequence[str], skip_invalid: bool) -> Trace | int:
    """Read the inputs, or report why not and return the exit status."""
    try:
        trace = read_traces(paths, skip_invalid=skip_invalid)
    except TraceInputError as error:
        return _fail(str(error), error.hint)
    _report_problems(trace.problems)
    return trace


# --- groups ---------------------------------------------------------------------------------


def _first_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0] if lines else ""


def _info(classes: Sequence[type[SpanGroup]], group: str) -> GroupInfo:
    from nemo.lens.spec import GroupInfo

    for cls in classes:
        info = getattr(cls, "GROUP_INFO", {}).get(group)
        if info is not None:
            return info  # type: ignore[no-any-return]
    # A hand-written subclass may add groups without describing them.
    return GroupInfo(group, "(not described)", "?", "?")


def _describe(info: GroupInfo) -> str:
    if info.deprecated:
        return f"{info.description} (deprecated: {info.deprecated})"
    return info.description


def _order(classes: Sequence[type[SpanGroup]]) -> list[str]:
    """Every group of the classes, in the order their schemas list them."""
    order: dict[str, None] = {}
    for cls in classes:
        order.update(dict.fromkeys(getattr(cls, "GROUP_INFO", {})))
    for cls in classes:
        order.update(dict.fromkeys(sorted(cls.ALL_GROUPS - set(order))))
    union = frozenset().union(*(cls.ALL_GROUPS for cls in classes))
    return [group for group in order if group in union]


def _example_spec(presets: Mapping[str, frozenset[str]], order: list[str]) -> str:
    """A spec worth trying, from this vocabulary: a preset with one of its groups removed."""
    for name in ("per_step", "default", *presets):
        members = [g for g in order if g in presets.get(name, frozenset())]
        if members:
            return f"{name},-{members[-1]}"
    return "all"


def _cmd_groups(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from nemo.lens.spec import categories_for, presets_of

    available = span_group_classes()
    classes = [available[name] for name in dict.fromkeys(args.class_name or [_BASE_CLASS])]
    order = _order(classes)
    if args.spec is not None:
        return _explain_spec(classes, args.spec, order, parser)
    title = " + ".join(cls.__name__ for cls in classes)
    docs = " ".join(_first_line(cls.__doc__) for cls in classes)
    lines = [f"{title}: {docs}", ""]
    categories = categories_for(classes)
    rows = []
    for group in order:
        info = _info(classes, group)
        rows.append((group, info.fires, categories[group], _describe(info)))
    lines += format_table(("group", "fires", "category", "description"), rows, ("<",) * 4)
    lines.append("")
    presets: dict[str, frozenset[str]] = {}
    for cls in classes:
        for name, members in presets_of(cls).items():
            presets[name] = presets.get(name, frozenset()) | members
    # The declared presets in schema order, then the implicit ones.
    names = [n for n in presets if n not in ("goodput", "profiling", "all")]
    names += ["goodput", "profiling", "all"]
    preset_rows = [
        (
            name,
            "every group" if name == "all" else ", ".join(g for g in order if g in presets[name]),
        )
        for name in names
    ]
    lines += format_table(("preset", "groups"), preset_rows, ("<", "<"))
    classes_flag = "".join(f" --class {name}" for name in args.class_name or [])
    lines += [
        "",
        "Choose groups per run with NEMO_LENS_SPAN_GROUPS, e.g. NEMO_LENS_SPAN_GROUPS=per_step.",
        f"See what a spec enables: {PROG} groups{classes_flag} "
        f"--spec {shlex.quote(_example_spec(presets, order))}",
    ]
    _print_lines(lines)
    return EXIT_OK


def _explain_spec(
    classes: Sequence[type[SpanGroup]],
    spec: str,
    order: list[str],
    parser: argparse.ArgumentParser,
) -> int:
    from nemo.lens.spec import explain_for

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DeprecationWarning)
        try:
            enabled, steps = explain_for(spec, classes)
        except ValueError as exc:
            parser.error(f"--spec {spec!r}: {exc}")
    for warning in caught:
        print(f"{PROG}: note: {warning.message}", file=sys.stderr)
    decided: dict[str, str] = {}
    for step in steps:
        for group in step.added | step.removed:
            decided[group] = step.entry
    rows = [
        (
            group,
            _info(classes, group).fires,
            "on" if group in enabled else "off",
            decided.get(group, "(not in the spec)"),
        )
        for group in order
    ]
    title = " + ".join(cls.__name__ for cls in classes)
    lines = [
        f"{title}: spec {spec!r} enables {len(enabled)} of {len(order)} groups",
        "",
        *format_table(("group", "fires", "enabled", "decided by"), rows, ("<", "<", "<", "<")),
        "",
        f"Use it with: NEMO_LENS_SPAN_GROUPS={shlex.quote(spec)}",
    ]
    _print_lines(lines)
    return EXIT_OK


# --- summarize ------------------------------------------------------------------------------


def _cmd_summarize(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from nemo.lens.cli._summary import format_summary, summarize

    stream = TraceStream(args.traces, skip_invalid=args.skip_invalid)
    try:
        summaries = summarize(stream)
    except TraceInputError as error:
        return _fail(str(error), error.hint)
    _report_problems(stream.problems)
    _print_lines(format_summary(summaries))
    return EXIT_OK


# --- goodput --------------------------------------------------------------------------------


def _iteration_attribute(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("the attribute name is empty; the default is 'iteration'")
    return text.strip()


def _goodput_notes(classifier: Classifier) -> None:
    """Say on stderr what makes the figures less than they could be, and the fix."""
    if not classifier.steps:
        print(
            f"{PROG}: note: no step span in the trace, so nothing counts as productive; "
            "record the step group (NEMO_LENS_SPAN_GROUPS=per_step)",
            file=sys.stderr,
        )
    elif classifier.steps_without_iteration:
        print(
            f"{PROG}: note: {classifier.steps_without_iteration} of {classifier.steps} step "
            f"spans carry no whole-number {classifier.iteration_attribute!r} attribute; "
            "their time counts as productive, since a re-executed iteration cannot be told "
            "(name the attribute with --iteration-attribute)",
            file=sys.stderr,
        )


def _cmd_goodput(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from nemo.lens.cli._classify import Classifier
    from nemo.lens.cli._goodput import Accountant
    from nemo.lens.cli._goodput_format import format_goodput, run_json

    classifier = Classifier.shipped(args.iteration_attribute)
    accountant = Accountant()
    stream = TraceStream(args.traces, skip_invalid=args.skip_invalid)
    try:
        for span in stream:
            accountant.add(classifier.classify(span))
    except TraceInputError as error:
        return _fail(str(error), error.hint)
    _report_problems(stream.problems)
    _goodput_notes(classifier)
    runs = accountant.runs()
    if args.json:
        _print_lines([json.dumps(run_json(run), allow_nan=False) for run in runs])
    else:
        _print_lines(format_goodput(runs))
    return EXIT_OK


# --- report ---------------------------------------------------------------------------------


def _default_report(path: str) -> str:
    stem = path[: -len(".jsonl")] if path.endswith(".jsonl") else path
    return f"{stem}.html"


def _cmd_report(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from nemo.lens.cli._classify import Classifier
    from nemo.lens.cli._goodput_format import goodput_line
    from nemo.lens.cli._report import ReportBuilder
    from nemo.lens.cli._report_html import render_report

    output: str | None = args.output
    if output is None:
        if args.traces[0] == STDIN:
            parser.error("reading standard input: name the report file with -o OUT")
        output = _default_report(args.traces[0])
    if output == STDIN:
        parser.error("-o -: the report is a file to open in a browser; name a file")
    if any(path != STDIN and _same_file(path, output) for path in args.traces):
        parser.error(f"-o {output} would overwrite an input; choose another output file")

    directory = os.path.dirname(output) or "."
    if not os.path.isdir(directory):
        # Said before a long read, not after it.
        return _fail(
            f"{output}: cannot be written: no directory {directory}",
            f"create it (mkdir -p {shlex.quote(directory)}) or name another output with -o",
        )
    classifier = Classifier.shipped(args.iteration_attribute)
    builder = ReportBuilder(classifier)
    stream = TraceStream(args.traces, skip_invalid=args.skip_invalid)
    try:
        for span in stream:
            builder.add(span)
    except TraceInputError as error:
        return _fail(str(error), error.hint)
    _report_problems(stream.problems)
    _goodput_notes(classifier)
    title = args.title or f"nemo.lens report: {os.path.basename(args.traces[0])}" + (
        f" and {_plural(len(args.traces) - 1, 'more input')}" if len(args.traces) > 1 else ""
    )
    data = builder.data(title=title, sources=args.traces, generator=f"{PROG} {__version__}")
    page = render_report(data)

    def write(stream: TextIO) -> None:
        stream.write(page)

    try:
        _write_output(output, write)
    except OSError as exc:
        return _fail(f"{output}: cannot be written: {exc.strerror or exc}")
    drawn = data["drawn_count"]
    shown = (
        f"{data['span_count']} spans"
        if drawn == data["span_count"]
        else f"{data['span_count']} spans, the {drawn} longest drawn as bars"
    )
    several = len(builder.runs) > 1
    _print_lines(
        [(f"run {run.run_id}: " if several else "") + goodput_line(run) for run in builder.runs]
        + [f"wrote {output}: {shown}; open it in a browser (it needs no network)"]
    )
    return EXIT_OK


# --- convert --------------------------------------------------------------------------------


def _default_output(path: str) -> str:
    stem = path[: -len(".jsonl")] if path.endswith(".jsonl") else path
    return f"{stem}.chrome.json"


def _cmd_convert(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from nemo.lens.cli._chrome import build_chrome_trace, write_chrome_trace

    output: str | None = args.output
    if output is None:
        if args.traces[0] == STDIN:
            parser.error("reading standard input: name the output file with -o OUT (or -o -)")
        output = _default_output(args.traces[0])
    if output != STDIN and any(path != STDIN and _same_file(path, output) for path in args.traces):
        parser.error(f"-o {output} would overwrite an input; choose another output file")

    trace = _read(args.traces, args.skip_invalid)
    if isinstance(trace, int):
        return trace
    chrome = build_chrome_trace(trace.spans, sources=args.traces)

    if output == STDIN:
        write_chrome_trace(chrome, sys.stdout)
        sys.stdout.flush()
        report = sys.stderr
    else:
        try:
            _write_output(output, lambda stream: write_chrome_trace(chrome, stream))
        except _NotWritable as exc:
            return _fail(f"{output}: {exc}", exc.hint)
        except OSError as exc:
            return _fail(f"{output}: cannot be written: {exc.strerror or exc}")
        report = sys.stdout
    ranks = _plural(chrome.processes, "rank")
    rows = _plural(chrome.rows, "row")
    where = "standard output" if output == STDIN else output
    _print_lines(
        [
            f"wrote {where}: {chrome.spans} spans, {ranks}, {rows}",
            f"open it in Perfetto ({PERFETTO_URL}, 'Open trace file') or chrome://tracing",
        ],
        report,
    )
    return EXIT_OK


def _same_file(a: str, b: str) -> bool:
    """Whether paths *a* and *b* name one file (through symlinks and hard links too)."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist (yet)
        return os.path.realpath(a) == os.path.realpath(b)


class _NotWritable(Exception):
    """The output path names something a trace cannot be written to."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.hint = hint


# Where paths are views of open files and devices (/dev/stdout, /proc/self/fd/1):
# never renamed onto, always written through.
_SPECIAL_ROOTS: Final = ("/dev/", "/proc/")


def _write_output(path: str, write: Callable[[TextIO], None]) -> None:
    """Write the converted trace to what *path* names, never replacing a non-file.

    * A regular file, or a path that does not exist yet, gets a new file
      atomically (:func:`_write_atomically`), keeping an existing file's
      permissions; a symlink is followed, so the file it points to is the one
      replaced and the link stays.
    * A pipe or a character device (``/dev/stdout``, ``/dev/null``, a
      terminal), and anything under ``/dev`` or ``/proc``, is written to
      directly: renaming onto it would replace the device node or the link
      with a regular file.
    * A directory, a block device or a socket is refused.
    """
    try:
        found = os.stat(path)
    except FileNotFoundError:
        found = None
    special = os.path.abspath(path).startswith(_SPECIAL_ROOTS) or os.path.realpath(path).startswith(
        _SPECIAL_ROOTS
    )
    if found is not None and stat.S_ISDIR(found.st_mode):
        raise _NotWritable("is a directory", "name a file to write, e.g. -o trace.chrome.json")
    if found is not None and not (
        stat.S_ISREG(found.st_mode) or stat.S_ISFIFO(found.st_mode) or stat.S_ISCHR(found.st_mode)
    ):
        kind = "a block device" if stat.S_ISBLK(found.st_mode) else "a socket"
        raise _NotWritable(
            f"is {kind}, not a file",
            "write to a regular file, a pipe or a character device such as /dev/stdout",
        )
    if special or (found is not None and not stat.S_ISREG(found.st_mode)):
        with open(path, "w", encoding="utf-8", newline="\n") as stream:
            write(stream)
        return
    _write_atomically(os.path.realpath(path), write, found)


def _write_atomically(
    path: str, write: Callable[[TextIO], None], existing: os.stat_result | None = None
) -> None:
    """Write through a temporary file beside ``path``, then rename it into place.

    A failed or interrupted conversion never leaves a half-written trace that a
    viewer would reject with a confusing parse error. The new file gets the
    permissions *existing* had, or those a plain ``open()`` would give it.
    """
    directory = os.path.dirname(path) or "."
    handle, temporary = tempfile.mkstemp(
        prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory
    )
    try:
        if existing is not None:
            mode = stat.S_IMODE(existing.st_mode)
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(temporary, mode)
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
            write(stream)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


# --- emit-spans -----------------------------------------------------------------------------


def _cmd_emit_spans(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from nemo.lens.cli._emit_spans import emit_spans

    return emit_spans(args.service, args.spans or [])


# --- the parser ------------------------------------------------------------------------------


def _parser(classes: Sequence[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Inspect nemo.lens span groups and the traces its exporters write.",
        epilog=(
            "Exit status: 0 success, 1 an input cannot be used or the output cannot be "
            "written, 2 bad usage."
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
    groups.set_defaults(run=_cmd_groups, command_parser=groups)

    traces_help = (
        "a trace from the file exporter, or captured output of the console exporter; "
        "'-' reads standard input; several inputs (one per rank) are read together"
    )
    skip_help = (
        "skip lines that are not span records (a program's own output, a line cut short) "
        "and empty inputs, with a warning, instead of stopping at the first"
    )
    summarize = commands.add_parser(
        "summarize",
        help="per-rank, per-group span counts and durations of a trace",
        description=(
            "Print, for every rank and span group, the number of spans and their total, "
            "mean, median (p50) and 99th-percentile (p99) durations."
        ),
    )
    summarize.add_argument("traces", nargs="+", metavar="TRACE", help=traces_help)
    summarize.add_argument("--skip-invalid", action="store_true", help=skip_help)
    summarize.set_defaults(run=_cmd_summarize, command_parser=summarize)

    iteration_help = (
        "the step spans' attribute that holds the iteration number (default: iteration); "
        "an iteration executed again after a restart makes its earlier execution wasted "
        "progress"
    )
    goodput = commands.add_parser(
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
    goodput.add_argument("traces", nargs="+", metavar="TRACE", help=traces_help)
    goodput.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object per run (wall_s, productive_s, goodput, badput, and "
        "per-rank detail under ranks) instead of tables",
    )
    goodput.add_argument(
        "--iteration-attribute",
        metavar="NAME",
        type=_iteration_attribute,
        default="iteration",
        help=iteration_help,
    )
    goodput.add_argument("--skip-invalid", action="store_true", help=skip_help)
    goodput.set_defaults(run=_cmd_goodput, command_parser=goodput)

    report = commands.add_parser(
        "report",
        help="one self-contained HTML page: goodput, a timeline and step durations",
        description=(
            "Write one HTML file, everything inline (it opens from the file system with no "
            "network): the goodput breakdown as a chart with its figures, a timeline of "
            "every rank and span group with hover details, and step duration over "
            "iterations per rank, so a slow-down or a straggler stands out."
        ),
    )
    report.add_argument("traces", nargs="+", metavar="TRACE", help=traces_help)
    report.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="the HTML file to write (default: the first input with .jsonl replaced by .html)",
    )
    report.add_argument("--title", help="the page's title (default: from the input's name)")
    report.add_argument(
        "--iteration-attribute",
        metavar="NAME",
        type=_iteration_attribute,
        default="iteration",
        help=iteration_help,
    )
    report.add_argument("--skip-invalid", action="store_true", help=skip_help)
    report.set_defaults(run=_cmd_report, command_parser=report)

    convert = commands.add_parser(
        "convert",
        help="convert a trace to Chrome trace-event JSON for Perfetto UI or chrome://tracing",
        description=(
            "Write the spans as Chrome trace-event JSON: one process per rank, one row per "
            "span group, nesting preserved. Open the result at " + PERFETTO_URL + "."
        ),
    )
    convert.add_argument("traces", nargs="+", metavar="TRACE", help=traces_help)
    convert.add_argument(
        "--to",
        choices=("chrome",),
        default="chrome",
        help="the output format (default: chrome)",
    )
    convert.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="where to write ('-' for standard output; default: the first input with "
        ".jsonl replaced by .chrome.json)",
    )
    convert.add_argument("--skip-invalid", action="store_true", help=skip_help)
    convert.set_defaults(run=_cmd_convert, command_parser=convert)

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
    emit.set_defaults(run=_cmd_emit_spans, command_parser=emit)

    # Listed for --help only: main() hands `generate` to the generator's own parser.
    commands.add_parser(
        "generate",
        help="render a span-group schema into classes and docs, or --check them "
        "(needs the [codegen] extra; see nemo-lens generate --help)",
        add_help=False,
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["generate"]:
        # The generator has its own parser, and imports Jinja2 only when it runs.
        from nemo.lens.codegen.command import main as generate

        return generate(arguments[1:])
    parser = _parser(sorted(span_group_classes()))
    try:
        args = parser.parse_args(arguments)
        if args.command is None:
            parser.print_usage(sys.stderr)
            print(
                f"{PROG}: error: name a command: groups, summarize, goodput, report or convert; "
                f"`{PROG} --help` lists every command",
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
