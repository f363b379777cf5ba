"""``nemo-lens adopt``: the ``lens.toml`` that generates what a hand-written ``SpanGroup``
subclass (or a ``SpanRegistry.register`` call) defines, read from the source with ``ast``:
the module is never imported or run. docs/consumer-repositories.md says how to move over."""

from __future__ import annotations

import argparse
import ast
import inspect
import io
import json
import os
import re
import stat
import sys
import tempfile
import tokenize
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeAlias

from nemo.lens.codegen.checker import MAX_NAME, SchemaError, name_problem
from nemo.lens.codegen.json_schema import BUNDLED_BASE
from nemo.lens.codegen.model import (
    ALL_PRESET,
    GOODPUT,
    IMPLICIT_PRESETS,
    PRODUCTION_PRESET,
    PROFILING,
    QUIET_TIERS,
    GroupClass,
)

__all__ = ["AdoptError", "adopt", "main", "parser"]

PROG = "nemo-lens adopt"
EXIT_OK = 0
EXIT_IO = 1
"""The output cannot be written (as for the other commands)."""
EXIT_USAGE = 2
"""Bad usage, or a source adopt cannot read: nothing is written."""
DEFAULT_SINCE = "0.1.0"
MAX_DESCRIPTION = 200
PRESET_ATTRIBUTES = ("_PRESETS", "PRESETS")
# What a name hints about how often its spans fire, first match wins; only a guess, and the
# output marks it for review.
_TIER_HINTS = (
    (("microbatch",), "per_microbatch"),
    (("layer",), "per_layer"),
    (("prompt", "item", "sample"), "per_item"),
    (("request", "server", "http", "call", "client"), "per_request"),
    (("step", "iteration"), "per_step"),
)
_ONCE_HINTS = ("init", "setup", "job", "startup", "first")

Value: TypeAlias = str | frozenset[str] | dict[str, frozenset[str]]


class AdoptError(Exception):
    """A source adopt cannot use: one line that names the file, the line and the construct,
    and what to do."""


@dataclass
class Adopted:
    """What the source defines: one class's (or one registration's) groups and presets."""

    origin: str
    """How the output names it: ``class MegatronSpanGroup`` or ``SpanRegistry.register('x')``."""
    key: str
    class_name: str
    description: str
    groups: frozenset[str]
    """Every group, the base's included."""
    presets: dict[str, frozenset[str]]
    goodput: frozenset[str] | None
    """The goodput groups the source states (``GOODPUT_GROUPS``, a ``goodput`` preset)."""
    described: dict[str, str] = field(default_factory=dict)
    registered: frozenset[str] | None = None
    """A registration's own groups (None for a class)."""
    preset_described: dict[str, str] = field(default_factory=dict)


