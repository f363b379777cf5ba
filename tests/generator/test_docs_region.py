"""``--docs PAGE`` on a page the author keeps: only the marked region is generated.

Run as a consumer runs it, in a repository of its own: the page's prose, its line
endings and its last line stay exactly as they were; ``--check`` looks only inside the
region; markers that do not mark one region are an error naming the line and the fix.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nemo.lens.codegen.docs_region import END, START
from tests.generator.conftest import free_group_name, run_codegen
from tests.generator.test_command import CONSUMER_SCHEMA

GROUP = free_group_name("shard_merge")
"""The consumer's own group: a name the shipped schema does not hold."""

PAGE = "docs/user-guide/span-groups.md"
COMMAND = f"nemo-lens generate --schema lens.toml --out-root src --docs {PAGE}"
BEFORE = "# Observability\n\nWhich spans a job emits, and how to choose them.\n\n"
AFTER = "\nSee also the metrics page.\n"


def _repository(tmp_path: Path, page: str | bytes) -> Path:
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "lens.toml").write_text(
        CONSUMER_SCHEMA.format(module="mylib.lens_groups", group=GROUP),
        encoding="utf-8",
    )
    path = tmp_path / PAGE
    path.parent.mkdir(parents=True)
    path.write_bytes(page.encode("utf-8") if isinstance(page, str) else page)
    return path


