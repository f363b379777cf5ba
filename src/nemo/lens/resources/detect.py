"""Resource attributes detected from the process and its launcher.

Pure standard library: reading the environment, the host name and, under
Kubernetes, the service account's namespace file. Nothing here fails set-up: an
unreadable file or a malformed variable is skipped.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from typing import Final

from opentelemetry.util.types import AttributeValue

from nemo.lens.resources import attributes as attr

__all__ = ["K8S_NAMESPACE_FILE", "detect_attributes", "visible_gpu_count"]

K8S_NAMESPACE_FILE: Final = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
"""Where Kubernetes mounts the pod's namespace (read when ``POD_NAMESPACE`` is unset)."""

# (environment variable, attribute, is an integer). Integer-valued SLURM fields
# become ints so backends can sort and filter them numerically.
_SLURM: Final[tuple[tuple[str, str, bool], ...]] = (
    ("SLURM_JOB_ID", attr.SLURM_JOB_ID, False),
    ("SLURM_JOB_NAME", attr.SLURM_JOB_NAME, False),
    ("SLURM_PROCID", attr.SLURM_PROCID, True),
    ("SLURM_NODEID", attr.SLURM_NODEID, True),
    ("SLURM_LOCALID", attr.SLURM_LOCALID, True),
    ("SLURM_NTASKS", attr.SLURM_NTASKS, True),
    ("SLURM_JOB_NUM_NODES", attr.SLURM_JOB_NUM_NODES, True),
    ("SLURM_STEP_ID", attr.SLURM_STEP_ID, False),
    ("SLURM_ARRAY_JOB_ID", attr.SLURM_ARRAY_JOB_ID, False),
    ("SLURM_ARRAY_TASK_ID", attr.SLURM_ARRAY_TASK_ID, False),
    ("SLURM_CLUSTER_NAME", attr.SLURM_CLUSTER_NAME, False),
)


def _as_int(raw: str) -> int | None:
    try:
        return int(raw)
    except ValueError:
        return None


def visible_gpu_count(value: str) -> int:
    """Count the devices a ``CUDA_VISIBLE_DEVICES`` value exposes.

    Entries are indices or ``GPU-``/``MIG-`` UUIDs; like the CUDA runtime, the
    list ends at the first empty or negative entry (``-1`` hides every device).
    """
    count = 0
    for entry in value.split(","):
        entry = entry.strip()
        if not entry:
            break
        number = _as_int(entry)
        if number is not None and number < 0:
            break
        count += 1
    return count


def _read_namespace(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def detect_attributes(
    environ: Mapping[str, str] | None = None,
    *,
    namespace_file: str = K8S_NAMESPACE_FILE,
) -> dict[str, AttributeValue]:
    """Return the attributes detected for this process.

    Host name, pid, ``deployment.environment`` (``NEMO_LENS_ENVIRONMENT``, else
    ``DEPLOYMENT_ENVIRONMENT``), GPU count (from ``CUDA_VISIBLE_DEVICES`` when
    set), ``LOCAL_RANK``, SLURM job attributes and, when
    ``KUBERNETES_SERVICE_HOST`` is set, the pod name and namespace.
    """
    env = os.environ if environ is None else environ
    found: dict[str, AttributeValue] = {
        attr.HOST_NAME: socket.gethostname(),
        attr.PROCESS_PID: os.getpid(),
    }
    environment = (
        env.get("NEMO_LENS_ENVIRONMENT", "").strip()
        or env.get("DEPLOYMENT_ENVIRONMENT", "").strip()
    )
    if environment:
        found[attr.DEPLOYMENT_ENVIRONMENT] = environment
        found[attr.DEPLOYMENT_ENVIRONMENT_NAME] = environment
    devices = env.get("CUDA_VISIBLE_DEVICES")
    if devices is not None:
        found[attr.GPU_COUNT] = visible_gpu_count(devices)
    local_rank = _as_int(env.get("LOCAL_RANK", "").strip())
    if local_rank is not None:
        found[attr.LOCAL_RANK] = local_rank
    for variable, name, numeric in _SLURM:
        raw = env.get(variable, "").strip()
        if not raw:
            continue
        number = _as_int(raw) if numeric else None
        found[name] = number if number is not None else raw
    if env.get("KUBERNETES_SERVICE_HOST", "").strip():
        pod = env.get("HOSTNAME", "").strip() or socket.gethostname()
        found[attr.K8S_POD_NAME] = pod
        namespace = env.get("POD_NAMESPACE", "").strip() or _read_namespace(namespace_file)
        if namespace:
            found[attr.K8S_NAMESPACE_NAME] = namespace
    return found
