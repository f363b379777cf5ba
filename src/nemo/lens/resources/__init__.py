"""The OpenTelemetry resource describing one rank of a job.

Attribute names are constants in :mod:`nemo.lens.semconv` (the resource subset is
re-exported as :mod:`nemo.lens.resources.attributes`).
Every key upstream nemo-lens 0.2.0 sends is sent, with its type (``dl.rank``,
``nemo.run.id``, ``host.gpu.count``, the SLURM keys as strings, ...), and
nemo.lens's own keys beside them (``nemo.rank``, ``nemo.run_id``, ...).
Precedence, lowest to highest: detected (host, process, GPUs, SLURM,
Kubernetes, deployment environment) < ``OTEL_RESOURCE_ATTRIBUTES`` <
configuration fields < the caller's ``resource_attributes`` (upstream let
detection overwrite the caller's; here the caller wins); see
:mod:`nemo.lens.resources.build`.

0.1.0's detectors are here too: :func:`detect_resource` and the modules
:mod:`~nemo.lens.resources.local`, :mod:`~nemo.lens.resources.slurm` and
:mod:`~nemo.lens.resources.kubernetes`, each returning a plain ``dict`` (empty
where nothing is detected) that holds upstream's keys from upstream's variables.

Importing this package does not import the OpenTelemetry SDK; only
:func:`build_resource` and :func:`otel_env_attributes` do, when called.
"""

from __future__ import annotations

from opentelemetry.util.types import AttributeValue

from nemo.lens.resources import attributes, kubernetes, local, slurm
from nemo.lens.resources.build import (
    build_resource,
    config_attributes,
    merged_attributes,
    otel_env_attributes,
    package_version,
)
from nemo.lens.resources.detect import (
    DEPLOYMENT_ENVIRONMENT_VARIABLES,
    K8S_NAMESPACE_FILE,
    K8S_SECRETS_DIR,
    NVIDIA_SMI_TIMEOUT_S,
    detect_attributes,
    nvidia_smi_gpu_count,
    visible_gpu_count,
)
from nemo.lens.resources.kubernetes import detect_kubernetes
from nemo.lens.resources.local import detect_local
from nemo.lens.resources.slurm import detect_slurm

__all__ = [
    "DEPLOYMENT_ENVIRONMENT_VARIABLES",
    "K8S_NAMESPACE_FILE",
    "K8S_SECRETS_DIR",
    "NVIDIA_SMI_TIMEOUT_S",
    "attributes",
    "build_resource",
    "config_attributes",
    "detect_attributes",
    "detect_kubernetes",
    "detect_local",
    "detect_resource",
    "detect_slurm",
    "kubernetes",
    "local",
    "merged_attributes",
    "nvidia_smi_gpu_count",
    "otel_env_attributes",
    "package_version",
    "slurm",
    "visible_gpu_count",
]


def detect_resource() -> dict[str, AttributeValue]:
    """Every detector's attributes merged (0.1.0): local, then SLURM, then Kubernetes.

    A plain ``dict``. Set-up records more than this (rank, run id, service, the
    deployment environment): see :func:`build_resource`.
    """
    found = detect_local()
    found.update(detect_slurm())
    found.update(detect_kubernetes())
    return found
