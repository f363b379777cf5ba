"""SLURM job attributes of this process (0.1.0's ``detect_slurm()``)."""

from __future__ import annotations

from opentelemetry.util.types import AttributeValue

from nemo.lens.resources.detect import slurm_attributes

__all__ = ["detect_slurm"]


def detect_slurm() -> dict[str, AttributeValue]:
    """Return the ``slurm.*`` attributes of the ``SLURM_*`` variables that are set.

    Empty outside SLURM. Integer fields (``slurm.procid``, ``slurm.ntasks``, ...)
    are ints; see ``docs/distributed.md`` for the list.
    """
    return slurm_attributes()
