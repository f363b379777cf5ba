"""Reporting schema problems: where (file, line, key path), what, and what to write instead.
:class:`Checker` holds the checks every rule shares; :class:`Locator` the lines tomllib forgets."""

from __future__ import annotations

import difflib
import json
import keyword
import re
import unicodedata
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard, TypeVar

from nemo.lens.codegen.model import IMPLICIT_PRESETS, KeyPath, Problem

NAME_RE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
"""Group, preset and consumer names (matched whole: ``$`` would allow a trailing newline)."""
MAX_NAME = 32
# `all` and the other implicit presets are reserved; the upper-cased names would
# collide with the generated class attributes that hold the vocabulary.
RESERVED_NAMES = frozenset(
    {*IMPLICIT_PRESETS, "all_groups", "goodput_groups", "presets", "renamed", "group_info"}
)
# Control, surrogate, line/paragraph separator and format characters (bidi overrides,
# zero-width marks): none belongs in a description, and each could change what the
# generated source means or how it reads.
_NOT_TEXT = frozenset({"Cc", "Cs", "Zl", "Zp", "Cf"})
# Names whose constant (I, O) or whose own spelling (l) reads like a digit (ruff's E741).
_AMBIGUOUS = frozenset({"i", "l", "o"})
_T = TypeVar("_T")
_TYPE_NAMES = {
    str: "a string",
    list: "an array",
    dict: "a table",
    int: "an integer",
    bool: "a boolean",
    float: "a float",
}

_BARE = r"[A-Za-z0-9_-]+"
_QUOTED = r'"(?:[^"\\]|\\.)*"|\'[^\']*\''
_KEY = rf"(?:{_BARE}|{_QUOTED})"
_DOTTED = rf"{_KEY}(?:\s*\.\s*{_KEY})*"
_HEADER = re.compile(rf"^\s*(\[\[?)\s*({_DOTTED})\s*\]\]?")
_ASSIGN = re.compile(rf"^\s*({_DOTTED})\s*=\s*(.*)$")
_INLINE_KEY = re.compile(rf"(?:^|[{{,])\s*({_DOTTED})\s*=")
_STRING = re.compile(_QUOTED)


class SchemaError(Exception):
    """The schema is invalid; :attr:`problems` lists every reason, :attr:`warnings` what
    else was found (shown beside the problems: they may explain one)."""

    def __init__(self, problems: list[Problem], warnings: Sequence[Problem] = ()) -> None:
        self.problems = problems
        self.warnings = tuple(warnings)
        count = len(problems)
        lines = "\n".join(str(p) for p in problems)
        super().__init__(f"{count} problem{'s' if count != 1 else ''} in the schema:\n{lines}")


class SchemaUnreadable(SchemaError):
    """The schema, or a file it extends, cannot be read as a whole (unreadable, not TOML, an
    ``extends`` cycle): reported alone, as what any other problem found would follow from."""


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """`; did you mean 'x'?` for the closest candidate, or an empty string."""
    found = difflib.get_close_matches(word, sorted(candidates), n=1, cutoff=0.6)
    return f"; did you mean {found[0]!r}?" if found else ""


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
    """Line numbers (1-based) of the key paths of one TOML document that tomllib parsed; where
    it cannot follow the syntax it records less, and :meth:`line` falls back to an ancestor."""

    def __init__(self, text: str) -> None:
        self._lines: dict[KeyPath, int] = {}
        table: tuple[str, ...] = ()
        array_counts: dict[tuple[str, ...], int] = {}
        open_array: KeyPath | None = None
        element = 0
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw.split("#", 1)[0] if '"' not in raw and "'" not in raw else raw
            if open_array is not None:
                for _ in _STRING.finditer(line):
                    self._lines.setdefault((*open_array, element), number)
                    element += 1
                if "]" in _STRING.sub("", line):
                    open_array = None
                continue
            header = _HEADER.match(line)
            if header:
                table = _split_dotted(header.group(2))
                if header.group(1) == "[[":
                    index = array_counts.get(table, 0)
                    array_counts[table] = index + 1
                    self._lines.setdefault(table, number)
                    table = (*table, str(index))
                for end in range(1, len(table) + 1):
                    self._lines.setdefault(table[:end], number)
                continue
            assign = _ASSIGN.match(line)
            if not assign:
                continue
            path = (*table, *_split_dotted(assign.group(1)))
            self._lines.setdefault(path, number)
            value = assign.group(2)
            if value.startswith("{"):
                for key in _INLINE_KEY.finditer(value):
                    self._lines.setdefault((*path, *_split_dotted(key.group(1))), number)
            elif value.startswith("["):
                strings = list(_STRING.finditer(value))
                for index in range(len(strings)):
                    self._lines.setdefault((*path, index), number)
                element = len(strings)
                if "]" not in _STRING.sub("", value):
                    open_array = path

    def line(self, path: KeyPath) -> int | None:
        """The line of *path*, or of its closest recorded ancestor."""
        for end in range(len(path), 0, -1):
            if path[:end] in self._lines:
                return self._lines[path[:end]]
        return None


