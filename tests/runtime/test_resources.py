"""Resource attributes: detection, configuration, and the precedence between sources."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util.types import AttributeValue

from nemo.lens.config import NemoLensConfig
from nemo.lens.handle import setup_telemetry
from nemo.lens.resources import (
    DEPLOYMENT_ENVIRONMENT_VARIABLES,
    build_resource,
    config_attributes,
    detect_attributes,
    detect_kubernetes,
    detect_local,
    detect_resource,
    detect_slurm,
    nvidia_smi_gpu_count,
    package_version,
    visible_gpu_count,
)
from nemo.lens.resources import (
    attributes as attr,
)

pytestmark = pytest.mark.usefixtures("clean_env")


# -- detection ----------------------------------------------------------------------------


def test_detects_host_and_process_only_on_a_bare_machine(tmp_path: Path) -> None:
    # PATH points at an empty directory: no nvidia-smi, whatever this machine has.
    found = detect_attributes({"PATH": str(tmp_path)}, namespace_file=str(tmp_path / "missing"))
    assert found == {attr.HOST_NAME: socket.gethostname(), attr.PROCESS_PID: os.getpid()}


def _fake_nvidia_smi(directory: Path, body: str) -> Path:
    """Write an executable ``nvidia-smi`` shell script into *directory*."""
    program = directory / "nvidia-smi"
    program.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    program.chmod(0o755)
    return program


_FOUR_GPUS = "\n".join(f"echo GPU-0000000{i}-aaaa-bbbb-cccc-dddddddddddd" for i in range(4))


def test_detects_slurm_upstreams_keys_as_strings_and_its_own_integer_fields_as_ints() -> None:
    env = {
        "SLURM_JOB_ID": "4242_7",
        "SLURM_JOB_NAME": "pretrain",
        "SLURM_NODELIST": "node[01-02]",
        "SLURM_NNODES": "2",
        "SLURM_NTASKS": "16",
        "SLURM_PARTITION": "batch",
        "SLURM_PROCID": "13",
        "SLURM_NODEID": "1",
        "SLURM_LOCALID": "5",
        "SLURM_JOB_NUM_NODES": "2",
        "SLURM_CLUSTER_NAME": "eos",
    }
    found = detect_attributes(env)
    # Upstream sends these as the variables hold them; dashboards compare strings.
    assert found[attr.SLURM_JOB_ID] == "4242_7"
    assert found[attr.SLURM_JOB_NAME] == "pretrain"
    assert found[attr.SLURM_NODELIST] == "node[01-02]"
    assert found[attr.SLURM_NNODES] == "2"
    assert found[attr.SLURM_NTASKS] == "16"
    assert found[attr.SLURM_PARTITION] == "batch"
    assert found[attr.SLURM_CLUSTER_NAME] == "eos"
    # nemo.lens's own keys keep their integers.
    assert found[attr.SLURM_PROCID] == 13
    assert found[attr.SLURM_NODEID] == 1
    assert found[attr.SLURM_LOCALID] == 5
    assert found[attr.SLURM_JOB_NUM_NODES] == 2
    assert attr.SLURM_STEP_ID not in found
    assert detect_slurm_with(env) == {k: v for k, v in found.items() if k.startswith("slurm.")}


def detect_slurm_with(env: dict[str, str]) -> dict[str, AttributeValue]:
    """What 0.1.0's ``detect_slurm()`` returns in *env* (it reads the process's environment)."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        return detect_slurm()


def test_no_slurm_keys_without_a_slurm_job_id() -> None:
    # A variable left over outside a job (or set by hand) says nothing about this process.
    env = {"SLURM_JOB_NAME": "stale", "SLURM_NTASKS": "4", "SLURM_PROCID": "0"}
    assert not [key for key in detect_attributes(env) if key.startswith("slurm.")]
    assert detect_slurm_with(env) == {}


