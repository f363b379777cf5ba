"""The API side of nemo.lens: everything an instrumented process runs before, or without, set-up.

Only ``opentelemetry-api`` is imported here, never the SDK:

- :mod:`~nemo.lens._core.state` -- all process state: the enabled span groups and
  their tags, the tracer the primitives use, the current handle;
- :mod:`~nemo.lens._core.redaction` -- attribute cleaning and redaction;
- :mod:`~nemo.lens._core.spans` -- the one gate every group-gated span goes through
  (the primitives, contrib helpers, linked spans) and the span scopes;
- :mod:`~nemo.lens._core.current` -- making a span current and detaching it, the
  short way;
- :mod:`~nemo.lens._core.trace_fn` -- the tracing decorator;
- :mod:`~nemo.lens._core.hub` and :mod:`~nemo.lens._core.delegates` -- the global
  providers that forward to whatever set-up installed last;
- :mod:`~nemo.lens._core.fork` -- the one fork hook of the package;
- :mod:`~nemo.lens._core.carrier` -- trace-context carriers cleaned before use;
- :mod:`~nemo.lens._core.ids` and :mod:`~nemo.lens._core.destinations` -- span,
  trace and run ids, and the exporter names the configuration checks.

The public modules (:mod:`nemo.lens.helpers`, :mod:`nemo.lens.state`, ...) re-export
from here; what needs the SDK lives in :mod:`nemo.lens._sdk`, imported only when
set-up enables telemetry.
"""
