"""Set-up given a bad trace path, run id, service name or span-group spec: a ValueError naming
the variable and the fix before anything changes, or a safe file name; never a raw OS error."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.metrics import _internal as metrics_internal

from nemo.lens import NemoLensConfig, managed_span, setup_telemetry, state
from nemo.lens._core import state as core_state
from nemo.lens._core.destinations import FILE_NAME_PART_BYTES, file_name_part
from nemo.lens._sdk.exporters import jsonl
from nemo.lens.groups import SpanGroup

pytestmark = pytest.mark.usefixtures("clean_env", "unset_providers")


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory of its own, with the file exporter on through the environment."""
    here = tmp_path / "work"
    here.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.setenv("NEMO_LENS_ENABLED", "1")
    monkeypatch.setenv("NEMO_LENS_EXPORTER", "file")
    monkeypatch.setenv("NEMO_LENS_RUN_ID", "r1")
    return here


def _files(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*"))


def _refused(root: Path, fragments: list[str], config: NemoLensConfig | None = None) -> None:
    """Set-up raises a ValueError holding every fragment, and leaves the process and the
    files under *root* exactly as they were."""
    before = _files(root)
    with pytest.raises(ValueError) as info:
        setup_telemetry(config or NemoLensConfig.from_env())
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message
    assert not isinstance(info.value, OSError)
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    assert metrics_internal._METER_PROVIDER is None
    assert state.enabled_span_groups() == frozenset()
    assert core_state.installed_tracer_provider() is None
    assert _files(root) == before


# -- the trace path ---------------------------------------------------------------------------

_FIX = "set NEMO_LENS_TRACE_FILE (NemoLensConfig.trace_file) to a file in a directory"


@pytest.mark.bad_input("trace-file-is-a-directory")
def test_a_trace_file_that_is_a_directory(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (work / "out").mkdir()
    monkeypatch.setenv("NEMO_LENS_TRACE_FILE", str(work / "out"))
    _refused(
        work.parent, ["NEMO_LENS_TRACE_FILE", f"{str(work / 'out')!r}", "is a directory", _FIX]
    )
    monkeypatch.setenv("NEMO_LENS_TRACE_FILE", str(work / "out" / "spans.jsonl"))
    setup_telemetry(NemoLensConfig.from_env())  # corrected, it works
    assert (work / "out" / "spans.jsonl").is_file()


@pytest.mark.bad_input("trace-file-ends-with-a-separator")
def test_a_trace_file_that_ends_with_a_separator(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEMO_LENS_TRACE_FILE", "new/")
    _refused(work.parent, ["'new/'", "names a directory, not a file", _FIX])


@pytest.mark.bad_input("trace-file-under-a-regular-file")
def test_a_trace_file_under_a_regular_file(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (work / "notes.txt").write_text("x")
    monkeypatch.setenv("NEMO_LENS_TRACE_FILE", "notes.txt/deeper/spans.jsonl")
    _refused(work.parent, ["'notes.txt' is a file, not a directory", "NEMO_LENS_TRACE_FILE"])


@pytest.mark.bad_input("trace-file-behind-a-dangling-link")
def test_a_trace_file_behind_a_link_to_nowhere(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (work / "scratch").symlink_to(work / "unmounted")
    monkeypatch.setenv("NEMO_LENS_TRACE_FILE", "scratch/traces/spans.jsonl")
    _refused(work.parent, ["'scratch' is a symbolic link to a place that does not exist", _FIX])


@pytest.mark.bad_input("trace-dir-not-writable")
@pytest.mark.skipif(os.geteuid() == 0, reason="root may write to any directory")
def test_a_trace_file_in_a_directory_this_process_may_not_write(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (work / "shared").mkdir(mode=0o500)
    monkeypatch.setenv("NEMO_LENS_TRACE_FILE", "shared/t/spans.jsonl")
    _refused(work.parent, ["may not create files or directories in 'shared'", _FIX])


@pytest.mark.bad_input("trace-dir-not-writable")
def test_a_directory_the_access_check_refuses_is_named(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same path as above wherever the tests run as root: os.access says no.
    (work / "shared").mkdir()
    monkeypatch.setenv("NEMO_LENS_TRACE_FILE", "shared/t/spans.jsonl")
    real = os.access
    monkeypatch.setattr(
        os, "access", lambda path, mode: "shared" not in str(path) and real(path, mode)
    )
    _refused(work.parent, ["may not create files or directories in 'shared'", _FIX])


@pytest.mark.bad_input("trace-default-in-a-removed-working-dir")
def test_the_default_path_in_a_working_directory_that_was_removed(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = work / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    _refused(
        work.parent,
        [
            "the default trace_file 'traces/{service_name}-{run_id}-rank{rank}.jsonl' "
            "(NEMO_LENS_TRACE_FILE unset)",
            "the working directory was removed",
            _FIX,
        ],
    )


@pytest.mark.bad_input("trace-file-name-too-long")
def test_a_trace_file_whose_name_is_too_long(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEMO_LENS_TRACE_FILE", "traces/" + "t" * 300 + ".jsonl")
    _refused(work.parent, ["is 306 bytes long; this file system takes names of at most", _FIX])


@pytest.mark.bad_input("trace-file-path-too-long")
def test_a_trace_file_whose_path_is_too_long(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEMO_LENS_TRACE_FILE", "/".join(["d" * 200] * 25) + "/t.jsonl")
    _refused(work.parent, ["bytes long; this file system takes paths under", "'...'", _FIX])


@pytest.mark.bad_input("trace-file-with-nul")
def test_a_trace_file_with_a_nul_character(work: Path) -> None:
    config = NemoLensConfig(enabled=True, exporter="file", trace_file="spans\0.jsonl")
    _refused(work.parent, ["it holds a NUL character", _FIX], config)


def test_the_metrics_file_beside_the_trace_file_is_checked_too(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (work / "spans.metrics.jsonl").mkdir()
    monkeypatch.setenv("NEMO_LENS_TRACE_FILE", "spans.jsonl")
    _refused(work.parent, ["its metrics file 'spans.metrics.jsonl'", "is a directory"])
    monkeypatch.setenv("NEMO_LENS_METRICS_ENABLED", "0")  # then only the span file is made
    setup_telemetry(NemoLensConfig.from_env())
    assert (work / "spans.jsonl").is_file()


@pytest.mark.bad_input("trace-file-refused-at-open")
def test_a_file_system_that_refuses_at_open_is_a_value_error_too(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What no check before can foresee (a quota, a file system that says no at open).
    def refuse(self: jsonl.FileSink) -> int:
        raise OSError(errno.EDQUOT, os.strerror(errno.EDQUOT), self.path)

    monkeypatch.setattr(jsonl.FileSink, "_open", refuse)
    _refused(
        work.parent,
        [
            "cannot open 'traces/nemo-r1-rank0.jsonl'",
            os.strerror(errno.EDQUOT),
            "NEMO_LENS_TRACE_FILE",
        ],
    )


# -- run ids and service names as file-name parts --------------------------------------------


def _run_one_span() -> dict[str, object]:
    """Set up from the environment, emit a span, shut down; the resource's attributes."""
    handle = setup_telemetry(NemoLensConfig.from_env())
    provider = trace.get_tracer_provider()
    attributes = dict(provider.resource.attributes)  # type: ignore[attr-defined]
    with managed_span(SpanGroup.JOB, "job"):
        pass
    assert handle.shutdown(2000)
    return attributes


@pytest.mark.bad_input("run-id-climbs-out-of-traces")
def test_a_run_id_with_separators_and_dots_stays_in_traces(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEMO_LENS_RUN_ID", "x/../../ESCAPED")
    attributes = _run_one_span()
    assert _files(work.parent) == [
        "work",
        "work/traces",
        "work/traces/nemo-x_______ESCAPED-rank0.jsonl",
        "work/traces/nemo-x_______ESCAPED-rank0.metrics.jsonl",
    ]
    # The resource keeps the run id as given: it is data.
    assert attributes["nemo.run.id"] == "x/../../ESCAPED"
    assert attributes["service.instance.id"] == "x/../../ESCAPED-rank0"


@pytest.mark.bad_input("service-name-with-a-separator")
def test_a_service_name_with_a_separator_makes_no_sub_directory(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_SERVICE_NAME", "a/b")
    monkeypatch.setenv("NEMO_LENS_METRICS_ENABLED", "0")
    attributes = _run_one_span()
    assert _files(work / "traces") == ["a_b-r1-rank0.jsonl"]
    assert attributes["service.name"] == "a/b"


@pytest.mark.bad_input("run-id-5000-characters")
def test_a_run_id_too_long_for_a_file_name_is_cut_with_its_hash(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = "r" * 5000
    monkeypatch.setenv("NEMO_LENS_RUN_ID", run_id)
    monkeypatch.setenv("NEMO_LENS_METRICS_ENABLED", "0")
    attributes = _run_one_span()
    (name,) = _files(work / "traces")
    part = file_name_part(run_id)
    assert name == f"nemo-{part}-rank0.jsonl"
    assert len(part) == FILE_NAME_PART_BYTES and part.startswith("r" * 91 + "-")
    assert attributes["nemo.run.id"] == run_id


@pytest.mark.bad_input("run-id-control-characters")
def test_a_run_id_with_control_characters(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEMO_LENS_RUN_ID", "r\x1b]0;owned\x07\t1")
    monkeypatch.setenv("NEMO_LENS_METRICS_ENABLED", "0")
    attributes = _run_one_span()
    assert _files(work / "traces") == ["nemo-r_]0;owned__1-rank0.jsonl"]
    assert attributes["nemo.run.id"] == "r\x1b]0;owned\x07\t1"


@pytest.mark.parametrize(
    ("value", "part"),
    [
        ("job-42", "job-42"),
        ("a/b", "a_b"),
        ("a\\b", "a_b"),
        ("..", "__"),
        (".", "_"),
        (".hidden", "_hidden"),
        ("run..1", "run__1"),
        ("", "_"),
        ("nul\0", "nul_"),
        ("del\x7f", "del_"),
        ("lone\udc80", "lone_"),
        ("éß", "éß"),
    ],
)
def test_file_name_parts(value: str, part: str) -> None:
    assert file_name_part(value) == part


def test_long_file_name_parts_are_bounded_and_stay_distinct() -> None:
    one, other = "a" * 200 + "1", "a" * 200 + "2"
    assert file_name_part(one) != file_name_part(other)
    for value in (one, "é" * 200, "😀" * 100):
        assert len(file_name_part(value).encode("utf-8")) <= FILE_NAME_PART_BYTES
    assert file_name_part("a" * FILE_NAME_PART_BYTES) == "a" * FILE_NAME_PART_BYTES


def test_a_trace_file_template_gets_the_safe_parts(work: Path) -> None:
    config = NemoLensConfig(
        run_id="../up", service_name="s/t", trace_file="{service_name}/{run_id}.jsonl"
    )
    assert config.format_trace_file(0) == "s_t/___up.jsonl"


# -- the empty span-group spec ----------------------------------------------------------------


@pytest.fixture
def default_groups() -> Iterator[frozenset[str]]:
    yield SpanGroup.resolve("default")


@pytest.mark.bad_input("span-groups-empty")
@pytest.mark.parametrize("spec", ["", "  ", ",", " , "])
def test_an_empty_span_groups_field_means_default_as_the_variable_does(
    spec: str, default_groups: frozenset[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert NemoLensConfig(span_groups=spec).resolved_span_groups == default_groups
    monkeypatch.setenv("NEMO_LENS_SPAN_GROUPS", spec)
    assert NemoLensConfig.from_env().resolved_span_groups == default_groups
    handle = setup_telemetry(NemoLensConfig(enabled=True, exporter="none", span_groups=spec))
    assert handle.enabled_groups == default_groups


def test_no_group_at_all_is_said_with_a_spec_that_names_it() -> None:
    assert NemoLensConfig(span_groups="-all").resolved_span_groups == frozenset()
    assert NemoLensConfig(span_groups="all,-all").resolved_span_groups == frozenset()
