"""Metric groups a consumer declares and records by key: :class:`MetricSpec`,
:func:`register_metric_group`, :func:`record_metrics` (upstream's next API).

The names are the consumer's; the instruments, their cache per meter and the
once-only problem reports are the recorders' (``docs/metrics-and-logs.md``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from opentelemetry import metrics

from nemo.lens._core import fork as _fork
from nemo.lens.instruments import _recording
from nemo.lens.spec import MetricInfo

__all__ = [
    "METRIC_KINDS",
    "OBSERVABLE_METRIC_KINDS",
    "MetricSpec",
    "create_metric_instruments",
    "record_metrics",
    "register_metric_group",
    "registered_metric_groups",
    "unregister_metric_group",
]

OBSERVABLE_METRIC_KINDS: Final = frozenset(
    {"observable_gauge", "observable_counter", "observable_up_down_counter"}
)
"""Kinds reported by the spec's ``callback`` at each collection, not by :func:`record_metrics`."""

METRIC_KINDS: Final = (
    frozenset({"gauge", "histogram", "counter", "up_down_counter"}) | OBSERVABLE_METRIC_KINDS
)
"""The kinds a :class:`MetricSpec` may declare."""

# Values these kinds cannot take are refused here, once, rather than dropped by the SDK.
_NON_NEGATIVE: Final = frozenset({"counter", "histogram"})


@dataclass(frozen=True)
class MetricSpec:
    """One series of a metric group.

    Args:
        key: What callers pass to :func:`record_metrics` (``reward_mean=0.8``); unique in
            its group.
        name: The instrument's name as exported (``rl.reward.mean``).
        kind: One of :data:`METRIC_KINDS`; ``gauge`` by default.
        unit: A UCUM unit (``ms``, ``{token}/s``); empty when unitless.
        description: The instrument's description.
        callback: Required by the ``observable_*`` kinds (it returns the points of each
            collection) and refused by the others.
    """

    key: str
    name: str
    kind: str = "gauge"
    unit: str = ""
    description: str = ""
    callback: metrics.CallbackT | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not self.key:
            raise ValueError(f"MetricSpec.key must be a non-empty string, not {self.key!r}")
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(
                f"MetricSpec.name must be a non-empty string (key={self.key!r}), not {self.name!r}"
            )
        if self.kind not in METRIC_KINDS:
            raise ValueError(
                f"MetricSpec.kind {self.kind!r} is not one of {sorted(METRIC_KINDS)} "
                f"(key={self.key!r})"
            )
        observable = self.kind in OBSERVABLE_METRIC_KINDS
        if observable and self.callback is None:
            raise ValueError(
                f"MetricSpec.kind {self.kind!r} needs a callback: it is how an observable "
                f"instrument reports (key={self.key!r})"
            )
        if not observable and self.callback is not None:
            raise ValueError(
                f"MetricSpec.callback is only for the kinds {sorted(OBSERVABLE_METRIC_KINDS)}; "
                f"a {self.kind!r} is recorded with record_metrics (key={self.key!r})"
            )

    def _info(self) -> MetricInfo:
        return MetricInfo(
            self.name,
            self.kind,
            self.unit,
            self.description,
            non_negative=self.kind in _NON_NEGATIVE,
        )


class _Group:
    __slots__ = ("infos", "specs")

    def __init__(self, specs: dict[str, MetricSpec]) -> None:
        self.specs = specs
        self.infos = {key: spec._info() for key, spec in specs.items()}


_groups: dict[str, _Group] = {}
_groups_lock = threading.Lock()


def _new_lock_in_child() -> None:
    global _groups_lock
    _groups_lock = threading.Lock()


# A lock another thread held at a fork stays held in the child; the groups carry over.
_fork.on_fork(after_in_child=_new_lock_in_child)


def register_metric_group(
    group: str, specs: Iterable[MetricSpec], *, allow_override: bool = False
) -> None:
    """Declare the series of *group*, to be recorded with :func:`record_metrics`.

    Raises :class:`ValueError` for an empty group name, no specs, a key given twice, or a
    group already registered (pass ``allow_override=True`` to replace it; instruments
    already made for it are replaced when their kind, unit or description changed).
    """
    if not isinstance(group, str) or not group:
        raise ValueError(f"a metric group name must be a non-empty string, not {group!r}")
    by_key: dict[str, MetricSpec] = {}
    for spec in specs:
        if not isinstance(spec, MetricSpec):
            raise TypeError(
                f"metric group {group!r}: {spec!r} is not a MetricSpec; "
                "declare each series as MetricSpec(key, name, kind, unit, description)"
            )
        if spec.key in by_key:
            raise ValueError(f"Duplicate metric key {spec.key!r} in group {group!r}")
        by_key[spec.key] = spec
    if not by_key:
        raise ValueError(f"Metric group {group!r} must declare at least one MetricSpec")
    with _groups_lock:
        if group in _groups and not allow_override:
            raise ValueError(
                f"Metric group {group!r} is already registered; "
                "pass allow_override=True to replace it"
            )
        _groups[group] = _Group(by_key)
    _recording.forget_reports(_report_key(group))


