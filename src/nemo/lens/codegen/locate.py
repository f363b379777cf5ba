"""Map TOML key paths to the line that defines them.

``tomllib`` parses values but forgets where they came from; validation messages
need ``file:line``. This scanner reads the same text line by line and records the
line of every table header, key and array element it can see. It never decides
validity (the parser already did): where it cannot follow the syntax it simply
records less, and :meth:`Locator.line` falls back to the nearest enclosing path.
"""

from __future__ import annotations

import json
import re

KeyPath = tuple[str | int, ...]

_BARE = r"[A-Za-z0-9_-]+"
_QUOTED = r'"(?:[^"\\]|\\.)*"|\'[^\']*\''
_KEY = rf"(?:{_BARE}|{_QUOTED})"
_DOTTED = rf"{_KEY}(?:\s*\.\s*{_KEY})*"
_HEADER = re.compile(rf"^\s*(\[\[?)\s*({_DOTTED})\s*\]\]?")
_ASSIGN = re.compile(rf"^\s*({_DOTTED})\s*=\s*(.*)$")
_INLINE_KEY = re.compile(rf"(?:^|[{{,])\s*({_DOTTED})\s*=")
_STRING = re.compile(_QUOTED)


def _split_dotted(dotted: str) -> tuple[str, ...]:
    parts = []
    for match in re.finditer(_KEY, dotted):
        token = match.group(0)
        if token[0] == '"':
            # A basic string: its escapes (\\n, \\u0007) are part of the key's name.
            try:
                token = json.loads(token)
            except ValueError:
                token = token[1:-1]
        elif token[0] == "'":
            token = token[1:-1]
        parts.append(token)
    return tuple(parts)


class Locator:
    """Line numbers (1-based) for the key paths of one TOML document."""

    def __init__(self, text: str) -> None:
        self._lines: dict[KeyPath, int] = {}
        self._scan(text.splitlines())

    def line(self, path: KeyPath) -> int | None:
        """The line of *path*, or of its closest recorded ancestor."""
        probe = tuple(path)
        while probe:
            if probe in self._lines:
                return self._lines[probe]
            probe = probe[:-1]
        return None

    def _record(self, path: KeyPath, line: int) -> None:
        self._lines.setdefault(path, line)

    def _scan(self, lines: list[str]) -> None:
        table: tuple[str, ...] = ()
        array_counts: dict[tuple[str, ...], int] = {}
        open_array: KeyPath | None = None
        element = 0
        for number, raw in enumerate(lines, start=1):
            text = raw.split("#", 1)[0] if '"' not in raw and "'" not in raw else raw
            if open_array is not None:
                for _ in _STRING.finditer(text):
                    self._record((*open_array, element), number)
                    element += 1
                if "]" in _STRING.sub("", text):
                    open_array = None
                continue
            header = _HEADER.match(text)
            if header:
                table = _split_dotted(header.group(2))
                if header.group(1) == "[[":
                    index = array_counts.get(table, 0)
                    array_counts[table] = index + 1
                    self._record(table, number)
                    table = (*table, str(index))
                for end in range(1, len(table) + 1):
                    self._record(table[:end], number)
                continue
            assign = _ASSIGN.match(text)
            if not assign:
                continue
            path = (*table, *_split_dotted(assign.group(1)))
            self._record(path, number)
            value = assign.group(2)
            if value.startswith("{"):
                for key in _INLINE_KEY.finditer(value):
                    self._record((*path, *_split_dotted(key.group(1))), number)
            elif value.startswith("["):
                strings = list(_STRING.finditer(value))
                for index in range(len(strings)):
                    self._record((*path, index), number)
                element = len(strings)
                if "]" not in _STRING.sub("", value):
                    open_array = path
