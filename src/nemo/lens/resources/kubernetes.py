"""Kubernetes pod attributes of this process (0.1.0's ``detect_kubernetes()``)."""

from __future__ import annotations

from opentelemetry.util.types import AttributeValue

from nemo.lens.resources.detect import kubernetes_attributes

__all__ = ["detect_kubernetes"]


def detect_kubernetes() -> dict[str, AttributeValue]:
    """Return the pod's ``k8s.*`` attributes under Kubernetes, else ``{}`` (see
    :func:`nemo.lens.resources.detect.kubernetes_attributes`)."""
    return kubernetes_attributes()
