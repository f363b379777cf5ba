"""Shared helpers for the generator tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from codegen.render import render_all
from codegen.validate import load_schema

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
FIXTURES = HERE / "fixtures"
GOLDEN = HERE / "golden"
COMMAND = "python -m codegen generate --schema fixtures/small.toml"


def render_fixture(name: str, out_root: Path, docs: Path | None) -> dict[Path, str]:
    """Render a fixture schema as the CLI would, named the same on every machine."""
    schema = load_schema(FIXTURES / name, shown="fixtures/small.toml")
    return render_all(schema, out_root, docs, command=COMMAND)


def run_codegen(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """Run `python -m codegen` the way the Makefile does."""
    return subprocess.run(
        [sys.executable, "-m", "codegen", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )


@pytest.fixture
def schema_text() -> str:
    return (REPO / "schema" / "span_groups.toml").read_text(encoding="utf-8")
