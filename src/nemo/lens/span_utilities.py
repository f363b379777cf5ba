"""Spans over explicit intervals (:func:`emit_span`), for work that already happened.

Times are Unix-epoch seconds: a ``float`` (about a quarter of a microsecond of resolution
today), or a decimal string or :class:`~decimal.Decimal`, which keep every nanosecond.
"""

from __future__ import annotations

import decimal
import logging
from collections.abc import Mapping
from decimal import Decimal
from typing import Final

from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Tracer

from nemo.lens import semconv
from nemo.lens._core import state as _state
from nemo.lens._core.spans import start_span

__all__ = ["emit_span", "epoch_nanoseconds"]

_logger = logging.getLogger(__name__)

_NS_PER_SECOND: Final = Decimal(1_000_000_000)
# OTLP carries times as unsigned 64-bit nanoseconds.
_MAX_NS: Final = 2**64 - 1
# Enough digits for any nanosecond time, whatever precision the caller's context has.
_CONTEXT: Final = decimal.Context(prec=60, rounding=decimal.ROUND_HALF_EVEN)

# No lock: a race can only log the warning twice, and a lock held at a fork would hang the child.
_skew_logged = False


def epoch_nanoseconds(value: float | str | Decimal) -> tuple[Decimal, int]:
    """Unix-epoch seconds *value* (a number, a decimal string or a ``Decimal``, the last two
    read exactly) as a :class:`~decimal.Decimal` and in nanoseconds (rounded half to even).

    Raises :class:`ValueError` for text that is not a number, NaN, an infinity, or a time
    OpenTelemetry cannot carry (before 1970, after 2554), :class:`TypeError` for another type.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str, Decimal)):
        raise TypeError(
            "takes Unix-epoch seconds as a float, a decimal string or a Decimal, got "
            f"{type(value).__name__} {value!r}"
        )
    if isinstance(value, str):
        try:
            # Decimal reads the text exactly; float() would round it to ~0.2 us.
            number = Decimal(value.strip())
        except decimal.InvalidOperation:
            raise ValueError(
                f"{value!r} is not a number; write Unix-epoch seconds such as '1767225600.25'"
            ) from None
    else:
        # Decimal(float) is the float's exact binary value: no second rounding.
        number = Decimal(value)
    if not number.is_finite():
        raise ValueError(
            f"{value!r} is not a finite time; write Unix-epoch seconds, not NaN or infinity"
        )
    nanoseconds = int((number * _NS_PER_SECOND).to_integral_value(context=_CONTEXT))
    if not 0 <= nanoseconds <= _MAX_NS:
        raise ValueError(
            f"{value!r} is out of range; a time is Unix-epoch seconds from 0 to about 1.8e10 "
            "(the year 2554)"
        )
    return number, nanoseconds


def _time(value: object, parameter: str) -> tuple[Decimal, int]:
    try:
        return epoch_nanoseconds(value)  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"emit_span({parameter}=...): {exc}") from None


def _log_skew_once(name: str, start: Decimal, end: Decimal) -> None:
    global _skew_logged
    if _skew_logged:
        return
    _skew_logged = True
    _logger.warning(
        "nemo.lens: emit_span(%r) ends %s s before it starts (clock skew between the clocks "
        "that timed it?); its end was clamped to its start and the span marked %s=True, with "
        "the given times in inverted.*; logged once per process",
        name,
        start - end,
        semconv.INVERTED_SKEW,
    )


def emit_span(
    tracer: Tracer | None,
    name: str,
    start_epoch_seconds: float | str | Decimal,
    end_epoch_seconds: float | str | Decimal,
    *,
    group: str | None = None,
    context: Context | None = None,
    attributes: Mapping[str, object] | None = None,
) -> Span | None:
    """Emit span *name*, already finished, over an explicit interval of Unix-epoch seconds.

    Args:
        tracer: The tracer to use; ``None`` is nemo.lens's default tracer.
        name: The span's name.
        start_epoch_seconds: When the work started: a ``float``, or a decimal string or
            :class:`~decimal.Decimal` (these keep nanoseconds exactly).
        end_epoch_seconds: When it ended, in the same forms.
        group: The span group. When given and not enabled, ``None`` is returned before
            anything is checked; when enabled, the span carries ``lens.group`` and
            ``lens.span_category``.
        context: The parent context; ``None`` is the one current at the call. The span
            itself is never made current.
        attributes: Filtered and redacted as by :func:`nemo.lens.safe_set_span_attributes`.

    An end before the start (clocks that disagree) is clamped to the start, and the span
    marked ``inverted.skew=True`` with the given values in ``inverted.start_epoch_seconds``,
    ``inverted.end_epoch_seconds`` and ``inverted.delta_seconds``; the first such span of
    the process is logged as a warning.

    Raises:
        ValueError: a time is NaN, infinite, not a number, or outside what OpenTelemetry
            can carry (before 1970, after 2554).
        TypeError: an argument has the wrong type.
    """
    if group is not None and group not in _state.enabled:
        return None
    if not isinstance(name, str):
        raise TypeError(f"emit_span() needs the span name as a str, got {name!r}")
    if tracer is not None and not isinstance(tracer, Tracer):
        raise TypeError(
            f"emit_span(tracer=...) must be an OpenTelemetry Tracer or None (nemo.lens's "
            f"tracer), got {type(tracer).__name__}"
        )
    if context is not None and not isinstance(context, Context):
        raise TypeError(
            f"emit_span(context=...) must be an OpenTelemetry Context or None (the current "
            f"one), got {type(context).__name__}"
        )
    if attributes is not None and not isinstance(attributes, Mapping):
        raise TypeError(
            f"emit_span(attributes=...) must be a mapping of str to values, got "
            f"{type(attributes).__name__}"
        )
    start, start_ns = _time(start_epoch_seconds, "start_epoch_seconds")
    end, end_ns = _time(end_epoch_seconds, "end_epoch_seconds")

    given: Mapping[str, object] | None = attributes
    if end_ns < start_ns:
        _log_skew_once(name, start, end)
        given = {
            **(attributes or {}),
            semconv.INVERTED_SKEW: True,
            semconv.INVERTED_START_EPOCH_SECONDS: float(start),
            semconv.INVERTED_END_EPOCH_SECONDS: float(end),
            semconv.INVERTED_DELTA_SECONDS: float(end - start),
        }
        end_ns = start_ns
    span = start_span(
        tracer, name, SpanKind.INTERNAL, None, given, group, context=context, start_time=start_ns
    )
    span.end(end_time=end_ns)
    return span
