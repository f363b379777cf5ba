"""``nemo-lens summarize``, ``convert`` and ``emit-spans``: what a trace holds, in another
form, and spans written after the fact."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TextIO

from nemo.lens.cli._common import (
    EXIT_OK,
    PERFETTO_URL,
    NotWritable,
    fail,
    open_engine,
    output_file,
    plural,
    print_lines,
    write_output,
)
from nemo.lens.cli._trace_io import STDIN

__all__ = ["cmd_convert", "cmd_emit_spans", "cmd_summarize"]


def cmd_summarize(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from nemo.lens.cli._summary import format_summary, summarize

    engine = open_engine(args.traces, args.skip_invalid, labels=False)
    if isinstance(engine, int):
        return engine
    with engine:
        summaries = summarize(engine)
    print_lines(format_summary(summaries))
    return EXIT_OK


# --- convert --------------------------------------------------------------------------------


def cmd_convert(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if args.to == "parquet":
        return _convert_to_parquet(args, parser)
    from nemo.lens.cli import _chrome

    unnamed = "name the output file with -o OUT (or -o -)"
    output = output_file(args, parser, ".chrome.json", unnamed)

    engine = open_engine(args.traces, args.skip_invalid, detail=True)
    if isinstance(engine, int):
        return engine
    written: list[_chrome.ChromeTrace] = []

    def write(stream: TextIO) -> None:
        written.append(_chrome.write_chrome_trace(engine, stream, sources=args.traces))

    with engine:
        if output == STDIN:
            write(sys.stdout)
            sys.stdout.flush()
            report = sys.stderr
        else:
            try:
                write_output(output, write)
            except NotWritable as exc:
                return fail(f"{output}: {exc}", exc.hint)
            except OSError as exc:
                return fail(f"{output}: cannot be written: {exc.strerror or exc}")
            report = sys.stdout
    (chrome,) = written
    ranks = plural(chrome.processes, "rank")
    rows = plural(chrome.rows, "row")
    where = "standard output" if output == STDIN else output
    print_lines(
        [
            f"wrote {where}: {chrome.spans} spans, {ranks}, {rows}",
            f"open it in Perfetto ({PERFETTO_URL}, 'Open trace file') or chrome://tracing",
        ],
        report,
    )
    return EXIT_OK


def _convert_to_parquet(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from nemo.lens.cli._engine._parquet import (
        OPEN_FILES,
        SCHEMA_VERSION,
        SIZES_SQL,
        copy_sql,
        rows_per_group,
    )

    output = output_file(args, parser, ".parquet", "name the dataset's directory with -o DIR")
    if output == STDIN:
        parser.error("-o -: a Parquet dataset is a directory; name one")
    if os.path.exists(output) and not (os.path.isdir(output) and not os.listdir(output)):
        return fail(
            f"{output}: already exists",
            "name a new directory (or an empty one) with -o DIR; a dataset is never "
            "written over another",
        )
    engine = open_engine(args.traces, args.skip_invalid, detail=True)
    if isinstance(engine, int):
        return engine
    with engine:
        partitions, row_bytes = engine.rows(SIZES_SQL)[0]
        rows = rows_per_group(int(partitions), float(row_bytes))
        # The partitioned writer flushes a partition at this many rows (DuckDB's default
        # is 524,288 rows a partition: gigabytes at a few hundred bytes a row).
        engine.sql(f"SET partitioned_write_flush_threshold = {rows}")
        engine.sql(f"SET partitioned_write_max_open_files = {OPEN_FILES}")
        try:
            engine.sql(copy_sql(output, rows))
        except Exception as exc:  # duckdb.Error: the file system refused
            return fail(f"{output}: cannot be written: {exc}")
        spans, ranks, runs = engine.rows(
            "SELECT count(*), count(DISTINCT (run_id, coalesce(rank, -1))), "
            "count(DISTINCT run_id) FROM spans"
        )[0]
    print_lines(
        [
            f"wrote {output}: {spans} spans, {plural(runs, 'run')}, {plural(ranks, 'rank')} "
            f"(Parquet, trace tables version {SCHEMA_VERSION}); every nemo-lens command "
            "reads it as a TRACE"
        ]
    )
    return EXIT_OK


# --- emit-spans -----------------------------------------------------------------------------


def cmd_emit_spans(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from nemo.lens.cli._emit_spans import emit_spans

    return emit_spans(args.service, args.spans or [])
