"""The engine's figures equal the reference implementation's (tests/cli/reference), a
plain Python computation of them, on generated traces of every shape a
run leaves: crashed and resumed lifetimes, spans a killed process left open, truncated
steps, several ranks, old resource keys, spans without a group or of an unknown one. And
the same again read back from the Parquet dataset ``convert --to parquet`` writes."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

from nemo.lens import semconv
from nemo.lens.cli._engine import connect
from nemo.lens.cli._engine._connect import DUCKDB_FLOOR
from nemo.lens.cli._goodput import goodput_runs, run_json
from nemo.lens.cli._summary import summarize
from nemo.lens.groups import SpanGroup

from .conftest import EPOCH, MS, Result, line, span_dict, write_lines
from .reference.classify import Classifier
from .reference.goodput import Accountant
from .reference.read import read_spans
from .reference.summary import summarize as reference_summarize

Run = Callable[..., Result]

# Groups the generator draws from: the shipped vocabulary's own, one no class knows, none.
GROUPS = [*SpanGroup.GROUP_INFO, "test_only_group", None]


def _lifetime_lines(
    rng: random.Random, rank: int, lifetime: str, start_ms: float, *, old: bool, killed: bool
) -> tuple[list[str], float]:
    """One lifetime of one rank: nested spans of random groups, steps with iterations that
    may repeat an earlier lifetime's, open records (and, when *killed*, no end for some)."""
    records: list[str] = []
    resource: dict[str, Any] = {"service.name": "svc"}
    if old:
        resource.update({"nemo.run_id": "run1", "nemo.rank": rank, "process.pid": 7})
    else:
        resource.update({"nemo.run.id": "run1", "dl.rank": rank, "nemo.lifetime.id": lifetime})
        records.append(json.dumps({"trace_format": 2, "lifetime": lifetime, "resource": resource}))
    at = start_ms
    # Span ids unique over the trace, as the SDK's random ones are: the engine counts the
    # records of one trace and span id once. The lifetime names the rank and the lifetime.
    ids = (f"{lifetime[4:]}{n:04x}" for n in range(1, 10_000))
    for _ in range(rng.randint(5, 25)):
        group = rng.choice(GROUPS)
        length = rng.choice([0, 1, 2.5, 7, 20])
        iteration = rng.randint(0, 8) if group == SpanGroup.STEP else None
        attributes: dict[str, Any] = {}
        if iteration is not None and rng.random() < 0.9:
            attributes["iteration"] = rng.choice([iteration, str(iteration), float(iteration)])
        if rng.random() < 0.5:
            attributes[semconv.SPAN_CATEGORY] = rng.choice(["goodput", "profiling"])
        if rng.random() < 0.1:
            attributes[semconv.SPAN_TRUNCATED] = True
        record = span_dict(
            f"s.{group}",
            start_ms=at,
            end_ms=at + length,
            group=group,
            rank=rank,
            span_id=next(ids),
            attributes=attributes,
        )
        if rng.random() < 0.3:  # a child inside it, of another group
            child = span_dict(
                "child",
                start_ms=at + length / 4,
                end_ms=at + length / 2,
                group=rng.choice(GROUPS),
                rank=rank,
                span_id=next(ids),
            )
            records.append(_as(child, lifetime, old))
        # The exporter records open only goodput spans (by their category attribute).
        if not old and attributes.get(semconv.SPAN_CATEGORY) == "goodput" and rng.random() < 0.6:
            opened = {
                k: v for k, v in record.items() if k not in ("end_time_unix_nano", "resource")
            }
            opened.update(lifetime=lifetime, open_at_unix_nano=record["start_time_unix_nano"] + 1)
            records.append(json.dumps(opened))
            if killed and rng.random() < 0.5:
                continue  # its process died in it: no span line
        records.append(_as(record, lifetime, old))
        at += length * rng.choice([0.5, 1, 1.2])
    if not old:
        alive = EPOCH + round((at + 3) * MS)
        records.append(json.dumps({"lifetime": lifetime, "alive_at_unix_nano": alive}))
    rng.shuffle(records)  # no reader may count on the order of the lines
    return records, at


