"""One schema edit plus `make generate` is the whole change: the project's gates stay green.

In a copy of the repository (every file git tracks, and new ones it does not
ignore), a group is added to the base ``per_step`` preset and another to
Megatron's, with one edit of the schema; the generator runs; then ruff, the
format check, mypy --strict, the generated-files check and the whole test suite
run in the copy, exactly as ``make check`` does. No test, doc or example may
restate the vocabulary, or this fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.generator.conftest import add_group, copy_checkout, free_group_name

NESTED = "NEMO_LENS_INSIDE_THE_ONE_EDIT_TEST"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.environ.get("NEMO_LENS_SLOW_TESTS") != "1",
        reason="runs the whole suite again in a copy: set NEMO_LENS_SLOW_TESTS=1 (CI sets it)",
    ),
    pytest.mark.skipif(os.environ.get(NESTED) == "1", reason="already inside the copy"),
]


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_checkout(tmp_path_factory.mktemp("one-edit"))


def _run(copy: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTEST_", "NEMO_LENS_", "OTEL_", "MYPY"))
    }
    # The copy's own package first, as the copy's virtualenv would have it.
    env.update(PYTHONPATH=str(copy / "src"), **{NESTED: "1"})
    return subprocess.run(
        [sys.executable, *args],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_one_schema_edit_and_generate_keep_every_gate_green(copy: Path) -> None:
    # Names the shipped schema does not hold, whatever an author has added to it.
    base_group = free_group_name("one_edit_base_group")
    megatron_group = free_group_name("one_edit_megatron_group")
    schema = copy / "schema" / "span_groups.toml"
    text = add_group(schema.read_text(encoding="utf-8"), base_group)
    text = add_group(text, megatron_group, consumer="megatron")
    schema.write_text(text, encoding="utf-8")

    generated = _run(copy, "-m", "nemo.lens.codegen")
    assert generated.returncode == 0, generated.stderr
    gates = [
        ("-m", "ruff", "check", "."),
        ("-m", "ruff", "format", "--check", "."),
        ("-m", "mypy", "--strict", "src", "tests", "examples", "bench"),
        ("-m", "nemo.lens.codegen", "--check"),
        # Less the Spark tests: they compare Spark's figures with DuckDB's from the same
        # span_groups table the DuckDB tests read, and start a JVM that took minutes on
        # CI's two cores beside the suite's own.
        (
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-x",
            "-n",
            "auto",
            "--ignore=tests/cli/test_spark.py",
        ),
    ]
    for gate in gates:
        result = _run(copy, *gate)
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-40:])
        assert result.returncode == 0, f"{' '.join(gate)} failed in the copy:\n{tail}"

    # The new groups really are there, where one edit put them.
    check = _run(
        copy,
        "-c",
        "from nemo.lens.groups import SpanGroup\n"
        "from nemo.lens.consumers.megatron import MegatronSpanGroup\n"
        "from nemo.lens.consumers.rl import RLSpanGroup\n"
        f"assert {base_group!r} in SpanGroup.resolve('per_step')\n"
        f"assert {base_group!r} in RLSpanGroup.resolve('per_step')\n"
        f"assert {megatron_group!r} in MegatronSpanGroup.resolve('per_step')\n"
        f"assert {megatron_group!r} not in RLSpanGroup.ALL_GROUPS\n",
    )
    assert check.returncode == 0, check.stderr
