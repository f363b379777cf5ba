"""The corners of the promoted-group rule, over a fixture base of their own.

A consumer's schema that extends a base and still defines one of its groups: what the
one warning says for each kind of difference, where the base's definition makes another
rule fail (the warning is printed beside the error), and the same redefinition within
one schema file, which stays an error. (``test_promotion`` runs the upgrade itself.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nemo.lens.codegen.validate import SchemaError, load_schema
from tests.generator.conftest import run_codegen

# The fixture base: its names are its own, whatever the shipped schema holds.
BASE = """\
schema_version = 1

[groups.job]
description = "Root."
fires = "once"
since = "0.1.0"
category = "goodput"

[groups.data_wait]
description = "Waiting for data."
fires = "per_step"
since = "0.3.0"

[groups.input_wait]
description = "Waiting for input."
fires = "per_step"
since = "0.4.0"

[groups.old_input]
description = "Old name of input_wait."
fires = "per_step"
since = "0.3.0"
deprecated = { note = "Say which input.", renamed_to = "input_wait" }

[presets.default]
description = "Production."
groups = ["job"]
"""
SERVE = """\
schema_version = 1
extends = "base.toml"

[consumers.serve]
class = "ServeSpanGroup"
module = "serve.groups"
description = "Serving."
"""
# SERVE ends on line 7; a case's first table is on line 9.
WAIT = '\ndescription = "Waiting."\nfires = "per_step"\nsince = "1.0.0"\n'
CAN_GO = (
    "this definition can go: delete the [consumers.{consumer}.groups.{group}] table "
    "(keep '{group}' in the presets that list it)"
)


def _base_group(group: str, since: str, consumer: str = "serve", extra: str = "") -> str:
    return (
        f"group {group!r} is a base group since {since} (SpanGroup.{group.upper()} of "
        f"base.toml{extra}), which {consumer.capitalize()}SpanGroup inherits; "
    )


CASES = {
    "description, since and a note are not behaviour": (
        "\n[consumers.serve.groups.data_wait]\n"
        'description = "Another text."\nfires = "per_step"\nsince = "2.0.0"\n'
        'deprecated = { note = "Going away." }\n',
        [
            "lens.toml:9: consumers.serve.groups.data_wait: "
            + _base_group("data_wait", "0.3.0")
            + CAN_GO.format(consumer="serve", group="data_wait")
        ],
    ),
    "a local rename gives way to the base group": (
        "\n[consumers.serve.groups.batch_wait]"
        + WAIT
        + "\n[consumers.serve.groups.data_wait]"
        + WAIT
        + 'deprecated = { note = "Say what.", renamed_to = "batch_wait" }\n',
        [
            "lens.toml:14: consumers.serve.groups.data_wait: "
            + _base_group("data_wait", "0.3.0")
            + "the base definition wins where the two differ: renamed_to is none in the base, "
            "'batch_wait' here ('data_wait' now names the base group, not an old name); "
            + CAN_GO.format(consumer="serve", group="data_wait")
        ],
    ),
    "a categories override the local category undoes": (
        'categories = { data_wait = "goodput" }\n\n[consumers.serve.groups.data_wait]' + WAIT,
        [
            "lens.toml:10: consumers.serve.groups.data_wait: "
            + _base_group("data_wait", "0.3.0")
            + "the base definition wins where the two differ: category is 'goodput' by the "
            "categories of [consumers.serve], 'profiling' here (to keep 'profiling', remove "
            "'data_wait' from those categories); "
            + CAN_GO.format(consumer="serve", group="data_wait")
        ],
    ),
    "each consumer that defines it, in the order of the file": (
        "\n[consumers.serve.groups.input_wait]"
        + WAIT
        + '\n[consumers.proxy]\nclass = "ProxySpanGroup"\nmodule = "proxy.groups"\n'
        'description = "Proxying."\n'
        + "\n[consumers.proxy.groups.data_wait]"
        + WAIT
        + "\n[consumers.proxy.groups.input_wait]"
        + WAIT,
        [
            "lens.toml:9: consumers.serve.groups.input_wait: "
            + _base_group("input_wait", "0.4.0")
            + CAN_GO.format(consumer="serve", group="input_wait"),
            "lens.toml:19: consumers.proxy.groups.data_wait: "
            + _base_group("data_wait", "0.3.0", "proxy")
            + CAN_GO.format(consumer="proxy", group="data_wait"),
            "lens.toml:24: consumers.proxy.groups.input_wait: "
            + _base_group("input_wait", "0.4.0", "proxy")
            + CAN_GO.format(consumer="proxy", group="input_wait"),
        ],
    ),
}


def _fixture(tmp_path: Path, consumer: str) -> Path:
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "base.toml").write_text(BASE, encoding="utf-8")
    (tmp_path / "lens.toml").write_text(SERVE + consumer, encoding="utf-8")
    return tmp_path / "lens.toml"


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_warning(tmp_path: Path, case: str) -> None:
    text, expected = CASES[case]
    schema = load_schema(_fixture(tmp_path, text), shown="lens.toml")
    assert [str(w) for w in schema.warnings] == expected
    for consumer in schema.consumers:  # the base's groups are inherited, never defined again
        assert not {g.name for g in consumer.groups} & {g.name for g in schema.base.groups}


def test_a_group_the_base_has_renamed_since_is_listed_by_its_new_name(tmp_path: Path) -> None:
    # The consumer's presets keep the group, and a base rename asks of them what it asks
    # of every consumer listing a renamed base group: the new name. Still exit 2.
    _fixture(
        tmp_path,
        "\n[consumers.serve.groups.old_input]"
        + WAIT
        + '\n[consumers.serve.presets.busy]\ndescription = "Busy."\ngroups = ["old_input"]\n',
    )
    done = run_codegen("--schema", "lens.toml", "--out-root", "src", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "warning: lens.toml:9: consumers.serve.groups.old_input: "
        + _base_group("old_input", "0.3.0", extra=", deprecated there: renamed to 'input_wait'")
        + "the base definition wins where the two differ: renamed_to is 'input_wait' in the "
        "base, none here; " + CAN_GO.format(consumer="serve", group="old_input"),
        "error: 1 problem in the schema:",
        "lens.toml:16: consumers.serve.presets.busy.groups[0]: group 'old_input' was renamed "
        "to 'input_wait'; list 'input_wait'",
        "nothing was written.",
    ]
    assert not (tmp_path / "src").exists()


def test_the_preset_contract_judges_by_the_base_tier(tmp_path: Path) -> None:
    # mylib thought the group quiet and put it in `default`; the base says it fires every
    # step. The base wins, so the contract's error stands, with the warning that explains it.
    _fixture(
        tmp_path,
        "\n[consumers.serve.groups.data_wait]"
        + WAIT.replace("per_step", "periodic")
        + '\n[consumers.serve.presets.default]\ngroups = ["data_wait"]\n',
    )
    done = run_codegen("--schema", "lens.toml", "--out-root", "src", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "warning: lens.toml:9: consumers.serve.groups.data_wait: "
        + _base_group("data_wait", "0.3.0")
        + "the base definition wins where the two differ: fires is 'per_step' in the base, "
        "'periodic' here; " + CAN_GO.format(consumer="serve", group="data_wait"),
        "error: 1 problem in the schema:",
        "lens.toml:15: consumers.serve.presets.default.groups[0]: group 'data_wait' fires "
        "per_step, too often for the production preset 'default': move it to 'per_step' or "
        "'all', or state why it belongs here with allow_frequent = { data_wait = \"reason\" }",
        "nothing was written.",
    ]


def test_in_one_schema_file_a_consumer_redefining_a_base_group_stays_an_error(
    tmp_path: Path,
) -> None:
    # No release lies between a base and the consumers of its own file: one of the two goes.
    path = tmp_path / "one.toml"
    path.write_text(
        BASE
        + SERVE.split("\n", 2)[2].replace("extends", "# extends")
        + "\n[consumers.serve.groups.data_wait]"
        + WAIT,
        encoding="utf-8",
    )
    with pytest.raises(SchemaError) as info:
        load_schema(path, shown="one.toml")
    assert [str(p) for p in info.value.problems] == [
        "one.toml:34: consumers.serve.groups.data_wait: group 'data_wait' is already a base "
        "group of SpanGroup; consumers inherit base groups, so remove this definition"
    ]
    assert info.value.warnings == ()
