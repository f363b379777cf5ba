# DO NOT EDIT: generated from schema/span_groups.toml by nemo-lens generate.
# Edit the schema, then run `make generate`.
# schema-sha256: 8ad7b6264e4b1becd966e3fd4dfd24637b8c2d7d384c289e41cc7f993ed5e1b6
"""The resource attributes nemo.lens sets on every signal, and what each one holds."""

from __future__ import annotations

from typing import Final

__all__ = [
    "DEPLOYMENT_ENVIRONMENT",
    "DEPLOYMENT_ENVIRONMENT_NAME",
    "DL_RANK",
    "DL_WORLD_SIZE",
    "GPU_COUNT",
    "HOST_GPU_COUNT",
    "HOST_NAME",
    "K8S_CONTAINER_NAME",
    "K8S_JOB_NAME",
    "K8S_NAMESPACE_NAME",
    "K8S_NODE_NAME",
    "K8S_POD_NAME",
    "K8S_POD_UID",
    "LIFETIME_ID",
    "LOCAL_RANK",
    "NEMO_RUN_ID",
    "NEMO_USER_ID",
    "NV_DL_LOCAL_RANK",
    "NV_DL_RANK",
    "NV_DL_WORLD_SIZE",
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
    "SLURM_NNODES",
    "SLURM_NODEID",
    "SLURM_NODELIST",
    "SLURM_NTASKS",
    "SLURM_PARTITION",
    "SLURM_PROCID",
    "SLURM_STEP_ID",
    "USER",
    "WANDB_ENTITY",
    "WANDB_PROJECT",
    "WORLD_SIZE",
]

# -- Resource: the host and the process

GPU_COUNT: Final = "nemo.gpu.count"
"""The GPU count of `host.gpu.count`, under nemo.lens's own key. Type: `int`."""

HOST_GPU_COUNT: Final = "host.gpu.count"
"""Number of GPUs, when known: the devices `CUDA_VISIBLE_DEVICES` exposes when it is set, else
what `nvidia-smi` finds (`nemo.gpu.count` holds it too). Type: `int`. Upstream nemo.lens 0.2.0
sends this key too.
"""

HOST_NAME: Final = "host.name"
"""The machine's host name. Type: `string`. Upstream nemo.lens 0.2.0 sends this key too."""

LOCAL_RANK: Final = "nemo.local_rank"
"""`LOCAL_RANK` as torchrun sets it, when set. Type: `int`."""

NV_DL_LOCAL_RANK: Final = "nv.dl.local_rank"
"""`LOCAL_RANK` under upstream's next key (beside `nemo.local_rank`), when set. Type: `int`."""

PROCESS_PID: Final = "process.pid"
"""The process id. Type: `int`. Upstream nemo.lens 0.2.0 sends this key too."""

# -- Resource: the service, the rank and the run

DEPLOYMENT_ENVIRONMENT: Final = "deployment.environment"
"""The first of `NEMO_LENS_ENVIRONMENT`, `DEPLOYMENT_ENVIRONMENT`, `DEPLOYMENT_ENV` and
`ENVIRONMENT` that is set (upstream reads the last two); left out when none is. Type:
`string`. Upstream nemo.lens 0.2.0 sends this key too.
"""

DEPLOYMENT_ENVIRONMENT_NAME: Final = "deployment.environment.name"
"""The value of `deployment.environment`, under the name newer semantic conventions use. Type:
`string`.
"""

DL_RANK: Final = "dl.rank"
"""Global rank passed to `setup_telemetry` (`nemo.rank` holds it too). Type: `int`. Upstream
nemo.lens 0.2.0 defines this constant with this value. Upstream nemo.lens 0.2.0 sends this key
too.
"""

DL_WORLD_SIZE: Final = "dl.world_size"
"""World size passed to `setup_telemetry` (`nemo.world_size` holds it too). Type: `int`. Upstream
nemo.lens 0.2.0 defines this constant with this value. Upstream nemo.lens 0.2.0 sends this key
too.
"""