class _Source:
    """A module's text and syntax tree, and the static evaluation of what it assigns."""

    def __init__(self, path: Path, shown: str, base: GroupClass) -> None:
        self.shown = shown
        self.base = base
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise AdoptError(
                f"{shown}: not UTF-8 text ({exc.reason}); name a Python file"
            ) from None
        except OSError as exc:
            raise AdoptError(f"{shown}: cannot read it: {exc.strerror or exc}") from None
        try:
            self.tree = ast.parse(text, filename=shown)
        except SyntaxError as exc:
            raise AdoptError(
                f"{shown}:{exc.lineno}: not valid Python ({exc.msg}); adopt reads the module's "
                "source: fix it, or name the file that holds the class"
            ) from None
        self.comments = _comments(text)
        self.module_names = _assignments(self.tree.body)
        self.classes = {n.name: n for n in self.tree.body if isinstance(n, ast.ClassDef)}
        self.class_names = {name: _assignments(c.body) for name, c in self.classes.items()}
        self._evaluating: set[tuple[str, str]] = set()
        self.lines: dict[str, int] = {}
        self.preset_comments: dict[str, str] = {}
        """The comment beside (or above) each preset's key in a dict literal."""
        """Where each string was first read: a bad group name is reported at its line."""

    def fail(self, node: ast.AST, what: str) -> AdoptError:
        return AdoptError(f"{self.shown}:{getattr(node, 'lineno', '?')}: {what}")

    def cannot(self, node: ast.AST) -> AdoptError:
        return self.fail(
            node,
            f"cannot evaluate `{_short(node)}` without running the module (adopt reads string "
            "constants, set, list and dict literals, frozenset(...), | and - between them, and "
            "names the module or class assigns): write it as one of those, or write that part "
            "of lens.toml by hand",
        )

    def evaluate(self, node: ast.expr, cls: str | None) -> Value:
        """The value of *node* in the body of class *cls* (None: at module level)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            self.lines.setdefault(node.value, node.lineno)
            return node.value
        if isinstance(node, ast.Name):
            return self.lookup(node, node.id, cls)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            owner = node.value.id
            if owner in self.classes:
                return self.lookup(node, node.attr, owner, attribute=True)
            if owner == "SpanGroup":
                return self.base_attribute(node, node.attr)
        if isinstance(node, ast.Set | ast.List | ast.Tuple):
            members: set[str] = set()
            for element in node.elts:
                if isinstance(element, ast.Starred):
                    members |= self.groups(element.value, cls)
                else:
                    members.add(self.group(element, cls))
            return frozenset(members)
        if isinstance(node, ast.Dict):
            return self.presets(node, cls)
        if isinstance(node, ast.BinOp):
            left, right = self.evaluate(node.left, cls), self.evaluate(node.right, cls)
            if isinstance(left, frozenset) and isinstance(right, frozenset):
                if isinstance(node.op, ast.BitOr):
                    return left | right
                if isinstance(node.op, ast.Sub):
                    return left - right
                if isinstance(node.op, ast.BitAnd):
                    return left & right
            if (
                isinstance(left, dict)
                and isinstance(right, dict)
                and isinstance(node.op, ast.BitOr)
            ):
                return {**left, **right}
        if isinstance(node, ast.Call):
            return self.call(node, cls)
        raise self.cannot(node)

    def call(self, node: ast.Call, cls: str | None) -> Value:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else ""
        if name in ("frozenset", "set") and len(node.args) <= 1 and not node.keywords:
            return self.groups(node.args[0], cls) if node.args else frozenset()
        if name in ("dict", "MappingProxyType") and len(node.args) <= 1:
            presets = dict(self.presets(node.args[0], cls)) if node.args else {}
            for keyword in node.keywords:
                if keyword.arg is None:
                    raise self.cannot(node)
                presets[keyword.arg] = self.groups(keyword.value, cls)
            return presets
        if isinstance(func, ast.Attribute) and func.attr == "union" and not node.keywords:
            members = self.groups(func.value, cls)
            for argument in node.args:
                members |= self.groups(argument, cls)
            return members
        raise self.cannot(node)

    def lookup(self, node: ast.AST, name: str, cls: str | None, attribute: bool = False) -> Value:
        """*name* as the body of class *cls* sees it: its own assignments, then (a bare name)
        the module's, then (an attribute of a SpanGroup subclass) the base vocabulary's."""
        scopes: list[tuple[str | None, Mapping[str, ast.expr]]] = []
        if cls is not None:
            scopes.append((cls, self.class_names[cls]))
        if not attribute:
            scopes.append((None, self.module_names))
        for owner, names in scopes:
            if name in names:
                key = (owner or "", name)
                if key in self._evaluating:
                    raise self.fail(node, f"`{name}` is defined in terms of itself")
                self._evaluating.add(key)
                try:
                    return self.evaluate(names[name], owner)
                finally:
                    self._evaluating.discard(key)
        if attribute and cls is not None and _is_span_group(self.classes[cls]):
            return self.base_attribute(node, name)
        where = f"class {cls}" if attribute else "this module"
        raise self.fail(
            node,
            f"`{name}` is not assigned in {where} (imported, or made at run time): adopt "
            "reads only what the module itself assigns; assign it there with a literal, or "
            "write that part of lens.toml by hand",
        )

    def base_attribute(self, node: ast.AST, name: str) -> Value:
        """``SpanGroup.NAME``: a constant, ``ALL_GROUPS``, ``GOODPUT_GROUPS`` or the presets
        of the base vocabulary this nemo-lens ships."""
        for group in self.base.groups:
            if group.constant == name:  # a renamed group's constant is an alias of the new
                return group.renamed_to or group.name
        if name == "ALL_GROUPS":
            return frozenset(g.name for g in self.base.current_groups)
        if name == "GOODPUT_GROUPS":
            return self.base.goodput
        if name in PRESET_ATTRIBUTES:
            return {p.name: p.members for p in self.base.presets}
        raise self.fail(
            node,
            f"`SpanGroup.{name}` is not a name of the base vocabulary this nemo-lens ships "
            "(`nemo-lens groups` lists its groups): use one of its names, or upgrade nemo-lens",
        )

    def group(self, node: ast.expr, cls: str | None) -> str:
        value = self.evaluate(node, cls)
        if not isinstance(value, str):
            raise self.fail(node, f"`{_short(node)}` is not a group name (a string)")
        return value

    def groups(self, node: ast.expr, cls: str | None) -> frozenset[str]:
        value = self.evaluate(node, cls)
        if not isinstance(value, frozenset):
            raise self.fail(node, f"`{_short(node)}` is not a set of group names")
        return value

    def presets(self, node: ast.expr, cls: str | None) -> dict[str, frozenset[str]]:
        if not isinstance(node, ast.Dict):
            value = self.evaluate(node, cls)
            if not isinstance(value, dict):
                raise self.fail(node, f"`{_short(node)}` is not a mapping of presets")
            return value
        presets: dict[str, frozenset[str]] = {}
        for key, members in zip(node.keys, node.values, strict=True):
            if key is None:  # {**OTHER, ...}
                presets.update(self.presets(members, cls))
            else:
                name = self.group(key, cls)
                presets[name] = self.groups(members, cls)
                text = self.comment_at(key.lineno)
                if text:
                    self.preset_comments.setdefault(name, text)
        return presets

    def comment_at(self, line: int) -> str:
        """The comment beside *line*, else the comment lines right above it, joined."""
        beside = self.comments.get(line)
        if beside is not None and not beside[1]:
            return beside[0]
        above: list[str] = []
        while line - 1 in self.comments and self.comments[line - 1][1]:
            line -= 1
            above.insert(0, self.comments[line][0])
        return " ".join(above)

    def described(self, cls: ast.ClassDef, value: str) -> str:
        """The description of the constant of *cls* that holds *value*: its docstring, the
        comment beside it, or ``#:`` comments above it."""
        for index, statement in enumerate(cls.body):
            target = _target(statement)
            if target is None or not (
                isinstance(target[1], ast.Constant) and target[1].value == value
            ):
                continue
            following = cls.body[index + 1] if index + 1 < len(cls.body) else None
            if (
                isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                return following.value.value
            end = statement.end_lineno or statement.lineno
            beside = self.comments.get(end)
            if beside is not None and not beside[1]:
                return beside[0]
            above: list[str] = []
            line = statement.lineno - 1
            while line in self.comments and self.comments[line][1]:
                text = self.comments[line][0]
                if not text.startswith(":"):
                    break
                above.insert(0, text[1:])
                line -= 1
            return " ".join(above)
        return ""


def _comments(text: str) -> dict[int, tuple[str, bool]]:
    """Each line's comment (without ``#``), and whether it stands on a line of its own."""
    found: dict[int, tuple[str, bool]] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                alone = not token.line[: token.start[1]].strip()
                found[token.start[0]] = (token.string[1:].strip(), alone)
    except (tokenize.TokenError, SyntaxError):  # ast.parse accepted it: keep what was read
        pass
    return found


def _target(statement: ast.stmt) -> tuple[str, ast.expr] | None:
    if (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
    ):
        return statement.targets[0].id, statement.value
    if (
        isinstance(statement, ast.AnnAssign)
        and isinstance(statement.target, ast.Name)
        and statement.value is not None
    ):
        return statement.target.id, statement.value
    return None


def _assignments(body: Sequence[ast.stmt]) -> dict[str, ast.expr]:
    names: dict[str, ast.expr] = {}
    for statement in body:
        found = _target(statement)
        if found is not None:
            names[found[0]] = found[1]
    return names


def _is_span_group(cls: ast.ClassDef) -> bool:
    return any(
        (isinstance(b, ast.Name) and b.id == "SpanGroup")
        or (isinstance(b, ast.Attribute) and b.attr == "SpanGroup")
        for b in cls.bases
    )


def _is_registration(node: ast.AST) -> bool:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    owner = node.func.value
    named = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
    return node.func.attr == "register" and named == "SpanRegistry"


def _short(node: ast.AST, limit: int = 60) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _one_line(text: str) -> tuple[str, bool]:
    """*text* (a docstring or comment) as a schema description: its first paragraph on one
    line, Sphinx's double backquotes made single; and whether it had to be shortened."""
    paragraph = inspect.cleandoc(text).split("\n\n")[0]
    line = " ".join(paragraph.split()).replace("``", "`")
    line = "".join(c for c in line if c.isprintable())
    if len(line) <= MAX_DESCRIPTION:
        return line, False
    sentence = re.match(r"(.+?[.!?])(\s|$)", line)
    if sentence and len(sentence.group(1)) <= MAX_DESCRIPTION:
        return sentence.group(1), True
    return line[: MAX_DESCRIPTION - 3].rsplit(" ", 1)[0] + "...", True


def _snake(name: str) -> str:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name)
    return re.sub(r"[^a-z0-9]+", "_", spaced.lower()).strip("_")


