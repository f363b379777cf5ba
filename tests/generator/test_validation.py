"""Each validation rule: a broken schema, the exact message, and its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from nemo.lens.codegen.validate import SchemaError, load_schema
from tests.generator.conftest import REPO, run_codegen

VALID = """\
schema_version = 1

[groups.job]
description = "Root."
fires = "once"
since = "0.1.0"

[groups.step]
description = "Step."
fires = "per_step"
since = "0.1.0"

[presets.default]
description = "Production."
groups = ["job"]
"""
# Lines of VALID: [groups.job] is 3, [groups.step] 8, [presets.default] 13, its groups 15.

CONSUMER = """
[consumers.serve]
class = "ServeSpanGroup"
module = "serve.groups"
description = "Serving."

[consumers.serve.presets.default]
description = "Production."
groups = ["job"]
"""
# Appended to VALID: [consumers.serve] is line 17, its presets.default 22, groups 24.


def problems(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "s.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SchemaError) as info:
        load_schema(path, shown="s.toml")
    return [str(p) for p in info.value.problems]


def test_the_valid_base_passes(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(VALID + CONSUMER, encoding="utf-8")
    schema = load_schema(path)
    assert [g.name for g in schema.base.groups] == ["job", "step"]
    assert [c.class_name for c in schema.consumers] == ["ServeSpanGroup"]


_NAME_SECTIONS = (
    '\n[attributes.sections.s]\ntitle = "S"\n'
    '\n[attributes.sections.r]\ntitle = "R"\nresource = true\n'
)

CASES = {
    "name syntax": (
        VALID + '\n[groups.Data-Load]\ndescription = "x"\nfires = "once"\nsince = "0.1.0"\n',
        [
            "s.toml:17: groups.Data-Load: group name 'Data-Load' is not lowercase snake_case "
            "(letters, digits and single underscores, starting with a letter); try 'data_load'"
        ],
    ),
    "reserved name": (
        VALID + '\n[groups.all]\ndescription = "x"\nfires = "once"\nsince = "0.1.0"\n',
        [
            "s.toml:17: groups.all: group name 'all' is reserved "
            "(all, all_groups, goodput, goodput_groups, group_info, presets, profiling, renamed "
            "have a meaning already)"
        ],
    ),
    "python keyword": (
        VALID + '\n[groups.import]\ndescription = "x"\nfires = "once"\nsince = "0.1.0"\n',
        ["s.toml:17: groups.import: group name 'import' is a Python keyword; pick another word"],
    ),
    "duplicate key": (
        VALID + '\n[groups.job]\ndescription = "again"\n',
        ["s.toml:17: (top level): not valid TOML: Cannot declare ('groups', 'job') twice"],
    ),
    "consumer redefines a base group": (
        VALID
        + CONSUMER
        + '\n[consumers.serve.groups.step]\ndescription = "x"\nfires = "once"\nsince = "0.1.0"\n',
        [
            "s.toml:26: consumers.serve.groups.step: group 'step' is already a base group of "
            "SpanGroup; consumers inherit base groups, so remove this definition"
        ],
    ),
    "unknown preset member": (
        VALID.replace('groups = ["job"]', 'groups = ["job", "stpe"]'),
        ["s.toml:15: presets.default.groups[1]: unknown group 'stpe'; did you mean 'step'?"],
    ),
    "extends cycle": (
        VALID
        + '\n[presets.a]\ndescription = "a"\nextends = ["b"]\ngroups = []\n'
        + '\n[presets.b]\ndescription = "b"\nextends = ["a"]\ngroups = []\n',
        ["s.toml:19: presets.a.extends: 'extends' forms a cycle: a -> b -> a"],
    ),
    "unknown extends": (
        VALID + '\n[presets.more]\ndescription = "m"\nextends = ["defualt"]\ngroups = []\n',
        ["s.toml:19: presets.more.extends[0]: unknown preset 'defualt'; did you mean 'default'?"],
    ),
    "renamed_to points nowhere": (
        VALID
        + '\n[groups.iteration]\ndescription = "x"\nfires = "per_step"\nsince = "0.1.0"\n'
        + 'deprecated = { note = "use step", renamed_to = "stepp" }\n',
        [
            "s.toml:21: groups.iteration.deprecated.renamed_to: renamed_to 'stepp' points "
            "nowhere: no such group; did you mean 'step'?"
        ],
    ),
    "preset contract": (
        VALID.replace('groups = ["job"]', 'groups = ["job", "step"]'),
        [
            "s.toml:15: presets.default.groups[1]: group 'step' fires per_step, too often for the "
            "production preset 'default': move it to 'per_step' or 'all', or state why it belongs "
            'here with allow_frequent = { step = "reason" }'
        ],
    ),
    "override of a quiet group": (
        VALID.replace('groups = ["job"]', 'groups = ["job"]\nallow_frequent = { job = "why" }'),
        [
            "s.toml:16: presets.default.allow_frequent.job: group 'job' fires once, which is quiet "
            "already; remove the override"
        ],
    ),
    "unknown frequency": (
        VALID.replace('fires = "per_step"', 'fires = "per_stepp"'),
        [
            "s.toml:10: groups.step.fires: unknown frequency 'per_stepp'; did you mean 'per_step'? "
            "(tiers: once, periodic, per_step, per_microbatch, per_layer, per_request, per_item)"
        ],
    ),
    "missing description, unknown key": (
        VALID.replace('description = "Step."', 'descripton = "Step."'),
        [
            "s.toml:8: groups.step: missing required key 'description'",
            "s.toml:9: groups.step.descripton: unknown key 'descripton'; did you mean "
            "'description'? (allowed: description, fires, since, category, bucket, sync, "
            "deprecated)",
        ],
    ),
    "wrong type": (
        VALID.replace('groups = ["job"]', 'groups = "job"'),
        ["s.toml:15: presets.default.groups: expected an array, got a string"],
    ),
    "preset named like a group": (
        VALID + '\n[presets.step]\ndescription = "s"\ngroups = ["step"]\n',
        [
            "s.toml:17: presets.step: preset 'step' has the name of a group; a spec could not "
            "tell them apart"
        ],
    ),
    "explicit all": (
        VALID + '\n[presets.all]\ndescription = "s"\ngroups = ["step"]\n',
        [
            "s.toml:17: presets.all: 'all' is implicit (every group of the class); "
            "remove this preset"
        ],
    ),
    "no default preset": (
        VALID.replace("[presets.default]", "[presets.quiet]"),
        [
            "s.toml:13: presets: no 'default' preset: every class needs one, it is what a job "
            "enables when nobody chose"
        ],
    ),
    "class name used twice": (
        VALID
        + CONSUMER
        + CONSUMER.replace("consumers.serve", "consumers.other").replace(
            "serve.groups", "other.groups"
        ),
        [
            "s.toml:27: consumers.other.class: class 'ServeSpanGroup' is already used by "
            "consumers.serve.class"
        ],
    ),
    "unknown category": (
        VALID.replace('fires = "once"', 'fires = "once"\ncategory = "goodptu"'),
        [
            "s.toml:6: groups.job.category: unknown category 'goodptu'; did you mean 'goodput'? "
            "(categories: goodput, profiling)"
        ],
    ),
    "unknown bucket": (
        VALID.replace(
            'fires = "once"', 'fires = "once"\ncategory = "goodput"\nbucket = "restarts"'
        ),
        [
            "s.toml:7: groups.job.bucket: unknown bucket 'restarts' (buckets: productive, "
            "initialization, checkpoint_save, evaluation, data_loading)"
        ],
    ),
    "sync not a boolean": (
        VALID.replace('fires = "once"', 'fires = "once"\nsync = "yes"'),
        ["s.toml:6: groups.job.sync: expected a boolean, got a string"],
    ),
    "a bucket on a profiling group": (
        VALID.replace('fires = "once"', 'fires = "once"\nbucket = "productive"'),
        [
            "s.toml:6: groups.job.bucket: only a goodput group feeds a goodput bucket; add "
            'category = "goodput" or remove the bucket'
        ],
    ),
    "explicit goodput preset": (
        VALID + '\n[presets.goodput]\ndescription = "g"\ngroups = ["job"]\n',
        [
            "s.toml:17: presets.goodput: 'goodput' is implicit (the groups whose category is "
            "goodput); remove this preset"
        ],
    ),
    "replace without a base preset": (
        VALID
        + CONSUMER
        + '\n[consumers.serve.presets.mine]\ndescription = "m"\nreplace = true\ngroups = []\n',
        [
            "s.toml:28: consumers.serve.presets.mine.replace: 'replace' applies only to a preset "
            "that the base vocabulary also has (base presets: default); remove it"
        ],
    ),
    "recategorizing a group that is not a base group": (
        VALID
        + CONSUMER.replace(
            'description = "Serving."',
            'description = "Serving."\ncategories = { stpe = "goodput", step = "profiling" }',
        ),
        [
            "s.toml:21: consumers.serve.categories.stpe: 'stpe' is not a base group; did you mean "
            "'step'?; the category of a consumer's own group is its 'category' key",
            "s.toml:21: consumers.serve.categories.step: 'step' is profiling in the base "
            "vocabulary already; remove this",
        ],
    ),
    "a consumer module inside nemo.lens": (
        VALID + CONSUMER.replace('module = "serve.groups"', 'module = "nemo.lens.helpers"'),
        [
            "s.toml:19: consumers.serve.module: module 'nemo.lens.helpers' is part of nemo.lens "
            "itself; a consumer's module must be new: nemo.lens.consumers.NAME here, or a module "
            "of your own package (e.g. 'mylib.lens_groups')"
        ],
    ),
    "a private consumer module": (
        VALID + CONSUMER.replace('module = "serve.groups"', 'module = "serve.__init__"'),
        [
            "s.toml:19: consumers.serve.module: module 'serve.__init__' names a private or "
            "special module; name a public one (e.g. 'serve.init')"
        ],
    ),
    "a name with a trailing newline": (
        VALID + '\n[groups."step2\\n"]\ndescription = "x"\nfires = "once"\nsince = "0.1.0"\n',
        [
            "s.toml:17: groups.step2\n: group name 'step2\\n' is not lowercase snake_case "
            "(letters, digits and single underscores, starting with a letter); try 'step2'"
        ],
    ),
    "a control character in a description": (
        VALID.replace('description = "Step."', 'description = "Step.\\u0007"'),
        [
            "s.toml:9: groups.step.description: 'description' holds the control or format "
            "character U+0007 at position 5; write plain printable text (it is copied into "
            "generated code and docs)"
        ],
    ),
    "a bidi override in a deprecation note": (
        VALID.replace(
            'since = "0.1.0"\n\n[presets',
            'since = "0.1.0"\ndeprecated = { note = "old \\u202e" }\n\n[presets',
        ),
        [
            "s.toml:12: groups.step.deprecated.note: 'note' holds the control or format "
            "character U+202E at position 4; write plain printable text (it is copied into "
            "generated code and docs)"
        ],
    ),
    "metrics: unknown kind, no boundaries, a name used twice": (
        VALID
        + '\n[metrics.sections.s]\ntitle = "S"\n'
        + '\n[metrics.instruments.a]\nname = "x.a"\nkind = "histogram"\ndescription = "A."'
        + '\nsection = "s"\nrecorded_by = "a"\n'
        + '\n[metrics.instruments.b]\nname = "x.a"\nkind = "gauje"\ndescription = "B."'
        + '\nsection = "s"\nrecorded_by = "b"\n',
        [
            "s.toml:20: metrics.instruments.a: a histogram names its boundaries (see "
            "[metrics.boundaries])",
            "s.toml:28: metrics.instruments.b.name: metric 'x.a' is already metrics.instruments.a",
            "s.toml:29: metrics.instruments.b.kind: unknown kind 'gauje'; did you mean 'gauge'? "
            "(kinds: counter, up_down_counter, histogram, gauge)",
        ],
    ),
    "metrics: boundaries that do not increase": (
        VALID + "\n[metrics.boundaries]\nb = [1.0, 1.0, 2.0]\n",
        ["s.toml:18: metrics.boundaries.b: boundaries must increase strictly, from the lowest up"],
    ),
    # Appended to VALID: [attributes.sections.s] is line 17, a resource section r at 20.
    "attributes: a value held twice without saying so": (
        VALID
        + _NAME_SECTIONS
        + '\n[attributes.names.a_b]\nvalue = "a.b"\nsection = "s"\ndescription = "D."\n'
        + '\n[attributes.names.a_b_again]\nvalue = "a.b"\nsection = "s"\ndescription = "D."\n',
        [
            "s.toml:30: attributes.names.a_b_again.value: attribute 'a.b' is already "
            "attributes.names.a_b; a second constant for it says alias_of = 'a_b'"
        ],
    ),
    "attributes: an alias of another value, an alias of nothing": (
        VALID
        + _NAME_SECTIONS
        + '\n[attributes.names.a_b]\nvalue = "a.b"\nsection = "s"\ndescription = "D."\n'
        + '\n[attributes.names.ab]\nvalue = "a.c"\nalias_of = "a_b"\nsection = "s"'
        + '\ndescription = "D."\n'
        + '\n[attributes.names.ac]\nvalue = "a.b"\nalias_of = "a_bb"\nsection = "s"'
        + '\ndescription = "D."\n',
        [
            "s.toml:31: attributes.names.ab.alias_of: an alias holds the same value as the entry "
            "it repeats: 'a_b' holds 'a.b', this entry 'a.c'",
            "s.toml:37: attributes.names.ac.alias_of: unknown entry 'a_bb'; did you mean 'a_b'?",
        ],
    ),
    "attributes: bad keys and values": (
        VALID
        + _NAME_SECTIONS
        + '\n[attributes.names.Dl-Rank]\nvalue = "dl.rank"\nsection = "s"\ndescription = "D."\n'
        + '\n[attributes.names.dl_rank]\nvalue = "Dl.Rank"\nsection = "s"\ndescription = "D."\n'
        + '\n[attributes.names.fld]\nvalue = "a.b"\nkind = "field"\nsection = "s"'
        + '\ndescription = "D."\n'
        + '\n[attributes.names.ver]\nvalue = "v1"\nkind = "version"\nsection = "s"'
        + '\ndescription = "D."\n',
        [
            "s.toml:24: attributes.names.Dl-Rank: entry name 'Dl-Rank' is not lowercase "
            "snake_case (letters, digits and single underscores, starting with a letter); "
            "try 'dl_rank'",
            "s.toml:30: attributes.names.dl_rank.value: attribute name 'Dl.Rank' is not dotted "
            "lowercase (like 'dl.rank' or 'k8s.pod.name')",
            "s.toml:35: attributes.names.fld.value: field name 'a.b' is not a Python identifier "
            "(a LogRecord field)",
            "s.toml:41: attributes.names.ver.value: version 'v1' is not a release like '1.29.0'",
        ],
    ),
    "attributes: a constant the metric catalogue has, a reserved one": (
        VALID
        + '\n[metrics.sections.m]\ntitle = "M"\n'
        + '\n[metrics.instruments.x_a]\nname = "x.a"\nkind = "gauge"\ndescription = "A."'
        + '\nsection = "m"\nrecorded_by = "a"\n'
        + _NAME_SECTIONS
        + '\n[attributes.names.x_a]\nvalue = "x.a"\nsection = "s"\ndescription = "D."\n'
        + '\n[attributes.names.instruments]\nvalue = "x.i"\nsection = "s"\ndescription = "D."\n',
        [
            "s.toml:34: attributes.names.x_a: constant 'X_A' is already metrics.instruments.x_a "
            "(nemo.lens.semconv exports both catalogues' constants); pick another key",
            "s.toml:39: attributes.names.instruments: constant 'INSTRUMENTS' is reserved: "
            "nemo.lens.semconv has one",
        ],
    ),
    "attributes: resource types, values of nothing, resource keys outside the resource": (
        VALID
        + _NAME_SECTIONS
        + '\n[attributes.names.h]\nvalue = "h.n"\nsection = "r"\ndescription = "D."\n'
        + '\n[attributes.names.v]\nvalue = "ok"\nkind = "value"\nsection = "s"'
        + '\ndescription = "D."\n'
        + '\n[attributes.names.t]\nvalue = "t.t"\ntype = "integer"\nupstream_resource = "0.2.0"'
        + '\nsection = "s"\ndescription = "D."\n',
        [
            "s.toml:24: attributes.names.h: a resource attribute states its type "
            '(type = "string", ...)',
            "s.toml:29: attributes.names.v: a value names the attribute it is a value of: "
            'of = "KEY"',
            "s.toml:37: attributes.names.t.type: unknown type 'integer'; did you mean 'int'? "
            "(types: string, int, double, boolean)",
            "s.toml:38: attributes.names.t.upstream_resource: only a resource attribute is sent "
            "in the resource; section 's' is not a resource section (resource = true)",
        ],
    ),
    "unsupported version": (
        VALID.replace("schema_version = 1", "schema_version = 7"),
        ["s.toml:1: schema_version: unsupported schema_version 7; this generator reads 1"],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rule(tmp_path: Path, case: str) -> None:
    text, expected = CASES[case]
    assert problems(tmp_path, text) == expected


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    broken = VALID.replace('fires = "per_step"', 'fires = "often"').replace(
        'groups = ["job"]', 'groups = ["job", "stpe"]'
    )
    found = problems(tmp_path, broken + '\n[groups.import]\ndescription = "x"\n')
    assert len(found) == 3, found
    assert [p.split(":")[1] for p in found] == ["10", "15", "17"]  # sorted by line


def test_invalid_schema_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    schema = tmp_path / "s.toml"
    schema.write_text(VALID.replace('groups = ["job"]', 'groups = ["stpe"]'), encoding="utf-8")
    out = tmp_path / "out"
    result = run_codegen(
        "--schema", str(schema), "--out-root", str(out), "--docs", str(tmp_path / "d")
    )
    assert result.returncode == 2
    assert "unknown group 'stpe'; did you mean 'step'?" in result.stderr
    assert "nothing was written" in result.stderr
    assert not out.exists()
    assert not (tmp_path / "d").exists()


def test_unreadable_schema_is_a_clear_error(tmp_path: Path) -> None:
    result = run_codegen("--validate", "--schema", str(tmp_path / "missing.toml"))
    assert result.returncode == 2
    assert "cannot read the schema: No such file or directory" in result.stderr


def test_the_shipped_schema_is_valid() -> None:
    result = run_codegen("--validate")
    assert result.returncode == 0, result.stderr
    assert REPO.joinpath("schema", "span_groups.toml").exists()


def test_a_consumers_schema_has_no_catalogue_of_its_own(tmp_path: Path) -> None:
    # The names of nemo.lens.semconv are the base schema's: a consumer generates only
    # its own class, into its own tree.
    schema = tmp_path / "lens.toml"
    schema.write_text(
        'schema_version = 1\nextends = "nemo.lens"\n'
        + CONSUMER
        + '\n[attributes.sections.s]\ntitle = "S"\n'
        + '\n[metrics.sections.m]\ntitle = "M"\n',
        encoding="utf-8",
    )
    with pytest.raises(SchemaError) as info:
        load_schema(schema, shown="lens.toml")
    assert [str(p) for p in info.value.problems] == [
        "lens.toml:13: attributes: [attributes] belongs to the base schema, not to a consumer's",
        "lens.toml:16: metrics: [metrics] belongs to the base schema, not to a consumer's",
    ]
