"""Shared helpers for the reliability suite: real jobs in real processes.

Every scenario runs a small instrumented job with ``python -c`` in a fresh
interpreter, with an environment cleaned of the caller's telemetry settings,
and judges it by what a user would see: its exit status, how long it took to
exit, what it logged on stderr and the spans that reached the exporter.

The suite needs no network: a "dead" collector is a 127.0.0.1 port nothing
listens on, a "silent" one a 127.0.0.1 socket that accepts connections and
never answers, a real one a small OTLP/HTTP receiver on 127.0.0.1.

The one-million-span case is marked ``slow`` and runs only when
``NEMO_LENS_SLOW_TESTS=1`` (see ``docs/reliability.md`` for its cost).
"""

from __future__ import annotations

import gzip
import http.server
import json
import os
import queue
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest

from tests.trace_file import spans_in

REPO = Path(__file__).resolve().parents[2]

# Variables that would change what a scenario's job does; removed from its environment.
_FOREIGN_PREFIXES = ("NEMO_LENS_", "OTEL_", "SLURM_", "TORCHELASTIC_", "WANDB_", "LOCAL_RANK")

SLOW_ENABLED = os.environ.get("NEMO_LENS_SLOW_TESTS", "").strip() == "1"

# The scenarios read /proc, fork, make named pipes and send POSIX signals: they
# describe Linux, where the jobs run.
collect_ignore_glob = [] if sys.platform == "linux" else ["test_*.py"]

# Shared by the jobs: how to read memory and end the script's output.
JOB_PRELUDE = """
import json, os, signal, sys, threading, time

def rss_mb():
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")

def report(**values):
    print("RESULT " + json.dumps(values), flush=True)
"""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "slow: runs for minutes; only with NEMO_LENS_SLOW_TESTS=1 (CI sets it)"
    )


@dataclass
class Job:
    """A finished scenario process."""

    returncode: int
    stdout: str
    stderr: str
    elapsed_s: float

    @property
    def result(self) -> dict[str, Any]:
        """The job's ``report(...)`` values (the last ``RESULT`` line)."""
        for line in reversed(self.stdout.splitlines()):
            if line.startswith("RESULT "):
                loaded: dict[str, Any] = json.loads(line[len("RESULT ") :])
                return loaded
        raise AssertionError(f"the job reported nothing\nstdout:\n{self.stdout}\n{self.stderr}")

    def stderr_lines(self, needle: str) -> list[str]:
        """The stderr lines that contain *needle*."""
        return [line for line in self.stderr.splitlines() if needle in line]


def job_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The caller's environment without telemetry settings, plus *extra*."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_FOREIGN_PREFIXES)}
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


def job_command(script: str, *args: str) -> list[str]:
    """The command line that runs *script* (after the prelude) with *args*."""
    code = textwrap.dedent(JOB_PRELUDE) + textwrap.dedent(script)
    return [sys.executable, "-c", code, *args]


def run_job(
    script: str,
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 120,
) -> Job:
    """Run *script* to completion in a fresh interpreter and return what it did."""
    started = time.monotonic()
    completed = subprocess.run(
        job_command(script, *args),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=job_env(env),
        cwd=cwd,
        check=False,
    )
    return Job(completed.returncode, completed.stdout, completed.stderr, time.monotonic() - started)


def read_spans(path: Path) -> list[dict[str, Any]]:
    """Every finished span in a ``file`` trace, each with its resource; fails on any line
    that is not one JSON object (see :func:`tests.trace_file.spans_in`)."""
    return spans_in(path)


def count_lines(path: Path) -> int:
    """Lines in *path*, counted without parsing (for the big files)."""
    with path.open("rb") as data:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: data.read(1 << 20), b""))


@pytest.fixture
def dead_endpoint() -> str:
    """An OTLP endpoint on 127.0.0.1 that refuses connections (nothing listens there)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """An OTLP endpoint on 127.0.0.1 that accepts connections and never answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(64)
        yield f"http://127.0.0.1:{server.getsockname()[1]}"