def test_detects_kubernetes_from_the_downward_api_variables(tmp_path: Path) -> None:
    env = {
        "KUBERNETES_SERVICE_HOST": "10.0.0.1",
        "K8S_NAMESPACE": "research",
        "K8S_POD_NAME": "trainer-3",
        "K8S_POD_UID": "0f6e-77",
        "K8S_NODE_NAME": "gpu-node-7",
        "K8S_CONTAINER_NAME": "trainer",
        "K8S_JOB_NAME": "pretrain-job",
        # Upstream's variables win over the fallbacks.
        "HOSTNAME": "not-the-pod-name",
        "POD_NAMESPACE": "not-the-namespace",
    }
    found = detect_attributes(env, namespace_file=str(tmp_path / "missing"))
    assert {key: value for key, value in found.items() if key.startswith("k8s.")} == {
        attr.K8S_NAMESPACE_NAME: "research",
        attr.K8S_POD_NAME: "trainer-3",
        attr.K8S_POD_UID: "0f6e-77",
        attr.K8S_NODE_NAME: "gpu-node-7",
        attr.K8S_CONTAINER_NAME: "trainer",
        attr.K8S_JOB_NAME: "pretrain-job",
    }


def test_kubernetes_is_recognised_by_its_secrets_directory(tmp_path: Path) -> None:
    # No KUBERNETES_SERVICE_HOST (a pod without service links), but the mounted secrets.
    secrets = tmp_path / "kubernetes.io"
    secrets.mkdir()
    env = {"K8S_POD_NAME": "worker-1"}
    found = detect_attributes(env, kubernetes_dir=str(secrets))
    assert found[attr.K8S_POD_NAME] == "worker-1"
    assert attr.K8S_POD_NAME not in detect_attributes(env, kubernetes_dir=str(tmp_path / "no"))


def test_detectors_return_upstreams_keys_from_upstreams_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2")
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    monkeypatch.setenv("SLURM_NTASKS", "8")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("K8S_POD_UID", "uid-1")
    assert detect_local() == {
        attr.HOST_NAME: socket.gethostname(),
        attr.PROCESS_PID: os.getpid(),
        attr.HOST_GPU_COUNT: 3,
    }
    assert detect_slurm() == {attr.SLURM_JOB_ID: "77", attr.SLURM_NTASKS: "8"}
    assert detect_kubernetes()[attr.K8S_POD_UID] == "uid-1"
    merged = detect_resource()
    assert merged[attr.SLURM_NTASKS] == "8" and merged[attr.K8S_POD_UID] == "uid-1"
    assert merged[attr.HOST_GPU_COUNT] == 3


def test_detects_kubernetes_pod_and_namespace_from_env(tmp_path: Path) -> None:
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "HOSTNAME": "trainer-0", "POD_NAMESPACE": "ml"}
    found = detect_attributes(env, namespace_file=str(tmp_path / "missing"))
    assert found[attr.K8S_POD_NAME] == "trainer-0"
    assert found[attr.K8S_NAMESPACE_NAME] == "ml"


def test_kubernetes_namespace_from_the_service_account_file(tmp_path: Path) -> None:
    namespace_file = tmp_path / "namespace"
    namespace_file.write_text("research\n", encoding="utf-8")
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "HOSTNAME": "pod-7"}
    found = detect_attributes(env, namespace_file=str(namespace_file))
    assert found[attr.K8S_NAMESPACE_NAME] == "research"


def test_no_kubernetes_attributes_outside_kubernetes(tmp_path: Path) -> None:
    namespace_file = tmp_path / "namespace"
    namespace_file.write_text("research", encoding="utf-8")
    env = {"HOSTNAME": "pod-7", "K8S_POD_NAME": "pod-7"}
    found = detect_attributes(
        env, namespace_file=str(namespace_file), kubernetes_dir=str(tmp_path / "none")
    )
    assert not [key for key in found if key.startswith("k8s.")]


def test_unreadable_namespace_file_is_skipped(tmp_path: Path) -> None:
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "HOSTNAME": "p"}
    found = detect_attributes(env, namespace_file=str(tmp_path))  # a directory: unreadable
    assert attr.K8S_NAMESPACE_NAME not in found
    assert found[attr.K8S_POD_NAME] == "p"