def _as(record: dict[str, Any], lifetime: str, old: bool) -> str:
    if old:
        return line(record)
    trimmed = {k: v for k, v in record.items() if k != "resource"}
    return line({**trimmed, "lifetime": lifetime})


def generated_trace(directory: Path, seed: int) -> list[Path]:
    rng = random.Random(seed)
    paths = []
    for rank in range(rng.randint(1, 3)):
        lines: list[str] = []
        at = 0.0
        for number in range(rng.randint(1, 3)):
            old = rng.random() < 0.3
            chunk, at = _lifetime_lines(
                rng, rank, f"{seed:04x}{rank:04x}{number:08x}", at, old=old, killed=True
            )
            lines += chunk
            at += rng.choice([0, 5, 30])
        paths.append(write_lines(directory / f"rank{rank}.jsonl", lines))
    return paths


def reference(paths: list[Path]) -> tuple[list[Any], list[dict[str, Any]]]:
    spans = read_spans(paths)
    classifier = Classifier.shipped()
    runs = Accountant().add_all(classifier.classify(s) for s in spans).runs()
    return reference_summarize(spans), [run_json(run) for run in runs]  # type: ignore[arg-type]


def engine_figures(paths: list[str]) -> tuple[list[Any], list[dict[str, Any]]]:
    with connect(paths) as engine:
        return summarize(engine), [run_json(run) for run in goodput_runs(engine)]


def _plain(summaries: list[Any]) -> list[Any]:
    # Percentiles to 12 significant digits: DuckDB interpolates in another order of
    # floating-point operations (the last bit or two differ; printed figures never do).
    return [
        (
            (s.process.rank, s.process.run_id, s.process.service),
            s.span_count,
            [
                (g.group, g.count, g.total_ns, f"{g.p50_ns:.12g}", f"{g.p99_ns:.12g}")
                for g in s.groups
            ],
        )
        for s in summaries
    ]


@pytest.mark.parametrize("seed", range(12))
def test_the_engine_gives_the_reference_figures(tmp_path: Path, seed: int) -> None:
    paths = generated_trace(tmp_path, seed)
    expected_summary, expected_goodput = reference(paths)

    summary, goodput = engine_figures([str(p) for p in paths])

    assert _plain(summary) == _plain(expected_summary)
    assert goodput == expected_goodput
    assert expected_goodput  # the trace holds a run at all


@pytest.mark.parametrize("seed", range(3))
def test_the_parquet_dataset_gives_the_same_figures(run: Run, tmp_path: Path, seed: int) -> None:
    paths = generated_trace(tmp_path, seed)
    dataset = tmp_path / "dataset"

    result = run("convert", "--to", "parquet", *map(str, paths), "-o", str(dataset))

    assert result.status == 0, result.err
    assert sorted(p.name for p in dataset.glob("run_id=run1/rank=*")) == [
        f"rank={rank}" for rank in range(len(paths))
    ]
    assert {p.name for p in dataset.glob("run_id=run1/rank=*/*")} == {"part-0.parquet"}
    assert _plain(engine_figures([str(dataset)])[0]) == _plain(reference(paths)[0])
    assert engine_figures([str(dataset)])[1] == reference(paths)[1]


def test_the_dataset_declares_its_schema_version(run: Run, tmp_path: Path) -> None:
    import duckdb

    from nemo.lens.cli._engine._parquet import SCHEMA_KEY, SCHEMA_VERSION

    paths = generated_trace(tmp_path, 1)
    dataset = tmp_path / "dataset"
    assert run("convert", "--to", "parquet", *map(str, paths), "-o", str(dataset)).status == 0
    found = (
        duckdb.connect()
        .execute(
            f"SELECT DISTINCT decode(value) FROM parquet_kv_metadata('{dataset}/**/*.parquet') "
            f"WHERE decode(key) = '{SCHEMA_KEY}'"
        )
        .fetchall()
    )
    assert found == [(str(SCHEMA_VERSION),)]


