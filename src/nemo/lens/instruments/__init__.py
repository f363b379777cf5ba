"""Metric helpers: one call records a unit of work's numbers under fixed names.

Three helpers, one per kind of job:

* :func:`record_inference_metrics` -- one GenAI request or operation, under the
  OpenTelemetry GenAI semantic-convention names (``gen_ai.client.token.usage``
  split by ``gen_ai.token.type``, ``gen_ai.client.operation.duration``,
  ``gen_ai.server.request.duration``, ``gen_ai.server.time_to_first_token``,
  ``gen_ai.server.time_per_output_token``);
* :func:`record_rl_step_metrics` -- one RL training step: reward statistics,
  phase durations, generated tokens and throughput (``nemo.rl.*``);
* :func:`record_gym_rollout_metrics` -- one finished Gym rollout: its duration,
  verification outcome and tool / sandbox calls (``nemo.gym.*``).

Every name, unit and attribute key is a constant in :mod:`nemo.lens.semconv`;
``docs/metrics-and-logs.md`` has the full table.

0.1.0's helpers keep working where 0.1.0 had them:
``nemo.lens.instruments.inference.record_inference_metrics(meter, request_duration_s,
model, input_tokens, output_tokens, provider_name, operation_name)`` (also
accepted by this package's :func:`record_inference_metrics`, which is the same
function called positionally), :func:`nemo.lens.instruments.rl.record_rl_metrics`
(with upstream v0.2.0's signature and gauges; also re-exported here, as
:func:`record_rl_metrics`) and :func:`nemo.lens.instruments.gym.record_gym_metrics`,
which record under 0.1.0's metric names (``rl.*``, ``gym.*``; the ``LEGACY_*``
constants of :mod:`nemo.lens.semconv`). They share everything below.

Behaviour shared by the helpers:

* **Keyword arguments; ``None`` means "not measured"** and records nothing
  for that metric, so one call site can pass whatever it has.
* **``meter=None`` is nemo.lens's meter** (:func:`nemo.lens.handle.get_meter`):
  the provider ``setup_telemetry`` installed, following re-initialisation and
  forwarding to nothing after shutdown; before set-up, OpenTelemetry's global
  meter provider. Pass ``meter=`` to record elsewhere (e.g. ``handle.meter`` or
  a test's ``MeterProvider``).
* **Instruments are created once per meter**, on first use, and cached in a
  table keyed (weakly) on the meter object: creating an instrument takes a lock
  and a registry lookup in the SDK, far more than recording a value. A meter
  from nemo.lens's provider hub keeps working across ``setup_telemetry(...,
  _allow_reinit=True)`` because its instruments are re-bound, not recreated.
* **Metrics never break the job.** A value that is not a finite number (or is
  negative where only non-negative values make sense: durations, counts) is
  skipped; an instrument that cannot be created or recorded is skipped. The
  first problem with each metric is logged as a warning on the
  ``nemo.lens.instruments`` logger, later ones at debug level only, so a bad
  value inside a training loop does not flood the log. NumPy scalars and
  one-element tensors (anything with ``.item()``) are accepted as numbers.
* **Attributes** given in ``attributes=`` are added to every point the call
  records; the helpers' own keywords (``model=``, ``environment=``, ...) win
  over the same key there. Only ``str``, ``bool``, ``int`` and ``float`` values
  are kept (metric attributes are aggregation keys: keep them low-cardinality,
  never a step number or a request id).
"""

from __future__ import annotations

from nemo.lens.instruments import gym, inference, rl
from nemo.lens.instruments._recorders import (
    record_gym_rollout_metrics,
    record_inference_metrics,
    record_rl_step_metrics,
)
from nemo.lens.instruments.rl import record_rl_metrics

__all__ = [
    "gym",
    "inference",
    "record_gym_rollout_metrics",
    "record_inference_metrics",
    "record_rl_metrics",
    "record_rl_step_metrics",
    "rl",
]
