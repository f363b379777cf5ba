"""The job's resource as set-up hands it to the providers: exportable, and hashed once.

:func:`exportable_resource` takes the job's resource
(:func:`nemo.lens.resources.build_resource`), makes every value in it
exportable -- one value no exporter can write (a ``SLURM_JOB_NAME`` that is not
valid Unicode) would otherwise cost every batch of the job -- and returns it as
a :class:`HashedResource`.

Why hashed once: OpenTelemetry's OTLP encoders group every span, metric point
and log record by its resource, a ``dict`` lookup that hashes the resource for
each record, and the SDK's ``Resource.__hash__`` serialises all of its
attributes to JSON each time. For a job's resource (a dozen attributes: the
rank, SLURM, Kubernetes, GPUs) that was a quarter to a third of the OTLP encoder's work per
span. A resource never changes after it is made (its attributes are a
read-only ``BoundedAttributes``), so its hash may be kept.
"""

from __future__ import annotations

from opentelemetry.sdk.resources import Resource

from nemo.lens._sdk.exporters.redaction import Changes, clean_resource

__all__ = ["HashedResource", "exportable_resource"]


class HashedResource(Resource):
    """A :class:`~opentelemetry.sdk.resources.Resource` whose hash is computed once.

    Equal to, and hashed as, the plain resource with the same attributes and
    schema URL; :meth:`merge` and everything else are the SDK's.
    """

    _hash: int | None = None

    def __hash__(self) -> int:
        value = self._hash
        if value is None:
            value = self._hash = super().__hash__()
        return value


def exportable_resource(
    resource: Resource,
) -> tuple[HashedResource, tuple[Changes, str] | None]:
    """*resource* as the providers get it, and -- when a value had to be made
    exportable -- what changed, with the warning that says so (see the module docstring)."""
    cleaned, changes = clean_resource(resource)
    report = None
    if changes:
        keys = sorted(
            key
            for key, value in resource.attributes.items()
            if cleaned.attributes.get(key) != value
        )
        shown = ", ".join(repr(key) for key in keys) or "(keys that were not valid text)"
        explanation = (
            f"nemo.lens: resource attribute(s) {shown} held values no exporter can write as "
            f"they are ({next(iter(changes))}); exported changed. They come from the job's "
            "configuration or environment (SLURM_*, WANDB_*, OTEL_RESOURCE_ATTRIBUTES, ...)."
        )
        report = (changes, explanation)
    return HashedResource(cleaned.attributes, cleaned.schema_url), report
