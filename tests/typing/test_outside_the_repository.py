"""A user's own project, in a directory of its own, type-checks against the installed package.

No ``mypy_path``, no ``extraPaths``: mypy and pyright find ``nemo.lens`` the way
they find any installed package, in the environment this suite runs in (the
editable ``.venv`` that ``make`` builds), and report a misspelled group.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nemo.lens.groups import SpanGroup

REPO = Path(__file__).resolve().parents[2]

TRAIN = """\
from nemo.lens import managed_span
from nemo.lens.groups import SpanGroup

with managed_span(SpanGroup.STPE, "train.step"):
    pass
with managed_span(SpanGroup.{group}, "train.step"):
    pass
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("user-project")
    assert REPO not in root.parents
    group = sorted(SpanGroup.ALL_GROUPS)[0].upper()
    (root / "train.py").write_text(TRAIN.format(group=group), encoding="utf-8")
    return root


def _environment() -> dict[str, str]:
    # As a user's shell with the virtualenv activated: its bin first on PATH.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MYPY", "PYTHONPATH"))}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def test_mypy_strict_sees_nemo_lens_and_reports_the_typo(project: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "train.py"],
        cwd=project,
        env=_environment(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.stdout.splitlines() == [
        'train.py:4: error: "type[SpanGroup]" has no attribute "STPE"  [attr-defined]',
        "Found 1 error in 1 file (checked 1 source file)",
    ], result.stdout + result.stderr


def test_pyright_sees_nemo_lens_and_reports_the_typo(project: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pyright", "--outputjson", "train.py"],
        cwd=project,
        env=_environment(),
        capture_output=True,
        text=True,
        check=False,
    )
    report = json.loads(result.stdout)
    found = [
        (d["range"]["start"]["line"] + 1, d.get("rule"), d["message"].splitlines()[0])
        for d in report["generalDiagnostics"]
        if d["severity"] == "error"
    ]
    assert found == [
        (
            4,
            "reportAttributeAccessIssue",
            'Cannot access attribute "STPE" for class "type[SpanGroup]"',
        )
    ]
