"""Process-wide providers that forward to whatever nemo.lens installed last.

OpenTelemetry lets a process set its global tracer, meter and logger provider
once; later ``set_*_provider`` calls are ignored with a warning. Installing the
SDK providers themselves would therefore make ``setup_telemetry(...,
_allow_reinit=True)`` and test resets impossible: the first, shut-down
provider would stay global for good. Instead nemo.lens claims each global once
with one of the hubs below and swaps what the hub forwards to. Tracers, meters,
instruments and loggers handed out by a hub are rebound on every swap, so code
that cached ``trace.get_tracer(...)`` at import time follows re-initialisation.

After ``shutdown`` a hub forwards to the no-op provider. The claim on the
global itself is permanent for the life of the process (OpenTelemetry offers no
way to give it back); :func:`restore_otel_globals_for_testing` undoes it by
resetting OpenTelemetry's private set-once guards, as OpenTelemetry's own test
suite does, and is for tests only.

When the application already set a global provider of its own, nemo.lens leaves
it alone: the claim fails, a warning is logged, and nemo.lens's spans go to its
own provider through ``TelemetryHandle.tracer`` and the helpers' default tracer.

Only the OpenTelemetry API is used here, never the SDK.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from opentelemetry import _logs as otel_logs
from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.metrics import CallbackT
from opentelemetry.metrics import _Gauge as Gauge  # still underscored (experimental) in the API
from opentelemetry.util.types import Attributes

if TYPE_CHECKING:
    from opentelemetry.util._decorator import _AgnosticContextManager

__all__ = [
    "LOGGER_HUB",
    "METER_HUB",
    "TRACER_HUB",
    "LoggerHub",
    "MeterHub",
    "TracerHub",
    "publish",
    "restore_otel_globals_for_testing",
    "unpublish",
]

_logger = logging.getLogger(__name__)


def _scope_key(
    name: str, version: str | None, schema_url: str | None, attributes: Attributes
) -> Hashable | None:
    """Cache key for one instrumentation scope; ``None`` when attributes are unhashable."""
    try:
        frozen = tuple(sorted(attributes.items())) if attributes else ()
        hash(frozen)
    except TypeError:
        return None
    return (name, version, schema_url, frozen)


_P = TypeVar("_P")
_P_contra = TypeVar("_P_contra", contravariant=True)
_B = TypeVar("_B", bound="_Bindable[Any]")


class _Bindable(Protocol[_P_contra]):
    def _bind(self, provider: _P_contra) -> None: ...


class _Registry(Generic[_P, _B]):
    """The delegating objects a hub handed out, one per scope, rebound at every swap.

    Shared by the three hubs: they differ only in what they hand out.
    """

    def __init__(self, noop: _P) -> None:
        self._lock = threading.Lock()
        self._noop = noop
        self.delegate: _P = noop
        self._by_scope: dict[Hashable, _B] = {}
        # Scopes with unhashable attributes cannot be cached, but must still follow swaps.
        self._uncached: list[_B] = []

    def get(self, key: Hashable | None, make: Callable[[], _B]) -> _B:
        with self._lock:
            if key is not None and key in self._by_scope:
                return self._by_scope[key]
            made = make()
            made._bind(self.delegate)
            if key is None:
                self._uncached.append(made)
            else:
                self._by_scope[key] = made
            return made

    def swap(self, provider: _P | None) -> None:
        with self._lock:
            self.delegate = provider if provider is not None else self._noop
            for made in [*self._by_scope.values(), *self._uncached]:
                made._bind(self.delegate)


# -- traces ----------------------------------------------------------------------------


class _DelegatingTracer(trace.Tracer):
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


class TracerHub(trace.TracerProvider):
    """A tracer provider that forwards to a replaceable delegate (no-op by default)."""

    def __init__(self) -> None:
        self._registry: _Registry[trace.TracerProvider, _DelegatingTracer] = _Registry(
            trace.NoOpTracerProvider()
        )

    @property
    def delegate(self) -> trace.TracerProvider:
        """The provider tracers currently forward to."""
        return self._registry.delegate

    def get_tracer(
        self,
        instrumenting_module_name: str,
        instrumenting_library_version: str | None = None,
        schema_url: str | None = None,
        attributes: Attributes = None,
    ) -> trace.Tracer:
        """Return a tracer that follows every later change of delegate."""
        scope = (instrumenting_module_name, instrumenting_library_version, schema_url, attributes)
        return self._registry.get(_scope_key(*scope), lambda: _DelegatingTracer(*scope))

    def set_delegate(self, provider: trace.TracerProvider | None) -> None:
        """Forward to *provider* from now on (``None``: the no-op provider)."""
        self._registry.swap(provider)


# -- metrics ---------------------------------------------------------------------------

_T = TypeVar("_T")


class _Rebinding(Generic[_T]):
    """Holds the real instrument and how to recreate it on another meter."""

    def __init__(self, create: Callable[[metrics.Meter], _T], meter: metrics.Meter) -> None:
        self._create = create
        self._real = create(meter)

    def _bind(self, meter: metrics.Meter) -> None:
        self._real = self._create(meter)


_I = TypeVar("_I", bound=_Rebinding[Any])


class _Counter(_Rebinding[metrics.Counter], metrics.Counter):
    def add(
        self,
        amount: int | float,
        attributes: Attributes = None,
        context: Context | None = None,
    ) -> None:
        self._real.add(amount, attributes, context)


class _UpDownCounter(_Rebinding[metrics.UpDownCounter], metrics.UpDownCounter):
    def add(
        self,
        amount: int | float,
        attributes: Attributes = None,
        context: Context | None = None,
    ) -> None:
        self._real.add(amount, attributes, context)


class _Histogram(_Rebinding[metrics.Histogram], metrics.Histogram):
    def record(
        self,
        amount: int | float,
        attributes: Attributes = None,
        context: Context | None = None,
    ) -> None:
        self._real.record(amount, attributes, context)


class _Gauge(_Rebinding[Gauge], Gauge):
    def set(
        self,
        amount: int | float,
        attributes: Attributes = None,
        context: Context | None = None,
    ) -> None:
        self._real.set(amount, attributes, context)


class _ObservableCounter(_Rebinding[metrics.ObservableCounter], metrics.ObservableCounter):
    pass


class _ObservableUpDownCounter(
    _Rebinding[metrics.ObservableUpDownCounter], metrics.ObservableUpDownCounter
):
    pass


class _ObservableGauge(_Rebinding[metrics.ObservableGauge], metrics.ObservableGauge):
    pass


class _DelegatingMeter(metrics.Meter):
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


class MeterHub(metrics.MeterProvider):
    """A meter provider that forwards to a replaceable delegate (no-op by default).

    Instruments created through it are recreated on the new delegate at every
    swap, observable ones with their callbacks, so nothing has to be recreated
    by the application.
    """

    def __init__(self) -> None:
        self._registry: _Registry[metrics.MeterProvider, _DelegatingMeter] = _Registry(
            metrics.NoOpMeterProvider()
        )

    @property
    def delegate(self) -> metrics.MeterProvider:
        """The provider meters currently forward to."""
        return self._registry.delegate

    def get_meter(
        self,
        name: str,
        version: str | None = None,
        schema_url: str | None = None,
        attributes: Attributes = None,
    ) -> metrics.Meter:
        """Return a meter that follows every later change of delegate."""
        scope = (name, version, schema_url, attributes)
        return self._registry.get(_scope_key(*scope), lambda: _DelegatingMeter(*scope))

    def set_delegate(self, provider: metrics.MeterProvider | None) -> None:
        """Forward to *provider* from now on (``None``: the no-op provider)."""
        self._registry.swap(provider)


# -- logs ------------------------------------------------------------------------------


class _DelegatingLogger(otel_logs.Logger):
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


class LoggerHub(otel_logs.LoggerProvider):
    """A logger provider that forwards to a replaceable delegate (no-op by default)."""

    def __init__(self) -> None:
        self._registry: _Registry[otel_logs.LoggerProvider, _DelegatingLogger] = _Registry(
            otel_logs.NoOpLoggerProvider()
        )

    @property
    def delegate(self) -> otel_logs.LoggerProvider:
        """The provider loggers currently forward to."""
        return self._registry.delegate

    def get_logger(
        self,
        name: str,
        version: str | None = None,
        schema_url: str | None = None,
        attributes: Attributes = None,
    ) -> otel_logs.Logger:
        """Return a logger that follows every later change of delegate."""
        scope = (name, version, schema_url, attributes)
        return self._registry.get(_scope_key(*scope), lambda: _DelegatingLogger(*scope))

    def set_delegate(self, provider: otel_logs.LoggerProvider | None) -> None:
        """Forward to *provider* from now on (``None``: the no-op provider)."""
        self._registry.swap(provider)


TRACER_HUB = TracerHub()
"""The tracer provider nemo.lens installs as OpenTelemetry's global."""
METER_HUB = MeterHub()
"""The meter provider nemo.lens installs as OpenTelemetry's global."""
LOGGER_HUB = LoggerHub()
"""The logger provider nemo.lens installs as OpenTelemetry's global."""