def _converted(run: Run, tmp_path: Path) -> Path:
    """A generated trace's Parquet dataset, as convert writes it."""
    dataset = tmp_path / "dataset"
    trace = generated_trace(tmp_path, 1)
    assert run("convert", "--to", "parquet", *map(str, trace), "-o", str(dataset)).status == 0
    return dataset


@pytest.mark.bad_input("trace-parquet-unreadable")
def test_a_file_that_is_not_parquet_is_named(run: Run, tmp_path: Path) -> None:
    dataset = _converted(run, tmp_path)
    broken = next(dataset.rglob("*.parquet")).with_name("part-9.parquet")
    broken.write_text("not parquet\n", encoding="utf-8")
    result = run("summarize", str(dataset))
    assert (result.status, result.out) == (1, "")
    assert result.err_lines[0].startswith(f"nemo-lens: error: {broken}: not a Parquet file: ")
    assert "convert the trace again, or leave this file out" in result.err_lines[1]


@pytest.mark.bad_input("trace-parquet-foreign")
def test_a_parquet_file_without_the_trace_tables_columns_is_refused(
    run: Run, tmp_path: Path
) -> None:
    import duckdb

    other = tmp_path / "other.parquet"
    duckdb.connect().execute(f"COPY (SELECT 1 AS x) TO '{other}' (FORMAT parquet)")
    for command in ("summarize", "goodput", "stragglers"):
        result = run(command, str(other))
        assert (result.status, result.out) == (1, ""), command
        assert result.err_lines[0] == (
            f"nemo-lens: error: {other}: not the trace tables: no column run_id, rank, service "
            "and 19 more"
        )
    # The columns all there, the times as text.
    from nemo.lens.cli._engine._parquet import STORED

    texts = tmp_path / "texts.parquet"
    columns = ", ".join(
        f"{'true' if c == 'truncated' else repr('12') if c == 'start_ns' else '1'} AS {c}"
        for c in STORED.split(", ")
    )
    duckdb.connect().execute(f"COPY (SELECT {columns}) TO '{texts}' (FORMAT parquet)")
    result = run("summarize", str(texts))
    assert (result.status, result.out) == (1, "")
    assert result.err_lines[0] == (
        f"nemo-lens: error: {texts}: not the trace tables: column start_ns is not of the type "
        "they store (whole numbers; truncated: true or false)"
    )


@pytest.mark.bad_input("trace-parquet-newer")
def test_a_dataset_of_a_newer_version_is_refused(run: Run, tmp_path: Path) -> None:
    import duckdb

    from nemo.lens.cli._engine._parquet import SCHEMA_KEY

    dataset = _converted(run, tmp_path)
    written = next(dataset.rglob("*.parquet"))
    newer = written.with_name("part-1.parquet")
    duckdb.connect().execute(
        f"COPY (SELECT * FROM '{written}') TO '{newer}' "
        f"(FORMAT parquet, KV_METADATA {{'{SCHEMA_KEY}': '2'}})"
    )
    written.unlink()
    result = run("goodput", str(dataset))
    assert (result.status, result.out) == (1, "")
    assert result.err_lines == [
        f"nemo-lens: error: {newer}: its metadata says {SCHEMA_KEY} = '2'; this nemo-lens "
        "reads version 1",
        "  hint: upgrade nemo-lens (pip install -U 'nemo-lens[cli]') to read it",
    ]


def test_many_ranks_write_smaller_row_groups_so_the_writer_stays_within_its_buffer() -> None:
    from nemo.lens.cli._engine._parquet import OPEN_FILES, WRITE_BUFFER_BYTES, rows_per_group

    one, thousand = rows_per_group(1, 500), rows_per_group(1024, 500)
    assert thousand < one
    # Only OPEN_FILES partitions hold rows at once, however many ranks there are.
    assert thousand == rows_per_group(OPEN_FILES, 500)
    assert rows_per_group(64, 500) * 64 * 500 <= WRITE_BUFFER_BYTES
    assert rows_per_group(0, 0) >= 1  # an empty trace still gets a valid row-group size


