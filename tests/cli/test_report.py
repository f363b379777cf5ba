"""``nemo-lens report``: one self-contained page, its data, and its bad inputs (no browser here)."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nemo.lens.cli import _report
from nemo.lens.cli._engine import connect
from nemo.lens.cli._report import ReportBuilder
from nemo.lens.groups import SpanGroup

from .conftest import Result, line, span_dict, write_lines
from .goodput_traces import RUN, crash_and_resume

Run = Callable[..., Result]


def page_data(page: Path) -> dict[str, Any]:
    """The JSON block the page's script reads."""
    text = page.read_text(encoding="utf-8")
    (block,) = re.findall(r"<script type='application/json' id='report-data'>(.*?)</script>", text)
    data: dict[str, Any] = json.loads(block)
    return data


def build(paths: list[Path], **options: Any) -> dict[str, Any]:
    with connect([str(p) for p in paths], detail=True) as engine:
        builder = ReportBuilder.from_engine(engine, **options)
    return builder.data(title="t", sources=[], generator="g")


def test_the_page_fetches_nothing(run: Run, tmp_path: Path) -> None:
    paths = crash_and_resume(tmp_path)

    result = run("report", *map(str, paths))

    page = tmp_path / "run1-rank0.html"  # beside the first input
    assert result.status == 0, result.err
    assert result.out_lines == [
        "goodput 35.9%: 33.000 s productive of 92.000 s wall; badput: initialization 15.000 s, "
        "checkpoint_save 4.000 s, evaluation 2.000 s, wasted_progress 15.000 s, "
        "restart 17.000 s, unaccounted 6.000 s",
        "stragglers: 1 of 4 iterations had a rank slower than the median; the worst, rank 0 "
        "at iteration 4, 500.000 ms over the median rank",
        f"wrote {page}: 32 spans; open it in a browser (it needs no network)",
    ]
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    for fetching in ("<link", " src=", "url(", "@import", "http://", "https://", "fetch("):
        assert fetching not in text
    assert text.count("<script") == 2  # the data block and the inline script


def test_the_page_holds_the_goodput_figures(run: Run, tmp_path: Path) -> None:
    page = tmp_path / "r.html"
    run("report", "-o", str(page), *map(str, crash_and_resume(tmp_path)))
    text = page.read_text(encoding="utf-8")

    assert 'goodput <span class="goodput-figure">35.9%</span>' in text
    for bucket, seconds in RUN["badput"].items():
        assert re.search(rf'<tr data-bucket="{bucket}">.*?<td>{seconds:.3f} s<small>', text)


def test_restarts_and_wasted_steps_are_in_the_data(tmp_path: Path) -> None:
    data = build(crash_and_resume(tmp_path))

    assert data["restarts"] == [
        {"process": "rank 0", "start": 45_000.0, "end": 60_000.0},
        {"process": "rank 1", "start": 45_000.0, "end": 62_000.0},
    ]
    (rank0, rank1) = data["steps"]["ranks"]
    assert rank0["points"] == [
        [1, 10_000.0, 0],
        [2, 6_000.0, 0],
        [3, 10_000.0, 0],
        [3, 10_000.0, 1],  # lifetime A's, executed again: wasted
        [4, 5_000.0, 1],
        [4, 10_000.0, 0],
    ]
    assert rank0["slowest"] == 1 and rank1["slowest"] == 0  # at iteration 4; ties count for none
    assert data["coverage"] == {}  # every span drawn


def test_what_is_not_drawn_is_covered_and_said(run: Run, tmp_path: Path) -> None:
    # Ten 1 s steps back to back; only the 4 longest can be drawn.
    lines = [
        line(span_dict("s", start_ms=i * 1000, end_ms=(i + 1) * 1000 - i, group=SpanGroup.STEP))
        for i in range(10)
    ]
    path = write_lines(tmp_path / "t.jsonl", lines)

    data = build([path], drawn_spans=4)

    assert data["drawn_count"] == 4
    assert [s[2] for s in data["spans"]] == [1000.0, 999.0, 998.0, 997.0]  # the longest
    (bins,) = data["coverage"].values()
    assert len(bins) == data["coverage_bins"]
    assert bins[0] == 255 and bins[-1] > 0  # the first step covers its slice, the last too


