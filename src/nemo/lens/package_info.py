"""What this package is: its version in parts, name, description, licence and keywords.

Upstream v0.2.0's module with this project's values, which restate ``pyproject.toml`` (a test
compares them with the installed metadata). No homepage, repository or contact is published
yet, so those are empty strings rather than invented ones.
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


# "0.3.0rc1" -> "0", "3", "0", "rc1".
_PARTS: Final = re.findall(r"^(\d+)\.(\d+)\.(\d+)(.*)$", __version__)[0]

MAJOR: Final[int] = int(_PARTS[0])
MINOR: Final[int] = int(_PARTS[1])
PATCH: Final[int] = int(_PARTS[2])
PRE_RELEASE: Final[str] = _PARTS[3]
"""What follows ``MAJOR.MINOR.PATCH`` in the version (``"rc1"``, ...); ``""`` for a release."""
VERSION: Final[tuple[int, int, int, str]] = (MAJOR, MINOR, PATCH, PRE_RELEASE)

__package_name__: Final = "nemo-lens"
"""The distribution's name, as ``pip install`` and ``importlib.metadata`` take it."""
__description__: Final = (
    "OpenTelemetry instrumentation for distributed training, RL and inference jobs, "
    "with a schema-generated span-group vocabulary."
)
__license__: Final = "Apache-2.0"
__keywords__: Final = (
    "opentelemetry, tracing, telemetry, observability, distributed training, "
    "reinforcement learning, inference"
)
__contact_names__: Final = ""
__contact_emails__: Final = ""
__homepage__: Final = ""
__repository_url__: Final = ""
__download_url__: Final = ""
