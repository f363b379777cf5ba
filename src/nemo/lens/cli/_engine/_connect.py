"""Open the engine: one in-memory DuckDB connection with the inputs read into its views, each
by its reader (DuckDB's over a regular file, a copy of standard input or a Parquet dataset; the
careful pass over anything else, which copies what it reads for DuckDB)."""

from __future__ import annotations

import contextlib
import glob
import os
import re
import shutil
import stat
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final

from nemo.lens.cli._engine._careful import Location, Problem, TraceInputError, careful_pass
from nemo.lens.cli._engine._dialect import query
from nemo.lens.cli._engine._jsonl import CHECK_SQL, RESOLVED_VIEW, SPANS_VIEW, dead_sql, stage_sql
from nemo.lens.cli._engine._parquet import (
    SCHEMA_KEY,
    SCHEMA_VERSION,
    STORED,
    footers_sql,
    parquet_view,
)

if TYPE_CHECKING:
    import duckdb

    from nemo.lens.groups import SpanGroup

__all__ = ["STDIN", "VIEWS", "Engine", "EngineUnavailable", "Inputs", "connect", "duckdb_module"]

STDIN: Final = "-"
STDIN_NAME: Final = "<stdin>"
PARQUET_SUFFIX: Final = ".parquet"
MEMORY_LIMIT: Final = "512MB"
"""DuckDB's own memory: past it, it spills to disk (the command stays under 1 GB)."""
MAX_THREADS: Final = 4
INSTALL_HINT: Final = "install it with: pip install 'nemo-lens[cli]'"

VIEWS: Final = ("spans", "steps", "span_groups", "span_group_presets")
"""The views a statement can read (docs/sql.md has their columns)."""
SPAN_COLUMNS: Final = f"{STORED}, reconstructed"
"""The columns of the ``spans`` view, in order (``docs/trace-tables.md``)."""


@dataclass
class Inputs:
    """The inputs, by reader; :meth:`close` removes the scratch directory (copies, spills)."""

    ordered: list[str] = field(default_factory=list)
    """Every JSON-lines input, in the order given (standard input as its copy)."""
    streams: list[str] = field(default_factory=list)
    """Inputs DuckDB cannot read itself (pipes, devices, paths that cannot be read)."""
    parquet: list[str] = field(default_factory=list)
    """Parquet files (a dataset's, found under its directory)."""
    names: dict[str, str] = field(default_factory=dict)
    """File -> the name messages give it, where it is not its path."""
    scratch: str = ""
    repeated: list[str] = field(default_factory=list)
    """What the command line names twice (the same file by another path too): read once."""
    parquet_inputs: int = 0
    """How many of the command line's inputs the Parquet files came from."""

    def name(self, path: str) -> str:
        return self.names.get(path, path)

    def close(self) -> None:
        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = ""


def _sort_inputs(paths: Sequence[str]) -> Inputs:
    """Every input with its reader (a directory without Parquet is the careful pass's error)."""
    inputs = Inputs(scratch=tempfile.mkdtemp(prefix="nemo-lens-"))
    seen: dict[object, str] = {}
    for path in paths:
        if path != STDIN:
            key = _identity(path)
            if key in seen:
                again = "" if seen[key] == path else f" (as {seen[key]})"
                inputs.repeated.append(f"{path} is named twice{again}: read once")
                continue
            seen[key] = path
        if path == STDIN:
            spooled = os.path.join(inputs.scratch, f"stdin-{len(inputs.names)}.jsonl")
            with open(spooled, "wb") as copy:
                # read1: one read a call, so one Ctrl-D on a terminal ends the input
                # (copyfileobj's read waits for a second one after a line was typed).
                stdin: Any = sys.stdin.buffer  # a BufferedReader, or a test's BytesIO
                while chunk := stdin.read1(1 << 20):
                    copy.write(chunk)
            inputs.names[spooled] = STDIN_NAME
            inputs.ordered.append(spooled)
            continue
        try:
            mode = os.stat(path).st_mode
        except OSError:
            mode = 0
        pattern = os.path.join(glob.escape(path), "**", "*" + PARQUET_SUFFIX)
        found = sorted(glob.glob(pattern, recursive=True)) if stat.S_ISDIR(mode) else []
        parquet = [file for file in found if seen.setdefault(_identity(file), file) == file]
        if parquet or (path.endswith(PARQUET_SUFFIX) and stat.S_ISREG(mode)):
            inputs.parquet += parquet or [path]
            inputs.parquet_inputs += 1
            continue
        if not stat.S_ISREG(mode):
            inputs.streams.append(path)
        inputs.ordered.append(path)
    return inputs


