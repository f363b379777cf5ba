"""Names of the resource attributes nemo.lens sets (re-exported from :mod:`nemo.lens.semconv`).

Standard OpenTelemetry names where a convention exists (``service.*``,
``host.name``, ``process.pid``, ``deployment.environment``, ``k8s.*``);
``nemo.*``, ``slurm.*`` and ``wandb.*`` where none does. The constants, with
their docstrings, live in :mod:`nemo.lens.semconv` beside every other name the
library emits; this module keeps the resource subset importable where it always was.
"""

from __future__ import annotations

from nemo.lens.semconv import (
    DEPLOYMENT_ENVIRONMENT,
    DEPLOYMENT_ENVIRONMENT_NAME,
    GPU_COUNT,
    HOST_NAME,
    K8S_NAMESPACE_NAME,
    K8S_POD_NAME,
    LIFETIME_ID,
    LOCAL_RANK,
    PROCESS_PID,
    RANK,
    RUN_ID,
    SERVICE_INSTANCE_ID,
    SERVICE_NAME,
    SERVICE_VERSION,
    SLURM_ARRAY_JOB_ID,
    SLURM_ARRAY_TASK_ID,
    SLURM_CLUSTER_NAME,
    SLURM_JOB_ID,
    SLURM_JOB_NAME,
    SLURM_JOB_NUM_NODES,
    SLURM_LOCALID,
    SLURM_NODEID,
    SLURM_NTASKS,
    SLURM_PROCID,
    SLURM_STEP_ID,
    USER,
    WANDB_ENTITY,
    WANDB_PROJECT,
    WORLD_SIZE,
)

__all__ = [
    "DEPLOYMENT_ENVIRONMENT",
    "DEPLOYMENT_ENVIRONMENT_NAME",
    "GPU_COUNT",
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
