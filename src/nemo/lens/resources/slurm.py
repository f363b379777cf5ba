"""SLURM job attributes of this process (0.1.0's ``detect_slurm()``)."""

from __future__ import annotations

from opentelemetry.util.types import AttributeValue

from nemo.lens.resources.detect import slurm_attributes

__all__ = ["detect_slurm"]


def detect_slurm() -> dict[str, AttributeValue]:
    """Return the ``slurm.*`` attributes of the ``SLURM_*`` variables that are set, ``{}``
    unless ``SLURM_JOB_ID`` is (see :func:`nemo.lens.resources.detect.slurm_attributes`)."""
    return slurm_attributes()