def _identity(path: str) -> object:
    """What names one file however it is spelled (a link, ``./``): its device and inode."""
    try:
        found = os.stat(path)
    except OSError:
        return os.path.realpath(path)
    return (found.st_dev, found.st_ino)


DUCKDB_FLOOR: Final = (1, 4, 1)
"""The oldest DuckDB the queries run on (the ``[cli]`` extra's floor): 1.4.0 fails to bind
one, 1.3 runs out of its memory on goodput's, 1.1 cannot parse ``lambda x:``."""


class EngineUnavailable(Exception):
    """DuckDB is not installed, or too old: the commands that read traces need the ``[cli]``
    extra."""

    def __init__(
        self,
        message: str = "this command needs DuckDB, which is not installed",
        hint: str = INSTALL_HINT,
    ) -> None:
        super().__init__(message)
        self.hint = hint


def duckdb_module() -> ModuleType:
    """``duckdb``, or :class:`EngineUnavailable` (none, or older than :data:`DUCKDB_FLOOR`)."""
    try:
        import duckdb
    except ImportError:
        raise EngineUnavailable() from None
    version = str(getattr(duckdb, "__version__", ""))
    numbers = re.match(r"(\d+)\.(\d+)\.(\d+)", version)  # a version it cannot tell is let be
    if numbers and tuple(map(int, numbers.groups())) < DUCKDB_FLOOR:
        floor = ".".join(map(str, DUCKDB_FLOOR))
        raise EngineUnavailable(
            f"this command needs DuckDB {floor} or later; {version} is installed",
            f"upgrade it with: pip install -U 'duckdb>={floor}'",
        )
    return duckdb


