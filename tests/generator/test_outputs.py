"""What ``nemo-lens generate`` does to its outputs: files it no longer generates, the mode of
the files it writes, and outputs (files, standard output) that cannot be written."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.generator.conftest import REPO, run_codegen

SCHEMA = """\
schema_version = 1
extends = "nemo.lens"

[consumers.mylib]
class = "MyLibSpanGroup"
module = "{module}"
description = "Span groups of mylib."
"""
COMMAND = "nemo-lens generate --schema lens.toml --out-root src"


def _schema(tmp_path: Path, module: str) -> None:
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "lens.toml").write_text(SCHEMA.format(module=module), encoding="utf-8")


def _generate(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_codegen("--schema", "lens.toml", "--out-root", "src", *extra, cwd=tmp_path)


@pytest.mark.bad_input("stale-generated-module")
def test_a_module_the_schema_no_longer_generates_is_found_and_removed(tmp_path: Path) -> None:
    _schema(tmp_path, "mylib.old_groups")
    assert _generate(tmp_path).returncode == 0
    old = tmp_path / "src" / "mylib" / "old_groups.py"
    # Beside it: a hand-written module, and one generated from another schema.
    mine = tmp_path / "src" / "mylib" / "mine.py"
    mine.write_text("# DO NOT EDIT: I mean it\n", encoding="utf-8")
    other = tmp_path / "src" / "mylib" / "other.py"
    other.write_text(
        "# DO NOT EDIT: generated from other.toml by nemo-lens generate.\n", encoding="utf-8"
    )
    _schema(tmp_path, "mylib.new_groups")

    check = _generate(tmp_path, "--check")
    assert check.returncode == 1
    assert (
        "src/mylib/old_groups.py: generated from lens.toml, which no longer generates it "
        f"(`{COMMAND}` removes it)\n"
    ) in check.stdout
    assert check.stderr == (
        "error: 1 generated file(s) differ from lens.toml and 1 no longer belong to it; run "
        f"`{COMMAND}` (generated files are never edited by hand)\n"
    )
    assert old.is_file()

    generated = _generate(tmp_path)
    assert generated.returncode == 0, generated.stderr
    assert generated.stdout == (
        "wrote src/mylib/new_groups.py\n"
        "removed src/mylib/old_groups.py (generated from lens.toml, which no longer "
        "generates it)\n"
    )
    assert not old.exists()
    assert mine.is_file() and other.is_file()
    assert _generate(tmp_path, "--check").returncode == 0


def test_a_stale_file_alone_fails_the_check(tmp_path: Path) -> None:
    _schema(tmp_path, "mylib.groups")
    assert _generate(tmp_path).returncode == 0
    copy = tmp_path / "src" / "mylib" / "copied.py"
    copy.write_bytes((tmp_path / "src" / "mylib" / "groups.py").read_bytes())
    check = _generate(tmp_path, "--check")
    assert check.returncode == 1
    assert check.stderr.startswith("error: 1 generated from lens.toml no longer belong to it; run ")


def test_a_docs_page_the_schema_no_longer_generates_is_removed(tmp_path: Path) -> None:
    _schema(tmp_path, "mylib.groups")
    assert _generate(tmp_path, "--docs", "docs/groups.md").returncode == 0
    kept = tmp_path / "docs" / "index.md"
    kept.write_text("<!--\nnot generated\n-->\n", encoding="utf-8")
    moved = _generate(tmp_path, "--docs", "docs/span-groups.md")
    assert moved.returncode == 0, moved.stderr
    assert "removed docs/groups.md (generated from lens.toml" in moved.stdout
    assert not (tmp_path / "docs" / "groups.md").exists()
    assert kept.is_file()


def test_the_search_for_stale_files_stays_out_of_environments(tmp_path: Path) -> None:
    _schema(tmp_path, "mylib.groups")
    assert _generate(tmp_path).returncode == 0
    generated = (tmp_path / "src" / "mylib" / "groups.py").read_bytes()
    kept = []
    for place in (".venv/lib/x.py", "env/lib/x.py", "mylib/__pycache__/x.py"):
        path = tmp_path / "src" / place
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(generated)
        kept.append(path)
    (tmp_path / "src" / "env" / "pyvenv.cfg").write_text("", encoding="utf-8")
    link = tmp_path / "src" / "mylib" / "link.py"
    link.symlink_to(tmp_path / "src" / "mylib" / "groups.py")

    assert _generate(tmp_path, "--check").returncode == 0
    assert all(path.exists() for path in kept)
    assert link.is_symlink()


@pytest.fixture
def umask_022() -> Iterator[None]:
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.bad_input("generated-file-mode")
def test_new_files_follow_the_umask_and_rewritten_ones_keep_their_mode(
    tmp_path: Path, umask_022: None
) -> None:
    _schema(tmp_path, "mylib.groups")
    assert _generate(tmp_path, "--docs", "docs/span-groups.md").returncode == 0
    module = tmp_path / "src" / "mylib" / "groups.py"
    page = tmp_path / "docs" / "span-groups.md"
    assert _mode(module) == 0o644 and _mode(page) == 0o644

    module.chmod(0o640)
    (tmp_path / "lens.toml").write_text(
        SCHEMA.format(module="mylib.groups").replace("of mylib", "of my library"),
        encoding="utf-8",
    )
    assert _generate(tmp_path, "--docs", "docs/span-groups.md").returncode == 0
    assert "of my library" in module.read_text(encoding="utf-8")
    assert _mode(module) == 0o640

    os.umask(0o077)
    _schema(tmp_path, "mylib.private")
    assert _generate(tmp_path, "--no-docs").returncode == 0
    assert _mode(tmp_path / "src" / "mylib" / "private.py") == 0o600


@pytest.mark.bad_input("docs-to-a-device")
def test_docs_to_a_device_is_an_output_error_not_a_schema_problem(tmp_path: Path) -> None:
    _schema(tmp_path, "mylib.groups")
    result = _generate(tmp_path, "--docs", "/dev/full")
    assert result.returncode == 1
    assert result.stderr == (
        "nemo-lens generate: error: cannot write /dev/full: it is a character device; name a "
        "file for the docs table (it is replaced in one rename, with the modules); nothing "
        "was written\n"
    )
    assert not (tmp_path / "src").exists()
    assert _generate(tmp_path, "--docs", "/dev/full", "--check").returncode == 1


@pytest.mark.bad_input("output-cannot-be-written")
def test_an_output_that_cannot_be_written_leaves_every_output_as_it_was(tmp_path: Path) -> None:
    _schema(tmp_path, "mylib.groups")
    assert _generate(tmp_path, "--no-docs").returncode == 0
    module = tmp_path / "src" / "mylib" / "groups.py"
    before = module.read_bytes()
    (tmp_path / "lens.toml").write_text(
        SCHEMA.format(module="mylib.groups").replace("of mylib", "of my library"),
        encoding="utf-8",
    )
    (tmp_path / "docs").write_text("a file where a directory should be\n", encoding="utf-8")

    result = _generate(tmp_path, "--docs", "docs/span-groups.md")

    assert result.returncode == 1
    assert result.stderr == (
        "nemo-lens generate: error: cannot write docs/span-groups.md: docs is not a directory; "
        "nothing was written\n"
    )
    assert module.read_bytes() == before
    assert sorted(p.name for p in module.parent.iterdir()) == ["groups.py"]


def _run_to(
    stdout: int, *args: str, module: str = "nemo.lens.cli"
) -> subprocess.CompletedProcess[str]:
    if module != "nemo.lens.cli":
        args = args[1:]  # the generator's own entry point takes no command name
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=REPO,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
        env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
    )


@pytest.mark.bad_input("generator-stdout-full")
@pytest.mark.parametrize(
    "args",
    [
        ("generate", "--check"),
        ("generate", "--print-json-schema"),
        ("diff-schema", "schema/span_groups.toml", "schema/span_groups.toml"),
        ("adopt", "tests/generator/fixtures/adopt/gym.py"),
    ],
)
def test_standard_output_that_cannot_be_written_is_a_one_line_error(args: tuple[str, ...]) -> None:
    with open("/dev/full", "w") as full:
        result = _run_to(full.fileno(), *args)
    assert result.returncode == 1
    # nemo-lens guards its own streams for every command.
    assert result.stderr.splitlines()[-1] == (
        "nemo-lens: error: cannot write standard output: No space left on device"
    )
    assert "Traceback" not in result.stderr
    if args[0] == "generate":  # its own entry point, which runs without the cli extra
        with open("/dev/full", "w") as full:
            alone = _run_to(full.fileno(), *args, module="nemo.lens.codegen")
        assert alone.returncode == 1
        assert alone.stderr.splitlines()[-1] == (
            "nemo-lens generate: error: cannot write standard output: No space left on device"
        )


@pytest.mark.bad_input("generator-stdout-closed")
def test_a_closed_pipe_ends_the_output_quietly() -> None:
    read, write = os.pipe()
    os.close(read)  # the reader went away before the first line
    try:
        result = _run_to(write, "generate", "--print-json-schema")
        alone = _run_to(write, "generate", "--print-json-schema", module="nemo.lens.codegen")
    finally:
        os.close(write)
    # As the trace commands and any tool SIGPIPE ends; `python -m nemo.lens.codegen` alike.
    assert (result.returncode, alone.returncode) == (141, 141)
    assert result.stderr == alone.stderr == ""
