"""``OTEL_RESOURCE_ATTRIBUTES`` both ways: :func:`encode_resource_attributes` writes it for a
child process to inherit; :func:`decode_resource_attributes` reads it as the SDK does."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Final
from urllib.parse import quote, unquote

__all__ = [
    "OTEL_RESOURCE_ATTRIBUTES",
    "decode_resource_attributes",
    "encode_resource_attributes",
]

_logger = logging.getLogger("nemo.lens.resources")

OTEL_RESOURCE_ATTRIBUTES: Final = "OTEL_RESOURCE_ATTRIBUTES"
"""The variable OpenTelemetry SDKs read a process's extra resource attributes from."""


def encode_resource_attributes(
    attributes: Mapping[str, object], inherited: str | None = None
) -> str:
    """Return an ``OTEL_RESOURCE_ATTRIBUTES`` value: *inherited* with *attributes* added.

    The environment is the one channel that reaches a process started with ``spawn``,
    ``exec`` or ``subprocess``, e.g. to give a worker its rank::

        env = {**os.environ, OTEL_RESOURCE_ATTRIBUTES: encode_resource_attributes(
            {"nv.dl.rank": rank, "nv.dl.world_size": world_size})}

    *inherited* defaults to this process's ``OTEL_RESOURCE_ATTRIBUTES`` as it is now
    (``""`` starts from nothing). Its entries are kept as written, except empty ones or
    ones without ``=`` (the SDK rejects those) and the keys *attributes* replaces, so
    feeding the result back in does not pile up copies. Values (``str``, ``bool``,
    ``int``, ``float``) are percent-encoded, as the OpenTelemetry specification says, so
    a ``,`` or ``=`` in one arrives intact; a ``None`` value is left out. A key that is
    not a ``str`` or that holds ``,`` or ``=`` (which have no encoding there), or a value
    of another type (a list would arrive as its ``repr``), is dropped with a warning.
    Nothing is written to the environment: the caller decides where the value goes.

    Raises:
        TypeError: *attributes* is not a mapping, or *inherited* not a ``str``.
    """
    if not isinstance(attributes, Mapping):
        raise TypeError(
            "encode_resource_attributes() takes a mapping of attribute names to values, got "
            f"{type(attributes).__name__}"
        )
    if inherited is None:
        # Read now, not at import: a job learns its rank after importing nemo.lens.
        inherited = os.environ.get(OTEL_RESOURCE_ATTRIBUTES, "")
    elif not isinstance(inherited, str):
        raise TypeError(
            f"encode_resource_attributes(inherited=...) takes the variable's text (a str) or "
            f"None, got {type(inherited).__name__}"
        )
    added: dict[str, str] = {}
    for key, value in attributes.items():
        if value is None:
            continue
        entry = _entry(key, value)
        if entry is not None:
            added[entry[0]] = f"{entry[0]}={entry[1]}"  # a later duplicate replaces
    kept = [
        segment
        for segment in inherited.split(",")
        if "=" in segment
        and segment.split("=", 1)[0].strip()
        and segment.split("=", 1)[0].strip() not in added
    ]
    return ",".join([*kept, *added.values()])


def decode_resource_attributes(text: str) -> dict[str, str]:
    """Return the attributes an ``OTEL_RESOURCE_ATTRIBUTES`` value holds, as the SDK reads
    them: ``key=value`` entries split on ``,``, keys trimmed, values percent-decoded;
    entries without ``=`` or a key are skipped. A later duplicate wins."""
    found: dict[str, str] = {}
    for segment in text.split(","):
        key, sep, value = segment.partition("=")
        if sep and key.strip():
            found[key.strip()] = unquote(value.strip())
    return found


def _entry(key: object, value: object) -> tuple[str, str] | None:
    """*key* trimmed and *value* encoded, or ``None`` (with a warning) when either cannot
    travel in the variable."""
    if not isinstance(key, str):
        _logger.warning(
            "nemo.lens: resource attribute key %r is not a str; it is dropped from %s",
            key,
            OTEL_RESOURCE_ATTRIBUTES,
        )
        return None
    name = key.strip()
    if not name or "," in name or "=" in name:
        _logger.warning(
            "nemo.lens: resource attribute key %r cannot be written to %s (a key must be "
            "non-empty, without ',' or '='); it is dropped",
            key,
            OTEL_RESOURCE_ATTRIBUTES,
        )
        return None
    text = _text(value)
    if text is None:
        _logger.warning(
            "nemo.lens: resource attribute %r has a value of type %s, which %s cannot carry "
            "(use a str, bool, int or float); it is dropped",
            name,
            type(value).__name__,
            OTEL_RESOURCE_ATTRIBUTES,
        )
        return None
    try:
        return name, quote(text, safe="")
    except UnicodeEncodeError:
        # A lone surrogate (text read from a non-UTF-8 environment or file name).
        _logger.warning(
            "nemo.lens: resource attribute %r has a value that is not valid Unicode text; it "
            "is dropped from %s",
            name,
            OTEL_RESOURCE_ATTRIBUTES,
        )
        return None


def _text(value: object) -> str | None:
    # Through the base type: str() of a str- or int-based Enum member is its name.
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return repr(float(value))
    return None