class Engine:
    """The connection and what reading the inputs found (see :func:`connect`)."""

    def __init__(self, connection: duckdb.DuckDBPyConnection, inputs: Inputs) -> None:
        self.connection = connection
        self._inputs = inputs
        self.problems: list[Problem] = []
        """What ``skip_invalid`` skipped."""
        self.reconstructed = 0
        """Spans that never ended, their process dead, ended by the reader."""
        self.warnings: list[str] = list(inputs.repeated)
        """What the command should say it did to the inputs (an input named twice, read
        once; span records read twice, counted once)."""

    def sql(self, text: str, params: Any = None) -> duckdb.DuckDBPyConnection:
        """Run *text* (with *params*, a sequence or a dict); the cursor with its result."""
        return self.connection.execute(text, params)

    def rows(self, text: str, params: Any = None) -> list[tuple[Any, ...]]:
        return self.sql(text, params).fetchall()

    def table(self, name: str, columns: str, rows: Sequence[Sequence[Any]]) -> None:
        """Create the temporary table *name* (*columns* in SQL) holding *rows*, inserted in
        one statement (``executemany`` runs one a row: 25 ms for 150 rows, against 5 ms)."""
        self.sql(f"CREATE OR REPLACE TEMP TABLE {name} ({columns})")
        if rows:
            values = ", ".join(["(" + ", ".join("?" * len(rows[0])) + ")"] * len(rows))
            self.sql(f"INSERT INTO {name} VALUES {values}", [v for row in rows for v in row])

    def close(self) -> None:
        self.connection.close()
        self._inputs.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(
    paths: Sequence[str],
    *,
    skip_invalid: bool = False,
    span_group_classes: Sequence[type[SpanGroup]] | None = None,
    iteration_attribute: str = "iteration",
    detail: bool = False,
    show_progress: bool | None = None,
    labels: bool = True,
    sandbox: bool = False,
) -> Engine:
    """Read *paths* (``"-"`` is standard input) into a new engine, its views defined:
    ``spans``, ``steps``, ``span_groups``, ``span_group_presets`` (docs/trace-tables.md).

    Raises :class:`EngineUnavailable` without DuckDB and :class:`TraceInputError` for an
    input that cannot be used (file, line, reason). With *detail* the ``spans`` view
    carries each span's attributes, events and resource as JSON text (else NULL); without
    *labels* each span's ``name``, ``trace_id`` and ``parent_span_id`` are NULL (the figures
    do not read them); *span_group_classes* default to every class nemo.lens ships. With
    *sandbox*, statements read the views and the inputs and nothing else (:func:`_sandbox`).
    """
    duckdb = duckdb_module()
    inputs = _sort_inputs(paths)
    connection = duckdb.connect(
        config={
            "threads": max(1, min(MAX_THREADS, os.cpu_count() or 1)),
            "memory_limit": MEMORY_LIMIT,
            "preserve_insertion_order": False,
            "temp_directory": os.path.join(inputs.scratch, "spill"),
        }
    )
    engine = Engine(connection, inputs)
    try:
        _define_groups(engine, span_group_classes)
        parts = []
        if inputs.ordered:
            engine.reconstructed = _read_lines(
                engine, inputs, skip_invalid, iteration_attribute, detail, show_progress, labels
            )
            parts.append("jsonl_spans")
        one_write = False
        if inputs.parquet:
            one_write = _read_parquet(engine, inputs, iteration_attribute, detail, labels)
            parts.append("parquet_spans")
        _drop_duplicates(engine, parts, one_write=one_write and not inputs.ordered)
        engine.sql(query("steps"))
        if sandbox:
            _sandbox(engine, inputs)
    except BaseException:
        engine.close()
        raise
    return engine


def _read_parquet(
    engine: Engine, inputs: Inputs, iteration: str, detail: bool, labels: bool
) -> bool:
    """Define the ``parquet_spans`` view over the Parquet inputs; whether one write made them
    all, given as one input (``_parquet.WRITE_KEY``). A file DuckDB cannot read, one without
    the trace tables' columns or of a newer version is a :class:`TraceInputError`."""
    duckdb = duckdb_module()
    hint = (
        "read the dataset nemo-lens convert --to parquet writes (docs/trace-tables.md): "
        "convert the trace again, or leave this file out"
    )
    try:
        footers = {row[0]: row[1:] for row in engine.rows(footers_sql(inputs.parquet))}
    except duckdb.Error:
        for path in inputs.parquet:  # which file, and why
            try:
                engine.rows(footers_sql([path]))
            except duckdb.Error as error:
                reason = str(error).splitlines()[0]
                raise TraceInputError(
                    Location(path), f"not a Parquet file: {reason}", hint
                ) from None
        raise
    writes: set[str | None] = set()
    for path in inputs.parquet:
        columns, mistyped, version, write = footers[path]
        missing = [c for c in STORED.split(", ") if c not in columns]
        if missing:
            more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
            raise TraceInputError(
                Location(path),
                f"not the trace tables: no column {', '.join(missing[:3])}{more}",
                hint,
            )
        if mistyped:
            raise TraceInputError(
                Location(path),
                f"not the trace tables: column {mistyped[0]} is not of the type they store "
                "(whole numbers; truncated: true or false)",
                hint,
            )
        if version is not None and not (version.isdigit() and int(version) <= SCHEMA_VERSION):
            raise TraceInputError(
                Location(path),
                f"its metadata says {SCHEMA_KEY} = {version!r}; this nemo-lens reads version "
                f"{SCHEMA_VERSION}",
                "upgrade nemo-lens (pip install -U 'nemo-lens[cli]') to read it",
            )
        writes.add(write)
    engine.sql(parquet_view(inputs.parquet, iteration, detail, labels))
    return inputs.parquet_inputs == 1 and len(writes) == 1 and None not in writes


