"""Integrations with frameworks nemo.lens does not depend on.

Each module is imported on its own (``from nemo.lens.contrib.fastapi import
instrument_fastapi``). Importing any of them needs nothing beyond nemo.lens:
the framework and its OpenTelemetry instrumentation are imported when a helper
is called, and a missing one raises :class:`MissingExtraError` (an
``ImportError``) that names the ``pip install`` command.

=====================================  =============================================  ============
module                                 what it does                                   extra
=====================================  =============================================  ============
:mod:`nemo.lens.contrib.fastapi`       server spans for a FastAPI app                 ``fastapi``
:mod:`nemo.lens.contrib.aiohttp`       client spans and ``traceparent`` on requests    ``aiohttp``
:mod:`nemo.lens.contrib.ray`           carry the trace into Ray tasks and actors      none
:mod:`nemo.lens.contrib.nccl`          trace context as bytes or a uint8 tensor       ``torch``
=====================================  =============================================  ============

The HTTP helpers default to nemo.lens's own providers, which follow
``setup_telemetry`` (and its re-initialisation and shutdown), so an app can be
instrumented before telemetry is set up. ``group=`` ties their spans to a span
group: while it is disabled no span is made, but the caller's trace context
still passes through, so spans further down continue the caller's trace.
"""

from __future__ import annotations

from nemo.lens.contrib._extras import MissingExtraError

__all__ = ["MissingExtraError"]
