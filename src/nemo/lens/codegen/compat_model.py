"""What a compatibility check works on and what it finds: the two sides, and findings.

A :class:`Side` is one schema as :func:`~nemo.lens.codegen.validate.load_schema` validated
it, with the parsed text of the files it came from, so every :class:`Finding` can name the
line of its key on both sides. :mod:`~nemo.lens.codegen.compat` compares two sides;
:mod:`~nemo.lens.codegen.compat_report` prints what it found.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nemo.lens.codegen.checker import format_path
from nemo.lens.codegen.locate import KeyPath, Locator
from nemo.lens.codegen.model import Group, GroupClass, Preset, Schema
from nemo.lens.codegen.validate import extended_schema, load_schema, read_document

__all__ = [
    "BREAKING",
    "COMPATIBLE",
    "SEVERITIES",
    "WARNING",
    "Finding",
    "Location",
    "Pair",
    "Side",
    "SourceFile",
    "load_side",
    "presets",
    "quoted",
    "vocabulary",
]

BREAKING = "breaking"
"""Users of the old schema break: a name they use is gone, or production loses spans."""
WARNING = "warning"
"""Nothing breaks, but what users see changes: more spans, or goodput figures that move."""
COMPATIBLE = "compatible"
"""An addition, a deprecation, or the end of one."""
SEVERITIES: tuple[str, ...] = (BREAKING, WARNING, COMPATIBLE)
"""Most serious first: the order findings are listed in."""


@dataclass(frozen=True)
class Location:
    """Where one side of a finding is written: a file, a line, and the key found there."""

    file: str
    line: int | None
    key: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file

    def as_json(self) -> dict[str, object]:
        return {"file": self.file, "line": self.line, "key": self.key}


@dataclass(frozen=True)
class Finding:
    """One change between the two schemas, classified."""

    kind: str
    """What changed, as a stable identifier (``group_removed``); docs/schema-compatibility.md
    lists them all."""
    severity: str
    subject: str
    """The key path the finding is about (``consumers.mylib.presets.default``)."""
    message: str
    fix: str
    old: Location | None
    new: Location | None

    @property
    def where(self) -> Location | None:
        """Where to point a reader: the new schema's line, else the old one's."""
        return self.new or self.old

    @property
    def sort_key(self) -> tuple[int, int, str, str]:
        consumer = self.subject.startswith("consumers.")
        return (SEVERITIES.index(self.severity), int(consumer), self.subject, self.kind)


def _exists(data: Any, path: KeyPath) -> bool:
    node = data
    for part in path:
        if isinstance(part, int):
            if not isinstance(node, list) or part >= len(node):
                return False
        elif not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


@dataclass(frozen=True)
class SourceFile:
    """One schema file's parsed content and the lines of its keys."""

    shown: str
    data: Mapping[str, Any]
    locator: Locator

    def locate(self, path: KeyPath) -> Location | None:
        """The location of *path* when this file writes that key; None when it does not."""
        if not path or not _exists(self.data, path):
            return None
        return Location(self.shown, self.locator.line(path), format_path(path))

    def array(self, path: KeyPath) -> list[Any]:
        """The array at *path*; empty when this file writes none there."""
        node: Any = self.data
        for part in path:
            node = node.get(part, {}) if isinstance(node, dict) else {}
        return node if isinstance(node, list) else []

    def listed(self, path: KeyPath, name: str) -> Location | None:
        """The location of *name* in the array at *path*, else of the array's key."""
        array = self.array(path)
        if name in array:
            return self.locate((*path, array.index(name)))
        return self.locate(path)