_KEYS: Final = {
    "jsonl_spans": "SELECT trace_key, span_id FROM lines WHERE kind IN ('span', 'sdk')",
    "parquet_spans": "SELECT trace_key, span_id FROM parquet_spans",
}
"""Per part, the keys of its finished spans (a dead process's are one a lifetime already)."""
_NAMED: Final = "trace_key IS NOT NULL AND span_id IS NOT NULL"
_KEPT: Final = f"""
CREATE OR REPLACE TEMP TABLE spans_kept AS
SELECT * FROM spans_read
QUALIFY NOT ({_NAMED}) OR row_number() OVER (
  PARTITION BY trace_key, span_id
  ORDER BY reconstructed, end_ns, start_ns DESC, source, span_group, status_code, name) = 1
"""
"""Of the records of one span (same trace and span id), the one kept: a finished one over
one a dead process left open, then the one that ends first, the one that starts last, the
first by input name (docs/sql.md: a copy can never lengthen a span or inflate goodput)."""


def _drop_duplicates(engine: Engine, parts: Sequence[str], *, one_write: bool) -> None:
    """Define ``spans``: each span once, however many times it was read (a file concatenated
    or copied twice, a collector's retry), with a warning saying how many records were
    dropped. Checking costs one pass over the keys (none for *one_write*: the spans of one
    dataset that one write made); only a trace with duplicates pays for the sort that picks the
    copy kept."""
    keys = " UNION ALL ".join(_KEYS[part] for part in parts)
    check = (
        f"SELECT count(*) > count(DISTINCT hash(trace_key, span_id)) FROM ({keys}) WHERE {_NAMED}"
    )

    def union(columns: str) -> str:
        return " UNION ALL ".join(f"SELECT {columns} FROM {part}" for part in parts)

    # Without duplicates, spans reads the parts themselves: a view less to bind in every query.
    source = union(SPAN_COLUMNS)
    if not one_write and engine.rows(check)[0][0]:
        engine.sql(
            f"CREATE OR REPLACE TEMP VIEW spans_read AS {union(SPAN_COLUMNS + ', trace_key')}"
        )
        engine.sql(_KEPT)
        read, kept = engine.rows(
            "SELECT (SELECT count(*) FROM spans_read), (SELECT count(*) FROM spans_kept)"
        )[0]
        if read > kept:
            engine.warnings.append(
                f"dropped {_plural(read - kept, 'span record')} repeating a span already read "
                "(the same trace_id and span_id): each span counts once; docs/sql.md says "
                "which copy is kept"
            )
            source = f"SELECT {SPAN_COLUMNS} FROM spans_kept"
    engine.sql(f"CREATE OR REPLACE TEMP VIEW spans AS {source}")


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


SANDBOX_OFF: Final = (
    "enable_external_access",
    "autoinstall_known_extensions",
    "autoload_known_extensions",
)
"""DuckDB's settings that a sandboxed connection turns off, then locks (docs/sql.md)."""


def _sandbox(engine: Engine, inputs: Inputs) -> None:
    """No file, network, database or extension beyond the inputs from here on: the JSON
    lines are already in tables; the Parquet files stay readable, the only allowed paths
    (a DuckDB without ``allowed_paths`` gets them copied into a table first)."""
    settings = {row[0] for row in engine.rows("SELECT name FROM duckdb_settings()")}
    if inputs.parquet and "allowed_paths" in settings:
        engine.sql("SET allowed_paths = ?", [inputs.parquet])
    elif inputs.parquet:
        engine.sql("CREATE OR REPLACE TEMP TABLE parquet_kept AS SELECT * FROM parquet_spans")
        engine.sql("CREATE OR REPLACE TEMP VIEW parquet_spans AS SELECT * FROM parquet_kept")
    for setting in SANDBOX_OFF:
        engine.sql(f"SET {setting} = false")
    engine.sql("SET lock_configuration = true")


