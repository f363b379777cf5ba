"""The API side of nemo.lens: what an instrumented process runs before, or without, set-up.

Only ``opentelemetry-api`` is imported here; the SDK side (:mod:`nemo.lens._sdk`) is
imported only when set-up enables telemetry, and this package never imports it.
"""