def _generate(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_codegen(*COMMAND.split()[2:], *extra, cwd=tmp_path)


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("last", ["", "\n"], ids=["no-final-newline", "final-newline"])
def test_only_the_region_is_generated_and_the_rest_is_kept_byte_for_byte(
    tmp_path: Path, newline: str, last: str
) -> None:
    head = BEFORE.replace("\n", newline) + START + newline
    tail = END + newline + AFTER.rstrip("\n").replace("\n", newline) + last.replace("\n", newline)
    page = _repository(tmp_path, head + "| an old table, by hand |" + newline + tail)

    result = _generate(tmp_path)

    assert result.returncode == 0, result.stderr
    assert f"wrote {PAGE}" in result.stdout
    written = page.read_bytes().decode("utf-8")
    assert written.startswith(head) and written.endswith(tail)
    region = written[len(head) : -len(tail)]
    assert region.startswith(
        "<!-- Generated from lens.toml by nemo-lens generate, up to the end marker: edit the "
        f"schema, not this region, then run `{COMMAND}`. -->" + newline * 2
    )
    assert "| an old table, by hand |" not in region
    assert f"## `MyLibSpanGroup`{newline}" in region
    assert f"| `{GROUP}` | periodic | profiling | Merging of dataset shards. |" in region
    assert region.endswith(newline * 2)  # a blank line ends the last table before the marker
    assert region.count("\n") == region.count(newline)  # one kind of line ending throughout
    assert "DO NOT EDIT" not in region and "# Span groups" not in region  # the page is not ours
    assert "This section is generated from the schema" in region

    again = _generate(tmp_path)
    assert again.returncode == 0, again.stderr
    assert page.read_bytes().decode("utf-8") == written
    check = _generate(tmp_path, "--check")
    assert check.returncode == 0, check.stdout + check.stderr


def test_check_ignores_an_edit_outside_the_region_and_reports_one_inside(tmp_path: Path) -> None:
    page = _repository(tmp_path, BEFORE + START + "\n" + END + "\n" + AFTER)
    assert _generate(tmp_path).returncode == 0
    page.write_text(page.read_text("utf-8").replace("See also", "Read also"), encoding="utf-8")

    outside = _generate(tmp_path, "--check")

    assert outside.returncode == 0, outside.stdout + outside.stderr
    text = page.read_text("utf-8")
    page.write_text(text.replace("Merging of dataset shards.", "Merging shards."), "utf-8")

    inside = _generate(tmp_path, "--check")

    assert inside.returncode == 1
    assert f"--- {PAGE} (on disk)" in inside.stdout
    assert f"-| `{GROUP}` | periodic | profiling | Merging shards. |" in inside.stdout
    assert f"run `{COMMAND}` (generated files are never edited by hand)" in inside.stderr
    assert "Read also" in page.read_text("utf-8")  # --check wrote nothing
    assert _generate(tmp_path).returncode == 0
    assert "Read also" in page.read_text("utf-8")  # and generating keeps the author's edit
    assert "Merging shards." not in page.read_text("utf-8")


def test_markers_shown_in_a_fenced_code_block_are_text(tmp_path: Path) -> None:
    example = f"Mark the region like this:\n\n````markdown\n{START}\n{END}\n````\n\n"
    page = _repository(tmp_path, BEFORE + example + START + "\n" + END + "\n")

    assert _generate(tmp_path).returncode == 0

    text = page.read_text("utf-8")
    assert text.startswith(BEFORE + example + START + "\n<!-- Generated from lens.toml")
    assert text.count("## `MyLibSpanGroup`") == 1


def test_the_page_keeps_its_permissions(tmp_path: Path) -> None:
    page = _repository(tmp_path, START + "\n" + END + "\n")
    page.chmod(0o640)

    assert _generate(tmp_path).returncode == 0

    assert page.stat().st_mode & 0o777 == 0o640


@pytest.mark.parametrize(
    ("page", "message"),
    [
        (
            f"intro\n{START}\ntable\n",
            f"{PAGE}:2: {START} has no {END} after it; add that line where the generated "
            "region ends",
        ),
        (
            f"{END}\nintro\n",
            f"{PAGE}:1: {END} has no {START} before it; add that line where the generated "
            "region begins",
        ),
        (
            f"{START}\n{END}\n{START}\n{END}\n",
            f"{PAGE}:3: a second {START} (the first is on line 1); a page holds one generated "
            f"region: remove one of them\nerror: {PAGE}:4: a second {END} (the first is on "
            "line 2); a page holds one generated region: remove one of them",
        ),
        (
            f"{END}\n\n{START}\n",
            f"{PAGE}:1: {END} comes before {START} (line 3); the start marker goes first",
        ),
        (
            f"{START}\n```\n{END}\n```\n",
            f"{PAGE}:1: {START} has no {END} after it; add that line where the generated region "
            "ends (the marker on line 3 is inside a fenced code block, where it is text)",
        ),
        (
            f"~~~\n{START}\n~~~\n\n```md\n{END}\n```\n",
            f"{PAGE}:2: this nemo-lens:span-groups marker is inside a fenced code block, where "
            "it is example text, and the page has no marker outside one; move the markers out "
            "of the code block to mark the generated region",
        ),
    ],
    ids=["start-only", "end-only", "two-regions", "end-first", "end-fenced", "all-fenced"],
)
@pytest.mark.parametrize("check", [False, True], ids=["generate", "check"])
def test_markers_that_do_not_mark_one_region_are_an_error(
    tmp_path: Path, page: str, message: str, check: bool
) -> None:
    path = _repository(tmp_path, page)

    result = _generate(tmp_path, *(["--check"] if check else []))

    assert result.returncode == 2
    assert result.stderr == f"error: {message}\nnothing was written.\n"
    assert path.read_text("utf-8") == page
    assert not (tmp_path / "src").exists()


def test_a_page_without_markers_is_never_replaced_and_the_error_names_the_markers(
    tmp_path: Path,
) -> None:
    path = _repository(tmp_path, "# Observability\n")

    result = _generate(tmp_path)

    assert result.returncode == 2
    assert (
        f"--docs {PAGE} names a file the generator did not write; choose a new file, or mark "
        f"where the generated part goes with the lines {START} and {END}"
    ) in result.stderr
    assert path.read_text("utf-8") == "# Observability\n"


def test_a_page_that_is_not_utf8_is_an_error(tmp_path: Path) -> None:
    _repository(tmp_path, b"caf\xe9\n" + START.encode() + b"\n" + END.encode() + b"\n")

    result = _generate(tmp_path)

    assert result.returncode == 2
    assert f"error: --docs {PAGE}: not UTF-8 text (invalid continuation byte at byte 3); " in (
        result.stderr
    )


def test_check_reports_a_missing_page_as_missing(tmp_path: Path) -> None:
    page = _repository(tmp_path, "")
    page.unlink()

    result = _generate(tmp_path, "--check")

    assert result.returncode == 1
    assert f"{PAGE}: missing" in result.stdout
    assert f"run `{COMMAND}`" in result.stderr
    assert not page.exists()


def test_generate_help_names_the_markers_whole(capsys: pytest.CaptureFixture[str]) -> None:
    from nemo.lens import cli

    assert cli.main(["generate", "--help"]) == 0

    words = capsys.readouterr().out.split()
    assert "nemo-lens:span-groups:start" in words and "nemo-lens:span-groups:end" in words
