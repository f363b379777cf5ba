"""The commands read a span's rank and run under upstream's keys and under the old ones.

Upstream nemo-lens 0.2.0 writes ``dl.rank`` and ``nemo.run.id``; nemo.lens before this
release wrote only ``nemo.rank`` and ``nemo.run_id``; nemo.lens now writes both, and
upstream's next set-up writes the rank as ``nv.dl.rank``. A trace of any kind is read the
same: every command finds each span's rank and run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nemo.lens import semconv
from tests.catalogue import upstream_resource

from .conftest import Result, line, span_dict, write_lines

Run = Callable[..., Result]


def _upstream(rank: int, run: str) -> dict[str, Any]:
    """A resource holding only keys upstream writes (as its resource has them)."""
    resource = {
        semconv.SERVICE_NAME: "svc",
        semconv.DL_RANK: rank,
        semconv.DL_WORLD_SIZE: 2,
        semconv.NEMO_RUN_ID: run,
        semconv.SERVICE_INSTANCE_ID: f"{run}-rank{rank}",
    }
    assert set(resource) <= set(upstream_resource())
    return resource


def _old(rank: int, run: str) -> dict[str, Any]:
    """A resource as nemo.lens wrote it before it sent upstream's keys."""
    return {semconv.SERVICE_NAME: "svc", semconv.RANK: rank, semconv.RUN_ID: run}


def _next(rank: int, run: str) -> dict[str, Any]:
    """A resource as upstream's next, rank-less set-up writes it: the rank only under nv.dl.*."""
    return {
        semconv.SERVICE_NAME: "svc",
        semconv.NV_DL_RANK: rank,
        semconv.NV_DL_WORLD_SIZE: 2,
        semconv.NEMO_RUN_ID: run,
    }


KEYS = {"upstream's keys": _upstream, "the old keys": _old, "upstream's next keys": _next}


def _trace(tmp_path: Path, resource: Callable[[int, str], dict[str, Any]]) -> list[Path]:
    """Two ranks of run ``run7``: a job of 100 ms, with two steps of 40 ms each."""
    paths = []
    for rank in (0, 1):
        records = [
            span_dict("train.job", group="job", start_ms=0, end_ms=100, span_id=f"{rank}a" * 8),
            span_dict("train.step", group="step", start_ms=10, end_ms=50),
            span_dict("train.step", group="step", start_ms=50, end_ms=90),
        ]
        for record in records:
            record["resource"] = resource(rank, "run7")
        paths.append(write_lines(tmp_path / f"rank{rank}.jsonl", [line(r) for r in records]))
    return paths


@pytest.mark.parametrize("keys", sorted(KEYS))
def test_summarize_finds_the_rank_and_the_run(run: Run, tmp_path: Path, keys: str) -> None:
    result = run("summarize", *map(str, _trace(tmp_path, KEYS[keys])))
    assert result.status == 0, result.err
    headings = [text for text in result.out_lines if text and not text.startswith(" ")]
    assert headings == [
        "rank 0 (service svc, run run7, 3 spans)",
        "rank 1 (service svc, run run7, 3 spans)",
    ]


@pytest.mark.parametrize("keys", sorted(KEYS))
def test_goodput_finds_the_rank_and_the_run(run: Run, tmp_path: Path, keys: str) -> None:
    result = run("goodput", "--json", *map(str, _trace(tmp_path, KEYS[keys])))
    assert result.status == 0, result.err
    (report,) = [json.loads(text) for text in result.out_lines]
    assert report["run_id"] == "run7"
    assert [entry["rank"] for entry in report["ranks"]] == [0, 1]
    table = run("goodput", *map(str, _trace(tmp_path, KEYS[keys])))
    assert "run run7: goodput" in table.out
    assert "unknown rank" not in table.out


@pytest.mark.parametrize("keys", sorted(KEYS))
def test_report_finds_the_rank_and_the_run(run: Run, tmp_path: Path, keys: str) -> None:
    page = tmp_path / "report.html"
    result = run("report", "-o", str(page), *map(str, _trace(tmp_path, KEYS[keys])))
    assert result.status == 0, result.err
    html = page.read_text(encoding="utf-8")
    assert "run run7: goodput" in html
    assert "no nemo.run.id" not in html
    assert "unknown rank" not in html


@pytest.mark.parametrize("keys", sorted(KEYS))
def test_convert_makes_one_process_per_rank(run: Run, tmp_path: Path, keys: str) -> None:
    out = tmp_path / "out.json"
    result = run("convert", *map(str, _trace(tmp_path, KEYS[keys])), "-o", str(out))
    assert result.status == 0, result.err
    document = json.loads(out.read_text(encoding="utf-8"))
    names = sorted(
        event["args"]["name"]
        for event in document["traceEvents"]
        if event.get("ph") == "M" and event.get("name") == "process_name"
    )
    assert names == ["rank 0", "rank 1"]


def test_a_run_without_a_run_id_is_named_by_the_key_it_lacks(run: Run, tmp_path: Path) -> None:
    def nameless(rank: int, run_id: str) -> dict[str, Any]:
        return {semconv.SERVICE_NAME: "svc", semconv.DL_RANK: rank}

    result = run("goodput", *map(str, _trace(tmp_path, nameless)))
    assert result.status == 0, result.err
    assert f"run (no {semconv.NEMO_RUN_ID}): goodput" in result.out
