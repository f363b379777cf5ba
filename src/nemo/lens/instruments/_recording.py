"""What every metric recorder shares: instruments cached per meter, the default meter,
value and attribute checks, and problems reported once.

The recorders (:mod:`nemo.lens.instruments`, and its 0.1.0 submodules) only
say which metric gets which value; everything that keeps metrics from
breaking the job lives here.
"""

from __future__ import annotations

import logging
import math
import numbers
import reprlib
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from opentelemetry import metrics
from opentelemetry.util.types import AttributeValue

from nemo.lens._core import state as _state
from nemo.lens.semconv.metrics import INSTRUMENTS
from nemo.lens.spec import MetricInfo

# The package's logger name: what users filter on.
_logger = logging.getLogger("nemo.lens.instruments")

# -- what each metric is --------------------------------------------------------------

# Kind, unit, description and bucket boundaries of every metric: the schema's catalogue
# (nemo.lens.semconv.metrics, generated), so code, constants and docs never disagree.
_SPECS: Final[Mapping[str, MetricInfo]] = INSTRUMENTS

# -- reporting problems once ----------------------------------------------------------

_reported: set[tuple[str, str]] = set()


def report(key: str, problem: str, message: str, *args: object, error: bool = False) -> None:
    """Log *message* as a warning the first time (*key*, *problem*) occurs, then at debug."""
    if (key, problem) in _reported:
        _logger.debug(message, *args, exc_info=error)
        return
    _reported.add((key, problem))
    _logger.warning(
        message + "; later occurrences are logged at debug level", *args, exc_info=error
    )


# -- instruments, cached per meter ----------------------------------------------------

_Record = Callable[[float, Mapping[str, AttributeValue]], None]


def _discard(value: float, attributes: Mapping[str, AttributeValue]) -> None:
    """Stands in for an instrument that could not be created, so creation is tried once."""


_instruments: weakref.WeakKeyDictionary[metrics.Meter, dict[str, _Record]] = (
    weakref.WeakKeyDictionary()
)
_instruments_lock = threading.Lock()


def create(meter: metrics.Meter, name: str) -> _Record:
    spec = _SPECS[name]
    try:
        if spec.kind == "counter":
            return meter.create_counter(name, spec.unit, spec.description).add
        if spec.kind == "up_down_counter":
            return meter.create_up_down_counter(name, spec.unit, spec.description).add
        if spec.kind == "gauge":
            return meter.create_gauge(name, spec.unit, spec.description).set
        return meter.create_histogram(
            name,
            spec.unit,
            spec.description,
            explicit_bucket_boundaries_advisory=spec.boundaries,
        ).record
    except Exception:
        report(name, "create", "nemo.lens: could not create metric %s", name, error=True)
        return _discard


def _instrument(meter: metrics.Meter, name: str) -> _Record:
    try:
        return _instruments[meter][name]
    except KeyError:
        pass
    except TypeError:  # a meter that cannot be weakly referenced: work uncached
        report(
            type(meter).__name__,
            "cache",
            "nemo.lens: cannot cache instruments for meter %r (not weakly referenceable); "
            "each record creates its instruments again",
            meter,
        )
        return create(meter, name)
    # Created under a lock: two threads creating the same instrument would make
    # the SDK log a duplicate-registration warning and keep only one of them.
    with _instruments_lock:
        per_meter = _instruments.get(meter)
        if per_meter is None:
            per_meter = {}
            _instruments[meter] = per_meter
        found = per_meter.get(name)
        if found is None:
            found = create(meter, name)
            per_meter[name] = found
        return found


# -- the default meter ----------------------------------------------------------------

# (source, meter): the source is the current handle while nemo.lens is set up, else the
# global meter provider the meter came from (handle.get_meter() is not called per record).
_default: tuple[object, metrics.Meter] | None = None


def _default_meter() -> metrics.Meter:
    global _default
    handle = _state.current_handle()
    source: object = handle if handle is not None else metrics.get_meter_provider()
    cached = _default
    if cached is not None and cached[0] is source:
        return cached[1]
    from nemo.lens.handle import get_meter

    meter = get_meter()
    _default = (source, meter)
    return meter


def resolve_meter(meter: metrics.Meter | None) -> metrics.Meter | None:
    if meter is not None:
        return meter
    try:
        return _default_meter()
    except Exception:
        report("meter", "default", "nemo.lens: could not get the default meter", error=True)
        return None


# -- values and attributes ------------------------------------------------------------


def as_number(value: object) -> int | float | None:
    """Return *value* as a finite ``int`` or ``float``, or ``None`` when it is not one."""
    # Plain ints and floats first: the abstract numbers.Real check costs more than
    # the rest of this function for the values nearly every caller passes.
    if type(value) is int:
        return value
    if type(value) is float:
        return value if math.isfinite(value) else None
    if isinstance(value, bool):
        return None
    if not isinstance(value, numbers.Real):
        item = getattr(value, "item", None)  # NumPy scalars, one-element tensors
        if not callable(item):
            return None
        try:
            value = item()
        except Exception:
            return None
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return None
    if isinstance(value, numbers.Integral):
        return int(value)
    number = float(value)
    return number if math.isfinite(number) else None


def merge_attributes(
    extra: Mapping[str, object] | None, known: Mapping[str, object]
) -> dict[str, AttributeValue]:
    """Merge the caller's *extra* attributes and the helper's *known* ones (which win)."""
    merged: dict[str, AttributeValue] = {}
    for source in (extra or {}, known):
        for key, value in source.items():
            if value is None:
                continue
            if isinstance(value, (str, bool, int, float)):
                merged[key] = value
            else:
                report(
                    str(key),
                    "attribute",
                    "nemo.lens: dropping metric attribute %r: %s is not a str, bool, int or float",
                    key,
                    type(value).__name__,
                )
    return merged


def record(
    meter: metrics.Meter, name: str, value: object, attributes: Mapping[str, AttributeValue]
) -> None:
    if value is None:
        return
    number = as_number(value)
    spec = _SPECS[name]
    if number is None or (spec.non_negative and number < 0):
        requirement = "a finite, non-negative number" if spec.non_negative else "a finite number"
        report(
            name,
            "value",
            "nemo.lens: skipping %s for metric %s (needs %s)",
            reprlib.repr(value),
            name,
            requirement,
        )
        return
    try:
        _instrument(meter, name)(number, attributes)
    except Exception:
        report(name, "record", "nemo.lens: recording metric %s failed", name, error=True)


_NO_ATTRIBUTES: Final[Mapping[str, AttributeValue]] = {}


def record_each(meter: metrics.Meter | None, values: Sequence[tuple[str, object]]) -> None:
    """Record each ``(metric, value)`` pair with no attributes (the 0.1.0 helpers)."""
    target = resolve_meter(meter)
    if target is None:
        return
    for name, value in values:
        record(target, name, value, _NO_ATTRIBUTES)
