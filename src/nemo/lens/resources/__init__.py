"""The OpenTelemetry resource describing one rank of a job.

Attribute names are constants in :mod:`nemo.lens.semconv` (the resource subset is
re-exported as :mod:`nemo.lens.resources.attributes`).
Precedence, lowest to highest: detected (host, process, GPUs, SLURM,
Kubernetes, deployment environment) < ``OTEL_RESOURCE_ATTRIBUTES`` <
configuration fields < the caller's ``resource_attributes``; see
:mod:`nemo.lens.resources.build`.

Importing this package does not import the OpenTelemetry SDK; only
:func:`build_resource` and :func:`otel_env_attributes` do, when called.
"""

from __future__ import annotations

from nemo.lens.resources import attributes
from nemo.lens.resources.build import (
    build_resource,
    config_attributes,
    merged_attributes,
    otel_env_attributes,
    package_version,
)
from nemo.lens.resources.detect import (
    K8S_NAMESPACE_FILE,
    NVIDIA_SMI_TIMEOUT_S,
    detect_attributes,
    nvidia_smi_gpu_count,
    visible_gpu_count,
)

__all__ = [
    "K8S_NAMESPACE_FILE",
    "NVIDIA_SMI_TIMEOUT_S",
    "attributes",
    "build_resource",
    "config_attributes",
    "detect_attributes",
    "merged_attributes",
    "nvidia_smi_gpu_count",
    "otel_env_attributes",
    "package_version",
    "visible_gpu_count",
]
