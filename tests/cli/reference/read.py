"""The spans of well-formed trace files, read plainly in Python: what the engine's SQL
(``nemo.lens.cli._engine``) is checked against.

Two passes over every record of every input: the first collects each lifetime's header,
its last recorded instant and which of its spans have a line; the second makes a span of
each span line (its resource its own, or its lifetime's header's) and of each span recorded
open whose line never came, ended at its lifetime's last instant and marked truncated. No
record is checked: the inputs are the tests' own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from nemo.lens import semconv

__all__ = ["NO_GROUP", "Process", "Span", "read_spans"]

NO_GROUP: Final = "(none)"
_TIMES: Final = (
    "start_time_unix_nano",
    "end_time_unix_nano",
    "open_at_unix_nano",
    "alive_at_unix_nano",
)


@dataclass(frozen=True)
class Process:
    rank: int | None
    run_id: str
    service: str

    def sort_key(self) -> tuple[bool, int, str, str]:
        return (self.rank is None, self.rank or 0, self.run_id, self.service)


@dataclass(frozen=True)
class Span:
    process: Process
    group: str
    lifetime: str
    start_ns: int
    end_ns: int
    attributes: Mapping[str, Any]

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


def _process(resource: Mapping[str, Any]) -> Process:
    ranks = [resource.get(semconv.DL_RANK), resource.get(semconv.RANK)]
    rank = next((r for r in ranks if isinstance(r, int) and not isinstance(r, bool)), None)
    run = next(
        (
            resource[key]
            for key in (semconv.NEMO_RUN_ID, semconv.RUN_ID, semconv.SERVICE_INSTANCE_ID)
            if resource.get(key)
        ),
        "",
    )
    return Process(rank, str(run), str(resource.get(semconv.SERVICE_NAME) or ""))


def _group(attributes: Mapping[str, Any]) -> str:
    group = attributes.get(semconv.SPAN_GROUP)
    if group is None:
        group = attributes.get(semconv.LEGACY_SPAN_GROUP)
    return group if isinstance(group, str) and group else NO_GROUP


def read_spans(paths: Sequence[Path | str]) -> list[Span]:
    """Every span of *paths* (format 1 and 2 lines of the ``file`` exporter)."""
    records = [
        (str(path), json.loads(text))
        for path in paths
        for text in Path(path).read_text(encoding="utf-8").splitlines()
        if text.strip()
    ]
    headers: dict[str, Mapping[str, Any]] = {}
    last: dict[str, int] = {}
    finished: set[tuple[str, str]] = set()

    def lifetime_of(path: str, record: Mapping[str, Any]) -> str:
        if record.get("lifetime"):
            return str(record["lifetime"])
        resource = record.get("resource") or {}
        if resource.get(semconv.LIFETIME_ID):
            return str(resource[semconv.LIFETIME_ID])
        host, pid = resource.get(semconv.HOST_NAME, ""), resource.get(semconv.PROCESS_PID, "")
        return f"{path}:{host}:{pid}"

    for path, record in records:
        lifetime = lifetime_of(path, record)
        if "trace_format" in record:
            headers.setdefault(lifetime, record.get("resource") or {})
            continue
        times = [record[key] for key in _TIMES if key in record]
        times += [event["time_unix_nano"] for event in record.get("events") or ()]
        last[lifetime] = max([last.get(lifetime, 0), *times])
        if "end_time_unix_nano" in record and "open_at_unix_nano" not in record:
            finished.add((lifetime, record.get("span_id") or ""))

    spans = []
    opened: set[tuple[str, str]] = set()
    for path, record in records:
        if "start_time_unix_nano" not in record or "trace_format" in record:
            continue
        lifetime = lifetime_of(path, record)
        resource = record.get("resource")
        if resource is None and record.get("lifetime"):
            resource = headers.get(lifetime, {})
        attributes = dict(record.get("attributes") or {})
        start, end = record["start_time_unix_nano"], record.get("end_time_unix_nano")
        if "open_at_unix_nano" in record:
            key = (lifetime, record.get("span_id") or "")
            if not record.get("span_id") or key in finished or key in opened:
                continue
            opened.add(key)
            attributes[semconv.SPAN_TRUNCATED] = True
            end = max(start, last[lifetime])
        spans.append(
            Span(_process(resource or {}), _group(attributes), lifetime, start, end, attributes)
        )
    return spans
