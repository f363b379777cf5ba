"""Assemble the resource from its layers, in a fixed precedence.

Lowest to highest (a later layer overwrites an earlier one key by key):

1. detected: host, process, GPUs, SLURM, Kubernetes, deployment environment
   (:func:`nemo.lens.resources.detect.detect_attributes`);
2. ``OTEL_RESOURCE_ATTRIBUTES`` (and ``OTEL_SERVICE_NAME``), parsed by the SDK;
3. configuration: service name and version, rank, world size, run id,
   ``service.instance.id``, user, W&B fields (:func:`config_attributes`), and
   ``nemo.lifetime.id``, drawn afresh by every :func:`build_resource` (so by every
   set-up): what tells a resumed job's processes from the ones before it;
4. the caller's ``resource_attributes`` passed to ``setup_telemetry``.

So an operator can correct a detected value with ``OTEL_RESOURCE_ATTRIBUTES``,
the job's configuration cannot be overridden by a stray environment variable,
and the code that calls ``setup_telemetry`` has the last word. Upstream nemo-lens
0.2.0 applied detection after the caller's ``resource_attributes``, so a detected
value overwrote the caller's; here the caller's value is kept.

Rank, world size, run id and user are sent under upstream's keys (``dl.rank``,
``dl.world_size``, ``nemo.run.id``, ``nemo.user.id``) and under nemo.lens's own
(``nemo.rank``, ``nemo.world_size``, ``nemo.run_id``, ``nemo.user``), with the
same values: queries written against either keep finding them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from opentelemetry.util.types import AttributeValue

from nemo.lens.resources import attributes as attr
from nemo.lens.resources.detect import detect_attributes

if TYPE_CHECKING:
    from opentelemetry.sdk.resources import Resource

    from nemo.lens.config import NemoLensConfig

__all__ = [
    "build_resource",
    "config_attributes",
    "merged_attributes",
    "otel_env_attributes",
    "package_version",
]


def package_version() -> str:
    """Return the nemo-lens version (``service.version``): ``nemo.lens.__version__``, written
    once, in ``nemo.lens._version`` (the package metadata reads it from there too)."""
    from nemo.lens._version import __version__

    return __version__


def config_attributes(
    config: NemoLensConfig, rank: int, world_size: int
) -> dict[str, AttributeValue]:
    """Return the attributes the configuration defines (layer 3).

    *config* should be resolved (``config.resolved()``) so the run id is set.
    Empty optional fields (user, W&B) are left out rather than sent as "".
    """
    found: dict[str, AttributeValue] = {
        attr.SERVICE_NAME: config.service_name,
        attr.SERVICE_VERSION: package_version(),
        attr.DL_RANK: rank,
        attr.DL_WORLD_SIZE: world_size,
        attr.RANK: rank,
        attr.WORLD_SIZE: world_size,
        attr.NEMO_RUN_ID: config.run_id,
        attr.RUN_ID: config.run_id,
        attr.SERVICE_INSTANCE_ID: f"{config.run_id}-rank{rank}",
    }
    for names, value in (
        ((attr.NEMO_USER_ID, attr.USER), config.user),
        ((attr.WANDB_ENTITY,), config.wandb_entity),
        ((attr.WANDB_PROJECT,), config.wandb_project),
    ):
        if value.strip():
            found.update(dict.fromkeys(names, value.strip()))
    return found


def otel_env_attributes() -> dict[str, AttributeValue]:
    """Return ``OTEL_RESOURCE_ATTRIBUTES`` and ``OTEL_SERVICE_NAME`` as the SDK parses them."""
    from opentelemetry.sdk.resources import OTELResourceDetector

    return dict(OTELResourceDetector().detect().attributes)


def merged_attributes(
    config: NemoLensConfig,
    rank: int,
    world_size: int,
    resource_attributes: Mapping[str, AttributeValue] | None = None,
) -> dict[str, AttributeValue]:
    """Return the four layers merged in precedence order (see the module docstring): the
    caller's *resource_attributes* win over everything detected or configured."""
    merged: dict[str, AttributeValue] = {}
    merged.update(detect_attributes())
    merged.update(otel_env_attributes())
    merged.update(config_attributes(config, rank, world_size))
    if resource_attributes:
        merged.update(resource_attributes)
    return merged


def build_resource(
    config: NemoLensConfig,
    rank: int,
    world_size: int,
    resource_attributes: Mapping[str, AttributeValue] | None = None,
) -> Resource:
    """Return the SDK :class:`~opentelemetry.sdk.resources.Resource` for this process.

    ``Resource.create`` contributes the ``telemetry.sdk.*`` attributes and any
    detectors named in ``OTEL_EXPERIMENTAL_RESOURCE_DETECTORS``; the merged
    layers are applied on top, so they win over both.
    """
    from opentelemetry.sdk.resources import Resource

    merged = merged_attributes(config, rank, world_size, resource_attributes)
    merged.setdefault(attr.LIFETIME_ID, os.urandom(8).hex())  # a caller's own id wins
    return Resource.create(merged)