@dataclass(frozen=True)
class Side:
    """One schema to compare: the validated model, and the files it was read from."""

    schema: Schema
    top: SourceFile
    """The file that was named: it defines the consumers."""
    base: SourceFile
    """The file that defines the base vocabulary: the named one, or the one it extends."""

    @property
    def consumers(self) -> dict[str, GroupClass]:
        """Every consumer class, by key."""
        return {c.key: c for c in self.schema.consumers}

    @property
    def classes(self) -> tuple[GroupClass, ...]:
        """The base class, then every consumer."""
        return (self.schema.base, *self.schema.consumers)

    def prefix(self, cls: GroupClass) -> tuple[SourceFile, KeyPath]:
        """The file and key path under which *cls* is written."""
        if cls.base is None:
            return self.base, ()
        return self.top, ("consumers", cls.key)

    def first(self, cls: GroupClass, *paths: KeyPath) -> Location | None:
        """The first of *paths* (relative to *cls*'s table) that *cls*'s file writes."""
        source, prefix = self.prefix(cls)
        for path in paths:
            found = source.locate((*prefix, *path))
            if found is not None:
                return found
        return None

    def group(self, cls: GroupClass, name: str, *keys: str) -> Location | None:
        """Where group *name* of *cls* (or of the base it inherits) is written: its key
        *keys* when it has it, else its table."""
        owner = cls if any(g.name == name for g in cls.groups) else (cls.base or cls)
        table = ("groups", name)
        return self.first(owner, (*table, *keys), table)

    def preset(self, cls: GroupClass, name: str, member: str = "") -> Location | None:
        """Where preset *name* of *cls* is written (at *member*'s listing when it names one);
        a consumer preset inherited without a table of its own: its consumer's table."""
        source, prefix = self.prefix(cls)
        table = (*prefix, "presets", name)
        if member:
            found = source.listed((*table, "groups"), member)
            if found is not None:
                return found
        return source.locate(table) or source.locate(prefix)

    def lists(self, cls: GroupClass, name: str, member: str) -> bool:
        """Whether preset *name* of *cls* lists group *member* itself (not through
        ``extends`` or the base preset)."""
        source, prefix = self.prefix(cls)
        return member in source.array((*prefix, "presets", name, "groups"))

    def consumer(self, key: str, *keys: str) -> Location | None:
        return self.top.locate(("consumers", key, *keys)) or self.top.locate(("consumers", key))


def vocabulary(cls: GroupClass) -> dict[str, Group]:
    """Every group name *cls* knows: the base's (renamed ones included) and its own."""
    out = {g.name: g for g in (cls.base.groups if cls.base else ())}
    out.update((g.name, g) for g in cls.groups)
    return out


def presets(cls: GroupClass) -> dict[str, Preset]:
    return {p.name: p for p in cls.presets}


def quoted(names: Iterable[str]) -> str:
    """`group 'a'` or `groups 'a', 'b'`: sorted, so output is the same on every machine."""
    ordered = sorted(names)
    listing = ", ".join(f"{n!r}" for n in ordered)
    return f"group {listing}" if len(ordered) == 1 else f"groups {listing}"


@dataclass(frozen=True)
class Pair:
    """One class as both sides define it (the base class, or a consumer of the same key)."""

    old: Side
    new: Side
    old_cls: GroupClass
    new_cls: GroupClass

    @property
    def is_base(self) -> bool:
        return self.new_cls.base is None

    @property
    def title(self) -> str:
        return self.new_cls.class_name

    def subject(self, *path: str) -> str:
        """The key path of *path* under this class's table, as messages write it."""
        return format_path(path if self.is_base else ("consumers", self.new_cls.key, *path))


def _chain(path: Path, shown: str) -> Iterator[SourceFile]:
    """The named file, then each file it extends (the loader has refused cycles)."""
    while True:
        data, locator = read_document(path, shown)
        yield SourceFile(shown, data, locator)
        extends = data.get("extends")
        if not isinstance(extends, str):
            return
        path, shown = extended_schema(path, extends)


def load_side(path: Path, shown: str | None = None, schema: Schema | None = None) -> Side:
    """Load and validate the schema at *path* (raises :class:`SchemaError`) for comparing;
    *schema* is what :func:`load_schema` returned for it already, if it was loaded."""
    shown = shown or path.as_posix()
    schema = schema or load_schema(path, shown)
    files = list(_chain(path, shown))
    return Side(schema, files[0], files[-1])
