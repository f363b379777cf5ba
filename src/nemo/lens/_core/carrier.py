"""Trace-context carriers are untrusted input: keep what a W3C propagator can read."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["clean_carrier"]


def clean_carrier(carrier: object) -> dict[str, str]:
    """Keep the ``str`` -> ``str`` entries of *carrier*, keys lower-cased (the W3C propagators
    look up exact lower-case keys, assume string values and raise on anything else)."""
    if not isinstance(carrier, Mapping):
        return {}
    clean: dict[str, str] = {}
    try:
        for key, value in carrier.items():
            if isinstance(key, str) and isinstance(value, str):
                clean[key.lower()] = value
    except Exception:  # a mapping whose iteration fails is garbage too
        return {}
    return clean
