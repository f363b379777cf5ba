"""What the hubs hand out: tracers, meters (with their instruments) and loggers that forward.

Each is made for one instrumentation scope and bound to a provider; at every swap
of the hub's delegate it is rebound (:meth:`_bind`), so code that cached a
tracer, a meter or an instrument at import time follows re-initialisation.
Meters recreate their instruments on the new provider, observable ones with
their callbacks. Only the OpenTelemetry API is used.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from opentelemetry import _logs as otel_logs
from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.metrics import CallbackT
from opentelemetry.metrics import _Gauge as Gauge  # still underscored (experimental) in the API
from opentelemetry.util.types import Attributes

if TYPE_CHECKING:
    from opentelemetry.util._decorator import _AgnosticContextManager

__all__ = ["DelegatingLogger", "DelegatingMeter", "DelegatingTracer"]


class DelegatingTracer(trace.Tracer):
    def __init__(
        self, name: str, version: str | None, schema_url: str | None, attributes: Attributes
    ) -> None:
        self._scope = (name, version, schema_url, attributes)
        self._real: trace.Tracer = trace.NoOpTracer()

    def _bind(self, provider: trace.TracerProvider) -> None:
        name, version, schema_url, attributes = self._scope
        self._real = provider.get_tracer(name, version, schema_url, attributes)

    def start_span(
        self,
        name: str,
        context: Context | None = None,
        kind: trace.SpanKind = trace.SpanKind.INTERNAL,
        attributes: Attributes = None,
        links: Sequence[trace.Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
    ) -> trace.Span:
        return self._real.start_span(
            name,
            context,
            kind,
            attributes,
            links,
            start_time,
            record_exception,
            set_status_on_exception,
        )

    def start_as_current_span(
        self,
        name: str,
        context: Context | None = None,
        kind: trace.SpanKind = trace.SpanKind.INTERNAL,
        attributes: Attributes = None,
        links: Sequence[trace.Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
        end_on_exit: bool = True,
    ) -> _AgnosticContextManager[trace.Span]:
        # Returning the real tracer's context manager (rather than wrapping it
        # in a generator of our own) keeps its decorator and async support.
        return self._real.start_as_current_span(
            name,
            context,
            kind,
            attributes,
            links,
            start_time,
            record_exception,
            set_status_on_exception,
            end_on_exit,
        )


_T = TypeVar("_T")


class _Rebinding(Generic[_T]):
    """Holds the real instrument and how to recreate it on another meter."""

    def __init__(self, create: Callable[[metrics.Meter], _T], meter: metrics.Meter) -> None:
        self._create = create
        self._bind(meter)

    def _bind(self, meter: metrics.Meter) -> None:
        self._real: _T = self._create(meter)


_I = TypeVar("_I", bound=_Rebinding[Any])


class _Synchronous(_Rebinding[_T]):
    """An instrument with one recording method (``add``, ``record`` or ``set``): each
    subclass names it after its API and forwards it to the real instrument's."""

    _verb: str
    _forward_to: Callable[[int | float, Attributes, Context | None], None]

    def _bind(self, meter: metrics.Meter) -> None:
        super()._bind(meter)
        self._forward_to = getattr(self._real, self._verb)

    def _forward(
        self,
        amount: int | float,
        attributes: Attributes = None,
        context: Context | None = None,
    ) -> None:
        self._forward_to(amount, attributes, context)


class _Counter(_Synchronous[metrics.Counter], metrics.Counter):
    _verb = "add"
    add = _Synchronous._forward


class _UpDownCounter(_Synchronous[metrics.UpDownCounter], metrics.UpDownCounter):
    _verb = "add"
    add = _Synchronous._forward


class _Histogram(_Synchronous[metrics.Histogram], metrics.Histogram):
    _verb = "record"
    record = _Synchronous._forward


class _Gauge(_Synchronous[Gauge], Gauge):
    _verb = "set"
    set = _Synchronous._forward


class _ObservableCounter(_Rebinding[metrics.ObservableCounter], metrics.ObservableCounter):
    pass


