"""Names of the resource attributes nemo.lens sets (re-exported from :mod:`nemo.lens.semconv`).

Standard OpenTelemetry names where a convention exists (``service.*``,
``host.name``, ``process.pid``, ``deployment.environment``, ``k8s.*``);
``nemo.*``, ``slurm.*`` and ``wandb.*`` where none does. The constants, with
their docstrings, live in :mod:`nemo.lens.semconv.resource` beside every other
name the library emits; this module keeps them importable where they always were.
"""

from __future__ import annotations

from nemo.lens.semconv import resource as _resource
from nemo.lens.semconv.resource import *  # noqa: F403

__all__ = [*_resource.__all__]
