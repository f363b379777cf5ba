"""Every contrib module imports without its extra; its helpers then name the install command."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest

# Run in a fresh interpreter where the extras cannot be imported, whatever this
# one has installed: a None entry in sys.modules makes `import name` fail.
_PROBE = textwrap.dedent(
    """
    import json, sys
    for name in (
        "fastapi", "aiohttp", "ray", "torch", "torch.distributed",
        "opentelemetry.instrumentation.fastapi", "opentelemetry.instrumentation.aiohttp_client",
    ):
        sys.modules[name] = None

    import nemo.lens.contrib
    import nemo.lens.distributed
    from nemo.lens.contrib import MissingExtraError, aiohttp, fastapi, nccl, ray

    # Importing stays light: not even the OpenTelemetry SDK comes in.
    heavy = sorted(m for m in sys.modules if m.startswith("opentelemetry.sdk"))

    errors = {}
    calls = {
        "instrument_fastapi": lambda: fastapi.instrument_fastapi(object()),
        "uninstrument_fastapi": lambda: fastapi.uninstrument_fastapi(object()),
        "instrument_aiohttp_client": aiohttp.instrument_aiohttp_client,
        "uninstrument_aiohttp_client": aiohttp.uninstrument_aiohttp_client,
        "aiohttp_trace_config": aiohttp.aiohttp_trace_config,
        "context_to_tensor": nccl.context_to_tensor,
    }
    for name, call in calls.items():
        try:
            call()
        except MissingExtraError as exc:
            errors[name] = [str(exc), isinstance(exc, ImportError)]
    # What needs no extra works.
    works = {
        "bytes": nccl.carrier_from_bytes(nccl.context_to_bytes()) == {},
        "ray": ray.inject_ray_context() == {},
    }
    print(json.dumps({"errors": errors, "works": works, "heavy": heavy}))
    """
)


@pytest.fixture(scope="module")
def probe() -> dict[str, Any]:
    completed = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=60, check=False
    )
    assert completed.returncode == 0, completed.stderr
    result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize(
    ("helper", "extra"),
    [
        ("instrument_fastapi", "fastapi"),
        ("uninstrument_fastapi", "fastapi"),
        ("instrument_aiohttp_client", "aiohttp"),
        ("uninstrument_aiohttp_client", "aiohttp"),
        ("aiohttp_trace_config", "aiohttp"),
        ("context_to_tensor", "torch"),
    ],
)
def test_a_helper_without_its_extra_names_the_install_command(
    probe: dict[str, Any], helper: str, extra: str
) -> None:
    message, is_import_error = probe["errors"][helper]
    assert f"{helper}() needs the Python module" in message
    assert f"install it with: pip install 'nemo-lens[{extra}]'" in message
    assert is_import_error is True


def test_what_needs_no_extra_still_works(probe: dict[str, Any]) -> None:
    assert probe["works"] == {"bytes": True, "ray": True}


def test_importing_contrib_and_distributed_does_not_import_the_sdk(
    probe: dict[str, Any],
) -> None:
    assert probe["heavy"] == []