def _fires(group: str, presets: Mapping[str, frozenset[str]]) -> tuple[str, str]:
    """A guess at how often *group* fires, and why: a group of ``default`` is quiet (the
    preset contract), else its name may say, else the presets it is in."""
    named = sorted(
        p for p, members in presets.items() if p not in IMPLICIT_PRESETS and group in members
    )
    if PRODUCTION_PRESET in named:
        tier = "once" if any(h in group for h in _ONCE_HINTS) else "periodic"
        return tier, f"in '{PRODUCTION_PRESET}', which holds quiet groups only"
    for words, tier in _TIER_HINTS:
        if any(word in group for word in words):
            return tier, "from its name"
    if named:
        return "per_step", f"in {', '.join(repr(p) for p in named)}, not in '{PRODUCTION_PRESET}'"
    return "per_microbatch", "in no preset but the implicit ones: finer than per_step"


def find_module(given: str) -> tuple[Path, str]:
    """The file *given* names: a path, or a dotted module name found as a file under the
    current directory, ``src`` or the import path (looked for, never imported)."""
    path = Path(given)
    dotted = re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", given) and not given.endswith(".py")
    if path.exists() or not dotted:
        if path.is_dir():
            raise AdoptError(f"{given}: is a directory; name the module file (its .py)")
        if not path.exists():
            raise AdoptError(f"{given}: no such file; name the module that holds the class")
        return path, given
    relative = Path(*given.split("."))
    for root in (".", "src", *sys.path):
        for candidate in (relative.with_suffix(".py"), relative / "__init__.py"):
            found = Path(root or ".") / candidate
            if found.is_file():
                return found, os.path.relpath(found) if root in (".", "src") else str(found)
    raise AdoptError(
        f"{given}: no such file, and no module of that name under the current directory, "
        "src/ or the import path; name the module's file"
    )


