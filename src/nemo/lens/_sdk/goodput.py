"""The live goodput recorder: the buckets of ``nemo-lens goodput`` derived in the process from
its spans as they end, and exported as metrics (docs/goodput.md, "While the job runs")."""

from __future__ import annotations

import array
import bisect
import collections
import heapq
import itertools
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from opentelemetry.context import Context
from opentelemetry.metrics import CallbackOptions, Meter, Observation
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from nemo.lens import semconv
from nemo.lens._core import fork as _fork
from nemo.lens._sdk.recording import RecordingSpan
from nemo.lens._vocabulary import (
    ANOMALOUS,
    PRODUCTIVE,
    RECOVERY,  # always 0 here: a process cannot see the lifetime before it
    STARTUP,
    UNACCOUNTED,
    WASTED,
)
from nemo.lens.config import goodput_windows
from nemo.lens.spec import GOODPUT

__all__ = ["DEFAULT_WINDOWS_S", "GoodputRecorder", "group_buckets", "whole_number"]

ITERATION: Final = "iteration"
DEFAULT_WINDOWS_S: Final = goodput_windows("1")
"""The rolling windows, in seconds, when ``NEMO_LENS_GOODPUT_METRICS`` names none."""
ITERATIONS_KEPT: Final = 65536
"""How many iterations' last execution the recorder remembers, to find a re-execution."""
POLL_SPANS: Final = 4096
"""Ended spans that make an export thread's poll drain them (else once a second)."""


def group_buckets() -> dict[str, tuple[str, str]]:
    """``{group: (category, bucket)}`` for every bucketed group of the shipped classes: the
    rows of the commands' ``span_groups`` view, so a bucket added to the schema flows in."""
    from nemo.lens._vocabulary import group_rows, span_group_classes  # imports the classes

    rows = group_rows(list(span_group_classes().values()))
    return {group: (category, bucket) for group, category, bucket, *_ in rows if bucket}