def test_the_dataset_s_row_groups_are_the_size_the_writer_was_given(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import duckdb

    from nemo.lens.cli._engine._parquet import rows_per_group

    from .big_traces import write_big_trace

    trace = write_big_trace(tmp_path / "trace.jsonl", 2 * 3_000, ranks=2)
    dataset = tmp_path / "dataset"
    # A buffer so small that each partition writes row groups of the fewest rows, fewer
    # than a rank's 3,000 spans (left alone, each rank's file would be one row group).
    monkeypatch.setattr("nemo.lens.cli._engine._parquet.WRITE_BUFFER_BYTES", 1)
    fewest = rows_per_group(1, 1)
    assert fewest < trace.spans // trace.ranks
    assert run("convert", "--to", "parquet", str(trace.path), "-o", str(dataset)).status == 0

    sizes = (
        duckdb.connect()
        .execute(
            "SELECT DISTINCT file_name, row_group_id, row_group_num_rows "
            f"FROM parquet_metadata('{dataset}/**/*.parquet')"
        )
        .fetchall()
    )
    assert max(size for _, _, size in sizes) <= fewest
    assert sum(size for _, _, size in sizes) == trace.spans
    assert engine_figures([str(dataset)]) == engine_figures([str(trace.path)])


def test_a_dataset_is_never_written_over_another(run: Run, tmp_path: Path) -> None:
    paths = generated_trace(tmp_path, 2)
    dataset = tmp_path / "dataset"
    assert run("convert", "--to", "parquet", *map(str, paths), "-o", str(dataset)).status == 0

    result = run("convert", "--to", "parquet", *map(str, paths), "-o", str(dataset))

    assert result.status == 1
    assert result.err_lines[0] == f"nemo-lens: error: {dataset}: already exists"


def test_standard_input_is_read_like_a_file(tmp_path: Path) -> None:
    (path,) = generated_trace(tmp_path, 4)[:1]
    from_file = subprocess.run(
        [sys.executable, "-m", "nemo.lens.cli", "goodput", "--json", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    piped = subprocess.run(
        [sys.executable, "-m", "nemo.lens.cli", "goodput", "--json", "-"],
        input=path.read_text(encoding="utf-8"),
        capture_output=True,
        text=True,
        check=True,
    )
    assert piped.stdout == from_file.stdout
    assert json.loads(piped.stdout.splitlines()[0])["run_id"] == "run1"


def test_a_duckdb_older_than_the_floor_is_named_with_the_upgrade(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "t.jsonl", [line(span_dict("a", start_ms=0, end_ms=1))])
    script = (
        "import sys, types; old = types.ModuleType('duckdb'); old.__version__ = '1.3.2'; "
        "sys.modules['duckdb'] = old; from nemo.lens.cli import main; "
        f"sys.exit(main(['summarize', {str(path)!r}]))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)

    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "nemo-lens: error: this command needs DuckDB 1.4.1 or later; 1.3.2 is installed",
        "  hint: upgrade it with: pip install -U 'duckdb>=1.4.1'",
    ]


def test_the_duckdb_floor_is_the_cli_extras() -> None:
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    floor = ".".join(map(str, DUCKDB_FLOOR))
    assert f"duckdb>={floor}" in project["project"]["optional-dependencies"]["cli"]


@pytest.mark.parametrize("command", ["summarize", "goodput", "report", "convert"])
def test_without_duckdb_the_commands_say_how_to_install_it(tmp_path: Path, command: str) -> None:
    path = write_lines(tmp_path / "t.jsonl", [line(span_dict("a", start_ms=0, end_ms=1))])
    script = (
        "import sys; sys.modules['duckdb'] = None; from nemo.lens.cli import main; "
        f"sys.exit(main([{command!r}, {str(path)!r}, '--to', 'parquet', '-o', "
        f"{str(tmp_path / 'out')!r}] if {command!r} == 'convert' else [{command!r}, "
        f"{str(path)!r}] + (['-o', {str(tmp_path / 'r.html')!r}] if {command!r} == 'report' "
        "else [])))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)

    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "nemo-lens: error: this command needs DuckDB, which is not installed",
        "  hint: install it with: pip install 'nemo-lens[cli]'",
    ]
