"""What telemetry a pipeline lost or changed, and every message that says so: one warning
per outage per kind of destination, one per reason a span was dropped, recoveries at INFO,
the summaries at shutdown (``docs/reliability.md``). Lock-free, so a fork never finds one held.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from nemo.lens._core import fork as _fork
from nemo.lens._core.redaction import dropped_attribute_values
from nemo.lens._core.sanitize import DROPPED_AT_THE_DOOR, REASONS
from nemo.lens._core.secrets import scrub, scrub_url

__all__ = ["ExportHealth", "Tally", "describe_destination"]

# The logger keeps the name users configure it by (this code's module before it moved).
_logger = logging.getLogger("nemo.lens.exporters.health")

_CAUSE_LIMIT: Final = 300  # longest cause quoted (gRPC error details can be long)
_UNITS: Final[Mapping[str, str]] = {
    "traces": "span(s)",
    "metrics": "metric export(s)",
    "logs": "log record(s)",
}
# Said once per process, whichever pipeline forks first.
_SAID: dict[object, object] = {}


def _first(said: dict[object, object], key: object) -> bool:
    # Whether this call is the first to say *key* (atomic: setdefault is one C call).
    token = object()
    return said.setdefault(key, token) is token


class Tally:
    """A counter threads add to without a lock and without losing counts (a slot per thread,
    so a signal handler that interrupts an update and adds too never waits)."""

    def __init__(self) -> None:
        self._slots: dict[int, int] = {}

    def add(self, amount: int) -> None:
        ident = threading.get_ident()
        self._slots[ident] = self._slots.get(ident, 0) + amount

    @property
    def value(self) -> int:
        return sum(list(self._slots.values()))


def describe_destination(exporter: object) -> str:
    """Where *exporter* sends data, safe to log: no user, password, query or fragment
    (wrappers that keep the real exporter in ``inner`` are looked through)."""
    inner = getattr(exporter, "inner", None)
    if inner is not None and inner is not exporter:
        return describe_destination(inner)
    endpoint = getattr(exporter, "_endpoint", None)
    if isinstance(endpoint, str) and endpoint:
        return _strip_credentials(endpoint)
    sink = getattr(exporter, "sink", None)
    path = getattr(sink, "path", None)
    if isinstance(path, str):
        return path
    if sink is not None:
        return "standard output"
    return type(exporter).__name__


def _strip_credentials(endpoint: str) -> str:
    try:
        parts = urlsplit(endpoint)
    except ValueError:
        return "the configured endpoint"
    if not parts.scheme or not parts.netloc:
        # gRPC endpoints are often host:port; anything with an "@" may carry a password.
        return scrub_url(endpoint).rpartition("@")[2]
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = f"{host}:{port}" if port is not None else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _hint(destination: str) -> str:
    # What to look at first when export to *destination* fails: one per kind of place.
    if destination == "standard output":
        return "Was standard output closed (a pipe whose reader exited)?"
    if "://" in destination or re.fullmatch(r"\[?[\w.:-]+\]?:\d+", destination):
        return "Is the collector running and reachable?"
    if "/" in destination or destination.endswith(".jsonl"):
        return "Is the file system full, read-only or unavailable?"
    return "Is the exporter's destination reachable?"


def _add(tallies: dict[Any, Tally], key: object, amount: int) -> None:
    tally = tallies.get(key)
    if tally is None:
        tally = tallies.setdefault(key, Tally())
    tally.add(amount)


class ExportHealth:
    """Failure and drop accounting for one process's pipeline; safe from any thread. A
    forked child starts with nothing counted: it reports its own losses."""

    def __init__(self) -> None:
        # Where each signal goes: the pipeline's make-up, which a forked child keeps.
        self._served: dict[str, set[str]] = {}
        self._after_fork_in_child()
        _fork.register(self)

    def _after_fork_in_child(self) -> None:
        self._failed: dict[tuple[str, str], Tally] = {}
        self._dropped: dict[tuple[str, str, str], Tally] = {}
        self._failing: set[tuple[str, str]] = set()
        self._changed: dict[str, Tally] = {}
        self._said: dict[object, object] = {}
        # The primitives count what they drop for the whole process; this pipeline
        # reports its share.
        self._door_baseline = dropped_attribute_values()

    def serves(self, signal: str, destination: str) -> None:
        """Say that *signal* goes to *destination*: a summary names the destination once a
        signal has more than one."""
        self._served.setdefault(signal, set()).add(destination)

    def export_failed(
        self, signal: str, items: int, destination: str, cause: str | None, *, warn: bool = True
    ) -> None:
        """Count *items* of *signal* not exported; with *warn*, the first failure per kind of
        destination is a warning, else DEBUG."""
        _add(self._failed, (signal, destination), items)
        self._failing.add((signal, destination))
        if not (warn and self.attempt_failed(signal, destination, cause)):
            _logger.debug("nemo.lens: exporting %d %s to %s failed", items, signal, destination)

    def attempt_failed(self, signal: str, destination: str, cause: str | None) -> bool:
        """Report that exporting is failing (the exporter may still be retrying); only the
        first report per kind of destination is logged. Returns whether this one was."""
        self._failing.add((signal, destination))
        hint = _hint(destination)
        if not _first(self._said, hint):
            return False
        shown = scrub((cause or "no details").strip())
        if len(shown) > _CAUSE_LIMIT:
            shown = shown[:_CAUSE_LIMIT] + "..."
        _logger.warning(
            "nemo.lens: cannot export %s to %s (%s). The job is not affected; nemo.lens "
            "keeps trying, reports further failures only at DEBUG on logger %r and says "
            "at shutdown how much telemetry was lost. %s",
            signal,
            destination,
            shown,
            _logger.name,
            hint,
        )
        return True

    def export_succeeded(self, signal: str, destination: str) -> None:
        """Record a successful export: a recovery after failures is logged."""
        key = (signal, destination)
        if key in self._failing:
            self._failing.discard(key)
            _logger.info("nemo.lens: exporting %s to %s works again", signal, destination)

    def dropped(
        self, signal: str, items: int, reason: str, explanation: str, destination: str
    ) -> None:
        """Count *items* of *signal* dropped for *reason* (a short phrase); *explanation* is
        a warning the first time it applies."""
        _add(self._dropped, (signal, reason, destination), items)
        if _first(self._said, (reason, explanation)):
            _logger.warning("%s", explanation)

    def span_ended_late(self, destination: str) -> None:
        """Count a span that ended after shutdown's last drain began."""
        self.dropped(
            "traces",
            1,
            "ended after shutdown",
            "nemo.lens: a span ended after its telemetry was shut down (a thread still "
            "emitting during shutdown or re-initialisation); it was not exported. Such spans "
            "are counted.",
            destination,
        )

    def span_dropped(
        self, destination: str, *, stalled: bool, stall_timeout_millis: float, queue_size: int
    ) -> None:
        """Count a span dropped at a full queue (the exporter *stalled*, or too slow)."""
        if stalled:
            reason = "exporter stalled"
            explanation = (
                f"nemo.lens: the span exporter ({destination}) has not finished a batch "
                f"in {stall_timeout_millis:g} ms and its queue is full; dropping spans "
                "instead of holding the job up, until it writes again (a hung file system?). "
                "The total is reported at shutdown."
            )
        else:
            reason = "queue full"
            explanation = (
                f"nemo.lens: the span queue is full ({queue_size} spans) because "
                f"export to {destination} is failing or slower than the job; dropping "
                "spans until it catches up. The total is reported at shutdown."
            )
        self.dropped("traces", 1, reason, explanation, destination)

    def changed(self, changes: Mapping[str, int], explanation: str | None = None) -> None:
        """Count names and values changed to be exported, by reason; the first time, one
        warning (*explanation*, if given) says so."""
        if not changes:
            return
        for reason, count in changes.items():
            _add(self._changed, reason, count)
        if _first(self._said, "changed"):
            if explanation is None:
                explanation = (
                    f"nemo.lens: telemetry held values that no exporter can write as they are "
                    f"({next(iter(changes))}); they are exported changed rather than lost with "
                    "their batch. Changes are counted and reported at shutdown."
                )
            _logger.warning("%s", explanation)

    def changes_summary(self) -> str | None:
        """One line totalling the names and values changed or dropped to be exported, by
        reason, or ``None`` when nothing was."""
        totals = {reason: tally.value for reason, tally in list(self._changed.items())}
        totals[DROPPED_AT_THE_DOOR] = dropped_attribute_values() - self._door_baseline
        parts = [f"{totals[reason]} {reason}" for reason in REASONS if totals.get(reason)]
        return "nemo.lens: telemetry exported with changes: " + "; ".join(parts) if parts else None

    def lost(self) -> dict[str, int]:
        """How many items each signal lost so far (failed plus dropped)."""
        totals: dict[str, int] = {}
        for key, tally in [*list(self._failed.items()), *list(self._dropped.items())]:
            totals[key[0]] = totals.get(key[0], 0) + tally.value
        return {signal: count for signal, count in totals.items() if count}

    def _where(self, signal: str, destination: str, preposition: str) -> str:
        if destination and len(self._served.get(signal, ())) > 1:
            return f" {preposition} {destination}"
        return ""

    def summary(self, *, queued: Mapping[tuple[str, str], int] | None = None) -> str | None:
        """One line saying what was lost, or ``None`` when nothing was. *queued* counts the
        items still queued, by signal and destination, when shutdown gave up waiting."""
        parts: list[str] = []
        for (signal, reason, destination), tally in sorted(self._dropped.items()):
            if tally.value:
                where = self._where(signal, destination, "on the way to")
                parts.append(
                    f"{tally.value} {_UNITS.get(signal, signal)} dropped{where} ({reason})"
                )
        for (signal, destination), tally in sorted(self._failed.items()):
            if tally.value:
                parts.append(
                    f"{tally.value} {_UNITS.get(signal, signal)} failed to export to {destination}"
                )
        for (signal, destination), count in sorted((queued or {}).items()):
            if count:
                where = self._where(signal, destination, "for")
                unit = _UNITS.get(signal, signal)
                parts.append(f"{count} {unit} still queued{where} when shutdown timed out")
        if not parts:
            return None
        return "nemo.lens: telemetry this process could not deliver: " + "; ".join(parts)

    def not_after_fork(self, destination: str) -> None:
        """Say once per process, as it first forks, that its children will not export."""
        if _first(_SAID, "fork"):
            _logger.warning(
                "nemo.lens: this process forked; its children do not export telemetry to %s "
                "because OTLP over gRPC cannot be used safely after fork (the child can hang "
                "or crash). To trace forked workers, set OTEL_EXPORTER_OTLP_PROTOCOL="
                "http/protobuf or NEMO_LENS_EXPORTER=file.",
                destination,
            )