_CLAIM_LOCK = threading.Lock()


def _claim(
    signal: str,
    hub: object,
    get: Callable[[], object],
    set_global: Callable[[Any], None],
) -> bool:
    with _CLAIM_LOCK:
        if get() is hub:
            return True
        set_global(hub)  # ignored, with OpenTelemetry's own warning, when already set
        if get() is hub:
            return True
    _logger.warning(
        "nemo.lens: the process already has a global %s provider of its own (%r); it is "
        "left in place. nemo.lens spans and metrics use nemo.lens's provider through the "
        "handle and the helpers, but other instrumentation keeps using the existing one.",
        signal,
        get(),
    )
    return False


def publish(
    tracer_provider: trace.TracerProvider | None,
    meter_provider: metrics.MeterProvider | None,
    logger_provider: otel_logs.LoggerProvider | None,
) -> dict[str, bool]:
    """Make the given providers the process's global ones.

    Each hub's delegate is replaced (``None`` resets it to no-op), and each
    non-``None`` signal claims OpenTelemetry's global if nobody has yet. Returns
    ``{signal: claimed}`` for the signals that were given.
    """
    TRACER_HUB.set_delegate(tracer_provider)
    METER_HUB.set_delegate(meter_provider)
    LOGGER_HUB.set_delegate(logger_provider)
    claimed: dict[str, bool] = {}
    if tracer_provider is not None:
        claimed["tracer"] = _claim(
            "tracer", TRACER_HUB, trace.get_tracer_provider, trace.set_tracer_provider
        )
    if meter_provider is not None:
        claimed["meter"] = _claim(
            "meter", METER_HUB, metrics.get_meter_provider, metrics.set_meter_provider
        )
    if logger_provider is not None:
        claimed["logger"] = _claim(
            "logger", LOGGER_HUB, otel_logs.get_logger_provider, otel_logs.set_logger_provider
        )
    return claimed


