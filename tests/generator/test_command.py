"""``nemo-lens generate`` as a command: where it may write, what it reads, what it needs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nemo.lens.codegen.validate import MAX_SCHEMA_BYTES
from tests.generator.conftest import REPO, free_group_name, run_codegen

CONSUMER_SCHEMA = """\
schema_version = 1
extends = "nemo.lens"

[consumers.mylib]
class = "MyLibSpanGroup"
module = "{module}"
description = "Span groups of mylib."

[consumers.mylib.groups.{group}]
description = "Merging of dataset shards."
fires = "periodic"
since = "1.0.0"
"""


def _consumer(tmp_path: Path, module: str = "mylib.lens_groups") -> Path:
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    schema = tmp_path / "lens.toml"
    # The consumer's own group: a name the shipped base does not hold.
    group = free_group_name("shard_merge")
    schema.write_text(CONSUMER_SCHEMA.format(module=module, group=group), encoding="utf-8")
    return schema


def _generate(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_codegen("--schema", "lens.toml", "--out-root", "src", *extra, cwd=tmp_path)


def test_a_hand_written_module_is_never_replaced(tmp_path: Path) -> None:
    _consumer(tmp_path)
    target = tmp_path / "src" / "mylib" / "lens_groups.py"
    target.parent.mkdir(parents=True)
    target.write_text("def mine() -> None: ...\n", encoding="utf-8")

    result = _generate(tmp_path)

    assert result.returncode == 2
    assert (
        "lens.toml:6: module 'mylib.lens_groups' would replace src/mylib/lens_groups.py, which "
        "the generator did not write for MyLibSpanGroup: name a new module"
    ) in result.stderr
    assert "nothing was written." in result.stderr
    assert target.read_text(encoding="utf-8") == "def mine() -> None: ...\n"


def test_a_package_of_the_same_name_is_never_shadowed(tmp_path: Path) -> None:
    _consumer(tmp_path, module="mylib")
    (tmp_path / "src" / "mylib").mkdir(parents=True)
    (tmp_path / "src" / "mylib" / "__init__.py").write_text("", encoding="utf-8")

    result = _generate(tmp_path)

    assert result.returncode == 2
    assert "module 'mylib' is a package (src/mylib/)" in result.stderr
    assert not (tmp_path / "src" / "mylib.py").exists()


def test_its_own_earlier_output_is_rewritten(tmp_path: Path) -> None:
    _consumer(tmp_path)
    assert _generate(tmp_path).returncode == 0
    rewritten = _generate(tmp_path)
    assert rewritten.returncode == 0, rewritten.stderr
    assert _generate(tmp_path, "--check").returncode == 0


def test_a_docs_file_the_generator_did_not_write_is_never_replaced(tmp_path: Path) -> None:
    _consumer(tmp_path)
    (tmp_path / "README.md").write_text("# mylib\n", encoding="utf-8")

    result = _generate(tmp_path, "--docs", "README.md")

    assert result.returncode == 2
    assert "--docs README.md names a file the generator did not write" in result.stderr
    assert (tmp_path / "README.md").read_text(encoding="utf-8") == "# mylib\n"
    assert not (tmp_path / "src").exists()


def test_check_writes_nothing_and_reports_a_missing_file(tmp_path: Path) -> None:
    _consumer(tmp_path)

    result = _generate(tmp_path, "--check")

    assert result.returncode == 1
    assert "src/mylib/lens_groups.py: missing" in result.stdout
    assert not (tmp_path / "src").exists()


@pytest.mark.parametrize("target", ["/dev/zero", "fifo"])
def test_extends_must_name_a_regular_file(tmp_path: Path, target: str) -> None:
    if target == "fifo":
        os.mkfifo(tmp_path / "fifo")  # opening it would wait for a writer forever
    schema = _consumer(tmp_path)
    schema.write_text(
        schema.read_text("utf-8").replace('"nemo.lens"', f'"{target}"'), encoding="utf-8"
    )

    result = _generate(tmp_path, "--validate")

    assert result.returncode == 2
    assert "cannot read the schema: not a regular file (a schema is a TOML file)" in result.stderr


def test_a_huge_schema_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    schema = _consumer(tmp_path)
    with schema.open("a", encoding="utf-8") as handle:
        handle.write("#" * MAX_SCHEMA_BYTES)

    result = _generate(tmp_path, "--validate")

    assert result.returncode == 2
    assert "larger than 1024 KiB; a schema is a short TOML file" in result.stderr


def test_without_arguments_outside_a_checkout_it_says_what_to_pass(tmp_path: Path) -> None:
    result = run_codegen(cwd=tmp_path)

    assert result.returncode == 2
    assert result.stderr == (
        "nemo-lens generate: error: no --schema given, and there is no "
        "schema/span_groups.toml here; name your schema: "
        "nemo-lens generate --schema PATH --out-root DIR\n"
    )


def test_without_the_codegen_extra_it_names_the_extra(tmp_path: Path) -> None:
    _consumer(tmp_path)
    # Jinja2 made unimportable, as in an installation without the [codegen] extra.
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "jinja2.py").write_text("raise ImportError('No module named jinja2')\n", "utf-8")
    env = {"PYTHONPATH": os.pathsep.join([str(blocker), str(REPO / "src")]), "PATH": "/usr/bin"}

    result = subprocess.run(
        [sys.executable, "-m", "nemo.lens.cli", "generate", "--schema", "lens.toml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )

    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "pip install 'nemo-lens[codegen]'" in result.stderr


def test_the_command_is_listed_by_nemo_lens_help(capsys: pytest.CaptureFixture[str]) -> None:
    from nemo.lens import cli

    assert cli.main(["--help"]) == 0
    assert "render a span-group schema into classes and docs" in capsys.readouterr().out


def test_nemo_lens_generate_help_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    from nemo.lens import cli

    assert cli.main(["generate", "--help"]) == 0
    assert "--check" in capsys.readouterr().out
