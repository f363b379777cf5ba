"""``nemo-lens convert``: a trace as Chrome trace-event JSON (:mod:`._chrome`), as a Perfetto
protobuf trace (:mod:`._perfetto`) or as the Parquet dataset of the trace tables
(:mod:`._engine._parquet`)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from nemo.lens.cli._common import (
    EXIT_OK,
    PERFETTO_URL,
    STDIN,
    NotWritable,
    fail,
    output_file,
    plural,
    print_lines,
    with_engine,
    write_output,
)

if TYPE_CHECKING:
    from nemo.lens.cli._engine import Engine

__all__ = ["cmd_convert"]


def cmd_convert(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if args.to == "parquet":
        return _convert_to_parquet(args, parser)
    from nemo.lens.cli import _chrome, _perfetto

    perfetto = args.to == "perfetto"
    output = output_file(
        args,
        parser,
        ".pftrace" if perfetto else ".chrome.json",
        "name the output file with -o OUT (or -o -)",
    )
    if perfetto and output == STDIN and sys.stdout.isatty():
        parser.error(
            "-o -: a Perfetto trace is binary, not for a terminal; name a file with "
            "-o OUT.pftrace or redirect standard output"
        )

    def work(engine: Engine) -> int:
        written: list[_chrome.ChromeTrace] = []

        def write(stream: Any) -> None:
            if perfetto:
                trace = _perfetto.write_perfetto_trace(engine, stream, sources=args.traces)
            else:
                trace = _chrome.write_chrome_trace(engine, stream, sources=args.traces)
            written.append(trace)

        report = sys.stdout
        if output == STDIN:
            write(sys.stdout.buffer if perfetto else sys.stdout)
            sys.stdout.flush()
            report = sys.stderr
        else:
            try:
                if perfetto:
                    write_output(output, write, binary=True)
                else:
                    write_output(output, write)
            except NotWritable as exc:
                return fail(f"{output}: {exc}", exc.hint)
            except OSError as exc:
                return fail(f"{output}: cannot be written: {exc.strerror or exc}")
        (trace,) = written
        where = "standard output" if output == STDIN else output
        print_lines(
            [
                f"wrote {where}: {trace.spans} spans, {plural(trace.processes, 'rank')}, "
                f"{plural(trace.rows, 'track' if perfetto else 'row')}",
                f"open it in Perfetto ({PERFETTO_URL}, 'Open trace file')"
                + ("" if perfetto else " or chrome://tracing"),
            ],
            report,
        )
        return EXIT_OK

    return with_engine(args, work, detail=True)


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

    def work(engine: Engine) -> int:
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

    return with_engine(args, work, detail=True)