def unpublish() -> None:
    """Point every hub back at the no-op providers (the globals stay claimed)."""
    TRACER_HUB.set_delegate(None)
    METER_HUB.set_delegate(None)
    LOGGER_HUB.set_delegate(None)


def restore_otel_globals_for_testing() -> None:
    """Release OpenTelemetry's globals that nemo.lens claimed (tests only).

    Resets OpenTelemetry's private set-once guards, but only for globals that
    hold one of our hubs: a provider the test itself installed is not ours to
    remove. Tolerates API versions where those private names differ.
    """
    unpublish()
    from opentelemetry.util._once import Once

    try:
        if trace._TRACER_PROVIDER is TRACER_HUB:
            trace._TRACER_PROVIDER = None
            trace._TRACER_PROVIDER_SET_ONCE = Once()
    except AttributeError:  # pragma: no cover - other API versions
        pass
    try:
        from opentelemetry.metrics import _internal as metrics_internal

        if metrics_internal._METER_PROVIDER is METER_HUB:
            metrics_internal._METER_PROVIDER = None
            metrics_internal._METER_PROVIDER_SET_ONCE = Once()
    except (ImportError, AttributeError):  # pragma: no cover - other API versions
        pass
    try:
        from opentelemetry._logs import _internal as logs_internal

        if logs_internal._LOGGER_PROVIDER is LOGGER_HUB:
            logs_internal._LOGGER_PROVIDER = None
            logs_internal._LOGGER_PROVIDER_SET_ONCE = Once()
    except (ImportError, AttributeError):  # pragma: no cover - other API versions
        pass