LIFETIME_ID: Final = "nemo.lifetime.id"
"""A random id drawn at every `setup_telemetry`, one per process lifetime: a job that crashed and
resumed keeps its run id and rank, and may get the same pid (a container's first process), so
this tells its lifetimes apart (`nemo-lens goodput`'s restarts). Type: `string`.
"""

NEMO_RUN_ID: Final = "nemo.run.id"
"""`NemoLensConfig.run_id` (resolved: `SLURM_JOB_ID`, else a random 12-hex id; `nemo.run_id`
holds it too). Type: `string`. Upstream nemo.lens 0.2.0 defines this constant with this value.
Upstream nemo.lens 0.2.0 sends this key too.
"""

NEMO_USER_ID: Final = "nemo.user.id"
"""`NemoLensConfig.user` (`NEMO_LENS_USER_ID`), when set (`nemo.user` holds it too). Type:
`string`. Upstream nemo.lens 0.2.0 defines this constant with this value. Upstream nemo.lens
0.2.0 sends this key too.
"""

NV_DL_RANK: Final = "nv.dl.rank"
"""Global rank under upstream's next key, read by a rank-less `setup_telemetry`; sent when the
rank is known (passed, or found under this key or `dl.rank`). Type: `int`.
"""

NV_DL_WORLD_SIZE: Final = "nv.dl.world_size"
"""World size under upstream's next key, read by a rank-less `setup_telemetry`; sent when the
world size is known. Type: `int`.
"""

RANK: Final = "nemo.rank"
"""Global rank passed to `setup_telemetry`, under nemo.lens's own key (sent beside upstream's
`dl.rank`). Type: `int`.
"""

RUN_ID: Final = "nemo.run_id"
"""`NemoLensConfig.run_id`, under nemo.lens's own key (sent beside upstream's `nemo.run.id`).
Type: `string`.
"""

SERVICE_INSTANCE_ID: Final = "service.instance.id"
"""`{run_id}-rank{rank}`: one instance per rank of a run. Type: `string`. Upstream nemo.lens
0.2.0 sends this key too.
"""

SERVICE_NAME: Final = "service.name"
"""`NemoLensConfig.service_name` (`OTEL_SERVICE_NAME`, default `nemo`). Type: `string`. Upstream
nemo.lens 0.2.0 sends this key too.
"""

SERVICE_VERSION: Final = "service.version"
"""Version of the nemo-lens package. Type: `string`. Upstream nemo.lens 0.2.0 sends this key too."""

USER: Final = "nemo.user"
"""`NemoLensConfig.user`, when set, under nemo.lens's own key (sent beside upstream's
`nemo.user.id`). Type: `string`.
"""

WANDB_ENTITY: Final = "wandb.entity"
"""`NemoLensConfig.wandb_entity` (`WANDB_ENTITY`), when set. Type: `string`. Upstream nemo.lens
0.2.0 defines this constant with this value. Upstream nemo.lens 0.2.0 sends this key too.
"""

WANDB_PROJECT: Final = "wandb.project"
"""`NemoLensConfig.wandb_project` (`WANDB_PROJECT`), when set. Type: `string`. Upstream nemo.lens
0.2.0 defines this constant with this value. Upstream nemo.lens 0.2.0 sends this key too.
"""

WORLD_SIZE: Final = "nemo.world_size"
"""World size passed to `setup_telemetry`, under nemo.lens's own key (sent beside upstream's
`dl.world_size`). Type: `int`.
"""

# -- Resource: Kubernetes

K8S_CONTAINER_NAME: Final = "k8s.container.name"
"""`K8S_CONTAINER_NAME`. Type: `string`. Upstream nemo.lens 0.2.0 defines this constant with this
value. Upstream nemo.lens 0.2.0 sends this key too.
"""

K8S_JOB_NAME: Final = "k8s.job.name"
"""`K8S_JOB_NAME`. Type: `string`. Upstream nemo.lens 0.2.0 defines this constant with this
value. Upstream nemo.lens 0.2.0 sends this key too.
"""

K8S_NAMESPACE_NAME: Final = "k8s.namespace.name"
"""`K8S_NAMESPACE`, else `POD_NAMESPACE`, else the service account's namespace file. Type:
`string`. Upstream nemo.lens 0.2.0 defines this constant with this value. Upstream nemo.lens
0.2.0 sends this key too.
"""

