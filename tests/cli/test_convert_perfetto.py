"""``nemo-lens convert --to perfetto``, read back with Perfetto's own protobuf classes."""

from __future__ import annotations

import subprocess
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

# The decoder is the one Perfetto publishes (the `perfetto` wheel's generated classes, on
# `protobuf`; the dev extra installs it): a path independent of our hand-written encoder.
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as trace_pb2

from nemo.lens import semconv

from .conftest import EPOCH, MS, Result, line, span_dict, write_lines

Run = Callable[..., Result]


@dataclass
class Slice:
    process: str
    track: str
    name: str
    category: str
    start: int
    end: int
    depth: int
    parent: str | None
    annotations: dict[str, Any] = field(default_factory=dict)
    instants: list[tuple[str, int, dict[str, Any]]] = field(default_factory=list)


def _value(annotation: Any, strings: dict[int, bytes]) -> Any:
    kind = annotation.WhichOneof("value")
    if kind is None:
        if annotation.array_values:
            return [_value(item, strings) for item in annotation.array_values]
        return {entry.name: _value(entry, strings) for entry in annotation.dict_entries}
    if kind == "string_value_iid":
        return strings[annotation.string_value_iid].decode("utf-8")
    return getattr(annotation, kind)


def decode(path: Path) -> tuple[list[Slice], dict[str, list[str]]]:
    """Every slice of the trace, and each process's child tracks in their display order."""
    trace = trace_pb2.Trace()
    trace.ParseFromString(path.read_bytes())
    names: dict[int, str] = {}
    categories: dict[int, str] = {}
    annotation_names: dict[int, str] = {}
    strings: dict[int, bytes] = {}
    processes: dict[int, str] = {}
    tracks: dict[int, tuple[int, str, int]] = {}
    open_slices: dict[int, list[Slice]] = defaultdict(list)
    slices: list[Slice] = []
    for number, packet in enumerate(trace.packet):
        assert packet.trusted_packet_sequence_id == 1
        if number == 0:
            assert packet.sequence_flags & 1, "the first packet clears the interning state"
        interned = packet.interned_data
        names.update((entry.iid, entry.name) for entry in interned.event_names)
        categories.update((entry.iid, entry.name) for entry in interned.event_categories)
        annotation_names.update(
            (entry.iid, entry.name) for entry in interned.debug_annotation_names
        )
        strings.update((entry.iid, entry.str) for entry in interned.debug_annotation_string_values)
        if packet.HasField("track_descriptor"):
            descriptor = packet.track_descriptor
            if descriptor.HasField("process"):
                processes[descriptor.uuid] = descriptor.process.process_name
            else:
                assert descriptor.parent_uuid in processes
                tracks[descriptor.uuid] = (
                    descriptor.parent_uuid,
                    descriptor.name,
                    descriptor.sibling_order_rank,
                )
            continue
        event = packet.track_event
        assert event.track_uuid in tracks, "a track is described before its first event"
        process_uuid, track_name, _ = tracks[event.track_uuid]
        stack = open_slices[event.track_uuid]
        if event.type == event.TYPE_SLICE_END:
            done = stack.pop()
            assert packet.timestamp >= done.start
            done.end = packet.timestamp
            continue
        annotations = {
            annotation_names[a.name_iid] if a.name_iid else a.name: _value(a, strings)
            for a in event.debug_annotations
        }
        name = names[event.name_iid] if event.name_iid else event.name
        if event.type == event.TYPE_INSTANT:
            stack[-1].instants.append((name, packet.timestamp, annotations))
            continue
        assert event.type == event.TYPE_SLICE_BEGIN
        assert not stack or stack[-1].start <= packet.timestamp, "slices come in start order"
        begun = Slice(
            processes[process_uuid],
            track_name,
            name,
            categories[event.category_iids[0]],
            packet.timestamp,
            -1,
            len(stack),
            stack[-1].name if stack else None,
            annotations,
        )
        stack.append(begun)
        slices.append(begun)
    assert not any(open_slices.values()), "every slice ends"
    order: dict[str, list[str]] = defaultdict(list)
    for process_uuid, track_name, _ in sorted(tracks.values(), key=lambda t: (t[0], t[2])):
        order[processes[process_uuid]].append(track_name)
    return slices, dict(order)


def spans_of(slices: list[Slice]) -> list[Slice]:
    return [item for item in slices if item.category != "(lifetimes)"]


