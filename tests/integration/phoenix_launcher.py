"""Run ``phoenix serve`` with every listener on loopback (127.0.0.1).

Usage (with the Phoenix virtualenv's interpreter, never the project's)::

    .cache/phoenix-venv/bin/python tests/integration/phoenix_launcher.py [serve options]

Phoenix has two listeners. ``PHOENIX_HOST`` moves only the HTTP one (UI, REST API,
OTLP/HTTP); the OTLP/gRPC one is bound by ``phoenix.server.grpc_server`` to
``[::]:<port>``, i.e. every interface, with no setting to change it. Tests on a
shared machine must not open ports to the network, so before handing over to
``phoenix.server.main.main`` this launcher

* sets ``PHOENIX_HOST=127.0.0.1`` (and turns the Prometheus listener off),
* defaults the settings that keep Phoenix offline and quiet (see
  :data:`OFFLINE_DEFAULTS`; a value already in the environment wins), and
* wraps ``grpc.aio.Server.add_insecure_port`` / ``add_secure_port`` so that a
  wildcard address becomes ``127.0.0.1`` and any other non-loopback address is
  refused, instead of silently listening where it should not.

Wrapping the class, not Phoenix's module, keeps this independent of how Phoenix
builds the address and fails loudly (ImportError/AttributeError) should gRPC's
internals move, rather than quietly binding everywhere.

When ``NEMO_LENS_PHOENIX_PARENT_PID`` is set, the launcher also stops the server
once that process is gone, so a test run killed with SIGKILL does not leave a
server behind.

This file runs inside the Phoenix virtualenv: it must not import ``nemo.lens``
(not installed there) and pytest does not collect it.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from typing import Any

LOOPBACK = "127.0.0.1"

_WILDCARD_HOSTS = frozenset({"", "[::]", "::", "0.0.0.0", "[::0]"})
_LOOPBACK_HOSTS = frozenset({"localhost", "[::1]", "::1"})

# Without these Phoenix tries to reach the internet at start (waiting up to 30 s
# when it cannot) and turns on features that open listeners or run code, none of
# which a local or test server wants. Names as in phoenix/config.py of the pinned release.
OFFLINE_DEFAULTS = {
    "PHOENIX_TELEMETRY_ENABLED": "false",
    "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
    "PHOENIX_ALLOWED_SANDBOX_PROVIDERS": "NONE",
    "PHOENIX_DISABLE_AGENT_ASSISTANT": "true",
    "PHOENIX_ENABLE_MCP_SERVER": "false",
    "PHOENIX_LOG_MIGRATIONS": "false",
}

_PARENT_POLL_S = 1.0
_GRACE_S = 10.0


def loopback_address(address: str) -> str:
    """Return the gRPC bind *address* ("host:port") moved onto loopback.

    A wildcard host becomes 127.0.0.1; a loopback host is kept; anything else
    (a real interface, a name that may resolve to one) raises ``ValueError``.
    """
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"refusing gRPC bind address {address!r}: expected host:port")
    if host in _WILDCARD_HOSTS:
        return f"{LOOPBACK}:{port}"
    if host in _LOOPBACK_HOSTS or host.startswith("127."):
        return address
    raise ValueError(f"refusing gRPC bind address {address!r}: not a loopback address")


def pin_grpc_to_loopback() -> None:
    """Make every grpc.aio server in this process bind to loopback only."""
    from grpc.aio import _server

    server_cls: Any = _server.Server
    insecure = server_cls.add_insecure_port
    secure = server_cls.add_secure_port

    def add_insecure_port(self: Any, address: str) -> int:
        return int(insecure(self, loopback_address(address)))

    def add_secure_port(self: Any, address: str, server_credentials: Any) -> int:
        return int(secure(self, loopback_address(address), server_credentials))

    server_cls.add_insecure_port = add_insecure_port
    server_cls.add_secure_port = add_secure_port


def _stop_when_orphaned(parent_pid: int) -> None:
    """Stop this process once *parent_pid* has gone (our parent changes on its death)."""
    while os.getppid() == parent_pid:
        time.sleep(_PARENT_POLL_S)
    print(f"phoenix_launcher: parent process {parent_pid} is gone; stopping", file=sys.stderr)
    # SIGTERM lets uvicorn shut down cleanly; if it has not exited after the grace
    # period (a wedged shutdown), leave without waiting any longer.
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(_GRACE_S)
    os._exit(1)


def main() -> None:
    os.environ["PHOENIX_HOST"] = LOOPBACK
    os.environ["PHOENIX_ENABLE_PROMETHEUS"] = "false"
    for name, value in OFFLINE_DEFAULTS.items():
        os.environ.setdefault(name, value)
    pin_grpc_to_loopback()

    parent = os.environ.get("NEMO_LENS_PHOENIX_PARENT_PID", "").strip()
    if parent:
        threading.Thread(
            target=_stop_when_orphaned, args=(int(parent),), name="orphan-watch", daemon=True
        ).start()

    args = sys.argv[1:]
    if any(arg == "--host" or arg.startswith("--host=") for arg in args):
        sys.exit("phoenix_launcher: --host is not accepted; the server always binds 127.0.0.1")

    # Phoenix lives in its own virtualenv, never in the project's: unchecked here.
    from phoenix.server.main import main as phoenix_main  # type: ignore[import-not-found]

    sys.argv = ["phoenix", "serve", *args]
    phoenix_main()


if __name__ == "__main__":
    main()