class _ObservableUpDownCounter(
    _Rebinding[metrics.ObservableUpDownCounter], metrics.ObservableUpDownCounter
):
    pass


class _ObservableGauge(_Rebinding[metrics.ObservableGauge], metrics.ObservableGauge):
    pass


class DelegatingMeter(metrics.Meter):
    def __init__(
        self, name: str, version: str | None, schema_url: str | None, attributes: Attributes
    ) -> None:
        super().__init__(name, version, schema_url)
        self._attributes = attributes
        self._lock = threading.Lock()
        self._real: metrics.Meter = metrics.NoOpMeter(name, version, schema_url)
        self._instruments: list[_Rebinding[Any]] = []

    def _bind(self, provider: metrics.MeterProvider) -> None:
        real = provider.get_meter(self._name, self._version, self._schema_url, self._attributes)
        with self._lock:
            self._real = real
            for instrument in self._instruments:
                instrument._bind(real)

    def _add(self, kind: type[_I], create: Callable[[metrics.Meter], Any]) -> _I:
        # Under the lock so that a concurrent swap cannot leave the new
        # instrument bound to the previous delegate.
        with self._lock:
            found = kind(create, self._real)
            self._instruments.append(found)
            return found

    def create_counter(self, name: str, unit: str = "", description: str = "") -> metrics.Counter:
        return self._add(_Counter, lambda m: m.create_counter(name, unit, description))

    def create_up_down_counter(
        self, name: str, unit: str = "", description: str = ""
    ) -> metrics.UpDownCounter:
        return self._add(
            _UpDownCounter, lambda m: m.create_up_down_counter(name, unit, description)
        )

    def create_histogram(
        self,
        name: str,
        unit: str = "",
        description: str = "",
        *,
        explicit_bucket_boundaries_advisory: Sequence[float] | None = None,
    ) -> metrics.Histogram:
        return self._add(
            _Histogram,
            lambda m: m.create_histogram(
                name,
                unit,
                description,
                explicit_bucket_boundaries_advisory=explicit_bucket_boundaries_advisory,
            ),
        )

    def create_gauge(self, name: str, unit: str = "", description: str = "") -> Gauge:
        return self._add(_Gauge, lambda m: m.create_gauge(name, unit, description))

    def create_observable_counter(
        self,
        name: str,
        callbacks: Sequence[CallbackT] | None = None,
        unit: str = "",
        description: str = "",
    ) -> metrics.ObservableCounter:
        return self._add(
            _ObservableCounter,
            lambda m: m.create_observable_counter(name, callbacks, unit, description),
        )

    def create_observable_up_down_counter(
        self,
        name: str,
        callbacks: Sequence[CallbackT] | None = None,
        unit: str = "",
        description: str = "",
    ) -> metrics.ObservableUpDownCounter:
        return self._add(
            _ObservableUpDownCounter,
            lambda m: m.create_observable_up_down_counter(name, callbacks, unit, description),
        )

    def create_observable_gauge(
        self,
        name: str,
        callbacks: Sequence[CallbackT] | None = None,
        unit: str = "",
        description: str = "",
    ) -> metrics.ObservableGauge:
        return self._add(
            _ObservableGauge,
            lambda m: m.create_observable_gauge(name, callbacks, unit, description),
        )


class DelegatingLogger(otel_logs.Logger):
    def __init__(
        self, name: str, version: str | None, schema_url: str | None, attributes: Attributes
    ) -> None:
        super().__init__(name, version, schema_url, attributes)
        self._real: otel_logs.Logger = otel_logs.NoOpLogger(name)

    def _bind(self, provider: otel_logs.LoggerProvider) -> None:
        self._real = provider.get_logger(
            self._name, self._version, self._schema_url, self._attributes
        )

    def emit(self, record: otel_logs.LogRecord | None = None, **kwargs: Any) -> None:
        # Keyword forms differ between API versions; forward whatever was given.
        if record is not None:
            self._real.emit(record)
        else:
            self._real.emit(**kwargs)

    def enabled(self, **kwargs: Any) -> bool:
        return bool(self._real.enabled(**kwargs))