def whole_number(value: object) -> int | None:
    """*value* as an iteration, as the commands read one: an integer, or a float or string
    holding a whole number (what Python's ``int()`` reads); else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    if isinstance(value, str):
        try:
            return int(value.strip(), 10)
        except ValueError:
            return None
    return None


class _Entry:
    """A bucketed span being accounted: its extent, its (judged) bucket, and how much of its
    time went to ``productive`` (moved to ``wasted_progress`` if its iteration runs again)."""

    __slots__ = ("bucket", "counted", "end", "index", "start")

    def __init__(self, start: int, end: int, bucket: str) -> None:
        self.start, self.end, self.bucket, self.counted = start, end, bucket, 0
        self.index = -1
        """Where its productive time is in :attr:`_Account.steps`, once final."""

    def beats(self, other: _Entry) -> bool:
        """Whether this span, not *other*, owns time both cover: the innermost wins (the one
        that started last; the shorter on a tie, then the bucket first in name order)."""
        return (-self.start, self.end, self.bucket) < (-other.start, other.end, other.bucket)


class _Account:
    """One rank's accounting in integer ns: time up to :attr:`done` is final, pieces of the
    last *horizon_ns* are kept (for the windows, and for a span that arrives late). Every
    rule of the buckets lives in :meth:`judge` and :meth:`_credit`."""

    def __init__(self, horizon_ns: int) -> None:
        self.horizon_ns = horizon_ns
        self.totals: dict[str, int] = collections.defaultdict(int)
        self.first: int | None = None
        self.last: int | None = None
        self.done: int | None = None
        """Where final time ends: no span to come covers time before it (late ones aside)."""
        self.kept_from: int | None = None
        """Where the kept pieces begin (``None``: at the start)."""
        self.pending: list[_Entry] = []
        self.pieces: list[list[Any]] = []  # [left, right, entry], in time order
        # Oldest first; an OrderedDict forgets its oldest in O(1), where a dict would scan
        # the slots its earlier deletions left.
        self.last_runs: collections.OrderedDict[int, _Entry] = collections.OrderedDict()
        self.lost_ns = 0
        """Time of late spans older than the kept pieces: left where it was."""
        self.first_step: int | None = None
        """The earliest start of a step: start-up is the uncovered time before it."""
        self.origin: int | None = None
        """Where the first sweep began (the first bucketed span's start)."""
        self.startup = _Entry(-(2**62), 2**62, STARTUP)  # owns only what no span covers
        self.steps = array.array("q")
        """The productive ns each final counted step owns (-1: executed again later)."""

    def judge(
        self, start: int, end: int, bucket: str, iteration: int | None, truncated: bool
    ) -> None:
        """Account a bucketed span that ended: a step is wasted progress when truncated or
        when its iteration runs again later (the last execution counts)."""
        entry = _Entry(start, end, bucket)
        if bucket == PRODUCTIVE:
            if self.first_step is None or start < self.first_step:
                self.first_step = start
            if truncated:
                entry.bucket = WASTED
            if iteration is not None:
                known = self.last_runs.get(iteration)
                if known is None or start > known.start:
                    if known is not None:
                        self._waste(known)
                        del self.last_runs[iteration]
                    self.last_runs[iteration] = entry
                    if len(self.last_runs) > ITERATIONS_KEPT:
                        self.last_runs.popitem(last=False)
                elif start < known.start:
                    entry.bucket = WASTED
        if end <= start:
            return  # covers nothing
        done = self.done
        if done is not None and start < done:
            self._late(entry, min(end, done))
        if done is None or end > done:
            self.pending.append(entry)

    def _waste(self, entry: _Entry) -> None:
        if entry.bucket == PRODUCTIVE:
            self.totals[PRODUCTIVE] -= entry.counted
            self.totals[WASTED] += entry.counted
            entry.bucket = WASTED
            if entry.index >= 0:
                self.steps[entry.index] = -1

    def _credit(self, left: int, right: int, entry: _Entry, sign: int = 1) -> None:
        length = (right - left) * sign
        self.totals[entry.bucket] += length
        if entry.bucket == PRODUCTIVE:
            entry.counted += length
            if entry.index >= 0:
                self.steps[entry.index] += length

    def finalize(self, upto: int | None) -> None:
        """Make the time up to *upto* final (``None``: all the pending spans cover)."""
        pending = self.pending
        if upto is None:
            upto = max((entry.end for entry in pending), default=self.done)
            if upto is None:
                return
        done = self.done
        if done is None:
            done = self.origin = min((entry.start for entry in pending), default=upto)
        if upto <= done:
            return
        points = {done, upto}
        for entry in pending:
            if done < entry.start < upto:
                points.add(entry.start)
            if done < entry.end < upto:
                points.add(entry.end)
        starting = sorted((e for e in pending if e.start < upto), key=lambda e: e.start)
        heap: list[tuple[int, int, str, int, _Entry]] = []
        at = 0
        edges = sorted(points)
        for left, right in itertools.pairwise(edges):
            while at < len(starting) and starting[at].start <= left:
                entry = starting[at]
                heapq.heappush(heap, (-entry.start, entry.end, entry.bucket, at, entry))
                at += 1
            while heap and heap[0][4].end <= left:
                heapq.heappop(heap)
            if heap:
                self._add_piece(left, right, heap[0][4])
            elif self.first_step is None or left < self.first_step:
                # Before the first step, what no span covers is start-up (a step still
                # open holds the watermark back, so none can start earlier than this).
                step = self.first_step
                self._add_piece(left, right if step is None else min(right, step), self.startup)
        steps = self.steps
        for entry in pending:
            if entry.end <= upto and entry.bucket == PRODUCTIVE and entry.index < 0:
                entry.index = len(steps)
                steps.append(entry.counted)
        self.pending = [entry for entry in pending if entry.end > upto]
        self.done = upto
        self._forget(upto - self.horizon_ns)

    def _add_piece(self, left: int, right: int, entry: _Entry) -> None:
        self._credit(left, right, entry)
        pieces = self.pieces
        if pieces and pieces[-1][2] is entry and pieces[-1][1] == left:
            pieces[-1][1] = right
        else:
            pieces.append([left, right, entry])

    def _forget(self, before: int) -> None:
        pieces = self.pieces
        cut = 0
        while cut < len(pieces) and pieces[cut][1] <= before:
            cut += 1
        if cut:
            del pieces[:cut]
            self.kept_from = before if self.kept_from is None else max(self.kept_from, before)

    def _late(self, entry: _Entry, upto: int) -> None:
        """Give *entry* the final time before *upto* it owns: what no span covered, and what
        it covers more closely than the owner."""
        start = entry.start
        if self.kept_from is not None and start < self.kept_from:
            self.lost_ns += min(upto, self.kept_from) - start
            start = min(upto, self.kept_from)
        pieces = self.pieces
        lefts = [piece[0] for piece in pieces]
        first = max(0, bisect.bisect_right(lefts, start) - 1)
        rebuilt: list[list[Any]] = []
        at = start
        tail = first
        for index in range(first, len(pieces)):
            left, right, owner = pieces[index]
            if left >= upto:
                break
            tail = index + 1
            if right <= start:
                rebuilt.append(pieces[index])
                continue
            if at < left:
                self._credit(at, left, entry)
                rebuilt.append([at, left, entry])
            lo, hi = max(left, start), min(right, upto)
            if entry.beats(owner):
                if left < lo:
                    rebuilt.append([left, lo, owner])
                self._credit(lo, hi, owner, -1)
                self._credit(lo, hi, entry)
                rebuilt.append([lo, hi, entry])
                if hi < right:
                    rebuilt.append([hi, right, owner])
            else:
                rebuilt.append(pieces[index])
            at = max(at, right)
        if at < upto:
            self._credit(at, upto, entry)
            rebuilt.append([at, upto, entry])
        pieces[first:tail] = rebuilt

    def wall(self, final: bool) -> tuple[int, int]:
        """The rank's wall time so far: from its first span's start to where time is final
        (to its last span's end, once every span has ended)."""
        if self.first is None:
            return 0, 0
        end = self.last if final or self.done is None else max(self.done, self.first)
        return self.first, end if end is not None else self.first

    def buckets(self, final: bool, names: Iterable[str]) -> dict[str, int]:
        """ns by bucket so far (every one of *names*), ``unaccounted`` the rest of the wall
        time. Start-up counts once a step has started (a process without one has none), and
        the anomalous steps' excess comes out of productive time."""
        first, end = self.wall(final)
        figures = {name: self.totals.get(name, 0) for name in names}
        figures.update((name, ns) for name, ns in self.totals.items() if ns)
        if self.first_step is None:
            figures[STARTUP] = 0
        elif self.origin is not None and first < self.origin:
            # Before the first sweep only a late span (emit_span) has pieces: the rest is
            # uncovered, and before the first step.
            bound = min(self.first_step, self.origin)
            covered = 0
            for left, right, _ in self.pieces:
                if left >= bound:
                    break
                covered += max(0, min(right, bound) - max(left, first))
            figures[STARTUP] += bound - first - covered
        excess = anomalous_excess([ns for ns in self.steps if ns > 0])
        figures[PRODUCTIVE] -= excess
        figures[ANOMALOUS] = excess
        figures[UNACCOUNTED] = (end - first) - sum(
            ns for name, ns in figures.items() if name != UNACCOUNTED
        )
        return figures

    def window(
        self, length_ns: int, names: Iterable[str], final: bool
    ) -> tuple[int, dict[str, int]]:
        """The last *length_ns* of the wall time so far (less, early in the run): its length,
        and ns by bucket in it (every one of *names*)."""
        figures: dict[str, int] = dict.fromkeys(names, 0)
        begin, end = self.wall(final)
        begin = max(begin, end - length_ns)
        covered = 0
        for left, right, owner in reversed(self.pieces):
            if right <= begin:
                break
            overlap = min(right, end) - max(left, begin)
            if overlap > 0:
                figures[owner.bucket] = figures.get(owner.bucket, 0) + overlap
                covered += overlap
        figures[UNACCOUNTED] = max(0, end - begin) - covered
        return max(0, end - begin), figures


def anomalous_excess(times: Sequence[int]) -> int:
    """The steps' excess over the ideal step time, in whole ns (rounded up): the ideal is
    the mean of the steps no slower than median + 3 * MAD, as ``nemo-lens goodput`` says
    (docs/goodput.md). Exact: medians are kept doubled, so halves stay integers."""
    if not times:
        return 0
    median2 = _doubled_median(times)
    mad4 = _doubled_median([abs(2 * t - median2) for t in times])
    # t <= m + 3 * MAD, times 4: 4t <= 2 * (2m) + 3 * (4 MAD).
    bound4 = 2 * median2 + 3 * mad4
    normal = [t for t in times if 4 * t <= bound4]
    slow = [t for t in times if 4 * t > bound4]
    return sum(slow) - len(slow) * sum(normal) // len(normal)


def _doubled_median(values: Sequence[int]) -> int:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] * 2 if len(ordered) % 2 else ordered[middle - 1] + ordered[middle]