K8S_NODE_NAME: Final = "k8s.node.name"
"""`K8S_NODE_NAME`. Type: `string`. Upstream nemo.lens 0.2.0 defines this constant with this
value. Upstream nemo.lens 0.2.0 sends this key too.
"""

K8S_POD_NAME: Final = "k8s.pod.name"
"""`K8S_POD_NAME`, else `HOSTNAME`, else the host name. Type: `string`. Upstream nemo.lens 0.2.0
defines this constant with this value. Upstream nemo.lens 0.2.0 sends this key too.
"""

K8S_POD_UID: Final = "k8s.pod.uid"
"""`K8S_POD_UID`. Type: `string`. Upstream nemo.lens 0.2.0 defines this constant with this value.
Upstream nemo.lens 0.2.0 sends this key too.
"""

# -- Resource: SLURM

SLURM_ARRAY_JOB_ID: Final = "slurm.array.job.id"
"""`SLURM_ARRAY_JOB_ID`. Type: `string`."""

SLURM_ARRAY_TASK_ID: Final = "slurm.array.task.id"
"""`SLURM_ARRAY_TASK_ID`. Type: `string`."""

SLURM_CLUSTER_NAME: Final = "slurm.cluster.name"
"""`SLURM_CLUSTER_NAME`, as the variable holds it. Type: `string`. Upstream nemo.lens 0.2.0
defines this constant with this value. Upstream nemo.lens 0.2.0 sends this key too.
"""

SLURM_JOB_ID: Final = "slurm.job.id"
"""`SLURM_JOB_ID`, as the variable holds it. Type: `string`. Upstream nemo.lens 0.2.0 defines
this constant with this value. Upstream nemo.lens 0.2.0 sends this key too.
"""

SLURM_JOB_NAME: Final = "slurm.job.name"
"""`SLURM_JOB_NAME`, as the variable holds it. Type: `string`. Upstream nemo.lens 0.2.0 defines
this constant with this value. Upstream nemo.lens 0.2.0 sends this key too.
"""

SLURM_JOB_NUM_NODES: Final = "slurm.job.num_nodes"
"""`SLURM_JOB_NUM_NODES` (the text when it is not an integer). Type: `int`."""

SLURM_LOCALID: Final = "slurm.localid"
"""`SLURM_LOCALID`: the task's index on its node (the text when it is not an integer). Type:
`int`.
"""

SLURM_NNODES: Final = "slurm.nnodes"
"""`SLURM_NNODES`, as the variable holds it (a string, as upstream sends it;
`slurm.job.num_nodes` is the int). Type: `string`. Upstream nemo.lens 0.2.0 defines this
constant with this value. Upstream nemo.lens 0.2.0 sends this key too.
"""

SLURM_NODEID: Final = "slurm.nodeid"
"""`SLURM_NODEID`: the node's index within the allocation (the text when it is not an integer).
Type: `int`.
"""

SLURM_NODELIST: Final = "slurm.nodelist"
"""`SLURM_NODELIST`, as the variable holds it (`node[01-04]`). Type: `string`. Upstream nemo.lens
0.2.0 defines this constant with this value. Upstream nemo.lens 0.2.0 sends this key too.
"""

SLURM_NTASKS: Final = "slurm.ntasks"
"""`SLURM_NTASKS`, as the variable holds it (a string, as upstream sends it). Type: `string`.
Upstream nemo.lens 0.2.0 defines this constant with this value. Upstream nemo.lens 0.2.0 sends
this key too.
"""

SLURM_PARTITION: Final = "slurm.partition"
"""`SLURM_PARTITION`, as the variable holds it. Type: `string`. Upstream nemo.lens 0.2.0 defines
this constant with this value. Upstream nemo.lens 0.2.0 sends this key too.
"""

SLURM_PROCID: Final = "slurm.procid"
"""`SLURM_PROCID`: the task's global rank within the step (the text when it is not an integer).
Type: `int`.
"""

SLURM_STEP_ID: Final = "slurm.step.id"
"""`SLURM_STEP_ID`. Type: `string`."""