@pytest.mark.parametrize(
    ("value", "count"),
    [
        ("0,1,2,3", 4),
        ("3", 1),
        ("", 0),
        ("-1", 0),
        ("0,-1,2", 1),
        ("GPU-a1,GPU-b2", 2),
        ("0,,1", 1),
    ],
)
def test_gpu_count_from_cuda_visible_devices(value: str, count: int) -> None:
    assert visible_gpu_count(value) == count
    assert detect_attributes({"CUDA_VISIBLE_DEVICES": value})[attr.GPU_COUNT] == count


def test_no_gpu_count_when_cuda_visible_devices_is_unset_and_no_nvidia_smi(
    tmp_path: Path,
) -> None:
    assert attr.GPU_COUNT not in detect_attributes({"PATH": str(tmp_path)})
    assert nvidia_smi_gpu_count(search_path=str(tmp_path)) is None


def test_gpu_count_from_nvidia_smi_when_cuda_visible_devices_is_unset(tmp_path: Path) -> None:
    _fake_nvidia_smi(tmp_path, _FOUR_GPUS)
    assert detect_attributes({"PATH": str(tmp_path)})[attr.GPU_COUNT] == 4


def test_cuda_visible_devices_wins_over_nvidia_smi(tmp_path: Path) -> None:
    # The variable says what this process may use; nvidia-smi counts the machine.
    _fake_nvidia_smi(tmp_path, _FOUR_GPUS)
    found = detect_attributes({"PATH": str(tmp_path), "CUDA_VISIBLE_DEVICES": "2"})
    assert found[attr.GPU_COUNT] == 1


def test_nvidia_smi_query_can_be_turned_off(tmp_path: Path) -> None:
    _fake_nvidia_smi(tmp_path, _FOUR_GPUS)
    assert attr.GPU_COUNT not in detect_attributes({"PATH": str(tmp_path)}, nvidia_smi=None)


def test_nvidia_smi_by_path_ignores_banner_lines(tmp_path: Path) -> None:
    program = _fake_nvidia_smi(
        tmp_path, "echo 'WARNING: infoROM is corrupted at gpu 0000:00:00.0'\n" + _FOUR_GPUS
    )
    assert nvidia_smi_gpu_count(str(program)) == 4


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("echo 'NVIDIA-SMI has failed' >&2\nexit 9", id="fails"),
        pytest.param("echo 'No devices were found'", id="nothing recognisable"),
        pytest.param("exit 0", id="silent"),
    ],
)
def test_nvidia_smi_that_cannot_tell_leaves_the_count_out(tmp_path: Path, body: str) -> None:
    _fake_nvidia_smi(tmp_path, body)
    assert nvidia_smi_gpu_count(search_path=str(tmp_path)) is None
    assert attr.GPU_COUNT not in detect_attributes({"PATH": str(tmp_path)})


def test_hanging_nvidia_smi_is_killed_and_left_out(tmp_path: Path) -> None:
    # exec: the shell becomes the sleeper, so the kill on timeout reaches it.
    program = _fake_nvidia_smi(tmp_path, "exec sleep 30")
    assert nvidia_smi_gpu_count(str(program), timeout=0.2) is None


def test_nvidia_smi_that_is_not_executable_is_left_out(tmp_path: Path) -> None:
    program = tmp_path / "nvidia-smi"
    program.write_text(_FOUR_GPUS, encoding="utf-8")  # no shebang, no exec bit
    assert nvidia_smi_gpu_count(str(program)) is None


def test_deployment_environment_from_the_first_variable_that_is_set() -> None:
    # nemo.lens's two variables first, then upstream's DEPLOYMENT_ENV, then ENVIRONMENT.
    names = ("NEMO_LENS_ENVIRONMENT", "DEPLOYMENT_ENVIRONMENT", "DEPLOYMENT_ENV", "ENVIRONMENT")
    assert names == DEPLOYMENT_ENVIRONMENT_VARIABLES
    for index, name in enumerate(names):
        env = {later: f"from-{later}" for later in names[index:]}
        found = detect_attributes(env)
        assert found[attr.DEPLOYMENT_ENVIRONMENT] == f"from-{name}"
        assert found[attr.DEPLOYMENT_ENVIRONMENT_NAME] == f"from-{name}"
    assert attr.DEPLOYMENT_ENVIRONMENT not in detect_attributes({"ENVIRONMENT": "  "})