@dataclass
class Checker:
    file: str
    locator: Locator
    problems: list[Problem] = field(default_factory=list)
    broken: set[str] = field(default_factory=set)
    """Groups that are defined but invalid: reported once, not again where used."""
    broken_presets: set[str] = field(default_factory=set)
    """Base presets whose members an ``extends`` cycle leaves unknown: the cycle is reported
    once, and nothing that follows from it (a consumer's inherited preset) is checked."""
    warnings: list[Problem] = field(default_factory=list)
    """What is valid but should change; never a reason to refuse the schema."""

    def error(self, path: KeyPath, message: str) -> None:
        self.problems.append(Problem(self.file, self.locator.line(path), path, message))

    def warn(self, path: KeyPath, message: str) -> None:
        self.warnings.append(Problem(self.file, self.locator.line(path), path, message))

    def expect(self, value: object, kind: type[_T], path: KeyPath) -> TypeGuard[_T]:
        if isinstance(value, kind):
            return True
        got = _TYPE_NAMES.get(type(value), type(value).__name__)
        self.error(path, f"expected {_TYPE_NAMES[kind]}, got {got}")
        return False

    def table(self, raw: object, path: KeyPath) -> Mapping[str, Any]:
        """*raw* when it is a table; else an empty one, after reporting it."""
        return raw if self.expect(raw, dict, path) else {}

    def unknown(
        self, path: KeyPath, what: str, value: str, known: Collection[str], listed: str = ""
    ) -> None:
        """Report an unknown *what*, the closest of *known*, and all when *listed* names them."""
        listing = f" ({listed}: {', '.join(known)})" if listed else ""
        self.error(path, f"unknown {what} {value!r}{did_you_mean(value, known)}{listing}")

    def known_keys(self, table: Mapping[str, Any], allowed: tuple[str, ...], path: KeyPath) -> None:
        for key in table:
            if key not in allowed:
                self.unknown((*path, key), "key", key, allowed, "allowed")

    def tables(
        self,
        raw: object,
        path: KeyPath,
        what: str,
        allowed: tuple[str, ...],
        longest: int = MAX_NAME,
    ) -> Iterator[tuple[str, Mapping[str, Any], KeyPath]]:
        """(key, table, path) of each well-named table in *raw*, keys checked; others reported."""
        for key, body in self.table(raw, path).items():
            kpath = (*path, key)
            if self.name(key, kpath, what, longest) and self.expect(body, dict, kpath):
                self.known_keys(body, allowed, kpath)
                yield key, body, kpath

    def choice(
        self,
        table: Mapping[str, Any],
        key: str,
        path: KeyPath,
        allowed: Collection[str],
        what: tuple[str, str],
    ) -> str:
        """The required text *key* when it is one of *allowed*, else empty (reported)."""
        value = self.text(table, key, path, required=True)
        return self.one_of(value, (*path, key), allowed, what) if value else ""

    def one_of(
        self, value: object, path: KeyPath, allowed: Collection[str], what: tuple[str, str]
    ) -> str:
        """*value* when it is one of *allowed*, else empty (reported); *what*: one and all
        (``("frequency", "tiers")``)."""
        if not self.expect(value, str, path):
            return ""
        if value not in allowed:
            self.unknown(path, what[0], str(value), allowed, what[1])
            return ""
        return str(value)

    def text(self, table: Mapping[str, Any], key: str, path: KeyPath, required: bool) -> str:
        if key not in table:
            if required:
                self.error(path, f"missing required key {key!r}")
            return ""
        value = table[key]
        if not self.expect(value, str, (*path, key)):
            return ""
        if required and not value.strip():
            self.error((*path, key), f"{key!r} must not be empty")
        if not self.inert(value, (*path, key), key):
            return ""
        return str(value).strip()

    def flag(self, table: Mapping[str, Any], key: str, path: KeyPath, default: bool) -> bool:
        value = table.get(key, default)
        return bool(value) if self.expect(value, bool, (*path, key)) else default

    def inert(self, value: str, path: KeyPath, what: str) -> bool:
        """Schema text becomes docstrings and docs: it must be plain, printable text."""
        for index, char in enumerate(value):
            if char == "\n" and what == "description":
                continue  # reported as "must be a single line"
            if unicodedata.category(char) in _NOT_TEXT:
                self.error(
                    path,
                    f"{what!r} holds the control or format character U+{ord(char):04X} at "
                    f"position {index}; write plain printable text (it is copied into "
                    "generated code and docs)",
                )
                return False
        return True

    def name(self, name: str, path: KeyPath, what: str, longest: int = MAX_NAME) -> bool:
        problem = name_problem(name, longest)
        if problem:
            self.error(path, f"{what} name {name!r} {problem}")
        return not problem


def name_problem(name: str, longest: int) -> str:
    """Why *name* cannot name a group, preset, consumer or instrument; empty when it can."""
    if not NAME_RE.fullmatch(name):
        suggestion = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
        hint = f"; try {suggestion!r}" if suggestion and NAME_RE.fullmatch(suggestion) else ""
        return (
            "is not lowercase snake_case "
            f"(letters, digits and single underscores, starting with a letter){hint}"
        )
    if len(name) > longest:
        return f"is longer than {longest} characters"
    if name in _AMBIGUOUS:
        return (
            f"becomes the constant {name.upper()!r}, which reads like a digit; pick a longer name"
        )
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        return "is a Python keyword; pick another word"
    if name in RESERVED_NAMES:
        return f"is reserved ({', '.join(sorted(RESERVED_NAMES))} have a meaning already)"
    return ""
