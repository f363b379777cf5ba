"""Shared helpers for the generator tests."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

from nemo.lens.codegen.render import render_all
from nemo.lens.codegen.validate import load_schema

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
FIXTURES = HERE / "fixtures"
GOLDEN = HERE / "golden"
COMMAND = "nemo-lens generate --schema fixtures/small.toml --out-root src"
SHIPPED_SCHEMA = REPO / "schema" / "span_groups.toml"


@cache
def _shipped_names() -> frozenset[str]:
    schema = load_schema(SHIPPED_SCHEMA)
    classes = (schema.base, *schema.consumers)
    return frozenset(
        {g.name for cls in classes for g in cls.groups}
        | {p.name for cls in classes for p in cls.presets}
    )


def free_group_name(stem: str) -> str:
    """The first of *stem*, *stem*_2, *stem*_3, ... that the shipped schema does not hold as a
    group (of the base or of any consumer) or a preset.

    A test that adds a group to a schema takes its name from here, so an author who adds a
    group of that very name (the README's guide suggests ``my_new_group``) breaks no test.
    """
    names = (stem if n == 1 else f"{stem}_{n}" for n in itertools.count(1))
    return next(name for name in names if name not in _shipped_names())


def copy_sources(target: Path) -> Path:
    """A copy of the parts of the repository the generator reads and writes (schema, src,
    docs, pyproject.toml), links kept as links: the base schema the package ships is the
    copy's own."""
    for part in ("schema", "src", "docs"):
        shutil.copytree(
            REPO / part,
            target / part,
            ignore=shutil.ignore_patterns("__pycache__"),
            symlinks=True,
        )
    shutil.copy(REPO / "pyproject.toml", target / "pyproject.toml")
    return target


def render_fixture(name: str, out_root: Path, docs: Path | None) -> dict[Path, str]:
    """Render a fixture schema as the command would, named the same on every machine."""
    schema = load_schema(FIXTURES / name, shown="fixtures/small.toml")
    return render_all(schema, out_root, docs, command=COMMAND)


def run_codegen(
    *args: str, cwd: Path = REPO, src: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `nemo-lens generate ARGS` as a user would, with *src* (default: *cwd*/src when it
    holds nemo.lens, else this checkout's) first on the import path."""
    if src is None:
        src = cwd / "src" if (cwd / "src" / "nemo" / "lens").is_dir() else REPO / "src"
    return subprocess.run(
        [sys.executable, "-m", "nemo.lens.codegen", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"},
    )


def copy_checkout(target: Path) -> Path:
    """Copy the repository as a commit of the working tree would hold it: every file git
    tracks and every new one it does not ignore (links kept as links)."""
    import pytest

    if not (REPO / ".git").exists():
        pytest.skip("needs a git checkout to know which files belong to the repository")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    )
    for name in filter(None, listed.stdout.decode().split("\0")):
        source, copy = REPO / name, target / name
        if not source.exists() and not source.is_symlink():
            continue  # deleted in the working tree, not yet committed
        copy.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            copy.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, copy)
    return target


def add_group(
    text: str, name: str, *, consumer: str | None = None, preset: str = "per_step"
) -> str:
    """*text* (a schema) with one more group, listed in *preset*: the author's one edit.

    The group goes into the base vocabulary, or into *consumer*'s; nothing else of
    the schema is read, so the edit works on whatever the schema holds today.
    """
    table = "" if consumer is None else f"consumers.{consumer}."
    presets = re.search(rf"^\[{re.escape(table)}presets\.", text, re.MULTILINE)
    assert presets, f"the schema has no [{table}presets.*] table"
    group = (
        f"[{table}groups.{name}]\n"
        f'description = "A group added by a library author."\n'
        f'fires = "per_step"\nsince = "9.9.0"\n\n'
    )
    text = text[: presets.start()] + group + text[presets.start() :]
    header = re.search(rf"^\[{re.escape(table)}presets\.{preset}\]", text, re.MULTILINE)
    assert header, f"the schema has no [{table}presets.{preset}] table"
    members = re.compile(r"^groups\s*=\s*\[", re.MULTILINE).search(text, header.end())
    assert members, f"[{table}presets.{preset}] lists no groups"
    return text[: members.end()] + f'"{name}", ' + text[members.end() :]
