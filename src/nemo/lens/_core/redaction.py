"""Attribute hygiene at the door: what a span attribute may hold, and which values are hidden.

A ``str`` under a redact key (matched case-insensitively, whole or by its last dotted segment:
``llm.prompt`` but not ``prompt_tokens``) becomes ``"[REDACTED]"``; ``None`` is skipped; values
no attribute can hold are dropped, counted and warned about once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Any, Final, TypeVar, cast

from opentelemetry.trace import Span
from opentelemetry.util.types import AttributeValue

# The keys live in the stand-alone fallbacks (standard library only), so the real
# primitives and their no-op stand-ins redact exactly the same keys.
from nemo.lens.fallbacks import DEFAULT_REDACT_KEYS

__all__ = [
    "DEFAULT_REDACT_KEYS",
    "clean_attributes",
    "dropped_attribute_values",
    "is_redact_key",
    "redact_value",
    "safe_set_span_attributes",
]

_T = TypeVar("_T")

_logger = logging.getLogger("nemo.lens.helpers")


_REDACTED: Final = "[REDACTED]"
# --- redaction and attribute cleaning ---------------------------------------------------------

# Attribute keys are nearly always literals at the call site, so the redaction
# decision for the default keys is memoised per key. The bound keeps a program
# that builds keys dynamically from growing it without limit.
_DEFAULT_DECISIONS: dict[str, bool] = {}
_DEFAULT_DECISIONS_MAX: Final = 4096


def _matches(key: str, lowered_keys: AbstractSet[str]) -> bool:
    if not isinstance(key, str):  # the SDK drops such a key itself, with a warning
        return False
    lowered = key.lower()
    if lowered in lowered_keys:
        return True
    _, dot, last = lowered.rpartition(".")
    return bool(dot) and last in lowered_keys


def is_redact_key(key: str, redact_keys: AbstractSet[str]) -> bool:
    if redact_keys is DEFAULT_REDACT_KEYS:
        decision = _DEFAULT_DECISIONS.get(key)
        if decision is None:
            decision = _matches(key, DEFAULT_REDACT_KEYS)
            if len(_DEFAULT_DECISIONS) >= _DEFAULT_DECISIONS_MAX:
                _DEFAULT_DECISIONS.clear()
            _DEFAULT_DECISIONS[key] = decision
        return decision
    # Caller-supplied keys may be spelled in any case; lower them so the match is
    # case-insensitive on both sides.
    return _matches(key, {k.lower() for k in redact_keys})


def redact_value(key: str, value: _T, redact_keys: AbstractSet[str] = DEFAULT_REDACT_KEYS) -> _T:
    """Return ``value`` with its text hidden when ``key`` is a redact key.

    A ``str`` becomes ``"[REDACTED]"``; a list or tuple comes back as the same
    kind of sequence with its ``str`` items replaced. Anything else, and every
    value under a key that is not a redact key, is returned unchanged. Keys match
    case-insensitively, as a whole or by their last dot-separated segment
    (``llm.prompt`` matches ``prompt``).
    """
    if not is_redact_key(key, redact_keys):
        return value
    if isinstance(value, str):
        return cast(_T, _REDACTED)
    if isinstance(value, (list, tuple)):
        hidden = [_REDACTED if isinstance(item, str) else item for item in value]
        return cast(_T, hidden if isinstance(value, list) else tuple(hidden))
    return value


def _scalar_kind(value: object) -> type | None:
    # bool first: it is a subclass of int but a different attribute type.
    if isinstance(value, bool):
        return bool
    if isinstance(value, int):
        return int
    if isinstance(value, float):
        return float
    if isinstance(value, str):
        return str
    return None


# Attribute values the primitives dropped, per thread so that counting takes no
# lock (see dropped_attribute_values); reported in the summary at shutdown.
_DROPPED_VALUES: dict[int, int] = {}
_drop_warned = threading.Lock()


def dropped_attribute_values() -> int:
    """How many attribute values the primitives have dropped in this process."""
    return sum(list(_DROPPED_VALUES.values()))


def _drop_value(key: object, value: object) -> None:
    ident = threading.get_ident()
    _DROPPED_VALUES[ident] = _DROPPED_VALUES.get(ident, 0) + 1
    if _drop_warned.acquire(blocking=False):
        _logger.warning(
            "nemo.lens: span attribute %r holds a %s, which span attributes cannot hold (use a "
            "str, bool, int, float or a list of one of them); it was dropped. Further drops "
            "are counted and reported at shutdown.",
            key,
            type(value).__name__,
        )


def clean_attributes(
    attributes: Mapping[str, object], redact_keys: AbstractSet[str]
) -> dict[str, AttributeValue]:
    cleaned: dict[str, AttributeValue] = {}
    for key, value in attributes.items():
        kind = type(value)
        # The common types first, by identity: an isinstance test of a tuple costs
        # three times as much, on every attribute of every enabled span.
        if kind is int or kind is float or kind is bool:
            cleaned[key] = value  # type: ignore[assignment]  # (narrowed by the test above)
        elif kind is str:
            cleaned[key] = _REDACTED if is_redact_key(key, redact_keys) else value  # type: ignore[assignment]
        elif value is None:
            continue
        elif isinstance(value, (bool, int, float)):
            cleaned[key] = value
        elif isinstance(value, str):
            cleaned[key] = _REDACTED if is_redact_key(key, redact_keys) else value
        elif isinstance(value, (list, tuple)):
            items = _clean_sequence(value)
            if items is not None:
                cleaned[key] = redact_value(key, items, redact_keys)
            else:
                _drop_value(key, value)
        else:
            # Anything else (dicts, objects, nested or mixed sequences) is dropped:
            # exporters and backends only agree on scalars and homogeneous arrays.
            _drop_value(key, value)
    return cleaned


def _clean_sequence(value: list[object] | tuple[object, ...]) -> list[Any] | None:
    kind: type | None = None
    for item in value:
        item_kind = _scalar_kind(item)
        if item_kind is None or (kind is not None and item_kind is not kind):
            return None
        kind = item_kind
    return list(value)


def safe_set_span_attributes(
    span: Span | None,
    attributes: Mapping[str, object] | None,
    redact_keys: AbstractSet[str] = DEFAULT_REDACT_KEYS,
) -> None:
    """Set ``attributes`` on ``span``, keeping only what OpenTelemetry can carry.

    Does nothing when ``span`` is ``None`` or not recording. ``None`` values are
    skipped; ``bool``, ``int``, ``float`` and ``str`` values are set; lists and
    tuples whose items are all scalars of one type are set as lists; anything
    else is dropped. ``str`` values (and ``str`` items) under a redact key become
    ``"[REDACTED]"`` (see :func:`redact_value` for how keys match).
    """
    if span is None or not attributes or not span.is_recording():
        return
    cleaned = clean_attributes(attributes, redact_keys)
    if cleaned:
        span.set_attributes(cleaned)
