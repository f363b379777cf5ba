"""Assemble the resource from its layers; a later layer overwrites an earlier one key by key:
detected < ``OTEL_RESOURCE_ATTRIBUTES`` < configuration < the caller's ``resource_attributes``
(upstream let detection overwrite the caller's; here the caller wins)."""

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
    """Return the nemo-lens version (``service.version``)."""
    from nemo.lens._version import __version__

    return __version__


def config_attributes(
    config: NemoLensConfig, rank: int, world_size: int
) -> dict[str, AttributeValue]:
    """Return the attributes the configuration defines, under upstream's keys (``dl.rank``,
    ``nemo.run.id``, ...) and nemo.lens's own (``nemo.rank``, ``nemo.run_id``, ...).

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
    """Return the four layers merged in precedence order (see the module docstring)."""
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
    """Return the SDK :class:`~opentelemetry.sdk.resources.Resource` for this process: the
    merged layers over ``Resource.create``'s ``telemetry.sdk.*`` and detector attributes, and
    ``nemo.lifetime.id``, fresh at every call (it tells a resumed job's processes apart)."""
    from opentelemetry.sdk.resources import Resource

    merged = merged_attributes(config, rank, world_size, resource_attributes)
    merged.setdefault(attr.LIFETIME_ID, os.urandom(8).hex())  # a caller's own id wins
    return Resource.create(merged)
