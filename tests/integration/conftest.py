"""A real OTLP backend for the integration tests: Arize Phoenix on loopback, once per session.

Phoenix runs from its own virtualenv (``scripts/phoenix-venv.sh`` creates it at
``.cache/phoenix-venv``; ``NEMO_LENS_PHOENIX_VENV`` points elsewhere), as a
separate process started through ``phoenix_launcher.py``, which keeps both of
its listeners on 127.0.0.1. Without that virtualenv the tests that need the
server are skipped, naming the script to run; with ``NEMO_LENS_REQUIRE_PHOENIX=1``
(CI) they fail instead, so a CI run that lost its backend cannot pass quietly.

The server gets free ports, a temporary ``PHOENIX_WORKING_DIR`` (its SQLite
database), an environment cleared of the caller's ``PHOENIX_*`` and ``OTEL_*``
variables (so the launcher's offline defaults apply). It must be ready within
``NEMO_LENS_PHOENIX_START_TIMEOUT`` seconds (default 60), otherwise the session
fails with the tail of its log. At the end it is terminated (then killed if it
lingers) and its working directory removed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
LAUNCHER = Path(__file__).with_name("phoenix_launcher.py")

VENV_VARIABLE = "NEMO_LENS_PHOENIX_VENV"
REQUIRE_VARIABLE = "NEMO_LENS_REQUIRE_PHOENIX"
START_TIMEOUT_VARIABLE = "NEMO_LENS_PHOENIX_START_TIMEOUT"
DEFAULT_VENV = REPO_ROOT / ".cache" / "phoenix-venv"
DEFAULT_START_TIMEOUT_S = 60.0

LOOPBACK = "127.0.0.1"
_STOP_TIMEOUT_S = 15.0
_POLL_INTERVAL_S = 0.2
_LOG_TAIL_LINES = 40
# Another process can take a port between our probe and Phoenix's bind; only
# then is a start retried, with fresh ports.
_START_ATTEMPTS = 3
_ADDRESS_IN_USE = re.compile(r"address already in use|failed to bind", re.IGNORECASE)

_TRUE = frozenset({"1", "true", "yes", "on"})


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in _TRUE


def _start_timeout() -> float:
    raw = os.environ.get(START_TIMEOUT_VARIABLE, "").strip()
    if not raw:
        return DEFAULT_START_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise pytest.UsageError(f"{START_TIMEOUT_VARIABLE}={raw!r}: expected seconds > 0")
    return value


def _log_tail(path: Path, lines: int = _LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"(no server log: {exc})"
    return "\n".join(text.splitlines()[-lines:]) or "(server log is empty)"


def _free_ports(count: int) -> list[int]:
    """Return *count* distinct ports free on loopback right now (all probed at once)."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind((LOOPBACK, 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _accepts_connections(port: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=1.0):
            return True
    except OSError:
        return False


# The REST client ignores proxy variables: the server is on this machine.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass(frozen=True)
class PhoenixServer:
    """A running Phoenix: where to export to and how to read spans back."""

    http_port: int
    grpc_port: int
    log_path: Path

    @property
    def http_url(self) -> str:
        """Base URL of the HTTP listener (UI, REST API, and OTLP/HTTP at ``/v1/traces``)."""
        return f"http://{LOOPBACK}:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        """OTLP/gRPC endpoint; the ``http`` scheme makes the exporter use plaintext."""
        return f"http://{LOOPBACK}:{self.grpc_port}"

    def get_json(self, path: str, params: list[tuple[str, str]] | None = None) -> Any:
        """GET ``path`` from the REST API; ``None`` on 404 (an unknown project)."""
        url = self.http_url + path
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            with _OPENER.open(url, timeout=10) as response:
                return json.load(response)
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise

    def trace_spans(self, project: str, trace_id: str) -> list[dict[str, Any]]:
        """Every span of *trace_id* stored so far in *project* (all pages)."""
        path = f"/v1/projects/{urllib.parse.quote(project, safe='')}/spans"
        spans: list[dict[str, Any]] = []
        cursor = None
        while True:
            params = [("trace_id", trace_id), ("limit", "100")]
            if cursor:
                params.append(("cursor", cursor))
            body = self.get_json(path, params)
            if body is None:  # the project appears with its first stored span
                return spans
            spans.extend(body["data"])
            cursor = body.get("next_cursor")
            if not cursor:
                return spans

    def wait_for_spans(
        self, project: str, trace_id: str, count: int, timeout_s: float = 20.0
    ) -> list[dict[str, Any]]:
        """Poll until *count* spans of *trace_id* are stored, then return them all.

        Ingestion is asynchronous and batched, so once *count* have arrived the
        trace is read once more after a short pause and must not have grown:
        a span that should not have been exported and lands a moment later
        still shows up. Fails the test, listing what did arrive, when *count*
        are not there within *timeout_s*.
        """
        deadline = time.monotonic() + timeout_s
        spans: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            spans = self.trace_spans(project, trace_id)
            if len(spans) >= count:
                time.sleep(0.5)
                return self.trace_spans(project, trace_id)
            time.sleep(_POLL_INTERVAL_S)
        names = sorted(span["name"] for span in spans)
        pytest.fail(
            f"Phoenix stored {len(spans)} of {count} spans of trace {trace_id} in project "
            f"{project!r} within {timeout_s:.0f} s: {names}\n"
            f"--- server log (tail) ---\n{_log_tail(self.log_path)}",
            pytrace=False,
        )


def _phoenix_python() -> Path:
    """The Phoenix virtualenv's interpreter, or skip/fail (CI) when it is missing."""
    venv = Path(os.environ.get(VENV_VARIABLE, "").strip() or DEFAULT_VENV)
    python = venv / "bin" / "python"
    if python.is_file():
        return python
    reason = (
        f"the Phoenix virtualenv is missing ({python} not found); "
        f"create it with scripts/phoenix-venv.sh (or point {VENV_VARIABLE} at one)"
    )
    if _env_flag(REQUIRE_VARIABLE):
        pytest.fail(f"{REQUIRE_VARIABLE} is set and {reason}", pytrace=False)
    pytest.skip(reason)


