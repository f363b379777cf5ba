"""The library author's loop, end to end: edit the schema, generate, use the result."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nemo.lens.consumers.rl import RLSpanGroup
from nemo.lens.groups import SpanGroup
from tests.generator.conftest import REPO, add_group, copy_sources, free_group_name, run_codegen

# The groups these tests add: names the shipped schema does not hold, so an author who
# adds a group of the same name (the README's own example) breaks nothing here.
BASE_GROUP = free_group_name("my_new_group")
MEGATRON_GROUP = free_group_name("my_megatron_group")
MERGE = free_group_name("shard_merge")
BATCH = free_group_name("token_batch")
"""The groups of the consumer in another repository (its own, not the base's)."""


def _python(code: str, *, cwd: Path, path: Path | list[Path]) -> str:
    paths = path if isinstance(path, list) else [path]
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env={"PYTHONPATH": os.pathsep.join(map(str, paths))},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A copy of the parts of the repository the generator reads and writes."""
    return copy_sources(tmp_path)


def _edit_schema(clone: Path, name: str, consumer: str | None = None) -> None:
    schema = clone / "schema" / "span_groups.toml"
    schema.write_text(add_group(schema.read_text("utf-8"), name, consumer=consumer), "utf-8")


def test_add_a_base_group_with_one_schema_edit(clone: Path) -> None:
    _edit_schema(clone, BASE_GROUP)

    stale = run_codegen("--check", cwd=clone)
    assert stale.returncode == 1
    assert f'+    {BASE_GROUP.upper()}: Final = "{BASE_GROUP}"' in stale.stdout

    generated = run_codegen(cwd=clone)
    assert generated.returncode == 0, generated.stderr
    assert "wrote src/nemo/lens/groups.py" in generated.stdout
    assert run_codegen("--check", cwd=clone).returncode == 0

    out = _python(
        f"""
from nemo.lens.groups import PER_STEP_PRESET, SpanGroup
from nemo.lens.consumers.gym import GymSpanGroup
from nemo.lens.consumers.megatron import MegatronSpanGroup
from nemo.lens.consumers.rl import RLSpanGroup
name = {BASE_GROUP!r}
assert SpanGroup.{BASE_GROUP.upper()} == name
assert name in SpanGroup.ALL_GROUPS
assert name in SpanGroup.resolve("per_step") == PER_STEP_PRESET
assert name not in SpanGroup.resolve("default")
for consumer in (MegatronSpanGroup, RLSpanGroup, GymSpanGroup):
    assert name in consumer.ALL_GROUPS        # consumers inherit base groups
    assert name in consumer.resolve("per_step")  # ... and base presets
    assert consumer.categories()[name] == "profiling"
print(SpanGroup.GROUP_INFO[name].description)
""",
        cwd=clone,
        path=clone / "src",
    )
    assert out.strip() == "A group added by a library author."
    docs = (clone / "docs" / "span-groups.md").read_text(encoding="utf-8")
    row = f"| `{BASE_GROUP}` | per_step | profiling | A group added by a library author. |"
    assert row in docs
    assert f"| `{BASE_GROUP}` (base) | per_step | profiling |" in docs  # in every consumer table


def test_add_a_consumer_group_with_one_schema_edit(clone: Path) -> None:
    _edit_schema(clone, MEGATRON_GROUP, consumer="megatron")

    generated = run_codegen(cwd=clone)
    assert generated.returncode == 0, generated.stderr
    assert run_codegen("--check", cwd=clone).returncode == 0
    _python(
        f"""
from nemo.lens.groups import SpanGroup
from nemo.lens.consumers.megatron import PER_STEP_PRESET, MegatronSpanGroup
from nemo.lens.consumers.rl import RLSpanGroup
name = {MEGATRON_GROUP!r}
assert MegatronSpanGroup.{MEGATRON_GROUP.upper()} == name
assert name in MegatronSpanGroup.resolve("per_step") == PER_STEP_PRESET
assert name not in SpanGroup.ALL_GROUPS | RLSpanGroup.ALL_GROUPS
""",
        cwd=clone,
        path=clone / "src",
    )


def test_a_hand_edited_generated_file_fails_the_check(clone: Path) -> None:
    target = clone / "src" / "nemo" / "lens" / "consumers" / "rl.py"
    name = next(iter(sorted(RLSpanGroup.ALL_GROUPS - SpanGroup.ALL_GROUPS)))
    text = target.read_text(encoding="utf-8")
    target.write_text(text.replace(f'Final = "{name}"', f'Final = "{name}s"'), "utf-8")
    result = run_codegen("--check", cwd=clone)
    assert result.returncode == 1
    assert "--- src/nemo/lens/consumers/rl.py (on disk)" in result.stdout
    assert f'-    {name.upper()}: Final = "{name}s"' in result.stdout
    assert "run `make generate`" in result.stderr


def test_a_deleted_generated_file_fails_the_check(clone: Path) -> None:
    (clone / "docs" / "span-groups.md").unlink()
    result = run_codegen("--check", cwd=clone)
    assert result.returncode == 1
    assert "docs/span-groups.md" in result.stdout


EXTERNAL = f"""\
schema_version = 1
extends = "nemo.lens"

[consumers.mylib]
class = "MyLibSpanGroup"
module = "mylib.lens_groups"
description = "Span groups of a library that lives in another repository."

[consumers.mylib.groups.{MERGE}]
description = "Merging of dataset shards."
fires = "periodic"
since = "1.0.0"

[consumers.mylib.groups.{BATCH}]
description = "One batch of tokens."
fires = "per_step"
since = "1.0.0"

[consumers.mylib.presets.default]
description = "Production."
groups = ["job", "{MERGE}"]

[consumers.mylib.presets.detailed]
description = "Everything per step."
extends = ["default"]
groups = ["step", "{BATCH}"]
"""


def test_a_consumer_in_another_repository(tmp_path: Path) -> None:
    other = tmp_path / "other-repo"
    other.mkdir()
    (other / "pyproject.toml").write_text('[project]\nname = "mylib"\n', encoding="utf-8")
    (other / "lens.toml").write_text(EXTERNAL, encoding="utf-8")
    result = run_codegen(
        "--schema", "lens.toml", "--out-root", "src", "--docs", "docs/span-groups.md", cwd=other
    )
    assert result.returncode == 0, result.stderr
    module = other / "src" / "mylib" / "lens_groups.py"
    assert module.exists()
    assert not (other / "src" / "nemo").exists()  # the base class comes from nemo.lens
    out = _python(
        f"""
from mylib.lens_groups import MyLibSpanGroup
from nemo.lens.groups import SpanGroup
base_default = SpanGroup.resolve("default")
own = {{{MERGE!r}, {BATCH!r}}}
assert issubclass(MyLibSpanGroup, SpanGroup)
assert MyLibSpanGroup.resolve("default") == base_default | {{{MERGE!r}}}
assert MyLibSpanGroup.resolve("detailed,-step") == base_default | own
assert MyLibSpanGroup.resolve("per_step") == SpanGroup.resolve("per_step")  # inherited
assert MyLibSpanGroup.ALL_GROUPS == SpanGroup.ALL_GROUPS | own
print(MyLibSpanGroup.{BATCH.upper()})
""",
        cwd=other,
        # The consumer's tree, then the nemo.lens under test (the one that generated it).
        path=[other / "src", REPO / "src"],
    )
    assert out.strip() == BATCH
    docs = (other / "docs" / "span-groups.md").read_text(encoding="utf-8")
    assert "## `MyLibSpanGroup`" in docs
    assert "## `SpanGroup`" not in docs
    text = module.read_text(encoding="utf-8")
    assert text.splitlines()[:2] == [
        "# DO NOT EDIT: generated from lens.toml by nemo-lens generate.",
        "# Edit the schema, then run "
        "`nemo-lens generate --schema lens.toml --out-root src --docs docs/span-groups.md`.",
    ]
    assert str(tmp_path) not in text + docs  # never an absolute path
    assert "nemo.lens._" not in text  # only public modules
    checked = run_codegen(
        "--schema",
        "lens.toml",
        "--out-root",
        "src",
        "--docs",
        "docs/span-groups.md",
        "--check",
        cwd=other,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