def ms(value: float) -> int:
    return EPOCH + round(value * MS)


def test_spans_come_back_exactly_with_nesting_tracks_and_annotations(
    run: Run, tmp_path: Path
) -> None:
    trace = write_lines(
        tmp_path / "t.jsonl",
        [
            line(span_dict("job", start_ms=0, end_ms=100, group="job", span_id="1" * 16)),
            line(
                span_dict(
                    "step",
                    start_ms=10,
                    end_ms=40,
                    group="step",
                    span_id="2" * 16,
                    parent="1" * 16,
                    attributes={"iteration": 1, "loss": 0.5, "ok": True, "tags": ["a", "b"]},
                    status=("ERROR", "boom"),
                    events=[
                        {"name": "checkpoint", "time_unix_nano": ms(20), "attributes": {"bytes": 7}}
                    ],
                )
            ),
            line(
                span_dict(
                    "forward",
                    start_ms=12,
                    end_ms=20,
                    group="step",
                    span_id="3" * 16,
                    parent="2" * 16,
                )
            ),
            # Overlaps the first step without nesting: a second step track.
            line(span_dict("step", start_ms=30, end_ms=60, group="step", span_id="4" * 16)),
            # Ends where the next begins: siblings on one track, not nested.
            line(span_dict("data", start_ms=60, end_ms=70, group="data", span_id="5" * 16)),
            line(span_dict("data", start_ms=70, end_ms=80, group="data", span_id="6" * 16)),
            line(
                span_dict(
                    "step",
                    start_ms=5,
                    end_ms=15,
                    group="step",
                    rank=1,
                    span_id="7" * 16,
                    attributes={"big": 2**70, "nothing": None},
                )
            ),
        ],
    )
    out = tmp_path / "t.pftrace"
    result = run("convert", "--to", "perfetto", str(trace), "-o", str(out))
    assert result.status == 0, result.err
    assert result.out_lines[0] == f"wrote {out}: 7 spans, 2 ranks, 7 tracks"
    assert "ui.perfetto.dev" in result.out_lines[1]

    slices, order = decode(out)
    spans = spans_of(slices)
    got = sorted(
        (s.process, s.track, s.name, s.start - EPOCH, s.end - s.start, s.depth, s.parent)
        for s in spans
    )
    assert got == sorted(
        [
            ("rank 0", "job", "job", 0, 100 * MS, 0, None),
            ("rank 0", "step", "step", 10 * MS, 30 * MS, 0, None),
            ("rank 0", "step", "forward", 12 * MS, 8 * MS, 1, "step"),
            ("rank 0", "step (2)", "step", 30 * MS, 30 * MS, 0, None),
            ("rank 0", "data", "data", 60 * MS, 10 * MS, 0, None),
            ("rank 0", "data", "data", 70 * MS, 10 * MS, 0, None),
            ("rank 1", "step", "step", 5 * MS, 10 * MS, 0, None),
        ]
    )
    assert order == {
        "rank 0": ["(lifetimes)", "job", "step", "step (2)", "data"],
        "rank 1": ["(lifetimes)", "step"],
    }
    first_step = next(s for s in spans if s.annotations.get("span.id") == "2" * 16)
    assert first_step.category == "step"
    assert first_step.annotations == {
        "iteration": 1,
        "loss": 0.5,
        "ok": True,
        "tags": ["a", "b"],
        "status": "ERROR: boom",
        "span.id": "2" * 16,
        "span.parent_id": "1" * 16,
        "trace.id": "ab" * 16,
    }
    assert first_step.instants == [("checkpoint", ms(20), {"bytes": 7})]
    root = next(s for s in spans if s.name == "job")
    assert "span.parent_id" not in root.annotations  # protobuf has no null
    other = next(s for s in spans if s.process == "rank 1")
    assert other.annotations["big"] == str(2**70)
    assert "nothing" not in other.annotations
    assert semconv.SPAN_GROUP not in first_step.annotations


