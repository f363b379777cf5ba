"""``nemo-lens sql`` reads the traces it was given and nothing else, one statement a call;
``--allow-external-access`` lifts the sandbox for those who mean it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import Result, line, span_dict, write_lines

Run = Callable[..., Result]
HINT = (
    "  hint: nemo-lens sql reads only the traces named on its command line; pass "
    "--allow-external-access to let a statement read or write other files, attach databases "
    "or load extensions"
)


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    spans = [span_dict("a", group="job", start_ms=0, end_ms=1, span_id="01" * 8)]
    return write_lines(tmp_path / "t.jsonl", [line(span) for span in spans])


def _beyond(tmp_path: Path) -> list[tuple[str, Path | None]]:
    """Statements that reach beyond the traces; the file each would write, if any."""
    secret = tmp_path / "secret.csv"
    secret.write_text("password\nhunter2\n", encoding="utf-8")
    out = tmp_path / "out"
    return [
        (f"SELECT * FROM read_csv('{secret}')", None),
        (f"SELECT * FROM read_text('{secret}')", None),
        (f"SELECT * FROM glob('{tmp_path}/*')", None),
        (f"SELECT * FROM '{secret}'", None),
        (f"COPY (SELECT * FROM spans) TO '{out}.csv'", out.with_suffix(".csv")),
        (f"ATTACH '{out}.db' AS other", out.with_suffix(".db")),
        (f"EXPORT DATABASE '{out}'", out),
        ("INSTALL httpfs", None),
        ("LOAD httpfs", None),
        ("SET enable_external_access = true", None),
    ]


@pytest.mark.bad_input("sql-reads-beyond-traces")
def test_a_statement_reaching_beyond_the_traces_is_refused_naming_the_option(
    run: Run, trace: Path, tmp_path: Path
) -> None:
    for statement, written in _beyond(tmp_path):
        result = run("sql", statement, str(trace))
        assert result.status == 2, statement
        assert result.out == "", statement
        assert result.err_lines[0].startswith(
            "nemo-lens sql: error: the query failed: the sandbox refused it: "
        ), statement
        assert result.err_lines[1:] == [HINT], statement
        assert written is None or not written.exists(), statement


def test_allow_external_access_lifts_the_sandbox(run: Run, trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "spans.csv"
    copied = run(
        "sql", f"COPY (SELECT name FROM spans) TO '{out}'", str(trace), "--allow-external-access"
    )
    assert copied.status == 0, copied.err
    assert out.read_text(encoding="utf-8").splitlines() == ["name", "a"]


def test_the_sandbox_still_reads_a_parquet_dataset(run: Run, trace: Path, tmp_path: Path) -> None:
    dataset = tmp_path / "dataset"
    assert run("convert", "--to", "parquet", str(trace), "-o", str(dataset)).status == 0
    result = run("sql", "SELECT name FROM spans", str(dataset), "--format", "csv")
    assert result.status == 0, result.err
    assert result.out_lines == ["name", "a"]
    (part,) = dataset.rglob("*.parquet")  # named by the dataset, so readable by path too
    direct = run("sql", f"SELECT count(*) AS n FROM read_parquet('{part}')", str(dataset))
    assert direct.status == 0, direct.err
    outside = run("sql", f"SELECT * FROM glob('{dataset}/**')", str(dataset))
    assert outside.status == 2


@pytest.mark.parametrize(
    ("query", "message"),
    [
        pytest.param(
            "SELECT 1; SELECT 2",
            "the query holds 2 statements; give one a call (run nemo-lens sql once per "
            "statement, or join them with UNION ALL or a WITH clause)",
            marks=pytest.mark.bad_input("sql-two-statements"),
        ),
        (
            "SELECT ';' AS a; -- one more\nCOPY spans TO 'x.csv'",
            "the query holds 2 statements; give one a call (run nemo-lens sql once per "
            "statement, or join them with UNION ALL or a WITH clause)",
        ),
        (
            "-- only a comment",
            "the query holds no statement, only comments: give one such as "
            "'SELECT * FROM steps LIMIT 5'",
        ),
    ],
)
def test_one_statement_a_call(run: Run, trace: Path, query: str, message: str) -> None:
    result = run("sql", query, str(trace))
    assert result.status == 2
    assert result.out == ""
    assert result.err_lines[-1] == f"nemo-lens sql: error: {message}"


def test_a_semicolon_inside_a_string_or_at_the_end_is_one_statement(run: Run, trace: Path) -> None:
    result = run("sql", "SELECT 'a;b' AS text;", str(trace), "--format", "csv")
    assert result.status == 0, result.err
    assert result.out_lines == ["text", "a;b"]
