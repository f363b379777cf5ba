"""`nemo-lens diff-schema`: every kind of change, classified as its users would feel it.

Each test edits a small schema of its own (tests/generator/schema_diffs.py) the way an
author would, and checks the findings a user reads: kind, severity, the exact message
and fix, both sides' file:line, and the exit status.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nemo.lens.codegen.validate import BUNDLED_BASE_PATH, load_schema
from tests.generator.schema_diffs import BASE, CONSUMER, Differ, edit, line_of, without_table


@pytest.fixture
def diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Differ:
    return Differ(tmp_path, monkeypatch, capsys)


def test_the_same_schema_changes_nothing(diff: Differ) -> None:
    result = diff(BASE, BASE)

    assert result.status == 0
    assert result.findings == []
    assert result.document["summary"] == {
        "breaking": 0,
        "warning": 0,
        "compatible": 0,
        "breaks": False,
    }


def test_additions_are_compatible(diff: Differ) -> None:
    new = edit(
        BASE,
        ('groups = ["run", "save", "flush"]', 'groups = ["run", "save", "flush", "probe"]'),
        (
            "[presets.default]",
            '[groups.probe]\ndescription = "A health probe."\nfires = "periodic"\n'
            'since = "1.1.0"\n\n[presets.quiet]\ndescription = "Only the run."\n'
            'groups = ["run"]\n\n[presets.default]',
        ),
    )
    new += (
        '\n[consumers.gym]\nclass = "GymLikeSpanGroup"\nmodule = "gym.lens_groups"\n'
        'description = "Another consumer."\n'
    )

    result = diff(BASE, new)

    assert result.status == 0
    assert result.kinds() == [
        ("group_added", "compatible", "groups.probe"),
        ("preset_members_added", "compatible", "presets.default"),
        ("preset_members_added", "compatible", "presets.per_step"),  # it extends default
        ("preset_added", "compatible", "presets.quiet"),
        ("consumer_added", "compatible", "consumers.gym"),
    ]
    assert result.one("group_added")["message"] == "group 'probe' was added to SpanGroup"
    assert result.one("group_added")["fix"] == "nothing to do"
    assert result.one("group_added")["old"] is None
    assert result.one("group_added")["new"] == {
        "file": "new.toml",
        "line": line_of(new, "[groups.probe]"),
        "key": "groups.probe",
    }
    # Reported at the base presets, not again at the consumer's that inherit them.
    assert result.findings[1]["message"] == "group 'probe' joined preset 'default' of SpanGroup"


def test_a_group_removed_without_a_deprecation_breaks(diff: Differ) -> None:
    new = edit(
        without_table(BASE, "[groups.flush]"),
        ('groups = ["run", "save", "flush"]', 'groups = ["run", "save"]'),
    )

    result = diff(BASE, new)

    assert result.status == 1
    # The presets that held it lose it, but that is the same change: reported once.
    assert result.kinds() == [("group_removed", "breaking", "groups.flush")]
    found = result.one("group_removed")
    assert found["message"] == (
        "group 'flush' of SpanGroup was removed without a deprecation; specs, presets and "
        "code that name 'flush' stop working"
    )
    assert found["fix"] == (
        'keep [groups.flush] for a release with deprecated = { note = "...", renamed_to = '
        '"..." } (renamed_to names the group that replaces it, if one does), and remove it '
        "a release later"
    )
    assert found["old"] == {
        "file": "old.toml",
        "line": line_of(BASE, "[groups.flush]"),
        "key": "groups.flush",
    }
    assert found["new"] is None


def test_a_group_removed_after_its_deprecation_is_compatible(diff: Differ) -> None:
    old = edit(
        BASE,
        ('groups = ["run", "save", "flush"]', 'groups = ["run", "save"]'),
        (
            'description = "Flushing buffers to disk."',
            'description = "Flushing buffers to disk."\ndeprecated = { note = "Gone in 2.0." }',
        ),
    )
    new = without_table(old, "[groups.flush]")

    result = diff(old, new)

    assert result.status == 0
    assert result.kinds() == [("deprecated_group_removed", "compatible", "groups.flush")]
    assert result.one("deprecated_group_removed")["message"] == (
        "group 'flush' of SpanGroup was removed after its deprecation"
    )


RENAMES = {
    "same description": "disk_sync",
    "alike names": "flushes",
    "one name holds the other": "disk_flush",
}


@pytest.mark.parametrize("new_name", RENAMES.values(), ids=RENAMES.keys())
def test_a_rename_without_renamed_to_breaks_and_is_named(diff: Differ, new_name: str) -> None:
    description = "Flushing buffers to disk."
    if new_name != "disk_sync":
        description = "Writes everything out."  # only the names are alike
    new = edit(
        BASE,
        ("[groups.flush]", f"[groups.{new_name}]"),
        ('description = "Flushing buffers to disk."', f'description = "{description}"'),
        ('groups = ["run", "save", "flush"]', f'groups = ["run", "save", "{new_name}"]'),
    )

    result = diff(BASE, new)

    assert result.status == 1
    # The rename is one finding: no separate "added", no preset losing the old name.
    assert result.kinds() == [
        ("group_renamed", "breaking", "groups.flush"),
        ("preset_members_added", "compatible", "presets.default"),
        ("preset_members_added", "compatible", "presets.per_step"),
    ]
    found = result.one("group_renamed")
    assert found["message"] == (
        f"group 'flush' of SpanGroup was removed and {new_name!r} added: looks like a rename "
        f"of 'flush' to {new_name!r}; specs and code that name 'flush' stop working"
    )
    assert found["fix"] == (
        f'keep [groups.flush] for a release with deprecated = {{ note = "Renamed to '
        f'{new_name}.", renamed_to = "{new_name}" }}: specs naming \'flush\' then keep working '
        "(with a DeprecationWarning) and its constant becomes an alias"
    )
    assert found["old"]["line"] == line_of(BASE, "[groups.flush]")
    assert found["new"] == {
        "file": "new.toml",
        "line": line_of(new, f"[groups.{new_name}]"),
        "key": f"groups.{new_name}",
    }


@pytest.mark.parametrize(
    ("replacement", "why"),
    [
        (
            (
                'fires = "periodic"\nsince = "1.0.0"\n\n[presets',
                'fires = "once"\nsince = "1.0.0"\n\n[presets',
            ),
            "tier",
        ),
        (('description = "Flushing buffers to disk."', 'description = "Something else."'), "text"),
    ],
    ids=["another tier", "nothing alike"],
)
def test_a_removal_and_an_unlike_addition_are_no_rename(
    diff: Differ, replacement: tuple[str, str], why: str
) -> None:
    new = edit(
        BASE,
        ("[groups.flush]", "[groups.compact]"),
        replacement,
        ('groups = ["run", "save", "flush"]', 'groups = ["run", "save", "compact"]'),
    )

    result = diff(BASE, new)

    assert result.status == 1, why
    assert result.kinds() == [
        ("group_removed", "breaking", "groups.flush"),
        ("group_added", "compatible", "groups.compact"),
        ("preset_members_added", "compatible", "presets.default"),
        ("preset_members_added", "compatible", "presets.per_step"),
    ]


def test_a_rename_with_renamed_to_is_compatible(diff: Differ) -> None:
    new = edit(
        BASE,
        (
            "[groups.flush]",
            '[groups.disk_sync]\ndescription = "Flushing buffers to disk."\nfires = "periodic"\n'
            'since = "1.1.0"\n\n[groups.flush]',
        ),
        (
            'description = "Flushing buffers to disk."\nfires = "periodic"\nsince = "1.0.0"\n',
            'description = "Flushing buffers to disk."\nfires = "periodic"\nsince = "1.0.0"\n'
            'deprecated = { note = "Renamed.", renamed_to = "disk_sync" }\n',
        ),
        ('groups = ["run", "save", "flush"]', 'groups = ["run", "save", "disk_sync"]'),
    )

    result = diff(BASE, new)

    assert result.status == 0
    assert result.kinds() == [
        ("group_added", "compatible", "groups.disk_sync"),
        ("group_deprecated", "compatible", "groups.flush"),
        ("preset_members_added", "compatible", "presets.default"),
        ("preset_members_added", "compatible", "presets.per_step"),
    ]
    assert result.one("group_deprecated")["message"] == (
        "group 'flush' of SpanGroup is deprecated (renamed to 'disk_sync'): specs naming it "
        "still work, with a DeprecationWarning"
    )
    assert result.one("group_deprecated")["new"]["key"] == "groups.flush.deprecated"


def test_a_group_that_leaves_default_breaks_production_once(diff: Differ) -> None:
    new = edit(
        BASE,
        ('groups = ["run", "save", "flush"]', 'groups = ["run", "save"]'),
        ('groups = ["tick"]', 'groups = ["tick", "flush"]'),
    )

    result = diff(BASE, new)

    assert result.status == 1
    # srv's default inherits the base default: its loss is the base's, reported there.
    assert result.kinds() == [("preset_members_removed", "breaking", "presets.default")]
    found = result.one("preset_members_removed")
    assert found["message"] == (
        "group 'flush' left preset 'default' of SpanGroup: production jobs (the 'default' "
        "preset, what a job runs unless told) stop emitting its spans; consumers inherit "
        "'default' by name, so theirs lose it too (unless they replace it)"
    )
    assert found["fix"] == (
        "list 'flush' in [presets.default] again; if it must leave 'default', that is a "
        "breaking release: say so in the release notes (a job keeps it with "
        "NEMO_LENS_SPAN_GROUPS=default,flush)"
    )
    listing = line_of(BASE, 'groups = ["run", "save", "flush"]')
    assert found["old"] == {"file": "old.toml", "line": listing, "key": "presets.default.groups[2]"}
    assert found["new"] == {"file": "new.toml", "line": listing, "key": "presets.default.groups"}


def test_a_group_that_leaves_a_preset_through_extends_names_where_it_came_from(
    diff: Differ,
) -> None:
    new = edit(BASE, ('extends = ["default"]\n', ""))

    result = diff(BASE, new)

    assert result.status == 1
    assert result.kinds() == [("preset_members_removed", "breaking", "presets.per_step")]
    found = result.one("preset_members_removed")
    assert found["message"].startswith(
        "groups 'flush', 'run', 'save' left preset 'per_step' of SpanGroup: jobs that run "
        "'per_step' stop emitting their spans;"
    )
    assert found["fix"].startswith(
        "list 'flush', 'run', 'save' in [presets.per_step] again (or where SpanGroup's "
        "'per_step' had them from: a preset it extends); if they must leave 'per_step'"
    )


def test_a_group_that_leaves_a_consumer_preset_breaks(diff: Differ) -> None:
    new = edit(
        BASE, ('groups = ["request"]', "groups = []"), ('groups = ["warmup"]', "groups = []")
    )

    result = diff(BASE, new)

    assert result.status == 1
    assert result.kinds() == [
        ("preset_members_removed", "breaking", "consumers.srv.presets.default"),
        ("preset_members_removed", "breaking", "consumers.srv.presets.serving"),
    ]
    assert result.findings[1]["message"] == (
        "group 'request' left preset 'serving' of SrvSpanGroup: jobs that run 'serving' stop "
        "emitting its spans"
    )
    assert result.findings[1]["old"]["line"] == line_of(BASE, 'groups = ["request"]')


def test_a_consumer_preset_that_stops_inheriting_breaks(diff: Differ) -> None:
    new = edit(BASE, ('groups = ["warmup"]', 'replace = true\ngroups = ["warmup"]'))

    result = diff(BASE, new)

    assert result.status == 1
    found = result.one("preset_members_removed")
    assert found["subject"] == "consumers.srv.presets.default"
    assert found["message"].startswith(
        "groups 'flush', 'run', 'save' left preset 'default' of SrvSpanGroup (it now says "
        "replace = true: it no longer inherits the base 'default'): production jobs"
    )
    assert found["fix"].startswith("drop replace = true, or list 'flush', 'run', 'save'")


def test_a_consumer_schema_is_compared_with_the_presets_its_users_get(diff: Differ) -> None:
    """A consumer in another repository: its `default` is the base `default` plus its own,
    so a `replace = true` takes the base members from its production jobs."""
    inherited = {p.name: p for p in load_schema(BUNDLED_BASE_PATH).base.presets}["default"]
    new = edit(CONSUMER, ('groups = ["shard_merge"]', 'replace = true\ngroups = ["shard_merge"]'))

    result = diff(CONSUMER, new)

    assert result.status == 1
    assert result.kinds() == [
        ("preset_members_removed", "breaking", "consumers.mylib.presets.default")
    ]
    lost = sorted(inherited.members)
    names = ", ".join(repr(g) for g in lost)
    assert result.one("preset_members_removed")["message"].startswith(
        f"groups {names} left preset 'default' of MyLibSpanGroup (it now says replace = true"
    )
    assert result.one("preset_members_removed")["fix"].endswith(
        f"NEMO_LENS_SPAN_GROUPS=default,{','.join(lost)})"
    )


def test_a_preset_removed_breaks(diff: Differ) -> None:
    new = edit(
        BASE,
        (
            '\n[consumers.srv.presets.serving]\ndescription = "Requests."\ngroups = ["request"]\n',
            "",
        ),
    )

    result = diff(BASE, new)

    assert result.status == 1
    assert result.kinds() == [("preset_removed", "breaking", "consumers.srv.presets.serving")]
    found = result.one("preset_removed")
    assert found["message"] == (
        "preset 'serving' of SrvSpanGroup was removed: jobs whose spec names it "
        "(NEMO_LENS_SPAN_GROUPS=serving) fail at start-up with an unknown name"
    )
    assert found["old"]["line"] == line_of(BASE, "[consumers.srv.presets.serving]")
    assert found["new"] is None


def test_a_consumer_removed_or_renamed_breaks(diff: Differ) -> None:
    renamed = edit(BASE, ('class = "SrvSpanGroup"', 'class = "ServerSpanGroup"'))
    gone = BASE[: BASE.index("[consumers.srv]")]

    result = diff(BASE, renamed)
    assert result.status == 1
    assert result.kinds() == [("consumer_class_changed", "breaking", "consumers.srv.class")]
    assert result.one("consumer_class_changed")["message"] == (
        "the class of consumer 'srv' is now 'ServerSpanGroup' (was 'SrvSpanGroup'): "
        "`from srv.lens_groups import SrvSpanGroup` stops working"
    )
    assert result.one("consumer_class_changed")["fix"] == 'keep class = "SrvSpanGroup"'

    result = diff(BASE, gone)
    assert result.status == 1
    assert result.kinds() == [("consumer_removed", "breaking", "consumers.srv")]
    assert result.one("consumer_removed")["old"]["line"] == line_of(BASE, "[consumers.srv]")


def test_a_group_in_default_that_fires_more_often_warns(diff: Differ) -> None:
    new = edit(
        BASE,
        (
            'fires = "periodic"\nsince = "1.0.0"\n\n[presets',
            'fires = "per_step"\nsince = "1.0.0"\n\n[presets',
        ),
        (
            'groups = ["run", "save", "flush"]',
            'groups = ["run", "save", "flush"]\nallow_frequent = { flush = "Cheap." }',
        ),
    )

    result = diff(BASE, new)

    assert result.status == 0
    assert result.kinds() == [("fires_changed", "warning", "groups.flush")]
    found = result.one("fires_changed")
    assert found["message"] == (
        "group 'flush' of SpanGroup now fires per_step (every iteration), was periodic "
        "(every N iterations); jobs that run the presets holding it emit more spans: "
        "default (SpanGroup, SrvSpanGroup), per_step (SpanGroup, SrvSpanGroup); 'default' "
        "is the one that matters: production jobs run it"
    )
    assert found["fix"] == (
        "if it fires that often, move it from 'default' to 'per_step' (a frequent group "
        "stays in 'default' only with an allow_frequent reason); otherwise keep "
        'fires = "periodic"'
    )
    assert found["new"]["key"] == "groups.flush.fires"


def test_the_preset_contract_stays_the_validators(diff: Differ) -> None:
    """Without allow_frequent the new schema is invalid: that is validation's report (exit 2),
    not a second opinion of the comparison."""
    new = edit(
        BASE,
        (
            'fires = "periodic"\nsince = "1.0.0"\n\n[presets',
            'fires = "per_step"\nsince = "1.0.0"\n\n[presets',
        ),
    )

    result = diff(BASE, new)

    assert result.status == 2
    assert result.out == ""
    assert "group 'flush' fires per_step, too often for the production preset" in result.err
    assert result.err.splitlines()[-1].startswith(
        "nemo-lens diff-schema: error: NEW (new.toml) cannot be compared: fix the problems above"
    )


def test_fires_outside_default_warns_and_quieter_is_compatible(diff: Differ) -> None:
    busier = edit(BASE, ('fires = "per_step"', 'fires = "per_microbatch"'))
    quieter = edit(BASE, ('fires = "per_request"', 'fires = "per_step"'))

    result = diff(BASE, busier)
    assert result.status == 0
    assert result.kinds() == [("fires_changed", "warning", "groups.tick")]
    assert result.one("fires_changed")["message"].endswith(
        "per_step (SpanGroup, SrvSpanGroup); 'default' does not hold it, so production jobs "
        "are unaffected"
    )

    result = diff(BASE, quieter)
    assert result.kinds() == [("fires_changed", "compatible", "consumers.srv.groups.request")]
    assert result.one("fires_changed")["message"] == (
        "group 'request' of SrvSpanGroup now fires per_step (every iteration), was "
        "per_request (every request): less often"
    )


def test_a_category_or_bucket_change_warns_that_goodput_moves(diff: Differ) -> None:
    recategorized = edit(BASE, ('category = "goodput"\nbucket = "checkpoint_save"', ""))
    rebucketed = edit(BASE, ('bucket = "checkpoint_save"', 'bucket = "evaluation"'))

    result = diff(BASE, recategorized)
    assert result.status == 0
    assert result.kinds() == [("category_changed", "warning", "groups.save")]
    assert result.one("category_changed")["message"] == (
        "group 'save' of SpanGroup is now profiling (was goodput): its spans' category and "
        "the 'goodput' preset change; `nemo-lens goodput` figures move: its time no longer "
        "feeds the 'checkpoint_save' bucket; goodput figures of runs before and after it are "
        "not comparable"
    )
    assert result.one("category_changed")["fix"] == (
        "if intended, say so in the release notes; otherwise make it goodput again"
    )

    result = diff(BASE, rebucketed)
    assert result.kinds() == [("bucket_changed", "warning", "groups.save")]
    assert result.one("bucket_changed")["message"] == (
        "group 'save' of SpanGroup now feeds the 'evaluation' bucket (was 'checkpoint_save'): "
        "`nemo-lens goodput` figures move between buckets: goodput figures of runs before "
        "and after it are not comparable"
    )
    assert result.one("bucket_changed")["fix"] == (
        'if intended, say so in the release notes; otherwise restore bucket = "checkpoint_save"'
    )
    line = line_of(BASE, 'bucket = "checkpoint_save"')
    assert result.one("bucket_changed")["old"]["line"] == line


def test_a_consumers_own_category_view_is_its_change(diff: Differ) -> None:
    new = edit(
        BASE,
        (
            'description = "A server."',
            'description = "A server."\ncategories = { save = "profiling" }',
        ),
    )

    result = diff(BASE, new)

    assert result.kinds() == [("category_changed", "warning", "consumers.srv.categories.save")]
    found = result.one("category_changed")
    assert found["message"].startswith(
        "group 'save' of SrvSpanGroup is now profiling (was goodput): its spans' category "
        "and the 'goodput' preset change; `nemo-lens goodput` figures move: its time no "
        "longer feeds the 'checkpoint_save' bucket;"
    )
    assert found["old"]["key"] == "groups.save.category"
    assert found["new"] == {
        "file": "new.toml",
        "line": line_of(new, "categories = {"),
        "key": "consumers.srv.categories.save",
    }


def test_a_deprecation_added_is_compatible(diff: Differ) -> None:
    new = edit(
        BASE,
        (
            'description = "One request served."',
            'description = "One request served."\ndeprecated = { note = "Use the server\'s own."}',
        ),
    )

    result = diff(BASE, new)

    assert result.status == 0
    assert result.kinds() == [("group_deprecated", "compatible", "consumers.srv.groups.request")]


def test_a_rename_pointed_elsewhere_warns(diff: Differ) -> None:
    aliases = (
        "[groups.flush]",
        '[groups.old_flush]\ndescription = "Old name."\nfires = "periodic"\nsince = "1.0.0"\n'
        'deprecated = { note = "Renamed.", renamed_to = "flush" }\n\n[groups.flush]',
    )
    old = edit(BASE, aliases)
    new = edit(old, ('renamed_to = "flush"', 'renamed_to = "save"'))

    result = diff(old, new)

    assert result.status == 0
    assert result.kinds() == [("rename_retargeted", "warning", "groups.old_flush")]
    assert result.one("rename_retargeted")["message"] == (
        "specs naming the deprecated group 'old_flush' of SpanGroup now enable 'save' "
        "instead of 'flush'"
    )


def test_a_consumer_group_moved_into_the_base_is_no_removal(diff: Differ) -> None:
    """Promotion: the consumer's class still has the group, under the same constant."""
    table = (
        '[consumers.srv.groups.warmup]\ndescription = "Warm-up before the first request."\n'
        'fires = "once"\nsince = "1.0.0"\ncategory = "goodput"\nbucket = "initialization"\n'
    )
    new = edit(
        BASE,
        (table, ""),
        ("[groups.flush]", table.replace("consumers.srv.", "") + "\n[groups.flush]"),
    )

    result = diff(BASE, new)

    assert result.status == 0
    assert result.kinds() == [
        ("group_added", "compatible", "groups.warmup"),
        ("group_moved", "compatible", "consumers.srv.groups.warmup"),
    ]
    assert result.one("group_moved")["message"] == (
        "group 'warmup' of SrvSpanGroup now comes from the base vocabulary; its name and "
        "constant stay"
    )
