"""The layout's rules (docs/architecture.md), checked on the source so they stay true.

Each rule is read from the package's own files with :mod:`ast`: no module reaches
into another's private names, imports never go round in a circle, generated code
imports only public modules, and there is one fork hook and one version.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path

import nemo.lens

PACKAGE = Path(nemo.lens.__file__).resolve().parent
SRC = PACKAGE.parents[1]
GENERATED_MARK = "# DO NOT EDIT"


@dataclass(frozen=True)
class Module:
    name: str
    text: str
    is_package: bool = False

    @cached_property
    def tree(self) -> ast.Module:
        return ast.parse(self.text)

    @property
    def generated(self) -> bool:
        return self.text.startswith(GENERATED_MARK)

    def absolute(self, node: ast.ImportFrom) -> str:
        """The module an `from ... import` names, relative imports resolved."""
        if node.level == 0:
            return node.module or ""
        parts = self.name.split(".")
        if not self.is_package:
            parts = parts[:-1]
        parts = parts[: len(parts) - (node.level - 1)]
        return ".".join([*parts, *([node.module] if node.module else [])])


@cache
def modules() -> dict[str, Module]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        name = ".".join(parts)
        text = path.read_text(encoding="utf-8")
        found[name] = Module(name, text, is_package=path.name == "__init__.py")
    return found


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _imported_from(module: Module) -> Iterator[tuple[str, str, ast.ImportFrom]]:
    """(module, imported name, node) for every `from nemo.lens... import name` anywhere."""
    for node in ast.walk(module.tree):
        if isinstance(node, ast.ImportFrom):
            source = module.absolute(node)
            if source == "nemo.lens" or source.startswith("nemo.lens."):
                for alias in node.names:
                    yield source, alias.name, node


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_time_imports(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """Imports that run when the module is imported: not in functions, not type-only."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _import_time_imports(node.body)
            yield from _import_time_imports(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                yield from _import_time_imports(block)
            for handler in node.handlers:
                yield from _import_time_imports(handler.body)


def _every_import(module: Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import of *module*: at import time, inside functions, under ``TYPE_CHECKING``
    (a reader follows each of them)."""
    for node in ast.walk(module.tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node


def _dependencies(
    module: Module, known: dict[str, Module] | None = None, *, every: bool = True
) -> set[str]:
    """The package's modules *module* imports (most specific name): with *every*, any
    import it makes; else only those that run when it is imported."""
    known = modules() if known is None else known
    found: set[str] = set()
    imports = _every_import(module) if every else _import_time_imports(module.tree.body)
    for node in imports:
        if isinstance(node, ast.ImportFrom):
            source = module.absolute(node)
            for alias in node.names:
                target = f"{source}.{alias.name}"
                found.add(target if target in known else source)
        else:
            found.update(alias.name for alias in node.names)
    return {name for name in found if name in known and name != module.name}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            child = next(edges, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def _private_reaches(known: dict[str, Module]) -> list[str]:
    reaches = []
    for module in known.values():
        aliases = {}
        for source, name, statement in _imported_from(module):
            target = f"{source}.{name}"
            if target in known:
                alias = next(a.asname or a.name for a in statement.names if a.name == name)
                aliases[alias] = target
            elif _is_private(name) and source != module.name:
                reaches.append(f"{module.name}: from {source} import {name}")
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Import):
                aliases.update({a.asname: a.name for a in node.names if a.asname})
        for node in ast.walk(module.tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and _is_private(node.attr)
                and f"{aliases[node.value.id]}.{node.attr}" not in known
                and aliases[node.value.id] != module.name
            ):
                reaches.append(f"{module.name}: {node.value.id}.{node.attr}")
    return sorted(set(reaches))


def test_the_private_name_check_sees_both_ways_of_reaching() -> None:
    known = {
        "nemo.lens.a": Module("nemo.lens.a", "_hidden = 1\nshown = 2\n"),
        "nemo.lens.b": Module("nemo.lens.b", "from nemo.lens.a import _hidden, shown\n"),
        "nemo.lens.c": Module("nemo.lens.c", "from nemo.lens import a\nx = a._hidden\n"),
        "nemo.lens.d": Module("nemo.lens.d", "from nemo.lens import a\nx = a.shown\n"),
    }
    assert _private_reaches(known) == [
        "nemo.lens.b: from nemo.lens.a import _hidden",
        "nemo.lens.c: a._hidden",
    ]


def test_no_module_reaches_into_another_modules_private_names() -> None:
    reaches = _private_reaches(modules())
    assert not reaches, (
        "modules use other modules' private names; give the name a public home (a "
        "function of the owning module, or a module of its own under _core/ or _sdk/):\n"
        + "\n".join(reaches)
    )


# Two modules that import each other only inside a function and under TYPE_CHECKING: a
# circle a reader walks, though Python never does at import time.
_HIDDEN_CIRCLE = {
    "nemo.lens.a": Module("nemo.lens.a", "def f():\n    from nemo.lens import b\n"),
    "nemo.lens.b": Module(
        "nemo.lens.b",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import nemo.lens.a\n",
    ),
    "nemo.lens.c": Module("nemo.lens.c", "import nemo.lens.a\n"),
}


def test_the_circle_check_counts_imports_in_functions_and_under_type_checking() -> None:
    graph = {name: _dependencies(m, _HIDDEN_CIRCLE) for name, m in _HIDDEN_CIRCLE.items()}
    assert graph == {"nemo.lens.a": {"nemo.lens.b"}, "nemo.lens.b": {"nemo.lens.a"},
                     "nemo.lens.c": {"nemo.lens.a"}}  # fmt: skip
    assert _cycles(graph) == [["nemo.lens.a", "nemo.lens.b"]]
    import_time = {
        name: _dependencies(m, _HIDDEN_CIRCLE, every=False) for name, m in _HIDDEN_CIRCLE.items()
    }
    assert _cycles(import_time) == []  # what Python alone would never complain about


def test_imports_never_go_round_in_a_circle() -> None:
    graph = {name: _dependencies(module) for name, module in modules().items()}
    cycles = _cycles(graph)
    assert not cycles, (
        "import circles, counting imports inside functions and under TYPE_CHECKING (break "
        "them by moving the shared part down, or by typing with a Protocol of what is "
        f"used): {cycles}"
    )


def _core_reaches_sdk(known: dict[str, Module]) -> list[str]:
    return sorted(
        f"{name} imports {target}"
        for name, module in known.items()
        if name.startswith("nemo.lens._core")
        for target in _dependencies(module, known)
        if target == "nemo.lens._sdk" or target.startswith("nemo.lens._sdk.")
    )


def test_the_api_side_check_sees_an_import_inside_a_function() -> None:
    known = {
        "nemo.lens._core.x": Module("nemo.lens._core.x", "def f():\n    import nemo.lens._sdk.y\n"),
        "nemo.lens._sdk.y": Module("nemo.lens._sdk.y", ""),
        "nemo.lens._sdk.z": Module("nemo.lens._sdk.z", "from nemo.lens._core import x\n"),
    }
    assert _core_reaches_sdk(known) == ["nemo.lens._core.x imports nemo.lens._sdk.y"]


def test_the_api_side_never_imports_the_sdk_side() -> None:
    # As OpenTelemetry's API never imports its SDK: set-up (nemo.lens._setup), above both,
    # plugs the SDK side in.
    assert not _core_reaches_sdk(modules())


def test_the_runtime_never_imports_the_commands() -> None:
    # One direction through the house: schema, codegen, generated, runtime, CLI. A job that
    # installs no CLI extra (DuckDB) must still import every runtime module.
    known = modules()
    runtime = [n for n in known if not n.startswith(("nemo.lens.cli", "nemo.lens.codegen"))]
    reaching = sorted(
        f"{name} imports {target}"
        for name in runtime
        for target in _dependencies(known[name], known)
        if target == "nemo.lens.cli" or target.startswith("nemo.lens.cli.")
    )
    assert not reaching


def test_generated_modules_import_only_public_modules() -> None:
    generated = [m for m in modules().values() if m.generated]
    assert generated, "no generated module found: is the generated-file header still recognised?"
    for module in generated:
        for source, name, _ in _imported_from(module):
            assert not any(_is_private(part) for part in [*source.split("."), name]), (
                f"{module.name} imports {name} from {source}: generated code must import only "
                "public modules, so that a consumer's generated module works in its own repository"
            )


def test_the_package_has_one_fork_hook_and_one_version() -> None:
    hooks, versions = [], []
    for module in modules().values():
        for node in ast.walk(module.tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "register_at_fork"
            ):
                hooks.append(module.name)
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == "__version__" for t in targets):
                    versions.append(module.name)
    assert hooks == ["nemo.lens._core.fork"], hooks
    assert versions == ["nemo.lens._version"], versions


MODULE_DOCSTRING_LINES = 6
"""A module docstring says what the module is; the essays are in docs/architecture.md."""


def _docstring_problems(known: dict[str, Module]) -> list[str]:
    problems = []
    for module in known.values():
        if module.generated:
            continue
        docstring = ast.get_docstring(module.tree, clean=False)
        if docstring is None:
            problems.append(f"{module.name}: no docstring")
        elif (length := len(docstring.strip().splitlines())) > MODULE_DOCSTRING_LINES:
            problems.append(f"{module.name}: {length} lines")
    return problems


def test_the_docstring_check_sees_a_long_and_a_missing_docstring() -> None:
    essay = '"""' + "\n".join(["A line."] * (MODULE_DOCSTRING_LINES + 1)) + '"""\n'
    made_up = {
        "pkg.short": Module("pkg.short", '"""What it is."""\n'),
        "pkg.essay": Module("pkg.essay", essay),
        "pkg.bare": Module("pkg.bare", "x = 1\n"),
    }
    assert _docstring_problems(made_up) == [
        f"pkg.essay: {MODULE_DOCSTRING_LINES + 1} lines",
        "pkg.bare: no docstring",
    ]


def test_module_docstrings_are_a_few_lines() -> None:
    assert not _docstring_problems(modules()), (
        f"module docstrings of at most {MODULE_DOCSTRING_LINES} lines, essays in "
        f"docs/architecture.md: {_docstring_problems(modules())}"
    )
