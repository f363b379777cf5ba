"""Reading a ``file`` trace in a test the way a script of a user's would.

Trace format 2 (docs/trace-format.md) writes a process lifetime's resource once,
in a header line, and has every other line name its lifetime; it also records
spans still open and that a lifetime is alive. :func:`spans_in` reads the lines
with nothing but ``json`` and returns the finished spans, each with the
``"resource"`` of its lifetime's header, as the format-1 line had it: what the
tests check is what a user's own reader gets, independent of ``nemo-lens``'s.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["headers_in", "records_in", "spans_in"]


def records_in(source: Path | str | Iterable[str]) -> list[dict[str, Any]]:
    """Every line of *source* (a path, or lines) as a JSON object; fails on any other line."""
    if isinstance(source, Path):
        lines: Iterable[str] = source.read_text(encoding="utf-8").splitlines()
    elif isinstance(source, str):
        lines = source.splitlines()
    else:
        lines = source
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise AssertionError(f"line {number} is not JSON ({exc}): {line[:200]!r}") from None
        assert isinstance(record, dict), f"line {number} is not a JSON object"
        records.append(record)
    return records


def headers_in(source: Path | str | Iterable[str]) -> dict[str, dict[str, Any]]:
    """Lifetime id -> its header record."""
    return {r["lifetime"]: r for r in records_in(source) if "trace_format" in r}


def spans_in(source: Path | str | Iterable[str]) -> list[dict[str, Any]]:
    """The finished spans of *source*, in order, each with its lifetime's resource."""
    records = records_in(source)
    resources = {r["lifetime"]: r["resource"] for r in records if "trace_format" in r}
    spans = []
    for record in records:
        if "end_time_unix_nano" not in record:
            continue  # a header, an open span, an alive record
        if "resource" not in record:
            record = {**record, "resource": resources[record["lifetime"]]}
        spans.append(record)
    return spans
