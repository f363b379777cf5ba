"""Reporting schema problems: where (file, line, key path), what, and what to write instead.

:class:`Checker` collects every :class:`Problem` of one file; the rules
(:mod:`~nemo.lens.codegen.rules`) report through it, and
:func:`~nemo.lens.codegen.validate.load_schema` raises them together as one
:class:`SchemaError`. It also holds the checks every rule shares: types, known
keys, names, and text that must stay inert.

A rule may also *warn*: a warning is located and worded like a problem, but the
schema stays valid and is generated (``nemo-lens generate`` prints each as
``warning: FILE:LINE: key.path: message`` on standard error, whatever its exit
status). Warnings are for what works today and has a better form, such as a
consumer's own definition of a group the base vocabulary has since taken in.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import keyword
import re
import unicodedata
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nemo.lens.codegen.locate import KeyPath, Locator
from nemo.lens.codegen.model import (
    IMPLICIT_PRESETS,
)
from nemo.lens.codegen.problems import Problem, format_path

__all__ = ["Checker", "Problem", "SchemaError", "canonical_digest", "did_you_mean", "format_path"]


NAME_RE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
"""Group, preset and consumer names (matched whole: ``$`` would allow a trailing newline)."""
MAX_NAME = 32
# `all` and the other implicit presets are reserved; the upper-cased names would
# collide with the generated class attributes that hold the vocabulary.
RESERVED_NAMES = frozenset(
    {*IMPLICIT_PRESETS, "all_groups", "goodput_groups", "presets", "renamed", "group_info"}
)


class SchemaError(Exception):
    """The schema is invalid; :attr:`problems` lists every reason, :attr:`warnings` what
    else was found (shown beside the problems: they may explain one)."""

    def __init__(self, problems: list[Problem], warnings: Sequence[Problem] = ()) -> None:
        self.problems = problems
        self.warnings = tuple(warnings)
        count = len(problems)
        lines = "\n".join(str(p) for p in problems)
        super().__init__(f"{count} problem{'s' if count != 1 else ''} in the schema:\n{lines}")


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """`; did you mean 'x'?` for the closest candidate, or an empty string."""
    found = difflib.get_close_matches(word, sorted(candidates), n=1, cutoff=0.6)
    return f"; did you mean {found[0]!r}?" if found else ""


def canonical_digest(data: Mapping[str, Any]) -> str:
    """sha256 of the parsed content with sorted keys: formatting-independent."""
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


# Control, surrogate, line/paragraph separator and format characters (bidi overrides,
# zero-width marks): none belongs in a description, and each could change what the
# generated source means or how it reads.
_NOT_TEXT = frozenset({"Cc", "Cs", "Zl", "Zp", "Cf"})

# Names whose constant (I, O) or whose own spelling (l) reads like a digit (ruff's E741).
_AMBIGUOUS = frozenset({"i", "l", "o"})

_TYPE_NAMES = {
    str: "a string",
    list: "an array",
    dict: "a table",
    int: "an integer",
    bool: "a boolean",
    float: "a float",
}


def _type_name(value: object) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


@dataclass
class Checker:
    file: str
    locator: Locator
    problems: list[Problem] = field(default_factory=list)
    broken: set[str] = field(default_factory=set)
    """Groups that are defined but invalid: reported once, not again where used."""
    warnings: list[Problem] = field(default_factory=list)
    """What is valid but should change; never a reason to refuse the schema."""

    def error(self, path: KeyPath, message: str) -> None:
        self.problems.append(Problem(self.file, self.locator.line(path), path, message))

    def warn(self, path: KeyPath, message: str) -> None:
        self.warnings.append(Problem(self.file, self.locator.line(path), path, message))

    def expect(self, value: object, kind: type, path: KeyPath) -> bool:
        # bool is an int subclass in Python; TOML keeps them apart, and so do we.
        if isinstance(value, kind) and not (kind is int and isinstance(value, bool)):
            return True
        self.error(path, f"expected {_TYPE_NAMES[kind]}, got {_type_name(value)}")
        return False

    def unknown(
        self, path: KeyPath, what: str, value: str, known: Collection[str], listed: str = ""
    ) -> None:
        """Report *value* as an unknown *what*: the closest of *known*, and all of them when
        *listed* names them (``"tiers"``)."""
        listing = f" ({listed}: {', '.join(known)})" if listed else ""
        self.error(path, f"unknown {what} {value!r}{did_you_mean(value, known)}{listing}")

    def known_keys(self, table: Mapping[str, Any], allowed: tuple[str, ...], path: KeyPath) -> None:
        for key in table:
            if key not in allowed:
                self.unknown((*path, key), "key", key, allowed, "allowed")

    def tables(
        self,
        raw: Mapping[str, Any],
        path: KeyPath,
        what: str,
        allowed: tuple[str, ...],
        longest: int = MAX_NAME,
    ) -> Iterator[tuple[str, Mapping[str, Any], KeyPath]]:
        """(key, table, its path) of each entry of *raw* that is a well-named table, its keys
        checked against *allowed*; every other entry is reported and skipped."""
        for key, body in raw.items():
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
        """The required text *key* of *table* when it is one of *allowed*; empty when it is
        missing or after reporting it. *what* names one and all (``("frequency", "tiers")``)."""
        value = self.text(table, key, path, required=True)
        if value and value not in allowed:
            self.unknown((*path, key), what[0], value, allowed, what[1])
            return ""
        return value

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
        problem = _name_problem(name, longest)
        if problem:
            self.error(path, f"{what} name {name!r} {problem}")
        return not problem


def _name_problem(name: str, longest: int) -> str:
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
