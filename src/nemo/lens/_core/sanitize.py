"""Values every exporter can carry: one bad value is replaced, never the reason a batch is lost.

The rules and the reasons counted for them (the table is in ``docs/reliability.md``).
Imports nothing of OpenTelemetry: the primitives use :func:`safe_str` too.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from typing import Final

__all__ = [
    "BIG_INT",
    "DROPPED_AT_THE_DOOR",
    "INT64_MAX",
    "INT64_MIN",
    "NOT_STR",
    "REASONS",
    "SURROGATES",
    "TOO_DEEP",
    "UNSUPPORTED",
    "clean_name",
    "clean_text",
    "clean_value",
    "is_clean_text",
    "safe_str",
]

_MAX_DEPTH: Final = 32  # how deeply lists, tuples and mappings may nest in one value
_MAX_INT_BITS: Final = 4096  # the largest int exported as its digits
# The ints every exporter writes as numbers (OTLP's are 64-bit).
INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1
_SURROGATE: Final = re.compile("[\ud800-\udfff]")

# The reasons a value is changed, worded to follow a count in the shutdown summary.
SURROGATES: Final = (
    "value(s) with lone surrogates (text that is not valid Unicode), replaced by U+FFFD"
)
NOT_STR: Final = "name(s) or key(s) that were not str, converted with str()"
BIG_INT: Final = "integer(s) beyond 64 bits, exported as strings"
TOO_DEEP: Final = f"value(s) nested deeper than {_MAX_DEPTH} levels, cut off there"
UNSUPPORTED: Final = "value(s) of a type no exporter can write, exported as str()"
DROPPED_AT_THE_DOOR: Final = (
    "attribute value(s) a span attribute cannot hold (a dict, an object, a nested or mixed "
    "list), dropped by managed_span or safe_set_span_attributes"
)
REASONS: Final = (SURROGATES, NOT_STR, BIG_INT, TOO_DEEP, UNSUPPORTED, DROPPED_AT_THE_DOOR)
"""Every reason a value can be changed or dropped, in the order the summary lists them."""


def is_clean_text(text: str) -> bool:
    """Whether *text* encodes as UTF-8 (has no lone surrogate)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def clean_text(text: str) -> str:
    """*text* with every lone surrogate replaced by U+FFFD (the same object if it had none)."""
    if is_clean_text(text):
        return text
    return _SURROGATE.sub("\ufffd", str(text))


def safe_str(value: object) -> str:
    """``str(value)``, made valid Unicode; never raises (names the type when ``str()`` does)."""
    try:
        text = str(value)
    except Exception:
        try:
            name = type(value).__qualname__
        except Exception:  # pragma: no cover - a type without a name
            name = "object"
        return f"<{clean_text(name)} object: str() failed>"
    if type(text) is not str:  # a __str__ returning a str subclass
        text = str.__str__(text)
    return clean_text(text)


def clean_name(name: object) -> tuple[str, str | None]:
    """*name* (a span, event or scope name, an attribute key) as clean text, and why it had
    to change (``None``: it did not)."""
    if isinstance(name, str):
        text = name if type(name) is str else str.__str__(name)
        if text.isascii() or is_clean_text(text):
            return name, None
        return clean_text(text), SURROGATES
    if isinstance(name, bytes):
        return name.decode("utf-8", "replace"), NOT_STR
    return safe_str(name), NOT_STR


def _clean_int(value: int) -> str:
    bits = value.bit_length()
    if bits <= _MAX_INT_BITS:
        # ValueError: sys.set_int_max_str_digits set lower than _MAX_INT_BITS needs.
        with contextlib.suppress(ValueError):
            return str(int(value))
    return f"<integer of {bits} bits>"


def clean_value(value: object) -> tuple[object, str | None]:
    """*value* as every exporter can write it (*value* itself when it needs no change),
    and why it had to change: the first reason met, ``None`` when it did not."""
    reasons: list[str] = []
    return _clean(value, reasons, 0), (reasons[0] if reasons else None)


def _clean(value: object, reasons: list[str], depth: int) -> object:
    kind = type(value)
    if kind is float or kind is bool or value is None or kind is bytes:
        return value
    if isinstance(value, str):
        text = value if kind is str else str.__str__(value)
        if text.isascii() or is_clean_text(text):
            return value
        reasons.append(SURROGATES)
        return clean_text(text)
    if isinstance(value, int):
        if INT64_MIN <= value <= INT64_MAX:
            return value
        reasons.append(BIG_INT)
        return _clean_int(value)
    if isinstance(value, (list, tuple, Mapping)) and depth >= _MAX_DEPTH:
        reasons.append(TOO_DEEP)
        return None
    if isinstance(value, (list, tuple)):
        items = [_clean(item, reasons, depth + 1) for item in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, Mapping):
        before = len(reasons)
        cleaned: dict[str, object] = {}
        for key, item in value.items():
            text, reason = clean_name(key)
            if reason is not None:
                reasons.append(reason)
            cleaned[text] = _clean(item, reasons, depth + 1)
        return value if len(reasons) == before else cleaned
    if isinstance(value, (float, bytes)):
        return value
    reasons.append(UNSUPPORTED)
    return safe_str(value)