def test_the_gpu_count_is_sent_under_both_keys() -> None:
    found = detect_attributes({"CUDA_VISIBLE_DEVICES": "0,1"})
    assert found[attr.HOST_GPU_COUNT] == found[attr.GPU_COUNT] == 2


def test_local_rank_is_recorded() -> None:
    assert detect_attributes({"LOCAL_RANK": "2"})[attr.LOCAL_RANK] == 2


# -- configuration ------------------------------------------------------------------------------


def test_config_attributes() -> None:
    cfg = NemoLensConfig(
        service_name="trainer",
        run_id="run9",
        user="alice",
        wandb_entity="team",
        wandb_project="llm",
    )
    # Upstream's keys and nemo.lens's own, side by side with the same values.
    assert config_attributes(cfg, rank=3, world_size=8) == {
        attr.SERVICE_NAME: "trainer",
        attr.SERVICE_VERSION: package_version(),
        attr.DL_RANK: 3,
        attr.RANK: 3,
        attr.DL_WORLD_SIZE: 8,
        attr.WORLD_SIZE: 8,
        attr.NEMO_RUN_ID: "run9",
        attr.RUN_ID: "run9",
        attr.SERVICE_INSTANCE_ID: "run9-rank3",
        attr.NEMO_USER_ID: "alice",
        attr.USER: "alice",
        attr.WANDB_ENTITY: "team",
        attr.WANDB_PROJECT: "llm",
    }


def test_empty_optional_fields_are_left_out() -> None:
    found = config_attributes(NemoLensConfig(run_id="r"), rank=0, world_size=1)
    assert attr.USER not in found
    assert attr.NEMO_USER_ID not in found
    assert attr.WANDB_ENTITY not in found
    assert attr.WANDB_PROJECT not in found


def test_service_version_is_the_package_version() -> None:
    import nemo.lens

    assert package_version() == nemo.lens.__version__


def test_built_resource_carries_sdk_attributes() -> None:
    resource = build_resource(NemoLensConfig(run_id="r"), rank=0, world_size=1)
    assert resource.attributes["telemetry.sdk.language"] == "python"
    assert resource.attributes[attr.SERVICE_INSTANCE_ID] == "r-rank0"


def test_every_set_up_draws_its_own_lifetime_id() -> None:
    # What tells a resumed job's process from the crashed one: same run, rank, maybe pid.
    config = NemoLensConfig(run_id="r")
    first = build_resource(config, rank=0, world_size=1).attributes[attr.LIFETIME_ID]
    second = build_resource(config, rank=0, world_size=1).attributes[attr.LIFETIME_ID]
    assert isinstance(first, str) and len(first) == 16
    assert first != second
    kept = build_resource(config, 0, 1, {attr.LIFETIME_ID: "mine"}).attributes[attr.LIFETIME_ID]
    assert kept == "mine"


# -- precedence, as seen on exported spans -----------------------------------------------


def test_precedence_detected_then_env_then_config_then_caller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SLURM_JOB_ID", "1")
    monkeypatch.setenv("SLURM_JOB_NAME", "from-detection")
    monkeypatch.setenv("SLURM_CLUSTER_NAME", "detected-only")
    monkeypatch.setenv(
        "OTEL_RESOURCE_ATTRIBUTES",
        "slurm.job.name=from-env,service.name=env-svc,nemo.rank=99,"
        "team=env-team,cost.center=env-cc",
    )
    exporter = InMemorySpanExporter()
    cfg = NemoLensConfig(
        enabled=True, exporter="none", metrics_enabled=False, service_name="cfg-svc", run_id="r1"
    )
    handle = setup_telemetry(
        cfg,
        rank=0,
        world_size=2,
        span_exporter=exporter,
        export_strategy="all_ranks",
        resource_attributes={"cost.center": "caller-cc", "service.name": "caller-svc"},
    )
    with handle.tracer.start_as_current_span("s"):
        pass

    (span,) = exporter.get_finished_spans()
    resource = span.resource.attributes
    assert resource["slurm.cluster.name"] == "detected-only"  # detected, nobody overrides
    assert resource["slurm.job.name"] == "from-env"  # env beats detected
    assert resource["team"] == "env-team"  # env only
    assert resource["nemo.rank"] == 0  # config beats env
    assert resource["cost.center"] == "caller-cc"  # caller beats env
    assert resource["service.name"] == "caller-svc"  # caller beats config and env
    assert resource["service.instance.id"] == "r1-rank0"
    assert dict(handle.resource_attributes) == dict(resource)


