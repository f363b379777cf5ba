"""Kubernetes pod attributes of this process (0.1.0's ``detect_kubernetes()``)."""

from __future__ import annotations

from opentelemetry.util.types import AttributeValue

from nemo.lens.resources.detect import kubernetes_attributes

__all__ = ["detect_kubernetes"]


def detect_kubernetes() -> dict[str, AttributeValue]:
    """Return ``k8s.pod.name`` and ``k8s.namespace.name`` under Kubernetes, else ``{}``.

    Kubernetes is recognised by ``KUBERNETES_SERVICE_HOST``; the pod name comes
    from ``HOSTNAME``, the namespace from ``POD_NAMESPACE`` or the service
    account's namespace file.
    """
    return kubernetes_attributes()
