"""The library author's loop, end to end: edit the schema, generate, use the result."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.generator.conftest import REPO, run_codegen

NEW_GROUP = """
[groups.my_new_group]
description = "A group added by a library author."
fires = "per_step"
since = "0.3.0"
"""


def _python(code: str, *, cwd: Path, path: Path) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env={"PYTHONPATH": str(path)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A copy of the parts of the repository the generator reads and writes."""
    for part in ("schema", "codegen", "src", "docs"):
        shutil.copytree(REPO / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def test_add_a_group_with_one_schema_edit(clone: Path) -> None:
    schema = clone / "schema" / "span_groups.toml"
    text = schema.read_text(encoding="utf-8")
    per_step = 'groups = ["model_init", "load_checkpoint", "step", "forward_backward", "optimizer"]'
    assert per_step in text
    text = text.replace(per_step, per_step[:-1] + ', "my_new_group"]')
    text = text.replace("[presets.default]", NEW_GROUP.lstrip() + "\n[presets.default]")
    schema.write_text(text, encoding="utf-8")

    stale = run_codegen("check", cwd=clone)
    assert stale.returncode == 1
    assert '+    MY_NEW_GROUP: Final = "my_new_group"' in stale.stdout

    generated = run_codegen("generate", cwd=clone)
    assert generated.returncode == 0, generated.stderr
    assert "wrote src/nemo/lens/groups.py" in generated.stdout
    assert run_codegen("check", cwd=clone).returncode == 0

    out = _python(
        """
from nemo.lens.groups import SpanGroup
from nemo.lens.consumers.megatron import MegatronSpanGroup
assert SpanGroup.MY_NEW_GROUP == "my_new_group"
assert "my_new_group" in SpanGroup.ALL_GROUPS
assert "my_new_group" in SpanGroup.resolve("per_step")
assert "my_new_group" not in SpanGroup.resolve("default")
assert "my_new_group" in MegatronSpanGroup.ALL_GROUPS   # consumers inherit base groups
assert "my_new_group" in MegatronSpanGroup.resolve("all")
print(SpanGroup.GROUP_INFO["my_new_group"].description)
""",
        cwd=clone,
        path=clone / "src",
    )
    assert out.strip() == "A group added by a library author."
    docs = (clone / "docs" / "span-groups.md").read_text(encoding="utf-8")
    assert "| `my_new_group` | per_step | A group added by a library author. |  | ✓ | ✓ |" in docs


def test_a_hand_edited_generated_file_fails_the_check(clone: Path) -> None:
    target = clone / "src" / "nemo" / "lens" / "consumers" / "rl.py"
    target.write_text(target.read_text(encoding="utf-8").replace('"reward"', '"rewards"'), "utf-8")
    result = run_codegen("check", cwd=clone)
    assert result.returncode == 1
    assert "--- src/nemo/lens/consumers/rl.py (on disk)" in result.stdout
    assert '-    REWARD: Final = "rewards"' in result.stdout
    assert "run `make generate`" in result.stderr


def test_a_deleted_generated_file_fails_the_check(clone: Path) -> None:
    (clone / "docs" / "span-groups.md").unlink()
    result = run_codegen("check", cwd=clone)
    assert result.returncode == 1
    assert "docs/span-groups.md" in result.stdout


EXTERNAL = """\
schema_version = 1
extends = "nemo.lens"

[consumers.mylib]
class = "MyLibSpanGroup"
module = "mylib.lens_groups"
description = "Span groups of a library that lives in another repository."

[consumers.mylib.groups.shard_merge]
description = "Merging of dataset shards."
fires = "periodic"
since = "1.0.0"

[consumers.mylib.groups.token_batch]
description = "One batch of tokens."
fires = "per_step"
since = "1.0.0"

[consumers.mylib.presets.default]
description = "Production."
groups = ["job", "shard_merge"]

[consumers.mylib.presets.detailed]
description = "Everything per step."
extends = ["default"]
groups = ["step", "token_batch"]
"""


def test_a_consumer_in_another_repository(tmp_path: Path) -> None:
    other = tmp_path / "other-repo"
    other.mkdir()
    (other / "lens.toml").write_text(EXTERNAL, encoding="utf-8")
    result = run_codegen(
        "generate",
        "--schema",
        str(other / "lens.toml"),
        "--out-root",
        str(other / "src"),
        "--docs",
        str(other / "docs" / "span-groups.md"),
    )
    assert result.returncode == 0, result.stderr
    module = other / "src" / "mylib" / "lens_groups.py"
    assert module.exists()
    assert not (other / "src" / "nemo").exists()  # the base class comes from nemo.lens
    out = _python(
        """
from mylib.lens_groups import MyLibSpanGroup
from nemo.lens.groups import SpanGroup
assert issubclass(MyLibSpanGroup, SpanGroup)
assert MyLibSpanGroup.resolve("default") == {"job", "shard_merge"}
assert MyLibSpanGroup.resolve("detailed,-step") == {"job", "shard_merge", "token_batch"}
assert MyLibSpanGroup.ALL_GROUPS == SpanGroup.ALL_GROUPS | {"shard_merge", "token_batch"}
print(MyLibSpanGroup.TOKEN_BATCH)
""",
        cwd=other,
        path=other / "src",
    )
    assert out.strip() == "token_batch"
    docs = (other / "docs" / "span-groups.md").read_text(encoding="utf-8")
    assert "## `MyLibSpanGroup`" in docs
    assert "## `SpanGroup`" not in docs
    header = module.read_text(encoding="utf-8").splitlines()[1]
    assert "python -m codegen generate --schema" in header


def test_an_external_consumer_may_not_redefine_a_base_group(tmp_path: Path) -> None:
    schema = tmp_path / "lens.toml"
    schema.write_text(
        EXTERNAL.replace("groups.token_batch", "groups.step").replace('"token_batch"', '"step"'),
        encoding="utf-8",
    )
    result = run_codegen("validate", "--schema", str(schema))
    assert result.returncode == 2
    assert "consumers.mylib.groups.step: group 'step' is already a base group" in result.stderr
