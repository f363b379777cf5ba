"""``nemo-lens goodput`` and ``report``: where a run's time went, as figures and as a page."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from typing import TYPE_CHECKING

from nemo.lens._version import __version__
from nemo.lens.cli._common import (
    EXIT_OK,
    PROG,
    STDIN,
    fail,
    output_file,
    plural,
    print_lines,
    with_engine,
    write_output,
)

if TYPE_CHECKING:
    from nemo.lens.cli._engine import Engine

__all__ = ["cmd_goodput", "cmd_report", "iteration_attribute"]


def iteration_attribute(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("the attribute name is empty; the default is 'iteration'")
    return text.strip()


def _goodput_notes(engine: Engine, iteration_attribute: str) -> None:
    """Say on stderr what makes the figures less than they could be, and the fix."""
    from nemo.lens.cli._goodput import goodput_notes

    steps, without_iteration = goodput_notes(engine)
    if not steps:
        print(
            f"{PROG}: note: no step span in the trace, so nothing counts as productive; "
            "record the step group (NEMO_LENS_SPAN_GROUPS=per_step)",
            file=sys.stderr,
        )
    elif without_iteration:
        print(
            f"{PROG}: note: {without_iteration} of {steps} step "
            f"spans carry no whole-number {iteration_attribute!r} attribute; "
            "their time counts as productive, since a re-executed iteration cannot be told "
            "(name the attribute with --iteration-attribute)",
            file=sys.stderr,
        )


def cmd_goodput(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from nemo.lens.cli._goodput import goodput_runs
    from nemo.lens.cli._goodput_format import format_goodput, run_json

    def work(engine: Engine) -> int:
        _goodput_notes(engine, args.iteration_attribute)
        runs = goodput_runs(engine)
        if args.json:
            print_lines([json.dumps(run_json(run), allow_nan=False) for run in runs])
        else:
            print_lines(format_goodput(runs))
        return EXIT_OK

    return with_engine(args, work, iteration_attribute=args.iteration_attribute, labels=False)


def cmd_report(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from nemo.lens.cli._goodput_format import goodput_line
    from nemo.lens.cli._report import ReportBuilder
    from nemo.lens.cli._report_html import render_report

    output = output_file(args, parser, ".html", "name the report file with -o OUT")
    if output == STDIN:
        parser.error("-o -: the report is a file to open in a browser; name a file")
    directory = os.path.dirname(output) or "."
    if not os.path.isdir(directory):
        # Said before a long read, not after it.
        return fail(
            f"{output}: cannot be written: no directory {directory}",
            f"create it (mkdir -p {shlex.quote(directory)}) or name another output with -o",
        )
    title = args.title or f"nemo.lens report: {os.path.basename(args.traces[0])}" + (
        f" and {plural(len(args.traces) - 1, 'more input')}" if len(args.traces) > 1 else ""
    )

    def work(engine: Engine) -> int:
        _goodput_notes(engine, args.iteration_attribute)
        builder = ReportBuilder.from_engine(engine)
        data = builder.data(title=title, sources=args.traces, generator=f"{PROG} {__version__}")
        page = render_report(data)
        try:
            write_output(output, lambda stream: stream.write(page))
        except OSError as exc:
            return fail(f"{output}: cannot be written: {exc.strerror or exc}")
        drawn, spans = data["drawn_count"], data["span_count"]
        shown = f"{spans} spans" + (f", the {drawn} longest drawn as bars" if drawn < spans else "")
        several = len(builder.runs) > 1
        print_lines(
            [(f"run {run.run_id}: " if several else "") + goodput_line(run) for run in builder.runs]
            + ([summary] if (summary := builder.stragglers.summary()) else [])
            + [f"wrote {output}: {shown}; open it in a browser (it needs no network)"]
        )
        return EXIT_OK

    return with_engine(args, work, iteration_attribute=args.iteration_attribute, detail=True)
