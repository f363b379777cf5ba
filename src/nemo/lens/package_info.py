"""What this package is: its version in parts, its name, description, licence and keywords.

Upstream ``nemo-lens`` v0.2.0's module, with this project's values. The version is
written in one place, ``nemo.lens._version`` (``pyproject.toml`` reads it; this module
and ``nemo.lens.__version__`` re-export it); the parts below are taken from it. The
other values restate ``pyproject.toml``'s ``[project]`` table, and a test checks that they match the
installed distribution's metadata.

This project publishes no homepage, repository, download page or contact
address, so those values are empty strings rather than invented ones (and
``pyproject.toml`` declares none). They will name real places when the project
has them, in both files at once.

Importing this module imports nothing of OpenTelemetry.
"""

from __future__ import annotations

import re
from typing import Final

from nemo.lens._version import __version__

__all__ = [
    "MAJOR",
    "MINOR",
    "PATCH",
    "PRE_RELEASE",
    "VERSION",
    "__contact_emails__",
    "__contact_names__",
    "__description__",
    "__download_url__",
    "__homepage__",
    "__keywords__",
    "__license__",
    "__package_name__",
    "__repository_url__",
    "__version__",
]


def _parts(version: str) -> tuple[int, int, int, str]:
    """``"0.3.0rc1"`` -> ``(0, 3, 0, "rc1")``: major, minor, patch, the rest."""
    found = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)(.*)", version)
    if found is None:  # pragma: no cover - the version is ours, and a test reads it
        raise ValueError(
            f"nemo.lens.package_info.__version__ {version!r} is not MAJOR.MINOR.PATCH[...]"
        )
    major, minor, patch, rest = found.groups()
    return int(major), int(minor), int(patch), rest


_PARTS: Final = _parts(__version__)

MAJOR: Final[int] = _PARTS[0]
"""The major version."""
MINOR: Final[int] = _PARTS[1]
"""The minor version."""
PATCH: Final[int] = _PARTS[2]
"""The patch version."""
PRE_RELEASE: Final[str] = _PARTS[3]
"""What follows ``MAJOR.MINOR.PATCH`` in the version (``"rc1"``, ...); ``""`` for a release."""
VERSION: Final[tuple[int, int, int, str]] = (MAJOR, MINOR, PATCH, PRE_RELEASE)
"""``(MAJOR, MINOR, PATCH, PRE_RELEASE)``."""

__package_name__: Final = "nemo-lens"
"""The distribution's name, as ``pip install`` and ``importlib.metadata`` take it."""
__description__: Final = (
    "OpenTelemetry instrumentation for distributed training, RL and inference jobs, "
    "with a schema-generated span-group vocabulary."
)
"""The one-line summary of ``pyproject.toml``."""
__license__: Final = "Apache-2.0"
"""The licence, as an SPDX identifier."""
__keywords__: Final = (
    "opentelemetry, tracing, telemetry, observability, distributed training, "
    "reinforcement learning, inference"
)
"""The keywords of ``pyproject.toml``, separated by commas."""
__contact_names__: Final = ""
"""Who to contact: none published yet (``pyproject.toml`` declares no authors)."""
__contact_emails__: Final = ""
"""Where to write: none published yet."""
__homepage__: Final = ""
"""The project's homepage: none published yet (no ``[project.urls]`` entry)."""
__repository_url__: Final = ""
"""The source repository's address: none published yet."""
__download_url__: Final = ""
"""Where releases are downloaded from: none published yet."""
