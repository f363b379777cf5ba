"""Trace-context carriers are untrusted input: keep what a W3C propagator can read.

A carrier arrives from another process (HTTP headers, an RPC's metadata, a
broadcast from rank 0) and may be anything. :mod:`nemo.lens.propagation`
extracts from it and :mod:`nemo.lens.distributed` sends it between ranks;
both pass it through :func:`clean_carrier` first.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["clean_carrier"]


def clean_carrier(carrier: object) -> dict[str, str]:
    """Keep the ``str`` -> ``str`` entries of *carrier*, keys lower-cased.

    HTTP stacks hand over headers as ``Traceparent`` or as a multi-dict, RPC
    layers as anything; the W3C propagators look up exact lower-case keys and
    assume string values, and would raise on anything else.
    """
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
