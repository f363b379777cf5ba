"""The SDK side of nemo.lens: imported only when set-up enables telemetry.

Everything that imports ``opentelemetry-sdk`` lives here, so ``import nemo.lens``,
the primitives and a disabled set-up never load it:

- :mod:`~nemo.lens._sdk.pipeline` -- building and running the providers set-up
  installs (resource, sampler, processors, exporters) and their shutdown;
- :mod:`~nemo.lens._sdk.processors` -- the span, metric and log processors, and
  the open-span tracker that marks spans still open at shutdown;
- :mod:`~nemo.lens._sdk.recording` -- nemo.lens's tracer provider, and the light
  spans its primitives record while the pipeline is nemo.lens's own;
- :mod:`~nemo.lens._sdk.batching` -- nemo.lens's batching span processor;
- :mod:`~nemo.lens._sdk.exporters` -- the exporters and the wrappers every exporter
  goes through.
"""
