"""Every name nemo.lens emits: attribute keys, metric names and their fixed values.

One ``Final`` string per name, each with a docstring, so an IDE hover shows
what the name means and where its value comes from, and a misspelt name is an
``AttributeError`` (and a mypy error) instead of a silently different attribute.
The library itself uses these constants rather than string literals.

Where an OpenTelemetry semantic convention exists, its name is used
(``service.*``, ``host.name``, ``process.pid``, ``deployment.environment``,
``k8s.*``, ``code.*``, ``exception.*``, ``error.type`` and the GenAI
``gen_ai.*`` metrics and attributes); nemo.lens's own names start with
``nemo.`` or ``lens.``, and launcher or tool fields without a convention with
``slurm.`` or ``wandb.``. Upstream nemo-lens 0.2.0's names are all here, with
its values (``DL_RANK``, ``GENAI_*``, ``RL_*``, ...): the resource carries its
keys beside nemo.lens's own (``dl.rank`` and ``nemo.rank``, ``nemo.run.id`` and
``nemo.run_id``).

Every constant is generated from the schema's catalogues (``docs/attributes.md``
and ``docs/metrics.md`` list them); this package only gathers them:

* :mod:`nemo.lens.semconv.resource`: the resource attributes (also importable from
  :mod:`nemo.lens.resources.attributes`);
* :mod:`nemo.lens.semconv.attributes`: the instrumentation scope, span attributes,
  the logging bridge's ``LogRecord`` fields and log attributes, metric attributes
  and their fixed values, and upstream's training and RL names;
* :mod:`nemo.lens.semconv.metrics`: the name of every instrument the recorders
  create (GenAI inference, RL steps, Gym rollouts, and 0.1.0's names as
  ``LEGACY_*``), with its kind, unit, description and bucket boundaries.

This package is plain strings: it imports nothing of OpenTelemetry, so code that
only needs the names (a dashboard generator, a test, a log parser) can import
it anywhere.
"""

from __future__ import annotations

from nemo.lens.semconv import attributes as _attributes
from nemo.lens.semconv import metrics as _metrics
from nemo.lens.semconv import resource as _resource
from nemo.lens.semconv.attributes import *  # noqa: F403
from nemo.lens.semconv.metrics import *  # noqa: F403
from nemo.lens.semconv.resource import *  # noqa: F403

__all__ = [*_attributes.__all__, *_resource.__all__, *_metrics.__all__]