def test_lifetimes_and_restarts_get_their_own_track(run: Run, tmp_path: Path) -> None:
    records = []
    for lifetime, (start, end) in (("first", (0, 50)), ("second", (80, 120))):
        record = span_dict("step", start_ms=start, end_ms=end, group="step")
        record["resource"][semconv.LIFETIME_ID] = lifetime
        records.append(line(record))
    trace = write_lines(tmp_path / "t.jsonl", records)
    out = tmp_path / "t.pftrace"
    assert run("convert", "--to", "perfetto", str(trace), "-o", str(out)).status == 0
    slices, _ = decode(out)
    lifetimes = [s for s in slices if s.category == "(lifetimes)"]
    assert [(s.name, s.start - EPOCH, s.end - EPOCH, s.annotations) for s in lifetimes] == [
        ("lifetime 1", 0, 50 * MS, {"lifetime": "first"}),
        ("lifetime 2 (a restart)", 80 * MS, 120 * MS, {"lifetime": "second"}),
    ]
    assert len(spans_of(slices)) == 2


def test_the_default_output_name(run: Run, tmp_path: Path) -> None:
    trace = write_lines(tmp_path / "t.jsonl", [line(span_dict("s", start_ms=0, end_ms=1))])
    assert run("convert", "--to", "perfetto", str(trace)).status == 0
    assert len(spans_of(decode(tmp_path / "t.pftrace")[0])) == 1


def test_standard_output_to_a_pipe_carries_the_trace(tmp_path: Path) -> None:
    trace = write_lines(tmp_path / "t.jsonl", [line(span_dict("s", start_ms=0, end_ms=1))])
    command = ["convert", "--to", "perfetto", str(trace), "-o", "-"]
    done = subprocess.run(
        [sys.executable, "-m", "nemo.lens.cli", *command],
        capture_output=True,
        check=True,
    )
    assert done.stderr.decode().startswith("wrote standard output: 1 spans, 1 rank, 2 tracks")
    out = tmp_path / "piped.pftrace"
    out.write_bytes(done.stdout)
    assert [(s.name, s.end - s.start) for s in spans_of(decode(out)[0])] == [("s", MS)]


@pytest.mark.bad_input("convert-perfetto-to-terminal")
def test_binary_output_refuses_a_terminal(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = write_lines(tmp_path / "t.jsonl", [line(span_dict("s", start_ms=0, end_ms=1))])
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    result = run("convert", "--to", "perfetto", str(trace), "-o", "-")
    assert result.status == 2
    assert "a Perfetto trace is binary, not for a terminal" in result.err
    assert "-o OUT.pftrace" in result.err


@pytest.mark.bad_input("convert-perfetto-unwritable")
def test_an_unwritable_output_is_refused_and_nothing_is_left(run: Run, tmp_path: Path) -> None:
    trace = write_lines(tmp_path / "t.jsonl", [line(span_dict("s", start_ms=0, end_ms=1))])
    directory = tmp_path / "out"
    directory.mkdir()
    result = run("convert", "--to", "perfetto", str(trace), "-o", str(directory))
    assert result.status == 1
    assert f"{directory}: is a directory" in result.err
    assert "-o trace.pftrace" in result.err
    missing = tmp_path / "missing" / "t.pftrace"
    result = run("convert", "--to", "perfetto", str(trace), "-o", str(missing))
    assert result.status == 1
    assert "cannot be written" in result.err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out", "t.jsonl"]


def test_the_benchmark_measures_both_conversions() -> None:
    """``bench/perfetto.py`` end to end on a small trace, so that it works on the day
    someone measures; the byte ratio is a property of the formats, not of the machine."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from bench.perfetto import describe, run

    results = run(3_000, 1)
    assert set(results["formats"]) == {"chrome", "perfetto"}
    for figures in results["formats"].values():
        assert figures["seconds"] > 0 and figures["rss_peak_mib"] > 0
    assert 0 < results["ratios"]["bytes_per_span"] < 0.6
    assert "perfetto / chrome" in describe(results)


def test_integers_at_every_varint_boundary_come_back(run: Run, tmp_path: Path) -> None:
    values = [0, 127, 128, 16383, 16384, 2**56 - 1, 2**56, 2**63 - 1, -1, -(2**63)]
    attributes = {f"v{index}": value for index, value in enumerate(values)}
    trace = write_lines(
        tmp_path / "t.jsonl",
        [line(span_dict("s", start_ms=0, end_ms=1, attributes=attributes))],
    )
    out = tmp_path / "t.pftrace"
    assert run("convert", "--to", "perfetto", str(trace), "-o", str(out)).status == 0
    (span,) = spans_of(decode(out)[0])
    assert {key: span.annotations[key] for key in attributes} == attributes
