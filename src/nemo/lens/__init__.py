"""nemo.lens: OpenTelemetry instrumentation for distributed training, RL and inference jobs."""

__version__ = "0.2.0"
