"""`nemo-lens diff-schema` as a command: its three formats, its exit statuses, `generate
--baseline`, and the flow the docs show (`git show v1.2.0:lens.toml > /tmp/old.toml`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nemo.lens import cli
from nemo.lens.codegen.command import diff_schema as main
from tests.generator.conftest import REPO, run_codegen
from tests.generator.schema_diffs import BASE, CONSUMER, Differ, edit, line_of, without_table

# One breaking change (flush leaves default), one warning (save feeds another bucket) and
# one compatible change (serving gains flush).
EDITED = edit(
    BASE,
    ('groups = ["run", "save", "flush"]', 'groups = ["run", "save"]'),
    ('groups = ["tick"]', 'groups = ["tick", "flush"]'),
    ('bucket = "checkpoint_save"', 'bucket = "evaluation"'),
    ('groups = ["request"]', 'groups = ["request", "flush"]'),
)
DEFAULT_LINE = line_of(BASE, 'groups = ["run", "save", "flush"]')
BUCKET_LINE = line_of(BASE, 'bucket = "checkpoint_save"')
SERVING_LINE = line_of(EDITED, 'groups = ["request", "flush"]')


@pytest.fixture
def diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Differ:
    return Differ(tmp_path, monkeypatch, capsys)


def test_text_lists_the_breaking_first_with_both_sides_and_the_summary_last(
    diff: Differ,
) -> None:
    result = diff(BASE, EDITED, fmt="text")

    assert result.status == 1
    assert result.err == ""
    assert result.out.splitlines() == [
        f"new.toml:{DEFAULT_LINE}: breaking: presets.default: group 'flush' left preset "
        "'default' of SpanGroup: production jobs (the 'default' preset, what a job runs "
        "unless told) stop emitting its spans; consumers inherit 'default' by name, so "
        "theirs lose it too (unless they replace it)",
        f"    old: old.toml:{DEFAULT_LINE} (presets.default.groups[2])",
        f"    new: new.toml:{DEFAULT_LINE} (presets.default.groups)",
        "    fix: list 'flush' in [presets.default] again; if it must leave 'default', that "
        "is a breaking release: say so in the release notes (a job keeps it with "
        "NEMO_LENS_SPAN_GROUPS=default,flush)",
        f"new.toml:{BUCKET_LINE}: warning: groups.save: group 'save' of SpanGroup now feeds "
        "the 'evaluation' bucket (was 'checkpoint_save'): `nemo-lens goodput` figures move "
        "between buckets: goodput figures of runs before and after it are not comparable",
        f"    old: old.toml:{BUCKET_LINE} (groups.save.bucket)",
        f"    new: new.toml:{BUCKET_LINE} (groups.save.bucket)",
        "    fix: if intended, say so in the release notes; otherwise restore bucket = "
        '"checkpoint_save"',
        f"new.toml:{SERVING_LINE}: compatible: consumers.srv.presets.serving: group 'flush' "
        "joined preset 'serving' of SrvSpanGroup",
        "summary: 1 breaking, 1 warning, 1 compatible (old.toml -> new.toml)",
    ]


def test_json_is_one_documented_object(diff: Differ) -> None:
    result = diff(BASE, EDITED)

    assert result.status == 1
    document = result.document
    assert list(document) == ["version", "old", "new", "findings", "summary"]
    assert (document["version"], document["old"], document["new"]) == (1, "old.toml", "new.toml")
    assert document["summary"] == {"breaking": 1, "warning": 1, "compatible": 1, "breaks": True}
    for finding in document["findings"]:
        assert list(finding) == ["kind", "severity", "subject", "message", "fix", "old", "new"]
    assert document["findings"][0]["old"] == {
        "file": "old.toml",
        "line": DEFAULT_LINE,
        "key": "presets.default.groups[2]",
    }
    # The same input prints the same bytes.
    assert diff(BASE, EDITED).out == result.out


def test_github_annotates_new_lines_escaped_and_old_lines_when_the_key_is_gone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    where = tmp_path / "ci,run:100%\r"
    where.mkdir()
    removed = edit(
        without_table(EDITED, "[groups.flush]"),
        ('groups = ["tick", "flush"]', 'groups = ["tick"]'),
        ('groups = ["request", "flush"]', 'groups = ["request", "save"]'),
    )
    (where / "old.toml").write_text(BASE, encoding="utf-8")
    (where / "new.toml").write_text(removed, encoding="utf-8")
    old, new = (where / "old.toml").as_posix(), (where / "new.toml").as_posix()
    in_property = old.replace("%", "%25").replace("\r", "%0D")
    in_property = in_property.replace(":", "%3A").replace(",", "%2C")
    in_message = old.replace("%", "%25").replace("\r", "%0D")
    new_in_message = new.replace("%", "%25").replace("\r", "%0D")

    status = main([old, new, "--format", "github"])

    lines = capsys.readouterr().out.split("\n")
    assert status == 1
    flush = line_of(BASE, "[groups.flush]")
    assert lines[0] == (
        f"::error file={in_property},line={flush},title=group_removed (breaking)::"
        "groups.flush: group 'flush' of SpanGroup was removed without a deprecation; specs, "
        "presets and code that name 'flush' stop working%0Afix: keep [groups.flush] for a "
        'release with deprecated = { note = "...", renamed_to = "..." } (renamed_to names '
        "the group that replaces it, if one does), and remove it a release later"
        f"%0Aold: {in_message}:{flush} (groups.flush)%0Anew: absent"
    )
    new_property = in_property.replace("old.toml", "new.toml")
    assert lines[1] == (
        f"::warning file={new_property},line={BUCKET_LINE},title=bucket_changed (warning)::"
        "groups.save: group 'save' of SpanGroup now feeds the 'evaluation' bucket (was "
        "'checkpoint_save'): `nemo-lens goodput` figures move between buckets: goodput "
        "figures of runs before and after it are not comparable%0Afix: if intended, say so "
        'in the release notes; otherwise restore bucket = "checkpoint_save"'
        f"%0Aold: {in_message}:{BUCKET_LINE} (groups.save.bucket)"
        f"%0Anew: {new_in_message}:{BUCKET_LINE} (groups.save.bucket)"
    )
    # Compatible changes are no annotation; the summary line ends the output.
    assert lines[2].startswith("summary: 1 breaking, 1 warning, 1 compatible (")
    assert lines[3:] == [""]


def test_nothing_breaking_exits_zero_with_warnings(diff: Differ) -> None:
    result = diff(BASE, edit(BASE, ('bucket = "checkpoint_save"', 'bucket = "evaluation"')))

    assert result.status == 0
    assert result.document["summary"]["breaks"] is False


def test_an_invalid_schema_exits_2_with_its_validation_report(diff: Differ) -> None:
    broken = edit(BASE, ('groups = ["tick"]', 'groups = ["tikc"]'))

    result = diff(broken, BASE, fmt="text")

    assert result.status == 2
    assert result.out == ""
    assert result.err.splitlines() == [
        "error: 1 problem in the schema:",
        f"old.toml:{line_of(broken, 'tikc')}: presets.per_step.groups[0]: unknown group "
        "'tikc'; did you mean 'tick'?",
        "nemo-lens diff-schema: error: OLD (old.toml) cannot be compared: fix the problems "
        "above (`nemo-lens generate --validate --schema PATH` checks one alone), then "
        "compare again",
    ]


def test_bad_usage_exits_2(diff: Differ, capsys: pytest.CaptureFixture[str]) -> None:
    assert diff(BASE, BASE, fmt="yaml").status == 2
    assert "argument --format: invalid choice: 'yaml'" in diff(BASE, BASE, fmt="yaml").err
    assert main(["old.toml"]) == 2
    assert "the following arguments are required: NEW" in capsys.readouterr().err
    assert main(["old.toml", "missing.toml"]) == 2
    assert "missing.toml: (top level): cannot read the schema" in capsys.readouterr().err


def test_it_is_a_nemo_lens_command(diff: Differ, capsys: pytest.CaptureFixture[str]) -> None:
    diff(BASE, EDITED)  # writes the two files

    assert cli.main(["diff-schema", "old.toml", "new.toml"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == (
        "summary: 1 breaking, 1 warning, 1 compatible (old.toml -> new.toml)"
    )
    assert cli.main(["--help"]) == 0
    assert "diff-schema" in capsys.readouterr().out
    assert cli.main(["diff-schema", "--help"]) == 0
    helped = " ".join(capsys.readouterr().out.split())
    assert "usage: nemo-lens diff-schema [-h] [--format {text,json,github}] OLD NEW" in helped
    assert "0 nothing breaks (warnings allowed), 1 something breaks, 2 bad usage" in helped


def _consumer_repo(tmp_path: Path, schema: str = CONSUMER) -> Path:
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "lens.toml").write_text(schema, encoding="utf-8")
    return tmp_path


def _generate(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_codegen("--schema", "lens.toml", "--out-root", "src", *args, cwd=where)


MODULE = Path("src/mylib/lens_groups.py")
LEFT_DEFAULT = edit(CONSUMER, ('groups = ["shard_merge"]', "groups = []"))


def test_generate_with_a_baseline_it_breaks_writes_nothing(tmp_path: Path) -> None:
    repo = _consumer_repo(tmp_path, LEFT_DEFAULT)
    (repo / "old.toml").write_text(CONSUMER, encoding="utf-8")

    result = _generate(repo, "--baseline", "old.toml")

    assert result.returncode == 1
    assert result.stdout == ""
    err = result.stderr.splitlines()
    assert err[0] == (
        f"lens.toml:{line_of(CONSUMER, 'groups = [')}: breaking: "
        "consumers.mylib.presets.default: group 'shard_merge' left preset 'default' of "
        "MyLibSpanGroup: production jobs (the 'default' preset, what a job runs unless "
        "told) stop emitting its spans"
    )
    assert err[-3:] == [
        "summary: 1 breaking, 0 warnings, 0 compatible (old.toml -> lens.toml)",
        "error: the schema breaks users of old.toml: keep what they use (each fix above "
        "says how), or compare against another baseline",
        "nothing was written.",
    ]
    assert not (repo / MODULE).exists()
    assert not (repo / "src").exists()


def test_generate_with_a_baseline_prints_warnings_and_generates(tmp_path: Path) -> None:
    warned = edit(CONSUMER, ('category = "goodput"\n', ""))
    repo = _consumer_repo(tmp_path, warned)
    (repo / "old.toml").write_text(CONSUMER, encoding="utf-8")

    result = _generate(repo, "--baseline", "old.toml")

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"wrote {MODULE.as_posix()}"]
    assert result.stderr.splitlines()[0].startswith(
        "lens.toml:9: warning: consumers.mylib.groups.shard_merge: group 'shard_merge' of "
        "MyLibSpanGroup is now profiling (was goodput)"
    )
    assert result.stderr.splitlines()[-1] == (
        "summary: 0 breaking, 1 warning, 0 compatible (old.toml -> lens.toml)"
    )
    assert "class MyLibSpanGroup" in (repo / MODULE).read_text(encoding="utf-8")


def test_generate_with_an_invalid_baseline_exits_2(tmp_path: Path) -> None:
    repo = _consumer_repo(tmp_path)
    (repo / "old.toml").write_text(CONSUMER.replace('fires = "periodic"', 'fires = "often"'))

    result = _generate(repo, "--baseline", "old.toml")

    assert result.returncode == 2
    assert "unknown frequency 'often'" in result.stderr
    assert "the baseline (old.toml) cannot be compared" in result.stderr
    assert result.stderr.splitlines()[-1] == "nothing was written."
    assert not (repo / "src").exists()


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(repo),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Author",
        "GIT_AUTHOR_EMAIL": "author@example.com",
        "GIT_COMMITTER_NAME": "Author",
        "GIT_COMMITTER_EMAIL": "author@example.com",
    }
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True
    )


def test_a_release_from_git_is_the_baseline(tmp_path: Path) -> None:
    """The documented flow: commit a schema, tag it, edit it, and compare the edit with
    `git show TAG:lens.toml` written outside the repository."""
    repo = _consumer_repo(tmp_path / "mylib")
    _git(repo, "init", "-q")
    _git(repo, "add", "lens.toml", "pyproject.toml")
    _git(repo, "commit", "-q", "-m", "mylib 1.2.0")
    _git(repo, "tag", "v1.2.0")
    (repo / "lens.toml").write_text(LEFT_DEFAULT, encoding="utf-8")
    old = tmp_path / "old.toml"
    old.write_text(_git(repo, "show", "v1.2.0:lens.toml").stdout, encoding="utf-8")

    result = subprocess.run(
        [sys.executable, "-m", "nemo.lens.cli", "diff-schema", str(old), "lens.toml"],
        cwd=repo,
        env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )

    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(
        f"lens.toml:{line_of(CONSUMER, 'groups = [')}: breaking: "
        "consumers.mylib.presets.default: group 'shard_merge' left preset 'default'"
    )
    assert lines[1] == (
        f"    old: {old.as_posix()}:{line_of(CONSUMER, 'groups = [')} "
        "(consumers.mylib.presets.default.groups[0])"
    )
    assert lines[-1] == (
        f"summary: 1 breaking, 0 warnings, 0 compatible ({old.as_posix()} -> lens.toml)"
    )
    # The edit undone, the release compares clean.
    (repo / "lens.toml").write_text(CONSUMER, encoding="utf-8")
    clean = run_codegen("--schema", "lens.toml", "--baseline", str(old), "--validate", cwd=repo)
    assert clean.returncode == 0, clean.stderr
    assert clean.stdout == "lens.toml: valid\n"
    assert clean.stderr == (
        f"summary: 0 breaking, 0 warnings, 0 compatible ({old.as_posix()} -> lens.toml)\n"
    )


def test_the_docs_example_is_what_the_command_prints(diff: Differ) -> None:
    """docs/schema-compatibility.md shows the output for the README's consumer, edited."""
    docs = (REPO / "docs" / "schema-compatibility.md").read_text(encoding="utf-8")
    shown = docs.split("```text\n", 1)[1].split("```", 1)[0]
    new = edit(
        CONSUMER,
        ('groups = ["shard_merge"]', "groups = []"),
        ('category = "goodput"\n', ""),
        (
            "[consumers.mylib.presets.default]",
            '[consumers.mylib.groups.shard_index]\ndescription = "Indexing of dataset shards."'
            '\nfires = "periodic"\nsince = "1.1.0"\n\n[consumers.mylib.presets.default]',
        ),
    )
    (diff.where / "lens.toml").write_text(new, encoding="utf-8")
    diff(CONSUMER, new)  # writes old.toml

    assert main(["old.toml", "lens.toml"]) == 1
    assert diff.capsys.readouterr().out == shown