def _read_class(source: _Source, cls: ast.ClassDef, key: str | None) -> Adopted:
    names = source.class_names[cls.name]
    everything: frozenset[str]
    if "ALL_GROUPS" in names:
        everything = source.groups(names["ALL_GROUPS"], cls.name)
    else:  # the base's, and every string constant the class defines
        constants = [v for k, v in names.items() if k.isupper() and isinstance(v, ast.Constant)]
        own = {str(v.value) for v in constants if isinstance(v.value, str)}
        everything = frozenset(g.name for g in source.base.current_groups) | own
    presets: dict[str, frozenset[str]] = {}
    for attribute in PRESET_ATTRIBUTES:
        if attribute in names:
            presets = source.presets(names[attribute], cls.name)
            break
    goodput: frozenset[str] | None = None
    if "GOODPUT_GROUPS" in names:
        goodput = source.groups(names["GOODPUT_GROUPS"], cls.name)
    elif GOODPUT in presets:
        goodput = presets[GOODPUT]
    base = {g.name for g in source.base.all_groups}
    described = {}
    for group in everything - base:
        text = source.described(cls, group)
        if text:
            described[group] = text
    docstring = ast.get_docstring(cls) or ""
    stem = cls.name[: -len("SpanGroup")] if cls.name.endswith("SpanGroup") else cls.name
    return Adopted(
        origin=f"class {cls.name}",
        key=key or _snake(stem) or "consumer",
        class_name=cls.name,
        description=docstring or f"Span groups of {cls.name}, adopted from its hand-written class.",
        groups=everything,
        presets=presets,
        goodput=goodput,
        described=described,
    )