def _define_groups(engine: Engine, classes: Sequence[type[SpanGroup]] | None) -> None:
    from nemo.lens.cli._classes import group_rows, preset_rows, selected_classes

    classes = selected_classes(None) if classes is None else classes
    engine.table(
        "span_groups",
        "span_group VARCHAR, category VARCHAR, bucket VARCHAR, fires VARCHAR, sync BOOLEAN",
        group_rows(classes),
    )
    engine.table("span_group_presets", "span_group VARCHAR, preset VARCHAR", preset_rows(classes))


def _read_lines(
    engine: Engine,
    inputs: Inputs,
    skip_invalid: bool,
    iteration: str,
    detail: bool,
    show_progress: bool | None,
    labels: bool,
) -> int:
    """Stage the JSON-lines inputs; how many spans the reader ended for a dead process."""
    duckdb = duckdb_module()

    def stage(files: list[str], names: dict[str, str], structs: bool) -> tuple[Any, ...]:
        text = stage_sql(files, names, iteration, detail, structs=structs, labels=labels)
        _staged(engine, text, files, show_progress)
        found: tuple[Any, ...] = engine.rows(CHECK_SQL)[0]
        return found

    everything = Location(", ".join(map(inputs.name, inputs.ordered)))
    checked: tuple[Any, ...] = ()
    if not inputs.streams:
        # When DuckDB refuses a file, the careful pass says which line, and why.
        with contextlib.suppress(duckdb.Error):
            checked = stage(inputs.ordered, inputs.names, True)
    refused, with_spans = (set(found or ()) for found in (checked or ((), ()))[:2])
    flagged = [
        path
        for path in inputs.ordered
        if not checked or inputs.name(path) in refused or inputs.name(path) not in with_spans
    ]
    if flagged:
        copies, engine.problems, spans = careful_pass(
            flagged, inputs.names, inputs.streams, inputs.scratch, skip_invalid, show_progress
        )
        if not spans and len(flagged) == len(inputs.ordered):
            raise TraceInputError(everything, "no span records in any input")
        if copies or not checked:
            names = {**inputs.names, **{copy: inputs.name(p) for p, copy in copies.items()}}
            try:
                checked = stage([copies.get(p, p) for p in inputs.ordered], names, False)
            except duckdb.Error as error:
                reason = str(error).splitlines()[0]
                raise TraceInputError(everything, f"cannot be read: {reason}") from None
        if checked[0]:
            # The careful pass passed what the SQL refuses: a case the two disagree on.
            raise TraceInputError(Location(checked[0][0]), "holds a record the engine cannot read")
    engine.sql(RESOLVED_VIEW)
    engine.sql(dead_sql(checked[2] > 0))
    engine.sql(SPANS_VIEW)
    return int(engine.rows("SELECT count(*) FROM jsonl_dead")[0][0])


def _staged(engine: Engine, text: str, files: list[str], show_progress: bool | None) -> None:
    """Run the staging statement; on a terminal, with a bar of DuckDB's progress polled."""
    from nemo.lens.cli._progress import progress

    total = sum(os.path.getsize(path) for path in files)
    with progress("reading", total=total, unit="B", unit_scale=True, enabled=show_progress) as bar:
        if not bar.enabled:
            engine.sql(text)
            return
        failure: list[BaseException] = []

        def run() -> None:
            try:
                engine.sql(text)
            except BaseException as error:  # re-raised on the calling thread
                failure.append(error)

        worker = threading.Thread(target=run, name="nemo-lens-read", daemon=True)
        worker.start()
        shown = 0
        while worker.is_alive():
            worker.join(_POLL_S)
            done = engine.connection.query_progress()
            if done > 0:
                now = min(total, int(total * done / 100))
                bar.update(max(0, now - shown))
                shown = max(shown, now)
        bar.update(total - shown)
        if failure:
            raise failure[0]


_POLL_S: Final = 0.1
