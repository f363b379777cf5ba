"""The worked example of a consumer's repository (docs/consumer-repositories.md) runs as written,
with only the installed package.

The worked example between the ``worked-example`` markers is executed block by
block in an empty directory: ``sh`` blocks are run (``pip install`` installs a
wheel built from this checkout, into a fresh virtualenv), blocks whose first line
names a file (``# lens.toml``) are written there, and a ``text`` block starting
with ``$ command`` is the exact output that command must print. Nothing of this
checkout is on the path: the consumer sees nemo.lens only as an installed package.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.generator.conftest import REPO, copy_checkout

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.environ.get("NEMO_LENS_SLOW_TESTS") != "1",
        reason="builds a wheel and a virtualenv: set NEMO_LENS_SLOW_TESTS=1 (CI sets it)",
    ),
]

_SECTION = re.compile(
    r"<!-- worked-example:start -->\n(?P<body>.*?)<!-- worked-example:end -->", re.DOTALL
)
_BLOCK = re.compile(r"^```(?P<lang>\w*)\n(?P<text>.*?)^```$", re.DOTALL | re.MULTILINE)
_FILE = re.compile(r"^# (?P<path>[\w./-]+\.(?:toml|py))\n")


PAGE = REPO / "docs" / "consumer-repositories.md"
"""Where the worked example is (the README links to it)."""


def blocks() -> list[tuple[str, str]]:
    """(language, text) of every fenced block of the worked example."""
    page = PAGE.read_text(encoding="utf-8")
    section = _SECTION.search(page)
    assert section, f"{PAGE.name} has no worked-example section"
    return [(m["lang"], m["text"]) for m in _BLOCK.finditer(section["body"])]


@pytest.fixture(scope="module")
def environment(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A fresh virtualenv's environment; `pip install 'nemo-lens…'` gets this checkout's wheel."""
    root = tmp_path_factory.mktemp("consumer-env")
    source = copy_checkout(root / "checkout")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(root / "dist"), "."],
        cwd=source,
        check=True,
        capture_output=True,
    )
    (wheel,) = (root / "dist").glob("nemo_lens-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True)
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTHON", "MYPY", "NEMO_LENS_", "VIRTUAL_ENV"))
    }
    env["PATH"] = os.pathsep.join([str(root / "venv" / "bin"), env.get("PATH", "")])
    env["VIRTUAL_ENV"] = str(root / "venv")
    env["NEMO_LENS_TEST_WHEEL"] = str(wheel)
    return env


def _command(line: str, env: dict[str, str]) -> list[str]:
    words = shlex.split(line, comments=True)
    if words[:2] == ["pip", "install"]:
        # The package named in the README, from this checkout instead of an index.
        wheel = env["NEMO_LENS_TEST_WHEEL"]
        words = [
            w.replace("nemo-lens", wheel, 1) if w.startswith("nemo-lens[") else w for w in words
        ]
    return words


def test_the_worked_example_runs_as_written(tmp_path: Path, environment: dict[str, str]) -> None:
    project = tmp_path / "mylib"
    project.mkdir()
    ran_output = False
    for lang, text in blocks():
        named = _FILE.match(text)
        if named:
            target = project / named["path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        elif lang == "sh":
            for line in text.splitlines():
                if not line.strip():
                    continue
                done = subprocess.run(
                    _command(line, environment),
                    cwd=project,
                    env=environment,
                    capture_output=True,
                    text=True,
                    check=False,
                )
                assert done.returncode == 0, f"$ {line}\n{done.stdout}{done.stderr}"
        elif lang == "text" and text.startswith("$ "):
            command, *expected = text.splitlines()
            done = subprocess.run(
                _command(command[2:], environment),
                cwd=project,
                env=environment,
                capture_output=True,
                text=True,
                check=False,
            )
            assert done.stdout.splitlines() == expected, done.stdout + done.stderr
            ran_output = True
    assert ran_output, "the worked example shows no command output to check"
    generated = (project / "src" / "mylib" / "lens_groups.py").read_text(encoding="utf-8")
    assert generated.startswith("# DO NOT EDIT: generated from lens.toml by nemo-lens generate.")
    assert str(tmp_path) not in generated
    docs = (project / "docs" / "span-groups.md").read_text(encoding="utf-8")
    assert "## `MyLibSpanGroup`" in docs
