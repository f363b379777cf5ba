"""Resource attributes detected from the process and its launcher (standard library only).

Nothing here fails set-up: an unreadable file, a malformed variable, a missing or hanging
``nvidia-smi`` leaves its attribute out. Upstream v0.2.0's keys come from its variables with
its types; nemo.lens's own keys and variables are read beside them."""

from __future__ import annotations

import functools
import os
import shutil
import socket
import subprocess
from collections.abc import Mapping
from typing import Final

from opentelemetry.util.types import AttributeValue

from nemo.lens.resources import attributes as attr

__all__ = [
    "DEPLOYMENT_ENVIRONMENT_VARIABLES",
    "K8S_NAMESPACE_FILE",
    "K8S_SECRETS_DIR",
    "NVIDIA_SMI",
    "NVIDIA_SMI_TIMEOUT_S",
    "detect_attributes",
    "gpu_count",
    "kubernetes_attributes",
    "nvidia_smi_gpu_count",
    "slurm_attributes",
    "visible_gpu_count",
]

K8S_SECRETS_DIR: Final = "/var/run/secrets/kubernetes.io"
"""When it exists, the process runs under Kubernetes (as when ``KUBERNETES_SERVICE_HOST`` is
set), upstream's rule."""

K8S_NAMESPACE_FILE: Final = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
"""Where Kubernetes mounts the pod's namespace (read when ``K8S_NAMESPACE`` and
``POD_NAMESPACE`` are unset)."""

DEPLOYMENT_ENVIRONMENT_VARIABLES: Final = (
    "NEMO_LENS_ENVIRONMENT",
    "DEPLOYMENT_ENVIRONMENT",
    "DEPLOYMENT_ENV",
    "ENVIRONMENT",
)
"""Where ``deployment.environment`` comes from: the first of these that is set. The first two
are nemo.lens's; upstream nemo-lens 0.2.0 reads the last two, in that order."""

NVIDIA_SMI: Final = "nvidia-smi"
"""The program asked for the GPU count when ``CUDA_VISIBLE_DEVICES`` is unset."""

NVIDIA_SMI_TIMEOUT_S: Final = 2.0
"""How long set-up waits for ``nvidia-smi`` (a wedged driver can hang it for minutes)."""

# Upstream's SLURM keys: (environment variable, attribute), each the string the variable
# holds, as upstream sends it (dashboards compare them as strings).
_SLURM: Final[tuple[tuple[str, str], ...]] = (
    ("SLURM_JOB_ID", attr.SLURM_JOB_ID),
    ("SLURM_JOB_NAME", attr.SLURM_JOB_NAME),
    ("SLURM_NODELIST", attr.SLURM_NODELIST),
    ("SLURM_NNODES", attr.SLURM_NNODES),
    ("SLURM_NTASKS", attr.SLURM_NTASKS),
    ("SLURM_PARTITION", attr.SLURM_PARTITION),
    ("SLURM_CLUSTER_NAME", attr.SLURM_CLUSTER_NAME),
)

# nemo.lens's own SLURM keys: (environment variable, attribute, is an integer). Its
# integer fields are ints, so backends can sort and filter them numerically.
_OWN_SLURM: Final[tuple[tuple[str, str, bool], ...]] = (
    ("SLURM_PROCID", attr.SLURM_PROCID, True),
    ("SLURM_NODEID", attr.SLURM_NODEID, True),
    ("SLURM_LOCALID", attr.SLURM_LOCALID, True),
    ("SLURM_JOB_NUM_NODES", attr.SLURM_JOB_NUM_NODES, True),
    ("SLURM_STEP_ID", attr.SLURM_STEP_ID, False),
    ("SLURM_ARRAY_JOB_ID", attr.SLURM_ARRAY_JOB_ID, False),
    ("SLURM_ARRAY_TASK_ID", attr.SLURM_ARRAY_TASK_ID, False),
)