class RunningJob:
    """A scenario process that is still running, for tests that signal it."""

    def __init__(
        self,
        script: str,
        *args: str,
        env: Mapping[str, str] | None = None,
        interactive: bool = False,
    ) -> None:
        self.started = time.monotonic()
        # interactive: the job reads commands from its stdin (see send).
        self.process = subprocess.Popen(
            job_command(script, *args),
            stdin=subprocess.PIPE if interactive else None,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=job_env(env),
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stdout: list[str] = []
        self._stdout_ended = False  # the reader's None was taken from the queue
        assert self.process.stdout is not None
        reader = threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True)
        reader.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self._lines.put(line)
        self._lines.put(None)

    def wait_for(self, marker: str, timeout: float = 60) -> None:
        """Block until the job prints a line equal to *marker*."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.process.kill()
                raise AssertionError(f"the job did not print {marker!r} within {timeout} s")
            try:
                line = self._lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                self._stdout_ended = True
                raise AssertionError(f"the job ended before printing {marker!r}: {self.finish()}")
            self._stdout.append(line)
            if line.strip() == marker:
                return

    def send(self, line: str) -> None:
        """Write *line* to the job's stdin (an ``interactive`` job)."""
        assert self.process.stdin is not None, "not an interactive job"
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def finish(self, timeout: float = 60) -> Job:
        """Wait for the job to end and return what it did."""
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            returncode = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise
        assert self.process.stderr is not None
        stderr = self.process.stderr.read()
        while not self._stdout_ended:
            line = self._lines.get(timeout=10)
            if line is None:
                break
            self._stdout.append(line)
        return Job(returncode, "".join(self._stdout), stderr, time.monotonic() - self.started)


# -- a real OTLP/HTTP receiver on loopback -------------------------------------------------


@dataclass
class Received:
    """One request an :class:`OtlpReceiver` accepted."""

    path: str
    headers: dict[str, str]
    body: bytes


class OtlpReceiver:
    """Accepts OTLP/HTTP exports on 127.0.0.1 and keeps every request.

    Keep-alive is on, as in a real collector, so a client that shares one
    connection between processes would garble it.
    """

    def __init__(self) -> None:
        self.requests: list[Received] = []
        received = self.requests

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                if self.headers.get("Content-Encoding", "") == "gzip":
                    body = gzip.decompress(body)
                received.append(
                    Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                )
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep the test output clean

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def spans(self) -> list[Any]:
        """Every span received on ``/v1/traces``, as protobuf ``Span`` messages."""
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        found = []
        for request in list(self.requests):
            if request.path != "/v1/traces":
                continue
            message = ExportTraceServiceRequest.FromString(request.body)
            for resource_spans in message.resource_spans:
                for scope_spans in resource_spans.scope_spans:
                    found.extend(scope_spans.spans)
        return found

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def otlp_receiver() -> Iterator[OtlpReceiver]:
    """A running :class:`OtlpReceiver`."""
    receiver = OtlpReceiver()
    try:
        yield receiver
    finally:
        receiver.close()


class GrpcReceiver:
    """Accepts OTLP/gRPC trace exports on 127.0.0.1 and keeps every span."""

    def __init__(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        import grpc
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

        self._spans: list[Any] = []
        self.requests: list[Any] = []
        """Every ``ExportTraceServiceRequest`` received, whole (resource and scope too)."""
        spans, requests = self._spans, self.requests

        class Service(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request: Any, context: Any) -> Any:
                requests.append(request)
                for resource_spans in request.resource_spans:
                    for scope_spans in resource_spans.scope_spans:
                        spans.extend(scope_spans.spans)
                return trace_service_pb2.ExportTraceServiceResponse()

        self.server = grpc.server(ThreadPoolExecutor(max_workers=4))
        # The generated gRPC module has no annotations.
        add_servicer: Any = trace_service_pb2_grpc.add_TraceServiceServicer_to_server
        add_servicer(Service(), self.server)
        port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()
        self.endpoint = f"http://127.0.0.1:{port}"

    def spans(self) -> list[Any]:
        """Every span received so far, as protobuf ``Span`` messages."""
        return list(self._spans)

    def close(self) -> None:
        self.server.stop(grace=None)


@pytest.fixture
def grpc_receiver() -> Iterator[GrpcReceiver]:
    """A running :class:`GrpcReceiver`."""
    receiver = GrpcReceiver()
    try:
        yield receiver
    finally:
        receiver.close()