def _read_registration(source: _Source, call: ast.Call, key: str | None) -> Adopted:
    arguments: dict[str, ast.expr] = dict(
        zip(("namespace", "groups", "presets"), call.args, strict=False)
    )
    arguments.update({k.arg: k.value for k in call.keywords if k.arg is not None})
    if "namespace" not in arguments or "groups" not in arguments:
        raise source.fail(call, "SpanRegistry.register(...) without a namespace and groups")
    namespace = source.group(arguments["namespace"], None)
    groups = source.groups(arguments["groups"], None)
    presets: dict[str, frozenset[str]] = {}
    given = arguments.get("presets")
    if given is not None and not (isinstance(given, ast.Constant) and given.value is None):
        presets = source.presets(given, None)
    stem = _snake(namespace) or "consumer"
    camel = "".join(part.capitalize() for part in stem.split("_"))
    base = frozenset(g.name for g in source.base.current_groups)
    return Adopted(
        origin=f"SpanRegistry.register({namespace!r})",
        key=key or stem,
        class_name=f"{camel}SpanGroup",
        description=f"Span groups of the {namespace!r} namespace, adopted from its registration.",
        groups=base | groups,
        presets=presets,
        goodput=None,
        registered=groups,
    )


def read(
    path: Path, shown: str, base: GroupClass, class_name: str | None = None, key: str | None = None
) -> Adopted:
    """What the module at *path* defines: its ``SpanGroup`` subclass (*class_name* when it has
    several), else its one ``SpanRegistry.register`` call."""
    source = _Source(path, shown, base)
    classes = [c for c in source.classes.values() if _is_span_group(c)]
    if class_name is not None:
        chosen = [c for c in classes if c.name == class_name]
        if not chosen:
            there = ", ".join(c.name for c in classes) or "none"
            raise AdoptError(
                f"{shown}: no SpanGroup subclass {class_name!r} at the top level "
                f"(those there: {there}); name one of them with --class"
            )
        classes = chosen
    if len(classes) > 1:
        found = ", ".join(f"{c.name} (line {c.lineno})" for c in classes)
        raise AdoptError(
            f"{shown}: {len(classes)} SpanGroup subclasses: {found}; name the one to adopt "
            "with --class NAME"
        )
    adopted: Adopted
    if classes:
        adopted = _read_class(source, classes[0], key)
    else:
        calls = [
            n for n in ast.walk(source.tree) if isinstance(n, ast.Call) and _is_registration(n)
        ]
        if not calls:
            raise AdoptError(
                f"{shown}: no SpanGroup subclass at the top level and no "
                "SpanRegistry.register(...) call; name the module that defines the groups"
            )
        if len(calls) > 1:
            lines = ", ".join(str(c.lineno) for c in calls)
            raise AdoptError(
                f"{shown}: {len(calls)} SpanRegistry.register calls (lines {lines}); adopt "
                "reads one: move the others to a module of their own, or adopt a class"
            )
        adopted = _read_registration(source, calls[0], key)
    adopted.preset_described = source.preset_comments
    for group in sorted(adopted.groups | frozenset().union(*adopted.presets.values())):
        problem = name_problem(group, MAX_NAME)
        if problem:
            dotted = (
                " (a generated class makes each group a constant, so its groups are "
                "snake_case names: keep registering this one with SpanRegistry.register, or "
                "rename it in the source)"
                if "." in group
                else ""
            )
            where = f"{shown}:{source.lines[group]}" if group in source.lines else shown
            raise AdoptError(f"{where}: group {group!r} of {adopted.origin} {problem}{dotted}")
    for preset in sorted(set(adopted.presets) - set(IMPLICIT_PRESETS)):
        problem = name_problem(preset, MAX_NAME)
        if problem:
            where = f"{shown}:{source.lines[preset]}" if preset in source.lines else shown
            raise AdoptError(f"{where}: preset {preset!r} of {adopted.origin} {problem}")
    problem = name_problem(adopted.key, MAX_NAME)
    if problem:
        raise AdoptError(
            f"{shown}: the consumer name {adopted.key!r} {problem}; give one with --name"
        )
    return adopted