def _server_environment(workdir: Path, http_port: int, grpc_port: int) -> dict[str, str]:
    # Nothing of the caller's Phoenix or OpenTelemetry settings may leak in (an
    # OTEL_EXPORTER_OTLP_ENDPOINT would make Phoenix trace itself into it, a
    # PHOENIX_* value would override the launcher's offline defaults), nor a
    # PYTHONPATH/PYTHONHOME that would mix the project's packages into Phoenix's.
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PHOENIX_", "OTEL_")) and key not in ("PYTHONPATH", "PYTHONHOME")
    }
    env.update(
        PHOENIX_WORKING_DIR=str(workdir),
        PHOENIX_PORT=str(http_port),
        PHOENIX_GRPC_PORT=str(grpc_port),
        NEMO_LENS_PHOENIX_PARENT_PID=str(os.getpid()),
        PYTHONUNBUFFERED="1",
    )
    return env


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=_STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=_STOP_TIMEOUT_S)


def _wait_until_ready(
    process: subprocess.Popen[bytes], server: PhoenixServer, deadline: float
) -> bool:
    """Wait for both listeners; ``False`` if the process exited first or *deadline* passed."""
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        try:
            with _OPENER.open(f"{server.http_url}/readyz", timeout=2) as response:
                http_ready = response.status == 200
        except (urllib.error.URLError, OSError):
            http_ready = False
        if http_ready and _accepts_connections(server.grpc_port):
            return True
        time.sleep(_POLL_INTERVAL_S)
    return False


@pytest.fixture(scope="session")
def phoenix() -> Iterator[PhoenixServer]:
    """Start Phoenix once for the session; stop it and remove its state at the end."""
    python = _phoenix_python()
    timeout_s = _start_timeout()
    workdir = Path(tempfile.mkdtemp(prefix="nemo-lens-phoenix-"))
    process: subprocess.Popen[bytes] | None = None
    try:
        started = time.monotonic()
        deadline = started + timeout_s
        for attempt in range(1, _START_ATTEMPTS + 1):
            http_port, grpc_port = _free_ports(2)
            server = PhoenixServer(http_port, grpc_port, workdir / f"server-{attempt}.log")
            with server.log_path.open("wb") as log:
                process = subprocess.Popen(
                    [str(python), str(LAUNCHER)],
                    cwd=workdir,
                    env=_server_environment(workdir, http_port, grpc_port),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            if _wait_until_ready(process, server, deadline):
                elapsed = time.monotonic() - started
                # Shown with -s; useful when the start time creeps towards the timeout.
                print(f"\nPhoenix ready in {elapsed:.1f} s at {server.http_url}", file=sys.stderr)
                yield server
                return
            exited = process.poll() is not None
            _stop(process)
            tail = _log_tail(server.log_path)
            if exited and _ADDRESS_IN_USE.search(tail) and attempt < _START_ATTEMPTS:
                continue
            what = (
                f"exited with status {process.returncode}"
                if exited
                else f"was not ready within {timeout_s:.0f} s ({START_TIMEOUT_VARIABLE})"
            )
            pytest.fail(
                f"Phoenix {what} (HTTP port {http_port}, gRPC port {grpc_port})\n"
                f"--- server log (tail) ---\n{tail}",
                pytrace=False,
            )
    finally:
        if process is not None:
            _stop(process)
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def project(request: pytest.FixtureRequest) -> str:
    """A Phoenix project name of this test's own, so no two tests read each other's spans.

    Exported spans land in the project named by their resource attribute
    ``openinference.project.name``. The name is safe in a URL path segment.
    """
    stem = re.sub(r"[^A-Za-z0-9_-]+", "-", request.node.name).strip("-")
    return f"{stem}-{uuid.uuid4().hex[:8]}"