# Upstream's Kubernetes keys from the downward-API variables: (attribute, variables in
# order of precedence). After them, nemo.lens's own fallbacks apply (see below).
_K8S: Final[tuple[tuple[str, tuple[str, ...]], ...]] = (
    (attr.K8S_NAMESPACE_NAME, ("K8S_NAMESPACE",)),
    (attr.K8S_POD_NAME, ("K8S_POD_NAME", "HOSTNAME")),
    (attr.K8S_POD_UID, ("K8S_POD_UID",)),
    (attr.K8S_NODE_NAME, ("K8S_NODE_NAME",)),
    (attr.K8S_CONTAINER_NAME, ("K8S_CONTAINER_NAME",)),
    (attr.K8S_JOB_NAME, ("K8S_JOB_NAME",)),
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


def nvidia_smi_gpu_count(
    executable: str = NVIDIA_SMI,
    *,
    timeout: float = NVIDIA_SMI_TIMEOUT_S,
    search_path: str | None = None,
) -> int | None:
    """Ask ``nvidia-smi`` how many GPUs this machine has; ``None`` when it cannot tell.

    *executable* is a path or a program name looked up on *search_path* (``PATH``-style;
    ``None``: the process's). ``None``, never an exception, when the program is missing,
    fails, prints nothing recognisable or does not answer within *timeout* seconds. Cached
    per program and timeout, so a hanging ``nvidia-smi`` costs its timeout once.
    """
    found = shutil.which(executable, path=search_path)
    if found is None:
        return None
    return _query_nvidia_smi(os.path.abspath(found), timeout)


@functools.lru_cache(maxsize=8)
def _query_nvidia_smi(program: str, timeout: float) -> int | None:
    try:
        completed = subprocess.run(
            [program, "--query-gpu=uuid", "--format=csv,noheader"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    if completed.returncode != 0:
        return None
    # One "GPU-<uuid>" line per device. Counting only those lines keeps a
    # warning or banner on stdout from being taken for a GPU.
    count = sum(1 for line in completed.stdout.splitlines() if line.strip().startswith("GPU-"))
    return count or None


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
    nvidia_smi: str | None = NVIDIA_SMI,
    kubernetes_dir: str | None = None,
) -> dict[str, AttributeValue]:
    """Return the attributes detected for this process.

    Host name, pid, ``deployment.environment`` (the first of
    :data:`DEPLOYMENT_ENVIRONMENT_VARIABLES` that is set), the GPU count (:func:`gpu_count`;
    ``nvidia_smi=None`` skips the query), ``LOCAL_RANK``, and the SLURM job's and the
    pod's attributes (:func:`slurm_attributes`, :func:`kubernetes_attributes`).
    """
    env = os.environ if environ is None else environ
    found: dict[str, AttributeValue] = {
        attr.HOST_NAME: socket.gethostname(),
        attr.PROCESS_PID: os.getpid(),
    }
    environment = next(
        (
            value
            for name in DEPLOYMENT_ENVIRONMENT_VARIABLES
            if (value := env.get(name, "").strip())
        ),
        "",
    )
    if environment:
        found[attr.DEPLOYMENT_ENVIRONMENT] = environment
        found[attr.DEPLOYMENT_ENVIRONMENT_NAME] = environment
    gpus = gpu_count(env, nvidia_smi=nvidia_smi)
    if gpus is not None:
        found[attr.HOST_GPU_COUNT] = gpus
        found[attr.GPU_COUNT] = gpus
    local_rank = _as_int(env.get("LOCAL_RANK", "").strip())
    if local_rank is not None:
        found.update(dict.fromkeys((attr.LOCAL_RANK, attr.NV_DL_LOCAL_RANK), local_rank))
    found.update(slurm_attributes(env))
    found.update(
        kubernetes_attributes(env, namespace_file=namespace_file, kubernetes_dir=kubernetes_dir)
    )
    return found


def gpu_count(
    environ: Mapping[str, str] | None = None, *, nvidia_smi: str | None = NVIDIA_SMI
) -> int | None:
    """The devices ``CUDA_VISIBLE_DEVICES`` exposes when it is set, else what *nvidia_smi*
    reports (looked up on the ``PATH`` of *environ*), else ``None``."""
    env = os.environ if environ is None else environ
    devices = env.get("CUDA_VISIBLE_DEVICES")
    if devices is not None:
        return visible_gpu_count(devices)
    if nvidia_smi is None:
        return None
    return nvidia_smi_gpu_count(nvidia_smi, search_path=env.get("PATH"))


def slurm_attributes(environ: Mapping[str, str] | None = None) -> dict[str, AttributeValue]:
    """The ``slurm.*`` attributes of the ``SLURM_*`` variables that are set; nothing unless
    ``SLURM_JOB_ID`` is. Upstream's keys are the strings the variables hold; nemo.lens's own
    integer fields (``slurm.procid``, ...) are ints."""
    env = os.environ if environ is None else environ
    found: dict[str, AttributeValue] = {}
    if not env.get("SLURM_JOB_ID"):
        return found
    for variable, name in _SLURM:
        value = env.get(variable, "")
        if value:
            found[name] = value
    for variable, name, numeric in _OWN_SLURM:
        raw = env.get(variable, "").strip()
        if not raw:
            continue
        number = _as_int(raw) if numeric else None
        found[name] = number if number is not None else raw
    return found


def kubernetes_attributes(
    environ: Mapping[str, str] | None = None,
    *,
    namespace_file: str = K8S_NAMESPACE_FILE,
    kubernetes_dir: str | None = None,
) -> dict[str, AttributeValue]:
    """The pod's ``k8s.*`` attributes under Kubernetes (``KUBERNETES_SERVICE_HOST`` set or
    *kubernetes_dir*, default :data:`K8S_SECRETS_DIR`, existing), else nothing.

    Each key comes from the downward-API variable of its name (``K8S_NAMESPACE``,
    ``K8S_POD_NAME``, ...); where unset, the pod name is ``HOSTNAME``, else the host name,
    and the namespace ``POD_NAMESPACE``, else the content of *namespace_file*.
    """
    env = os.environ if environ is None else environ
    found: dict[str, AttributeValue] = {}
    # Looked up at the call, not bound as the default: tests point it elsewhere.
    directory = K8S_SECRETS_DIR if kubernetes_dir is None else kubernetes_dir
    if not (env.get("KUBERNETES_SERVICE_HOST") or os.path.exists(directory)):
        return found
    for name, variables in _K8S:
        value = next((value for variable in variables if (value := env.get(variable))), "")
        if value:
            found[name] = value
    if attr.K8S_POD_NAME not in found:
        found[attr.K8S_POD_NAME] = socket.gethostname()
    if attr.K8S_NAMESPACE_NAME not in found:
        namespace = env.get("POD_NAMESPACE", "").strip() or _read_namespace(namespace_file)
        if namespace:
            found[attr.K8S_NAMESPACE_NAME] = namespace
    return found