def _toml(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # JSON's escapes are TOML's


def _names(names: Sequence[str]) -> str:
    return "[" + ", ".join(_toml(n) for n in names) + "]"


def render(
    adopted: Adopted, base: GroupClass, module: str, shown: str, since: str, out_root: str = "DIR"
) -> str:
    """The ``lens.toml`` text for *adopted*: a consumer of the shipped base vocabulary."""
    base_groups = {g.name: g for g in base.current_groups}
    own = sorted(adopted.groups - set(base_groups))
    every = adopted.groups | set(base_groups)
    base_presets = {p.name: p for p in base.presets}
    lines = [
        f"# Written by `nemo-lens adopt` from {adopted.origin} in",
        f"# {shown}, read as source (never run).",
        "# Review what is marked `review`, then generate the module from it:",
        f"#   nemo-lens generate --schema lens.toml --out-root {out_root}",
        "schema_version = 1",
        f"extends = {_toml(BUNDLED_BASE)}",
        "",
    ]
    missing = sorted(set(base_groups) - adopted.groups)
    if adopted.registered is not None:
        lines += [
            "# review: a generated class inherits the base vocabulary, so its `all` holds the",
            f"# base groups too, beside the {len(adopted.registered)} groups registered here.",
        ]
    elif missing:
        lines += [
            f"# review: the generated class has every base group; {adopted.origin} left out",
            f"# {', '.join(missing)}, which its `all` will hold.",
        ]
    for name in (ALL_PRESET, PROFILING):
        stated = adopted.presets.get(name)
        if stated is not None and stated != every:
            lines.append(
                f"# review: the hand-written {name!r} preset is not every group; the generated "
                f"{name!r} is."
            )
    description, shortened = _one_line(adopted.description)
    lines += [
        f"[consumers.{adopted.key}]",
        f"class = {_toml(adopted.class_name)}",
        f"module = {_toml(module)}",
        f"description = {_toml(description)}" + ("  # review: shortened" if shortened else ""),
    ]
    goodput = adopted.goodput
    if goodput is not None:
        changed = {g: PROFILING for g in base.goodput - goodput} | {
            g: GOODPUT for g in (goodput & set(base_groups)) - base.goodput
        }
        if changed:
            table = ", ".join(f"{g} = {_toml(c)}" for g, c in sorted(changed.items()))
            lines.append(f"categories = {{ {table} }}  # from the hand-written goodput groups")
    for group in own:
        text = adopted.described.get(group, "")
        description, shortened = _one_line(text) if text else (f"The {group} spans.", True)
        note = "shortened from the docstring" if text else "no docstring or comment to take"
        fires, why = _fires(group, adopted.presets)
        lines += [
            "",
            f"[consumers.{adopted.key}.groups.{group}]",
            f"description = {_toml(description)}" + (f"  # review: {note}" if shortened else ""),
            f"fires = {_toml(fires)}  # review: inferred ({why})",
            f"since = {_toml(since)}",
        ]
        if goodput is not None and group in goodput:
            lines.append(f"category = {_toml(GOODPUT)}")
    for name, members in sorted(adopted.presets.items()):
        if name in IMPLICIT_PRESETS:
            continue
        inherited = base_presets.get(name)
        lines += ["", f"[consumers.{adopted.key}.presets.{name}]"]
        if inherited is None:
            comment = adopted.preset_described.get(name, "")
            text, shortened = _one_line(comment) if comment else (f"The {name} preset.", True)
            mark = "  # review: shortened from the comment" if comment else "  # review"
            lines.append(f"description = {_toml(text)}" + (mark if shortened else ""))
            listed = members
        elif members >= inherited.members:
            listed = members - inherited.members  # the base's own, kept in step with the base
        else:
            lines.append(f"replace = true  # the hand-written {name!r} leaves out base groups")
            listed = members
        lines.append(f"groups = {_names(sorted(listed))}")
        if name == PRODUCTION_PRESET:
            kept = (
                dict(inherited.allow_frequent) if inherited and members >= inherited.members else {}
            )
            loud = sorted(
                g
                for g in members & set(base_groups)
                if base_groups[g].fires not in QUIET_TIERS and g not in kept
            )
            if loud:
                reason = _toml(f"In the hand-written default of {adopted.origin}.")
                table = ", ".join(f"{g} = {reason}" for g in loud)
                lines.append(f"allow_frequent = {{ {table} }}  # review")
    return "\n".join(lines) + "\n"


def default_module(path: Path, key: str) -> tuple[str, Path]:
    """``lens_groups`` beside the source, in its package (found by its ``__init__.py``
    files), and the directory its module path starts from; ``KEY_lens_groups`` beside a
    module outside any package."""
    parts: list[str] = []
    directory = path.resolve().parent
    while (directory / "__init__.py").is_file() and directory.parent != directory:
        parts.insert(0, directory.name)
        directory = directory.parent
    return (".".join([*parts, "lens_groups"]) if parts else f"{key}_lens_groups"), directory


def adopt(
    given: str,
    *,
    class_name: str | None = None,
    key: str | None = None,
    module: str | None = None,
    since: str = DEFAULT_SINCE,
) -> str:
    """The ``lens.toml`` text that generates what the module *given* (a path, or a dotted
    name found as a file) defines; raises :class:`AdoptError` for a source it cannot use."""
    from nemo.lens.codegen.validate import BUNDLED_BASE_PATH, load_schema

    base = load_schema(BUNDLED_BASE_PATH, BUNDLED_BASE).base
    path, shown = find_module(given)
    adopted = read(path, shown, base, class_name, key)
    out_root = "DIR"
    if module is None:
        module, root = default_module(path, adopted.key)
        # Said as the source was given: relative to here, or absolute.
        out_root = root.as_posix() if path.is_absolute() else Path(os.path.relpath(root)).as_posix()
    text = render(adopted, base, module, shown, since, out_root)
    # The generator's own checks, so what adopt writes is what `generate` accepts.
    with tempfile.TemporaryDirectory() as directory:
        written = Path(directory) / "lens.toml"
        written.write_text(text, encoding="utf-8")
        try:
            load_schema(written, "lens.toml")
        except SchemaError as exc:
            problems = "; ".join(str(p) for p in exc.problems)
            raise AdoptError(
                f"{shown}: the schema adopted from {adopted.origin} is not valid: {problems}; "
                "fix the source (or --name, --module, --since) and run adopt again"
            ) from None
    return text


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Write the lens.toml that `nemo-lens generate` turns into a module with the same "
            "groups and presets as a hand-written SpanGroup subclass, or as a "
            "SpanRegistry.register(...) call. The module is read as source (ast) and never "
            "imported or run. Descriptions come from docstrings and comments; how often each "
            "group fires is inferred from the presets and marked for review."
        ),
        epilog=(
            "Exit status: 0 written, 1 the output cannot be written, 2 bad usage or a source "
            "adopt cannot read (nothing is written)."
        ),
    )
    parser.add_argument(
        "source",
        metavar="MODULE",
        help="the module's file (or its dotted name, looked for as a file under the current "
        "directory, src/ and the import path)",
    )
    parser.add_argument(
        "--class",
        dest="class_name",
        metavar="NAME",
        help="the SpanGroup subclass to adopt, when the module has several",
    )
    parser.add_argument(
        "--name",
        metavar="KEY",
        help="the consumer's name in the schema (default: from the "
        "class, MegatronSpanGroup -> megatron, or the registered namespace)",
    )
    parser.add_argument(
        "--module",
        metavar="MODULE",
        help="the module to generate (default: lens_groups in the source's package)",
    )
    parser.add_argument(
        "--since",
        default=DEFAULT_SINCE,
        metavar="VERSION",
        help=f"the release the groups came in (default: {DEFAULT_SINCE})",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="write the schema to OUT (default: standard "
        "output); an existing file is replaced only with --force",
    )
    parser.add_argument("--force", action="store_true", help="replace an existing OUT")
    return parser


