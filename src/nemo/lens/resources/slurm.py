"""SLURM job attributes of this process (0.1.0's ``detect_slurm()``)."""

from __future__ import annotations

from opentelemetry.util.types import AttributeValue

from nemo.lens.resources.detect import slurm_attributes

__all__ = ["detect_slurm"]


def detect_slurm() -> dict[str, AttributeValue]:
    """Return the ``slurm.*`` attributes of the ``SLURM_*`` variables that are set.

    Empty unless ``SLURM_JOB_ID`` is set. Upstream's keys (``slurm.job.id``,
    ``slurm.job.name``, ``slurm.nodelist``, ``slurm.nnodes``, ``slurm.ntasks``,
    ``slurm.partition``, ``slurm.cluster.name``) are the strings their variables
    hold; nemo.lens's own (``slurm.procid``, ...) come beside them, their integer
    fields as ints. ``docs/attributes.md`` lists every key.
    """
    return slurm_attributes()
