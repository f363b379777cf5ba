"""Tests written as a user of nemo-lens 0.1.0 would call it, switching to this release."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

_ENV_PREFIXES = (
    "NEMO_LENS_",
    "OTEL_",
    "SLURM_",
    "LOCAL_RANK",
    "TORCHELASTIC_",
    "KUBERNETES_",
    "POD_NAMESPACE",
    "CUDA_VISIBLE_DEVICES",
    "WANDB_",
)


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No launcher or nemo.lens variable of the machine running the tests leaks in."""
    for key in list(os.environ):
        if key.startswith(_ENV_PREFIXES):
            monkeypatch.delenv(key)
    yield