def unregister_metric_group(group: str) -> None:
    """Remove *group*; :class:`ValueError` when it is not registered.

    Observable instruments already made keep reporting (OpenTelemetry cannot remove
    them): a callback that should stop returns no observations instead.
    """
    with _groups_lock:
        if group not in _groups:
            raise ValueError(f"Metric group {group!r} is not registered")
        del _groups[group]


def registered_metric_groups() -> dict[str, tuple[MetricSpec, ...]]:
    """A snapshot: each registered group and its specs, in registration order."""
    with _groups_lock:
        return {name: tuple(entry.specs.values()) for name, entry in _groups.items()}


def _report_key(group: str, key: str = "") -> str:
    return f"metric group {group}" + (f": {key}" if key else "")


def _lookup(group: str, caller: str) -> _Group | None:
    entry = _groups.get(group)
    if entry is None:
        _recording.report(
            _report_key(group),
            "unregistered",
            "nemo.lens: %s called for unregistered metric group %r; "
            "call register_metric_group first",
            caller,
            group,
        )
    return entry


def create_metric_instruments(meter: metrics.Meter | None, group: str) -> None:
    """Make *group*'s instruments on *meter* (``None``: nemo.lens's) without recording.

    A group with an ``observable_*`` series needs this once after set-up: nothing is ever
    recorded on it, so nothing else would create it. Calling it again does nothing.
    """
    target = _recording.resolve_meter(meter)
    entry = _lookup(group, "create_metric_instruments")
    if target is None or entry is None:
        return
    for key, spec in entry.specs.items():
        _recording.instrument(target, entry.infos[key], spec.callback)


def record_metrics(
    meter: metrics.Meter | None,
    group: str,
    values: Mapping[str, object] | None = None,
    /,
    *,
    attributes: Mapping[str, object] | None = None,
    **kw: object,
) -> None:
    """Record the series of *group* given in *values* and as keywords (which win).

    ``None`` records nothing, so a caller passes the series it has. Nothing raises: an
    unregistered group, an unknown key, a bad value or attribute and an observable key are
    each logged once and skipped. *meter* ``None`` is nemo.lens's meter. The first three
    parameters are positional-only, so series may be called ``meter``, ``group`` or
    ``values``; a series called ``attributes`` is passed in *values*.
    """
    try:
        merged = dict(values) if values else {}
    except (TypeError, ValueError):
        _recording.report(
            _report_key(group),
            "values",
            "nemo.lens: record_metrics got values of type %s for metric group %r; "
            "pass a mapping of key to number",
            type(values).__name__,
            group,
        )
        return
    merged.update(kw)
    if not merged:
        return
    entry = _lookup(group, "record_metrics")
    if entry is None:
        return
    target = _recording.resolve_meter(meter)
    if target is None:
        return
    if attributes is not None and not isinstance(attributes, Mapping):
        _recording.report(
            _report_key(group),
            "attributes",
            "nemo.lens: record_metrics got attributes of type %s for metric group %r; "
            "recording without them (pass a mapping)",
            type(attributes).__name__,
            group,
        )
        attributes = None
    point_attributes = _recording.merge_attributes(attributes, {})
    for key, value in merged.items():
        if value is None:
            continue
        info = entry.infos.get(key)
        if info is None:
            _recording.report(
                _report_key(group, key),
                "unknown",
                "nemo.lens: unknown metric key %r for metric group %r, skipped; its keys: %s",
                key,
                group,
                ", ".join(entry.infos),
            )
        elif info.kind in OBSERVABLE_METRIC_KINDS:
            _recording.report(
                _report_key(group, key),
                "observable",
                "nemo.lens: metric key %r of metric group %r is %s and reports through its "
                "callback; the value given to record_metrics is dropped",
                key,
                group,
                info.kind,
            )
        else:
            _recording.record_as(target, info, value, point_attributes, key=_report_key(group, key))