def test_a_long_step_series_is_binned(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(_report, "STEP_POINTS", 3)
    lines = [
        line(
            span_dict(
                "s",
                start_ms=i * 10,
                end_ms=i * 10 + 1 + i,
                group=SpanGroup.STEP,
                attributes={"iteration": i},
            )
        )
        for i in range(1, 7)
    ]
    data = build([write_lines(tmp_path / "t.jsonl", lines)])

    (rank,) = data["steps"]["ranks"]
    assert rank["points"] is None
    assert rank["bins"] == [[1, 2, 2.5, 3.0], [3, 4, 4.5, 5.0], [5, 6, 6.5, 7.0]]


def test_names_and_attributes_cannot_break_out_of_the_page(run: Run, tmp_path: Path) -> None:
    evil = "</script><script>alert(1)</script><!--"
    record = span_dict(evil, start_ms=0, end_ms=1, group=SpanGroup.STEP, attributes={"k": evil})
    path = write_lines(tmp_path / "t.jsonl", [line(record)])

    assert run("report", str(path)).status == 0

    text = (tmp_path / "t.html").read_text(encoding="utf-8")
    assert evil not in text
    assert text.count("<script") == 2
    assert page_data(tmp_path / "t.html")["names"] == [evil]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["report", "-"], "reading standard input: name the report file with -o OUT"),
        (["report", "t.jsonl", "-o", "-"], "-o -: the report is a file to open in a browser"),
        (["report", "t.jsonl", "-o", "t.jsonl"], "-o t.jsonl would overwrite an input"),
    ],
)
def test_usage_errors(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    write_lines(tmp_path / "t.jsonl", [line(span_dict("s", start_ms=0, end_ms=1))])
    result = run(*argv)
    assert result.status == 2
    assert message in result.err


def test_bad_input_writes_nothing(run: Run, tmp_path: Path) -> None:
    path = write_lines(tmp_path / "t.jsonl", [line(span_dict("s", start_ms=0, end_ms=1)), "{"])

    result = run("report", str(path))

    assert result.status == 1
    assert f"{path}:2: not a JSON span record" in result.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl"]


def test_an_unwritable_output_is_reported_and_leaves_nothing(run: Run, tmp_path: Path) -> None:
    path = write_lines(tmp_path / "t.jsonl", [line(span_dict("s", start_ms=0, end_ms=1))])
    target = tmp_path / "missing" / "r.html"

    result = run("report", str(path), "-o", str(target))

    assert result.status == 1
    assert result.err == (
        f"nemo-lens: error: {target}: cannot be written: no directory {target.parent}\n"
        f"  hint: create it (mkdir -p {target.parent}) or name another output with -o\n"
    )
    assert not target.parent.exists()


def test_ranks_of_several_services_are_told_apart(tmp_path: Path) -> None:
    trainer = span_dict("train.step", start_ms=0, end_ms=2, group=SpanGroup.STEP)
    gym = span_dict("gym.rollout", start_ms=1, end_ms=3)
    gym["resource"]["service.name"] = "gym"
    data = build([write_lines(tmp_path / "t.jsonl", [line(trainer), line(gym)])])
    assert sorted(row["process"] for row in data["rows"]) == ["gym rank 0", "svc rank 0"]


def test_of_spans_as_long_the_earliest_are_drawn_and_only_their_names_sent(
    tmp_path: Path,
) -> None:
    lines = [
        line(span_dict(f"s{i}", start_ms=i * 10, end_ms=i * 10 + 5, group=SpanGroup.STEP))
        for i in reversed(range(6))
    ]
    data = build([write_lines(tmp_path / "t.jsonl", lines)], drawn_spans=2)

    assert [s[1] for s in data["spans"]] == [0.0, 10.0]
    assert data["names"] == ["s0", "s1"]
    (bins,) = data["coverage"].values()
    assert sum(1 for share in bins if share) > 0


def test_the_timeline_says_how_to_open_every_span_in_perfetto(run: Run, tmp_path: Path) -> None:
    path = write_lines(tmp_path / "my run.jsonl", [line(span_dict("s", start_ms=0, end_ms=1))])
    assert run("report", str(path)).status == 0
    text = (tmp_path / "my run.html").read_text(encoding="utf-8")
    note = text.split('id="timeline-perfetto">', 1)[1].split("</p>", 1)[0]
    assert html.unescape(note) == (
        f"Every span, with its attributes, in Perfetto: run <code>nemo-lens convert --to "
        f"perfetto '{path}'</code>, then open ui.perfetto.dev in a browser and choose 'Open "
        f"trace file' with <code>{tmp_path / 'my run.pftrace'}</code> (the UI reads it in the "
        "browser; nothing is uploaded)."
    )
    # What it says to run writes the file it names.
    assert run("convert", "--to", "perfetto", str(path)).status == 0
    assert (tmp_path / "my run.pftrace").stat().st_size > 0