def _error(text: str, status: int) -> int:
    print(f"{PROG}: error: {text}", file=sys.stderr)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``nemo-lens adopt`` with *argv*; return the exit status."""
    try:
        args = parser().parse_args(argv)
    except SystemExit as exit_:  # usage errors (2), --help (0)
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    output: str | None = args.output
    if output is not None and output != "-" and not args.force:
        try:
            existing = stat.S_ISREG(os.stat(output).st_mode)
        except OSError:
            existing = False
        if existing:
            return _error(
                f"{output} exists; pass --force to replace it, or choose another file", EXIT_USAGE
            )
    try:
        text = adopt(
            args.source,
            class_name=args.class_name,
            key=args.name,
            module=args.module,
            since=args.since,
        )
    except AdoptError as exc:
        return _error(f"{exc}; nothing was written", EXIT_USAGE)
    if output is None or output == "-":
        sys.stdout.write(text)
        return EXIT_OK
    from nemo.lens.cli._common import NotWritable, write_output

    try:
        write_output(output, lambda stream: stream.write(text))
    except NotWritable as exc:
        return _error(f"cannot write {output}: {exc}; {exc.hint}", EXIT_IO)
    except OSError as exc:
        return _error(f"cannot write {output}: {exc.strerror or exc}", EXIT_IO)
    print(f"wrote {output}", file=sys.stderr)
    return EXIT_OK