_NONE: Final[Mapping[str, Any]] = {}
_GROUP: Final = semconv.SPAN_GROUP
_LEGACY_GROUP: Final = semconv.LEGACY_SPAN_GROUP
_CATEGORY: Final = semconv.SPAN_CATEGORY


def _parts(span: Any) -> tuple[int | None, int | None, Mapping[str, Any], Mapping[str, Any]]:
    """*span*'s start, end, group tags and attributes (the tags win), read without changing
    it: a recorded span's tags are merged by whoever reads its attributes first, and the
    emitting or the export thread may be doing so now."""
    if type(span) is RecordingSpan:  # its slots: no property, no copy
        return span._start_time, span._end_time, span._tags or _NONE, span._attributes or _NONE
    return span.start_time, span.end_time, _NONE, span.attributes or _NONE


class GoodputRecorder(SpanProcessor):
    """Derives the goodput buckets from the spans as they end. The emitting thread only
    appends a span to a deque (:attr:`observe`, and :meth:`on_end` for the SDK's spans); the
    work is done when the metrics are collected, and by :meth:`close`.

    *tracker*'s open spans hold the watermark back: time is final only up to the earliest
    start of a bucketed span still open. *clock* (ns) is for tests."""

    def __init__(
        self,
        *,
        tracker: Any = None,
        windows_s: Sequence[int] = DEFAULT_WINDOWS_S,
        clock: Callable[[], int] = time.time_ns,
        buckets: Mapping[str, tuple[str, str]] | None = None,
    ) -> None:
        self._tracker = tracker
        self._clock = clock
        self.windows_s = tuple(windows_s) or DEFAULT_WINDOWS_S
        self._buckets = dict(group_buckets() if buckets is None else buckets)
        schema = {bucket for _, bucket in self._buckets.values()} - {PRODUCTIVE}
        self.bucket_names = (PRODUCTIVE, *sorted(schema), STARTUP, RECOVERY, ANOMALOUS, WASTED)
        """The buckets reported (``unaccounted`` besides), in a stable order."""
        self._ended: collections.deque[Any] = collections.deque()
        self.observe: Callable[[Any], None] = self._ended.append
        """The sink a recorded span is handed to as it ends."""
        self._lock = threading.Lock()
        self._account = _Account(max(self.windows_s) * 1_000_000_000)
        self._closed = False
        self._drained_at = time.monotonic()
        _fork.register(self)

    def _after_fork_in_child(self) -> None:
        # The parent's spans are the parent's; the child counts from its own first span.
        self._ended.clear()
        self._lock = threading.Lock()
        self._account = _Account(self._account.horizon_ns)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        self._ended.append(span)

    def _bucket_of(self, tags: Mapping[str, Any], attributes: Mapping[str, Any]) -> str | None:
        """The bucket a span with *tags* and *attributes* feeds, ``None`` for none (as the
        commands read its group and category)."""
        if _GROUP in tags:
            group = tags[_GROUP]
        elif _GROUP in attributes:
            group = attributes[_GROUP]
        else:
            group = tags.get(_LEGACY_GROUP, attributes.get(_LEGACY_GROUP))
        found = self._buckets.get(group) if isinstance(group, str) and group else None
        if found is None:
            return None
        category = tags[_CATEGORY] if _CATEGORY in tags else attributes.get(_CATEGORY)
        if not isinstance(category, str):
            category = found[0]
        return found[1] if category == GOODPUT else None

    def _take(self, span: Any) -> None:
        start, end, tags, attributes = _parts(span)
        if start is None or end is None:
            return
        if end < start:
            end = start
        account = self._account
        if account.first is None or start < account.first:
            account.first = start
        if account.last is None or end > account.last:
            account.last = end
        bucket = self._bucket_of(tags, attributes)
        if bucket is not None:
            if tags:
                attributes = {**attributes, **tags}
            account.judge(
                start,
                end,
                bucket,
                whole_number(attributes.get(ITERATION)),
                attributes.get(semconv.SPAN_TRUNCATED) is True,
            )

    def _watermark(self) -> int | None:
        """Now, or the earliest start of a bucketed span still open; ``None`` when the open
        spans changed while read (the next collection)."""
        now = self._clock()
        tracker = self._tracker
        if tracker is None:
            return now
        try:
            spans = list(tracker.open.values())
        except RuntimeError:
            return None
        for span in spans:
            start, _, tags, attributes = _parts(span)
            if start is None or start >= now:
                continue
            try:
                bucketed = self._bucket_of(tags, attributes) is not None
            except RuntimeError:  # an SDK span's attributes, changing as they are read
                return None
            if bucketed:
                now = start
        return now

    def drain(self) -> None:
        """Account the spans that ended since the last call, and make time final up to the
        watermark (all of it once closed)."""
        with self._lock:
            # The watermark before the spans: one that ends meanwhile was open at its read.
            upto = None if self._closed else self._watermark()
            ended, take = self._ended, self._take
            while ended:
                take(ended.popleft())
            if upto is not None or self._closed:
                self._account.finalize(upto)
            self._drained_at = time.monotonic()

    def poll(self) -> None:
        """Drain when a batch's worth of spans ended or a second passed since the last drain:
        an export thread calls it at each of its polls, so ended spans are not held until the
        next collection. Never waits for a drain in progress."""
        if len(self._ended) < POLL_SPANS and time.monotonic() - self._drained_at < 1.0:
            return
        if self._lock.locked():
            return
        self.drain()

    def close(self) -> None:
        """Account every span (the open ones were ended first) and make all time final."""
        with self._lock:
            self._closed = True
        self.drain()

    def shutdown(self) -> None:
        """The tracer provider's shutdown, after it ended the open spans: :meth:`close`."""
        self.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    def figures(self) -> tuple[int, dict[str, int]]:
        """The wall time so far and its ns by bucket."""
        self.drain()
        with self._lock:
            first, end = self._account.wall(self._closed)
            return end - first, self._account.buckets(self._closed, self.bucket_names)

    def window(self, seconds: int) -> tuple[int, dict[str, int]]:
        """The last *seconds* of final time: its length and its ns by bucket."""
        with self._lock:
            return self._account.window(seconds * 1_000_000_000, self.bucket_names, self._closed)

    @property
    def lost_ns(self) -> int:
        """Time of spans that arrived after the pieces they cover were forgotten."""
        return self._account.lost_ns

    def observe_with(self, meter: Meter) -> None:
        """Report the figures through *meter*'s instruments (the schema's catalogue)."""
        infos = semconv.INSTRUMENTS
        for name, callback in (
            (semconv.GOODPUT_TIME, self._time_points),
            (semconv.GOODPUT_RATIO, self._ratio_points),
            (semconv.GOODPUT_WINDOW_TIME, self._window_time_points),
            (semconv.GOODPUT_WINDOW_RATIO, self._window_ratio_points),
        ):
            info = infos[name]
            meter.create_observable_gauge(
                info.name, callbacks=[callback], unit=info.unit, description=info.description
            )

    def _time_points(self, options: CallbackOptions) -> Iterable[Observation]:
        _, buckets = self.figures()
        return [
            Observation(ns / 1e9, {semconv.GOODPUT_BUCKET: name}) for name, ns in buckets.items()
        ]

    def _ratio_points(self, options: CallbackOptions) -> Iterable[Observation]:
        wall, buckets = self.figures()
        return [Observation(buckets[PRODUCTIVE] / wall if wall > 0 else 0.0)]

    def _window_time_points(self, options: CallbackOptions) -> Iterable[Observation]:
        points = []
        for seconds in self.windows_s:
            _, buckets = self.window(seconds)
            points += [
                Observation(
                    ns / 1e9, {semconv.GOODPUT_BUCKET: name, semconv.GOODPUT_WINDOW: seconds}
                )
                for name, ns in buckets.items()
            ]
        return points

    def _window_ratio_points(self, options: CallbackOptions) -> Iterable[Observation]:
        points = []
        for seconds in self.windows_s:
            length, buckets = self.window(seconds)
            ratio = buckets[PRODUCTIVE] / length if length > 0 else 0.0
            points.append(Observation(ratio, {semconv.GOODPUT_WINDOW: seconds}))
        return points
