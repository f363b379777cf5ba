"""The resource attributes nemo.lens sets: one ``Final`` string per name, with its docstring.

Part of :mod:`nemo.lens.semconv`, which re-exports every name here (as does
:mod:`nemo.lens.resources.attributes`, where they always were); see there for
the naming rules.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "DEPLOYMENT_ENVIRONMENT",
    "DEPLOYMENT_ENVIRONMENT_NAME",
    "GPU_COUNT",
    "HOST_GPU_COUNT",
    "HOST_NAME",
    "K8S_NAMESPACE_NAME",
    "K8S_POD_NAME",
    "LIFETIME_ID",
    "LOCAL_RANK",
    "PROCESS_PID",
    "RANK",
    "RUN_ID",
    "SERVICE_INSTANCE_ID",
    "SERVICE_NAME",
    "SERVICE_VERSION",
    "SLURM_ARRAY_JOB_ID",
    "SLURM_ARRAY_TASK_ID",
    "SLURM_CLUSTER_NAME",
    "SLURM_JOB_ID",
    "SLURM_JOB_NAME",
    "SLURM_JOB_NUM_NODES",
    "SLURM_LOCALID",
    "SLURM_NODEID",
    "SLURM_NTASKS",
    "SLURM_PROCID",
    "SLURM_STEP_ID",
    "USER",
    "WANDB_ENTITY",
    "WANDB_PROJECT",
    "WORLD_SIZE",
]

SERVICE_NAME: Final = "service.name"
"""``NemoLensConfig.service_name`` (``OTEL_SERVICE_NAME``, default ``nemo``)."""
SERVICE_VERSION: Final = "service.version"
"""Version of the nemo-lens package."""
SERVICE_INSTANCE_ID: Final = "service.instance.id"
"""``"{run_id}-rank{rank}"``: one instance per rank of a run."""
RANK: Final = "nemo.rank"
"""Global rank passed to ``setup_telemetry``."""
WORLD_SIZE: Final = "nemo.world_size"
"""World size passed to ``setup_telemetry``."""
RUN_ID: Final = "nemo.run_id"
"""``NemoLensConfig.run_id`` (resolved: ``SLURM_JOB_ID``, else a random 12-hex id)."""
USER: Final = "nemo.user"
"""``NemoLensConfig.user`` (``NEMO_LENS_USER_ID``), when set."""
WANDB_ENTITY: Final = "wandb.entity"
"""``NemoLensConfig.wandb_entity`` (``WANDB_ENTITY``), when set."""
WANDB_PROJECT: Final = "wandb.project"
"""``NemoLensConfig.wandb_project`` (``WANDB_PROJECT``), when set."""
DEPLOYMENT_ENVIRONMENT: Final = "deployment.environment"
"""From ``NEMO_LENS_ENVIRONMENT``, else ``DEPLOYMENT_ENVIRONMENT``."""
DEPLOYMENT_ENVIRONMENT_NAME: Final = "deployment.environment.name"
"""Same value as :data:`DEPLOYMENT_ENVIRONMENT`, under the name newer semantic conventions use."""
HOST_NAME: Final = "host.name"
"""The machine's host name."""
PROCESS_PID: Final = "process.pid"
"""The process id."""
LIFETIME_ID: Final = "nemo.lifetime.id"
"""A random id drawn at every ``setup_telemetry``: one per process lifetime.

A job that crashed and resumed keeps its run id and rank, and may get the same pid (a
container's first process); this tells its lifetimes apart (``nemo-lens goodput``'s restarts).
"""
HOST_GPU_COUNT: Final = "host.gpu.count"
"""The GPU count under the name 0.1.0's ``detect_local()`` gives it (the resource uses
:data:`GPU_COUNT`)."""
GPU_COUNT: Final = "nemo.gpu.count"
"""Number of GPUs: those ``CUDA_VISIBLE_DEVICES`` exposes when set, else what ``nvidia-smi`` finds.

Left out when neither can tell.
"""
LOCAL_RANK: Final = "nemo.local_rank"
"""``LOCAL_RANK`` as set by torchrun, when set."""
SLURM_JOB_ID: Final = "slurm.job.id"
"""``SLURM_JOB_ID``."""
SLURM_JOB_NAME: Final = "slurm.job.name"
"""``SLURM_JOB_NAME``."""
SLURM_PROCID: Final = "slurm.procid"
"""``SLURM_PROCID``: the task's global rank within the step."""
SLURM_NODEID: Final = "slurm.nodeid"
"""``SLURM_NODEID``: the node's index within the allocation."""
SLURM_LOCALID: Final = "slurm.localid"
"""``SLURM_LOCALID``: the task's index on its node."""
SLURM_NTASKS: Final = "slurm.ntasks"
"""``SLURM_NTASKS``."""
SLURM_JOB_NUM_NODES: Final = "slurm.job.num_nodes"
"""``SLURM_JOB_NUM_NODES``."""
SLURM_STEP_ID: Final = "slurm.step.id"
"""``SLURM_STEP_ID``."""
SLURM_ARRAY_JOB_ID: Final = "slurm.array.job.id"
"""``SLURM_ARRAY_JOB_ID``."""
SLURM_ARRAY_TASK_ID: Final = "slurm.array.task.id"
"""``SLURM_ARRAY_TASK_ID``."""
SLURM_CLUSTER_NAME: Final = "slurm.cluster.name"
"""``SLURM_CLUSTER_NAME``."""
K8S_POD_NAME: Final = "k8s.pod.name"
"""The pod name (``HOSTNAME``) when running under Kubernetes."""
K8S_NAMESPACE_NAME: Final = "k8s.namespace.name"
"""``POD_NAMESPACE``, else the service account's namespace file, under Kubernetes."""
