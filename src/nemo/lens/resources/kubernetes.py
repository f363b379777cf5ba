"""Kubernetes pod attributes of this process (0.1.0's ``detect_kubernetes()``)."""

from __future__ import annotations

from opentelemetry.util.types import AttributeValue

from nemo.lens.resources.detect import kubernetes_attributes

__all__ = ["detect_kubernetes"]


def detect_kubernetes() -> dict[str, AttributeValue]:
    """Return the pod's ``k8s.*`` attributes under Kubernetes, else ``{}``.

    Kubernetes is recognised by ``KUBERNETES_SERVICE_HOST``, or by
    ``/var/run/secrets/kubernetes.io`` existing. The keys come from the
    downward-API variables: ``K8S_NAMESPACE`` (else ``POD_NAMESPACE``, else the
    service account's namespace file) ``k8s.namespace.name``, ``K8S_POD_NAME``
    (else ``HOSTNAME``, else the host name) ``k8s.pod.name``, and
    ``K8S_POD_UID``, ``K8S_NODE_NAME``, ``K8S_CONTAINER_NAME`` and
    ``K8S_JOB_NAME`` the keys of their names.
    """
    return kubernetes_attributes()