def test_caller_attributes_win_over_detected_ones(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Detection must never silently override what the caller passed.
    monkeypatch.setenv("SLURM_JOB_ID", "1")
    monkeypatch.setenv("SLURM_JOB_NAME", "detected-job")
    monkeypatch.setenv("SLURM_PROCID", "3")
    monkeypatch.setenv("SLURM_NTASKS", "8")
    monkeypatch.setenv("K8S_NAMESPACE", "detected-ns")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("POD_NAMESPACE", "detected-ns")
    exporter = InMemorySpanExporter()
    cfg = NemoLensConfig(enabled=True, exporter="none", metrics_enabled=False, run_id="r")
    caller: dict[str, AttributeValue] = {
        "host.name": "caller-host",
        "process.pid": 1,
        "nemo.gpu.count": 8,
        "slurm.job.name": "caller-job",
        "slurm.procid": 0,
        "slurm.ntasks": "2",
        "k8s.namespace.name": "caller-ns",
        "dl.rank": 5,
        "host.gpu.count": 8,
    }
    handle = setup_telemetry(cfg, span_exporter=exporter, resource_attributes=caller)
    with handle.tracer.start_as_current_span("s"):
        pass
    (span,) = exporter.get_finished_spans()
    resource = span.resource.attributes
    # Upstream let detection overwrite what the caller passed; nemo.lens keeps the caller's.
    for key, value in caller.items():
        assert resource[key] == value, key
    # What the caller did not pass is still detected.
    assert resource["k8s.pod.name"]


def test_otel_resource_attributes_are_honoured_over_detection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "nemo.gpu.count=2,region=eu-west")
    cfg = NemoLensConfig(enabled=True, exporter="none", metrics_enabled=False)
    handle = setup_telemetry(cfg, span_exporter=InMemorySpanExporter())
    # The SDK parses the variable's values as strings.
    assert handle.resource_attributes["nemo.gpu.count"] == "2"
    assert handle.resource_attributes["region"] == "eu-west"


def test_otel_service_name_is_below_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_SERVICE_NAME", "from-env")
    exporter = InMemorySpanExporter()
    cfg = NemoLensConfig(enabled=True, exporter="none", metrics_enabled=False)
    handle = setup_telemetry(cfg, span_exporter=exporter)
    # A config built in code keeps its service name; from_env() is how the variable applies.
    assert handle.resource_attributes["service.name"] == "nemo"
    handle.shutdown()
    handle = setup_telemetry(_enabled_from_env(monkeypatch), span_exporter=exporter)
    assert handle.resource_attributes["service.name"] == "from-env"


def _enabled_from_env(monkeypatch: pytest.MonkeyPatch) -> NemoLensConfig:
    monkeypatch.setenv("NEMO_LENS_ENABLED", "1")
    monkeypatch.setenv("NEMO_LENS_EXPORTER", "none")
    monkeypatch.setenv("NEMO_LENS_METRICS_ENABLED", "0")
    return NemoLensConfig.from_env()


def test_invalid_caller_attribute_is_rejected_before_set_up() -> None:
    cfg = NemoLensConfig(enabled=True, exporter="none", metrics_enabled=False)
    with pytest.raises(TypeError) as info:
        setup_telemetry(cfg, resource_attributes={"bad": {"nested": 1}})
    assert "resource attribute 'bad' has value {'nested': 1} of type dict" in str(info.value)
    # Nothing was installed, so a corrected call is a first call.
    handle = setup_telemetry(cfg, resource_attributes={"good": ["a", "b"]})
    assert handle.resource_attributes["good"] == ("a", "b")
