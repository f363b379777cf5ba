"""An environment variable's text as a bool, an int or a fraction, for ``NemoLensConfig.from_env``.

Each parser takes the variable's name and its (stripped, non-empty) text, and raises a
``ValueError`` that names the variable, quotes the text and says what it accepts.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["BOOL_HINT", "parse_bool", "parse_fraction", "parse_int"]

_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_FALSE: Final = frozenset({"0", "false", "no", "off"})
_INT_RE: Final = re.compile(r"[+-]?\d+")

BOOL_HINT: Final = "accepted values: 1/0, true/false, yes/no, on/off (any case)"
"""What a boolean variable accepts, as its error says."""


def parse_bool(variable: str, raw: str) -> bool:
    """*raw* as a bool: 1/0, true/false, yes/no, on/off in any case."""
    value = raw.lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{variable}={raw!r} is not a boolean; {BOOL_HINT}")


def parse_int(variable: str, raw: str) -> int:
    """*raw* as a whole number (an optional sign, then digits)."""
    if not _INT_RE.fullmatch(raw):
        raise ValueError(
            f"{variable}={raw!r} is not an integer; write a whole number such as 0 or -1"
        )
    return int(raw)


def parse_fraction(variable: str, raw: str) -> float:
    """*raw* as a number (the config checks that it lies in [0, 1])."""
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(
            f"{variable}={raw!r} is not a number; write a number between 0 and 1 such as 0.25"
        ) from None
    return value
