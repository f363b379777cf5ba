"""Process-wide providers that forward to whatever nemo.lens installed last.

OpenTelemetry lets a process set its global tracer, meter and logger provider
once; later ``set_*_provider`` calls are ignored with a warning. Installing the
SDK providers themselves would therefore make ``setup_telemetry(...,
_allow_reinit=True)`` and test resets impossible: the first, shut-down
provider would stay global for good. Instead nemo.lens claims each global once
with one of the hubs below and swaps what the hub forwards to. What a hub hands
out (:mod:`nemo.lens._core.delegates`) is rebound on every swap, so code that
cached ``trace.get_tracer(...)`` at import time follows re-initialisation.

After ``shutdown`` a hub forwards to the no-op provider. The claim on the
global itself is permanent for the life of the process (OpenTelemetry offers no
way to give it back); :func:`restore_otel_globals_for_testing` undoes it by
resetting OpenTelemetry's private set-once guards, as OpenTelemetry's own test
suite does, and is for tests only.

When the application already set a global provider of its own, nemo.lens leaves
it alone: the claim fails, a warning is logged, and nemo.lens's spans go to its
own provider through ``TelemetryHandle.tracer`` and the helpers' default tracer.

Set-up claims the tracer and meter globals with SDK providers that forward to these
hubs (``nemo.lens._sdk.global_providers``: the SDK side plugs them in, as
:func:`publish`'s *tracer_global* and *meter_global*), so that OpenTelemetry's globals are
SDK providers, as other tools expect; the logger global is the hub itself.

Only the OpenTelemetry API is used here, never the SDK.
"""

from __future__ import annotations

import abc
import importlib
import logging
import threading
from collections.abc import Callable, Hashable
from typing import Any, Generic, Protocol, TypeVar

from opentelemetry import _logs as otel_logs
from opentelemetry import metrics, trace
from opentelemetry.util.types import Attributes

from nemo.lens._core.delegates import DelegatingLogger, DelegatingMeter, DelegatingTracer

__all__ = [
    "LOGGER_HUB",
    "METER_HUB",
    "TRACER_HUB",
    "Hub",
    "LoggerHub",
    "MeterHub",
    "TracerHub",
    "TracerSource",
    "publish",
    "restore_otel_globals_for_testing",
    "unpublish",
]

# The logger keeps the name users configure it by (this code's module before it moved).
_logger = logging.getLogger("nemo.lens._delegating")

_P = TypeVar("_P")
_P_contra = TypeVar("_P_contra", contravariant=True)
_B = TypeVar("_B", bound="_Bindable[Any]")

Scope = tuple[str, "str | None", "str | None", Attributes]
"""An instrumentation scope: name, version, schema URL, attributes."""


class _Bindable(Protocol[_P_contra]):
    def _bind(self, provider: _P_contra) -> None: ...


def _scope_key(scope: Scope) -> Hashable | None:
    """Cache key for one instrumentation scope; ``None`` when attributes are unhashable."""
    name, version, schema_url, attributes = scope
    try:
        frozen = tuple(sorted(attributes.items())) if attributes else ()
        hash(frozen)
    except TypeError:
        return None
    return (name, version, schema_url, frozen)


class Hub(Generic[_P, _B]):
    """The part of a hub every signal shares: a replaceable delegate, and one object per
    scope handed out and rebound to the delegate at every swap.

    The three hubs below add only the provider method of their signal.
    """

    def __init__(self, noop: _P, make: Callable[[str, str | None, str | None, Attributes], _B]):
        self._lock = threading.Lock()
        self._noop = noop
        self._make = make
        self._delegate: _P = noop
        self._by_scope: dict[Hashable, _B] = {}
        # Scopes with unhashable attributes cannot be cached, but must still follow swaps.
        self._uncached: list[_B] = []

    @property
    def delegate(self) -> _P:
        """The provider what this hub hands out currently forwards to."""
        return self._delegate

    def set_delegate(self, provider: _P | None) -> None:
        """Forward to *provider* from now on (``None``: the no-op provider)."""
        with self._lock:
            self._delegate = provider if provider is not None else self._noop
            for made in [*self._by_scope.values(), *self._uncached]:
                made._bind(self._delegate)

    def _hand_out(self, scope: Scope) -> _B:
        key = _scope_key(scope)
        with self._lock:
            if key is not None and key in self._by_scope:
                return self._by_scope[key]
            made = self._make(*scope)
            made._bind(self._delegate)
            if key is None:
                self._uncached.append(made)
            else:
                self._by_scope[key] = made
            return made

    def _get(
        self,
        name: str,
        version: str | None = None,
        schema_url: str | None = None,
        attributes: Attributes = None,
    ) -> _B:
        """Return what follows every later change of delegate, for this scope."""
        return self._hand_out((name, version, schema_url, attributes))


