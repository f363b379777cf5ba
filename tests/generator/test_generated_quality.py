"""Generated code passes the project's own gates: ruff, ruff format and mypy --strict."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.generator.conftest import REPO, render_fixture
from tests.typing.checkers import make_checkable_copy

# Every module the generator wrote for this repository (found by its header, so a
# consumer added to the schema is checked with no edit here).
SHIPPED = sorted(
    path
    for path in (REPO / "src" / "nemo" / "lens").rglob("*.py")
    if path.read_text(encoding="utf-8").startswith("# DO NOT EDIT: generated from ")
)


def _tool(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="module")
def fixture_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture schema rendered over a copy of the runtime package."""
    root = tmp_path_factory.mktemp("gen")
    shutil.copytree(REPO / "src" / "nemo", root / "src" / "nemo", symlinks=True)
    make_checkable_copy(root / "src")
    semconv = root / "src" / "nemo" / "lens" / "semconv"
    catalogues = {semconv / f"{name}.py" for name in ("metrics", "attributes", "resource")}
    for path, text in render_fixture("small.toml", root / "src", None).items():
        if path in catalogues:
            # The copied runtime uses the real catalogues' names; the fixture's own
            # catalogues go beside them, checked as modules of their own.
            path = path.with_name(f"fixture_{path.name}")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_shipped_modules_pass_ruff() -> None:
    result = _tool("ruff", "check", *map(str, SHIPPED))
    assert result.returncode == 0, result.stdout + result.stderr
    result = _tool("ruff", "format", "--check", *map(str, SHIPPED))
    assert result.returncode == 0, result.stdout + result.stderr


def test_shipped_modules_pass_mypy_strict() -> None:
    result = _tool("mypy", "--strict", "--no-incremental", *map(str, SHIPPED))
    assert result.returncode == 0, result.stdout + result.stderr


def test_fixture_output_passes_ruff_and_mypy(fixture_tree: Path) -> None:
    files = [
        str(fixture_tree / "src/nemo/lens/_signatures.py"),
        str(fixture_tree / "src/nemo/lens/groups.py"),
        str(fixture_tree / "src/nemo/lens/consumers/serve.py"),
        str(fixture_tree / "src/nemo/lens/semconv/fixture_metrics.py"),
        str(fixture_tree / "src/nemo/lens/semconv/fixture_attributes.py"),
        str(fixture_tree / "src/nemo/lens/semconv/fixture_resource.py"),
    ]
    config = str(REPO / "pyproject.toml")
    for args in (
        ("ruff", "check", "--config", config),
        ("ruff", "format", "--check", "--config", config),
    ):
        result = _tool(*args, *files)
        assert result.returncode == 0, result.stdout + result.stderr
    # The copied runtime imports torch lazily; like the project's own config, let
    # it be absent (it is an optional extra).
    ini = fixture_tree / "mypy.ini"
    ini.write_text("[mypy]\n[mypy-torch.*,torch]\nignore_missing_imports = True\n", "utf-8")
    result = _tool(
        "mypy",
        "--config-file",
        str(ini),
        "--strict",
        "--no-incremental",
        "--explicit-package-bases",
        *files,
        cwd=fixture_tree / "src",
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_fixture_output_imports_and_behaves(fixture_tree: Path) -> None:
    code = """
import warnings
from nemo.lens.groups import SpanGroup
from nemo.lens.consumers.serve import ServeSpanGroup
assert SpanGroup.ITERATION == "step"
assert "iteration" not in SpanGroup.ALL_GROUPS
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    assert SpanGroup.resolve("iteration") == {"step"}
assert caught and issubclass(caught[0].category, DeprecationWarning)
assert ServeSpanGroup.resolve("default") == SpanGroup.resolve("default") | {"request"}
assert ServeSpanGroup.resolve("per_step") == {"batch"}  # replace = true
assert ServeSpanGroup.resolve("all") == SpanGroup.ALL_GROUPS | {"request", "batch"}
assert ServeSpanGroup.resolve("goodput") == {"job", "request"}
assert ServeSpanGroup.categories()["checkpoint"] == "profiling"
assert SpanGroup.categories()["checkpoint"] == "goodput"
assert ServeSpanGroup.GROUP_INFO["checkpoint"].category == "profiling"
assert ServeSpanGroup.GROUP_INFO["request"].fires == "per_request"
assert ServeSpanGroup.GROUP_INFO["job"].description == "Root span of the job."
import nemo.lens.consumers.serve as serve
assert '\\\\backslashes\\\\ and "quotes"' in serve.ServeSpanGroup.GROUP_INFO["request"].description
print("ok")
"""
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=fixture_tree,
        env={"PYTHONPATH": str(fixture_tree / "src")},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
