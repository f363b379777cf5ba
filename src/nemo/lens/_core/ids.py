"""Identifiers: span and trace ids no two processes share, and run ids.

The ids come from a generator of this module's own, seeded from :func:`os.urandom` at import
and again in every forked child: ``random.seed`` on every rank cannot make ranks draw the same
ids (as with the SDK's ``RandomIdGenerator``), nor a child replay its parent's.
"""

from __future__ import annotations

import os
import random
from typing import Final

from nemo.lens._core import fork as _fork

__all__ = ["draw_bits", "new_run_id", "random_span_id", "random_trace_id", "reseed"]

_SEED_BYTES: Final = 32

# One generator for the process, never the global one. getrandbits is a single C
# call, so threads can share it without a lock.
_generator = random.Random(os.urandom(_SEED_BYTES))
_bits = _generator.getrandbits

draw_bits: Final = _bits
"""``draw_bits(k)``: *k* random bits from the id generator (may be 0, the invalid id;
the functions below draw again then). For a hot path that cannot afford a call more."""


def reseed() -> None:
    """Seed the id generator afresh from the operating system (every forked child does)."""
    _generator.seed(os.urandom(_SEED_BYTES))


_fork.on_fork(after_in_child=reseed)

# 0 is the W3C "invalid" id: unlikely (2**-64), but it would make a span unexportable.


def random_span_id() -> int:
    """Return a random, valid (non-zero) 64-bit span id."""
    while True:
        value = _bits(64)
        if value:
            return value


def random_trace_id() -> int:
    """Return a random, valid (non-zero) 128-bit trace id."""
    while True:
        value = _bits(128)
        if value:
            return value


def new_run_id() -> str:
    """Return a fresh 12-hex-digit run id (48 random bits)."""
    return os.urandom(6).hex()