class TracerSource(trace.TracerProvider):
    """A tracer provider defined by the tracer it makes for one scope: the hub's, and
    contrib's gated provider (:class:`~nemo.lens.contrib.GatedTracerProvider`)."""

    def get_tracer(
        self,
        instrumenting_module_name: str,
        instrumenting_library_version: str | None = None,
        schema_url: str | None = None,
        attributes: Attributes = None,
    ) -> trace.Tracer:
        """Return the tracer for this instrumentation scope."""
        # The API's own parameter names, which callers may pass as keywords.
        return self._tracer_for(
            (instrumenting_module_name, instrumenting_library_version, schema_url, attributes)
        )

    @abc.abstractmethod
    def _tracer_for(self, scope: Scope) -> trace.Tracer:
        """The tracer for *scope*."""


class TracerHub(Hub[trace.TracerProvider, DelegatingTracer], TracerSource):
    """A tracer provider that forwards to a replaceable delegate (no-op by default);
    its tracers follow every later change of delegate."""

    _tracer_for = Hub._hand_out


class MeterHub(Hub[metrics.MeterProvider, DelegatingMeter], metrics.MeterProvider):
    """A meter provider that forwards to a replaceable delegate (no-op by default)."""

    get_meter = Hub._get


class LoggerHub(Hub[otel_logs.LoggerProvider, DelegatingLogger], otel_logs.LoggerProvider):
    """A logger provider that forwards to a replaceable delegate (no-op by default)."""

    get_logger = Hub._get


TRACER_HUB = TracerHub(trace.NoOpTracerProvider(), DelegatingTracer)
"""The tracer provider nemo.lens installs as OpenTelemetry's global."""
METER_HUB = MeterHub(metrics.NoOpMeterProvider(), DelegatingMeter)
"""The meter provider nemo.lens installs as OpenTelemetry's global."""
LOGGER_HUB = LoggerHub(otel_logs.NoOpLoggerProvider(), DelegatingLogger)
"""The logger provider nemo.lens installs as OpenTelemetry's global."""

_CLAIM_LOCK = threading.Lock()

# What nemo.lens installed as OpenTelemetry's globals (by id): only these are its to
# release in restore_otel_globals_for_testing.
_claimed: set[int] = set()


def _claim(
    signal: str,
    claimant: object,
    get: Callable[[], object],
    set_global: Callable[[Any], None],
) -> bool:
    with _CLAIM_LOCK:
        if get() is claimant:
            return True
        set_global(claimant)  # ignored, with OpenTelemetry's own warning, when already set
        if get() is claimant:
            _claimed.add(id(claimant))
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
    *,
    tracer_global: trace.TracerProvider | None = None,
    meter_global: metrics.MeterProvider | None = None,
) -> dict[str, bool]:
    """Make the given providers the process's global ones.

    Each hub's delegate is replaced (``None`` resets it to no-op), and each
    non-``None`` signal claims OpenTelemetry's global if nobody has yet: with
    *tracer_global* / *meter_global* when given (a provider that forwards to the hub),
    else with the hub itself. Returns ``{signal: claimed}`` for the signals that were
    given.
    """
    TRACER_HUB.set_delegate(tracer_provider)
    METER_HUB.set_delegate(meter_provider)
    LOGGER_HUB.set_delegate(logger_provider)
    claimed: dict[str, bool] = {}
    if tracer_provider is not None:
        claimed["tracer"] = _claim(
            "tracer",
            TRACER_HUB if tracer_global is None else tracer_global,
            trace.get_tracer_provider,
            trace.set_tracer_provider,
        )
    if meter_provider is not None:
        claimed["meter"] = _claim(
            "meter",
            METER_HUB if meter_global is None else meter_global,
            metrics.get_meter_provider,
            metrics.set_meter_provider,
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

    for module_name, slot in (
        ("opentelemetry.trace", "_TRACER_PROVIDER"),
        ("opentelemetry.metrics._internal", "_METER_PROVIDER"),
        ("opentelemetry._logs._internal", "_LOGGER_PROVIDER"),
    ):
        try:
            module = importlib.import_module(module_name)
            current = getattr(module, slot)
            if current is not None and id(current) in _claimed:
                setattr(module, slot, None)
                setattr(module, f"{slot}_SET_ONCE", Once())
        except (ImportError, AttributeError):  # pragma: no cover - other API versions
            pass
