"""Editors know the schema format: Taplo checks a schema against the JSON Schema its first
line names, as the Even Better TOML extension does while the author types.

Taplo comes from npm (``@taplo/cli``, run by node); ``scripts/taplo.sh`` installs it
(``.ci/run`` does). Without it these tests are skipped, naming the script; with
``NEMO_LENS_REQUIRE_TAPLO=1`` (CI) they fail instead, so a CI run that lost Taplo cannot
pass quietly.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from nemo.lens.codegen.command import JSON_SCHEMA_FILE
from nemo.lens.codegen.model import TIERS
from nemo.lens.codegen.validate import load_schema
from tests.generator.conftest import FIXTURES, REPO, free_group_name, run_codegen
from tests.generator.test_command import CONSUMER_SCHEMA

REQUIRE_VARIABLE = "NEMO_LENS_REQUIRE_TAPLO"
TOOLS = Path(os.environ.get("NEMO_LENS_TAPLO_TOOLS", REPO / ".cache" / "taplo"))

Taplo = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def taplo() -> Taplo:
    node = shutil.which("node")
    script = TOOLS / "node_modules" / ".bin" / "taplo"
    missing = [] if node else ["node"]
    if not script.exists():
        missing.append(f"@taplo/cli (npm) in {TOOLS}")
    if missing:
        message = f"the Taplo tests need {', '.join(missing)}: run scripts/taplo.sh"
        if os.environ.get(REQUIRE_VARIABLE, "").strip() == "1":
            pytest.fail(f"{message} ({REQUIRE_VARIABLE}=1)")
        pytest.skip(message)
    assert node is not None

    def run(*files: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
        """`taplo check FILE...` in *cwd*, as a person runs it there."""
        return subprocess.run(
            [node, str(script), "check", "--colors", "never", *map(str, files)],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    return run


def _consumer_repository(tmp_path: Path, schema: str, name: str = "lens.toml") -> Path:
    """A consumer's repository as the docs set it up: the printed JSON Schema beside its
    schema, which names it on its first line."""
    printed = tmp_path / "lens.schema.json"
    if not printed.exists():
        result = run_codegen("--print-json-schema", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        printed.write_text(result.stdout, encoding="utf-8")
    path = tmp_path / name
    path.write_text("#:schema ./lens.schema.json\n" + schema, encoding="utf-8")
    return path


def test_taplo_accepts_this_repository_s_schema(taplo: Taplo) -> None:
    # The package's copy is the same file, naming the same JSON Schema beside it
    # (test_json_schema checks that both are there); one run of the large file suffices.
    result = taplo(REPO / "schema" / "span_groups.toml", cwd=REPO)

    assert result.returncode == 0, result.stderr
    assert "error" not in result.stderr.lower(), result.stderr


def test_taplo_follows_the_first_line_to_the_json_schema_beside_it(
    taplo: Taplo, tmp_path: Path
) -> None:
    shutil.copy(REPO / "schema" / JSON_SCHEMA_FILE, tmp_path / JSON_SCHEMA_FILE)
    first = (REPO / "schema" / "span_groups.toml").read_text("utf-8").splitlines()[0]
    schema = tmp_path / "span_groups.toml"
    text = (FIXTURES / "small.toml").read_text("utf-8")
    schema.write_text(f"{first}\n" + text, encoding="utf-8")
    assert taplo(schema, cwd=tmp_path).returncode == 0
    schema.write_text(f"{first}\n" + text.replace('fires = "once"', 'fire = "once"', 1), "utf-8")

    result = taplo(schema, cwd=tmp_path)

    assert result.returncode == 1
    assert "Additional properties are not allowed ('fire' was unexpected)" in result.stderr
    assert '"fires" is a required property' in result.stderr


def test_every_schema_the_loader_accepts_taplo_accepts(taplo: Taplo, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    texts = {p.name: p.read_text("utf-8") for p in sorted(FIXTURES.glob("*.toml"))}
    texts["lens.toml"] = CONSUMER_SCHEMA.format(module="mylib.lens_groups", group=MERGE)
    assert len(texts) >= 3
    schemas = []
    for name, text in texts.items():
        schemas.append(_consumer_repository(tmp_path, text, name))
        load_schema(schemas[-1])  # valid for the generator...

    result = taplo(*schemas, cwd=tmp_path)

    assert result.returncode == 0, result.stderr  # ...so valid for the editor
    assert f"found files total={len(schemas)}" in result.stderr


# The consumer's own groups: names the shipped schema does not hold.
MERGE, SPLIT = free_group_name("shard_merge"), free_group_name("shard_split")
BROKEN = """\
schema_version = 1
extends = "nemo.lens"

[consumers.mylib]
class = "MyLibSpanGroup"
module = "mylib.lens_groups"
description = "Span groups of mylib."

[consumers.mylib.groups.{merge}]
description = "Merging of dataset shards."
fires = "periodic"
since = 1.0
categroy = "goodput"

[consumers.mylib.groups.{split}]
description = "Splitting of dataset shards."
fires = "per_epoch"
since = "1.0.0"
"""


def test_taplo_names_a_wrong_key_a_wrong_type_and_a_wrong_choice(
    taplo: Taplo, tmp_path: Path
) -> None:
    schema = _consumer_repository(tmp_path, BROKEN.format(merge=MERGE, split=SPLIT))

    result = taplo(schema, cwd=tmp_path)

    assert result.returncode == 1
    out = result.stderr
    # Each message, and the line Taplo points at (the #:schema line is line 1).
    where = f"{schema.as_posix()}:"
    assert "Additional properties are not allowed ('categroy' was unexpected)" in out
    assert f'{where}14:1\n   │\n14 │ categroy = "goodput"' in out
    assert '1.0 is not of type "string"' in out
    assert f"{where}13:9\n   │\n13 │ since = 1.0" in out
    tiers = ",".join(f'"{t}"' for t in TIERS)
    assert f'"per_epoch" is not one of [{tiers}]' in out
    assert f'{where}18:9\n   │\n18 │ fires = "per_epoch"' in out
    # The generator says the same, in its own words.
    validated = run_codegen("--schema", "lens.toml", "--validate", cwd=tmp_path)
    assert validated.returncode == 2
    assert f"consumers.mylib.groups.{MERGE}.categroy: unknown key 'categroy'" in (validated.stderr)
    assert f"consumers.mylib.groups.{MERGE}.since: expected a string, got a float" in (
        validated.stderr
    )
    assert f"consumers.mylib.groups.{SPLIT}.fires: unknown frequency 'per_epoch'" in (
        validated.stderr
    )
