"""What the runtime tests share: a test that sets up telemetry starts from an environment
without the job's variables, and with OpenTelemetry's global providers unset."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.metrics import _internal as metrics_internal
from opentelemetry.util._once import Once

from nemo.lens import testing
from nemo.lens.resources import detect

JOB_ENV_PREFIXES = (
    "NEMO_LENS_",
    "OTEL_",
    "SLURM_",
    "TORCHELASTIC_",
    "LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "MPI_LOCALRANKID",
    "KUBERNETES_",
    "POD_NAMESPACE",
    "K8S_",
    "DEPLOYMENT_ENV",
    "ENVIRONMENT",
    "CUDA_VISIBLE_DEVICES",
    "WANDB_",
)
"""Variables a launcher, a cluster or the user's shell may set that set-up reads."""


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No variable of :data:`JOB_ENV_PREFIXES` (monkeypatch restores them), no Kubernetes
    secrets directory, and nemo.lens's state reset without them."""
    for key in list(os.environ):
        if key.startswith(JOB_ENV_PREFIXES):
            monkeypatch.delenv(key)
    # A machine that runs the tests in a Kubernetes pod has the mounted secrets too.
    monkeypatch.setattr(detect, "K8S_SECRETS_DIR", "/nonexistent/kubernetes.io")
    testing.reset()
    yield
    testing.reset()


@pytest.fixture
def unset_providers(monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenTelemetry's global tracer and meter providers unset, so that the one a test
    installs does not leak into the next (monkeypatch puts the earlier ones back)."""
    monkeypatch.setattr(trace, "_TRACER_PROVIDER_SET_ONCE", Once())
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
    monkeypatch.setattr(metrics_internal, "_METER_PROVIDER_SET_ONCE", Once())
    monkeypatch.setattr(metrics_internal, "_METER_PROVIDER", None)
