"""One warning per outage, not one per batch: export failures counted and reported once.

nemo.lens reports, for every signal of a pipeline:

* the **first** failure, as one warning naming the signal, the destination and
  the cause (the exporter's own message, captured; see
  :mod:`nemo.lens._sdk.exporters.quiet`): one for the process per kind of
  destination (a collector, a file, standard output), so that a job exporting
  to a collector and a file at once hears of a full disk even while the
  collector is down;
* the **first** time telemetry is dropped (a full queue), as one warning;
* a **summary** at shutdown: how many spans, metric exports and log records were
  dropped or failed, and where they were going, so the loss is never silent;
* every suppressed attempt at ``DEBUG`` on the ``nemo.lens.exporters.health``
  logger, for whoever needs them.

Credentials never reach these messages: destinations are shown without user,
password or query (:func:`describe_destination`), and every quoted message goes
through :func:`nemo.lens._core.secrets.scrub`.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Mapping
from typing import Final
from urllib.parse import urlsplit, urlunsplit

from nemo.lens._core import fork as _fork
from nemo.lens._core.redaction import dropped_attribute_values
from nemo.lens._core.sanitize import DROPPED_AT_THE_DOOR, REASONS
from nemo.lens._core.secrets import add_secret, scrub, scrub_url

__all__ = [
    "ExportHealth",
    "Tally",
    "add_secret",
    "announce_not_after_fork",
    "describe_destination",
    "scrub",
]

# The logger keeps the name users configure it by (this code's module before it moved).
_logger = logging.getLogger("nemo.lens.exporters.health")

_CAUSE_LIMIT: Final = 300
"""Longest captured cause quoted in a warning (gRPC error details can be long)."""


class Tally:
    """A counter that threads can add to without a lock and without losing counts.

    Each thread adds to its own slot (``dict`` item assignment is atomic), so the
    hot path never blocks -- not even when a signal handler interrupts a thread
    in the middle of an update and then needs the same counter.
    """

    def __init__(self) -> None:
        self._slots: dict[int, int] = {}

    def add(self, amount: int = 1) -> None:
        """Add *amount* (from the calling thread)."""
        ident = threading.get_ident()
        self._slots[ident] = self._slots.get(ident, 0) + amount

    @property
    def value(self) -> int:
        """The total so far."""
        return sum(list(self._slots.values()))


# -- destinations -----------------------------------------------------------------------


def describe_destination(exporter: object) -> str:
    """Where *exporter* sends data, safe to log: no user, password, query or fragment.

    Wrappers that keep the real exporter in ``inner`` are looked through.
    """
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
    """What to look at first when export to *destination* fails."""
    if destination == "standard output":
        return "Was standard output closed (a pipe whose reader exited)?"
    if "://" in destination or re.fullmatch(r"\[?[\w.:-]+\]?:\d+", destination):
        return "Is the collector running and reachable?"
    if "/" in destination or destination.endswith(".jsonl"):
        return "Is the file system full, read-only or unavailable?"
    return "Is the exporter's destination reachable?"


# -- the report --------------------------------------------------------------------------

_UNITS: Final[Mapping[str, str]] = {
    "traces": "span(s)",
    "metrics": "metric export(s)",
    "logs": "log record(s)",
}


class ExportHealth:
    """Failure and drop accounting for one process's telemetry pipeline.

    Exporters and processors report here; the first failure and the first drop
    are logged as warnings, recoveries at INFO, everything else at DEBUG, and
    :meth:`summary` says at shutdown what was lost. Safe to call from any thread.
    """

    def __init__(self) -> None:
        # Where each signal goes: the pipeline's make-up, which a forked child keeps.
        self._served: dict[str, set[str]] = {}
        self._reset()
        _fork.register(self)

    def _reset(self) -> None:
        # Keyed by signal and destination: with several exporters, each counts its own.
        self._failed: dict[tuple[str, str], Tally] = {}
        self._dropped: dict[tuple[str, str, str], Tally] = {}
        self._failing: set[tuple[str, str]] = set()
        self._changed: dict[str, Tally] = {}
        # Values the primitives dropped before the SDK saw them are counted in
        # nemo.lens.helpers for the whole process; this pipeline reports its share.
        self._door_baseline = dropped_attribute_values()
        # Acquired without blocking and never released: exactly one caller wins.
        self._failure_warned: dict[str, threading.Lock] = {}
        self._drop_warned: dict[tuple[str, str], threading.Lock] = {}
        self._change_warned = threading.Lock()

    def _after_fork_in_child(self) -> None:
        # A forked child reports its own losses, not a copy of its parent's.
        self._reset()

    def serves(self, signal: str, destination: str) -> None:
        """Say that *signal* goes to *destination* (one of possibly several): a summary
        of drops names the destination once a signal has more than one."""
        self._served.setdefault(signal, set()).add(destination)

    def export_failed(
        self, signal: str, items: int, destination: str, cause: str | None, *, warn: bool = True
    ) -> None:
        """Record that *items* of *signal* could not be exported to *destination*; with
        *warn*, the first failure for this kind of destination is logged as a warning
        (:meth:`attempt_failed`), else only at DEBUG."""
        key = (signal, destination)
        tally = self._failed.get(key)
        if tally is None:
            tally = self._failed.setdefault(key, Tally())
        tally.add(items)
        self._failing.add(key)
        if not (warn and self.attempt_failed(signal, destination, cause)):
            _logger.debug("nemo.lens: exporting %d %s to %s failed", items, signal, destination)

    def attempt_failed(self, signal: str, destination: str, cause: str | None) -> bool:
        """Report that exporting *signal* to *destination* is failing (the exporter
        may still be retrying); only the first report in the process for this kind
        of destination is logged. Returns whether this one was."""
        self._failing.add((signal, destination))
        shown = scrub((cause or "no details").strip())
        if len(shown) > _CAUSE_LIMIT:
            shown = shown[:_CAUSE_LIMIT] + "..."
        hint = _hint(destination)
        warned = self._failure_warned.get(hint)
        if warned is None:
            warned = self._failure_warned.setdefault(hint, threading.Lock())
        if warned.acquire(blocking=False):
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
        return False

    def export_succeeded(self, signal: str, destination: str) -> None:
        """Record a successful export; logs a recovery once after failures."""
        key = (signal, destination)
        if key in self._failing:
            self._failing.discard(key)
            _logger.info("nemo.lens: exporting %s to %s works again", signal, destination)

    def dropped(
        self, signal: str, items: int, reason: str, explanation: str, destination: str = ""
    ) -> None:
        """Record that *items* of *signal* were dropped for *reason* (a short phrase)
        on their way to *destination* (if known).

        *explanation* is logged as a warning the first time anything is dropped
        for that reason with that explanation (two processors dropping spans that
        ended after shutdown say so once; two whose queues filled, each once).
        """
        key = (signal, reason, destination)
        tally = self._dropped.get(key)
        if tally is None:
            tally = self._dropped.setdefault(key, Tally())
        tally.add(items)
        warned = self._drop_warned.get((reason, explanation))
        if warned is None:
            warned = self._drop_warned.setdefault((reason, explanation), threading.Lock())
        if warned.acquire(blocking=False):
            _logger.warning("%s", explanation)

    def changed(self, changes: Mapping[str, int], explanation: str | None = None) -> None:
        """Record names and values that had to be changed to be exported, by reason.

        The first time, one warning says so (*explanation*, if given);
        :meth:`changes_summary` totals them.
        """
        if not changes:
            return
        for reason, count in changes.items():
            tally = self._changed.get(reason)
            if tally is None:
                tally = self._changed.setdefault(reason, Tally())
            tally.add(count)
        if self._change_warned.acquire(blocking=False):
            if explanation is None:
                explanation = (
                    f"nemo.lens: telemetry held values that no exporter can write as they are "
                    f"({next(iter(changes))}); they are exported changed rather than lost with "
                    "their batch. Changes are counted and reported at shutdown."
                )
            _logger.warning("%s", explanation)

    def changes(self) -> dict[str, int]:
        """How many names and values were changed or dropped to be exported, by reason
        (the reasons of :mod:`nemo.lens._core.sanitize`)."""
        totals = {reason: tally.value for reason, tally in list(self._changed.items())}
        totals[DROPPED_AT_THE_DOOR] = dropped_attribute_values() - self._door_baseline
        return {reason: totals[reason] for reason in REASONS if totals.get(reason)}

    def changes_summary(self) -> str | None:
        """One line totalling :meth:`changes`, or ``None`` when nothing was changed."""
        totals = self.changes()
        if not totals:
            return None
        parts = [f"{count} {reason}" for reason, count in totals.items()]
        return "nemo.lens: telemetry exported with changes: " + "; ".join(parts)

    def _where(self, signal: str, destination: str, preposition: str) -> str:
        # Where the items were going: said once the signal goes to several places.
        if destination and len(self._served.get(signal, ())) > 1:
            return f" {preposition} {destination}"
        return ""

    def lost_total(self) -> int:
        """How many items of every signal were lost so far (failed plus dropped)."""
        return sum(self.lost().values())

    def lost(self) -> dict[str, int]:
        """How many items each signal lost so far (failed plus dropped)."""
        totals: dict[str, int] = {}
        for (signal, _), tally in list(self._failed.items()):
            totals[signal] = totals.get(signal, 0) + tally.value
        for (signal, _, _), tally in list(self._dropped.items()):
            totals[signal] = totals.get(signal, 0) + tally.value
        return {signal: count for signal, count in totals.items() if count}

    def summary(
        self,
        pending: Mapping[str, int] | None = None,
        *,
        queued: Mapping[tuple[str, str], int] | None = None,
    ) -> str | None:
        """One line saying what was lost, or ``None`` when nothing was.

        *pending* counts items of each signal still queued when shutdown gave up
        waiting (they are lost too when the process exits); *queued* counts them
        by signal and destination instead.
        """
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
        left = [((signal, ""), count) for signal, count in (pending or {}).items()]
        for (signal, destination), count in sorted([*left, *(queued or {}).items()]):
            if count:
                where = self._where(signal, destination, "for")
                parts.append(
                    f"{count} {_UNITS.get(signal, signal)} still queued{where} when shutdown "
                    "timed out"
                )
        if not parts:
            return None
        return "nemo.lens: telemetry this process could not deliver: " + "; ".join(parts)


# -- fork -----------------------------------------------------------------------------------

_fork_warned = threading.Lock()


def announce_not_after_fork(destination: str) -> None:
    """Say once per process, as it forks, that its children will not export to *destination*.

    For exporters that cannot be used at all in a forked child (OTLP over gRPC:
    gRPC is not fork-safe while another thread is calling into it, and a child
    that uses it can hang or crash). Said by the parent, once, rather than by
    every data-loader worker of every epoch.
    """
    if _fork_warned.acquire(blocking=False):
        _logger.warning(
            "nemo.lens: this process forked; its children do not export telemetry to %s "
            "because OTLP over gRPC cannot be used safely after fork (the child can hang or "
            "crash). To trace forked workers, set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf "
            "or NEMO_LENS_EXPORTER=file.",
            destination,
        )
