"""Every name nemo.lens emits: attribute keys, metric names and their fixed values.

One ``Final`` string per name, generated from the schema's catalogues into
:mod:`~nemo.lens.semconv.resource`, :mod:`~nemo.lens.semconv.attributes` and
:mod:`~nemo.lens.semconv.metrics`, which this package gathers. Plain strings: no OpenTelemetry.
"""

from __future__ import annotations

from nemo.lens.semconv import attributes as _attributes
from nemo.lens.semconv import metrics as _metrics
from nemo.lens.semconv import resource as _resource
from nemo.lens.semconv.attributes import *  # noqa: F403
from nemo.lens.semconv.metrics import *  # noqa: F403
from nemo.lens.semconv.resource import *  # noqa: F403

__all__ = [*_attributes.__all__, *_resource.__all__, *_metrics.__all__]
