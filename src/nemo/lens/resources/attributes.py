"""Names of the resource attributes nemo.lens sets.

Standard OpenTelemetry names where a convention exists (``service.*``,
``host.name``, ``process.pid``, ``deployment.environment``, ``k8s.*``);
``nemo.*``, ``slurm.*`` and ``wandb.*`` where none does.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "DEPLOYMENT_ENVIRONMENT",
    "DEPLOYMENT_ENVIRONMENT_NAME",
    "GPU_COUNT",
    "HOST_NAME",
    "K8S_NAMESPACE_NAME",
    "K8S_POD_NAME",
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
"""``NemoLensConfig.service_name``."""
SERVICE_VERSION: Final = "service.version"
"""Version of the nemo-lens package."""
SERVICE_INSTANCE_ID: Final = "service.instance.id"
"""``"{run_id}-rank{rank}"``: one instance per rank of a run."""
RANK: Final = "nemo.rank"
"""Global rank passed to ``setup_telemetry``."""
WORLD_SIZE: Final = "nemo.world_size"
"""World size passed to ``setup_telemetry``."""
RUN_ID: Final = "nemo.run_id"
"""``NemoLensConfig.run_id`` (resolved)."""
USER: Final = "nemo.user"
"""``NemoLensConfig.user``, when set."""
WANDB_ENTITY: Final = "wandb.entity"
"""``NemoLensConfig.wandb_entity``, when set."""
WANDB_PROJECT: Final = "wandb.project"
"""``NemoLensConfig.wandb_project``, when set."""
DEPLOYMENT_ENVIRONMENT: Final = "deployment.environment"
"""From ``NEMO_LENS_ENVIRONMENT``, else ``DEPLOYMENT_ENVIRONMENT``."""
DEPLOYMENT_ENVIRONMENT_NAME: Final = "deployment.environment.name"
"""Same value under the name newer semantic conventions use."""
HOST_NAME: Final = "host.name"
"""The machine's host name."""
PROCESS_PID: Final = "process.pid"
"""The process id."""
GPU_COUNT: Final = "nemo.gpu.count"
"""Number of devices listed in ``CUDA_VISIBLE_DEVICES``, when that is set."""
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
