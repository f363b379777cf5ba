"""Names of the resource attributes nemo.lens sets: :mod:`nemo.lens.semconv.resource`,
importable where they always were."""

from __future__ import annotations

from nemo.lens.semconv import resource as _resource
from nemo.lens.semconv.resource import *  # noqa: F403

__all__ = [*_resource.__all__]
