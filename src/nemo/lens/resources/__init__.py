"""The OpenTelemetry resource describing one rank of a job: detectors and the layered build.

Every key upstream v0.2.0 sends is sent, with its type, beside nemo.lens's own; the 0.1.0
detectors are here too (:func:`detect_resource`, the submodules ``local``, ``slurm`` and
``kubernetes``), and :func:`encode_resource_attributes` for a child process's resource.
Importing it does not import the OpenTelemetry SDK.
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
from nemo.lens.resources.encoding import (
    OTEL_RESOURCE_ATTRIBUTES,
    decode_resource_attributes,
    encode_resource_attributes,
)
from nemo.lens.resources.kubernetes import detect_kubernetes
from nemo.lens.resources.local import detect_local
from nemo.lens.resources.slurm import detect_slurm

__all__ = [
    "DEPLOYMENT_ENVIRONMENT_VARIABLES",
    "K8S_NAMESPACE_FILE",
    "K8S_SECRETS_DIR",
    "NVIDIA_SMI_TIMEOUT_S",
    "OTEL_RESOURCE_ATTRIBUTES",
    "attributes",
    "build_resource",
    "config_attributes",
    "decode_resource_attributes",
    "detect_attributes",
    "detect_kubernetes",
    "detect_local",
    "detect_resource",
    "detect_slurm",
    "encode_resource_attributes",
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
    """Every 0.1.0 detector's attributes merged in a plain ``dict``: local, then SLURM,
    then Kubernetes (set-up records more: see :func:`build_resource`)."""
    found = detect_local()
    found.update(detect_slurm())
    found.update(detect_kubernetes())
    return found
