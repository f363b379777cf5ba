"""Plain-text tables and durations: the same on a terminal, in a log and in a test."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final, Literal

__all__ = ["format_duration", "format_table", "seconds", "share", "visible"]

Align = Literal["<", ">"]

_NS_PER_US: Final = 1_000
_NS_PER_MS: Final = 1_000_000
_NS_PER_S: Final = 1_000_000_000

_CONTROL: Final = re.compile("[\x00-\x1f\x7f-\x9f]")
_NAMED: Final = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def visible(text: str) -> str:
    """*text* safe to show on a terminal: every control character (C0, DEL and C1, which start
    the escape sequences that recolour, retitle or rewrite a terminal) written as its escape,
    ``\\x1b``, ``\\t``, ``\\n``. Span names, groups and attributes come from traces: data
    that anyone could have written. The result holds no control character, so escaping twice
    changes nothing."""
    return _CONTROL.sub(_escape, text)


def _escape(found: re.Match[str]) -> str:
    character = found.group()
    return _NAMED.get(character) or f"\\x{ord(character):02x}"


def format_duration(nanoseconds: float) -> str:
    """A duration with a unit that keeps it short: ``850 ns``, ``12.5 µs``, ``3.21 ms``; from a
    second on, seconds with two decimals (``3612.40 s``: a long job's column stays exact)."""
    if nanoseconds < _NS_PER_US:
        return f"{nanoseconds:.0f} ns"
    if nanoseconds < _NS_PER_MS:
        return f"{nanoseconds / _NS_PER_US:.1f} µs"
    if nanoseconds < _NS_PER_S:
        return f"{nanoseconds / _NS_PER_MS:.2f} ms"
    return f"{nanoseconds / _NS_PER_S:.2f} s"


def format_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    align: Sequence[Align],
    *,
    indent: str = "",
) -> list[str]:
    """The lines of a table: a header row, then a line per row; columns two spaces apart,
    each as wide as its widest cell (:func:`visible`) and aligned by *align*, trailing spaces
    stripped."""
    if len(headers) != len(align) or any(len(row) != len(headers) for row in rows):
        raise ValueError("every row needs one cell per header, and one alignment per column")
    headers = [visible(cell) for cell in headers]
    rows = [[visible(cell) for cell in row] for row in rows]
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows, strict=True)]
    lines = []
    for row in (headers, *rows):
        cells = [
            cell.ljust(width) if how == "<" else cell.rjust(width)
            for cell, width, how in zip(row, widths, align, strict=True)
        ]
        lines.append((indent + "  ".join(cells)).rstrip())
    return lines


def seconds(value: float) -> str:
    return f"{value:.3f} s"


def share(part: float, whole: float) -> str:
    """*part* as a percentage of *whole* (``-`` of nothing)."""
    return f"{100 * part / whole:.1f}%" if whole > 0 else "-"
