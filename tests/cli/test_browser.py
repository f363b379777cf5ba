"""What a person sees in a real browser: the report page, and our Chrome trace in speedscope.

Headless Chromium (Debian's ``chromium``) is driven by playwright-core from npm,
which here downloads no browser of its own; speedscope, from npm too, is a
third-party trace viewer that works offline. ``scripts/browser-tools.sh``
installs all three (``.ci/run`` does). Without them these tests are skipped,
naming the script; with ``NEMO_LENS_REQUIRE_BROWSER=1`` (CI) they fail instead,
so a CI run that lost its browser cannot pass quietly. Screenshots are saved in
each test's tmp directory.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nemo.lens.groups import SpanGroup
from tests.trace_file import spans_in

from .conftest import Result
from .goodput_traces import RUN, crash_and_resume, write_big_trace

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).with_name("browser")
REQUIRE_VARIABLE = "NEMO_LENS_REQUIRE_BROWSER"
TOOLS = Path(os.environ.get("NEMO_LENS_BROWSER_TOOLS", ROOT / ".cache" / "browser-tools"))
PNG = b"\x89PNG\r\n\x1a\n"

Run = Callable[..., Result]


@dataclass(frozen=True)
class Browser:
    node: str
    chromium: str

    def run(self, script: str, *args: str) -> dict[str, Any]:
        """Run one of the scripts in browser/; return the JSON object it prints."""
        env = {**os.environ, "CHROMIUM": self.chromium, "NEMO_LENS_BROWSER_TOOLS": str(TOOLS)}
        done = subprocess.run(
            [self.node, str(SCRIPTS / script), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return result


@pytest.fixture(scope="module")
def browser() -> Browser:
    chromium = shutil.which("chromium")
    node = shutil.which("node")
    missing = []
    if chromium is None:
        missing.append("chromium (Debian's package)")
    if node is None:
        missing.append("node")
    for package in ("playwright-core", "speedscope"):
        if not (TOOLS / "node_modules" / package).is_dir():
            missing.append(f"{package} (npm) in {TOOLS}")
    if missing:
        message = f"the browser tests need {', '.join(missing)}: run scripts/browser-tools.sh"
        if os.environ.get(REQUIRE_VARIABLE, "").strip() == "1":
            pytest.fail(f"{message} ({REQUIRE_VARIABLE}=1)")
        pytest.skip(message)
    assert chromium is not None and node is not None
    return Browser(node, chromium)


def open_report(browser: Browser, page: Path, tmp_path: Path, hovers: Any = ()) -> dict[str, Any]:
    spec = tmp_path / "spec.json"
    screenshot = tmp_path / "report.png"
    spec.write_text(
        json.dumps({"url": page.as_uri(), "screenshot": str(screenshot), "hovers": list(hovers)}),
        encoding="utf-8",
    )
    result = browser.run("report_page.cjs", str(spec))
    assert result["requests"] == [page.as_uri()]  # nothing fetched: the page is whole
    assert result["errors"] == []
    assert screenshot.read_bytes().startswith(PNG)
    return result


def test_the_report_shows_goodput_timeline_and_steps_in_chromium(
    browser: Browser, run: Run, tmp_path: Path
) -> None:
    page = tmp_path / "report.html"
    assert run("report", "-o", str(page), *map(str, crash_and_resume(tmp_path))).status == 0

    row = f"rank 0 · {SpanGroup.STEP}"
    restarted = f"rank 1 · {SpanGroup.JOB}"
    result = open_report(
        browser,
        page,
        tmp_path,
        hovers=[{"row": row, "t_ms": 15_000}, {"row": restarted, "t_ms": 50_000}],
    )

    (heading,) = result["goodputHeadings"]
    assert "goodput 35.9% (33.000 s productive of 92.000 s wall" in heading
    (chart,) = result["goodputCharts"]
    assert chart["bars"] == ["run", "rank 0", "rank 1"]
    # A bucket the run spent no time in draws no segment.
    buckets = ["productive", *(b for b, spent in RUN["badput"].items() if spent > 0)]
    run_segments = chart["segments"][: len(buckets)]
    assert [s["bucket"] for s in run_segments] == buckets
    widths = {s["bucket"]: s["width"] for s in run_segments}
    # Drawn to scale: restart (17 s) is 17/33 of productive (33 s), to a pixel.
    assert widths["restart"] == pytest.approx(widths["productive"] * 17 / 33, abs=1)
    (table,) = result["goodputTables"]
    assert table["productive"] == ["33.000 s", "34.000 s", "33.000 s"]
    assert table["restart"] == ["17.000 s", "15.000 s", "17.000 s"]
    assert table["wall"] == ["92.000 s", "92.000 s", "90.000 s"]

    timeline = result["timeline"]
    assert timeline["painted"] > 10_000  # bars drawn, not only a blank canvas laid out
    assert timeline["rows"][:4] == [
        f"rank 0 · {SpanGroup.JOB}",
        f"rank 0 · {SpanGroup.MODEL_INIT}",
        f"rank 0 · {SpanGroup.LOAD_CHECKPOINT}",
        row,
    ]
    assert len(timeline["rows"]) == 14
    assert timeline["note"].startswith("All 32 spans are drawn.")
    step_hover, restart_hover = result["hovers"]
    assert step_hover["hidden"] is False
    assert step_hover["lines"][:3] == ["train.step", row, "duration 10.000 s, from 10.000 s"]
    assert "iteration: 1" in step_hover["lines"]
    assert restart_hover["lines"] == [
        "restart",
        "17.000 s between one process lifetime of rank 1 and the next",
    ]

    steps = result["steps"]
    assert [s["process"] for s in steps["series"]] == ["rank 0", "rank 1"]
    assert [s["points"] for s in steps["series"]] == [4, 4]  # iterations 1-4, as counted
    assert steps["wasted"] == 4  # iterations 3 and 4 of the crashed lifetime, on both ranks
    stragglers = [r["process"] for r in steps["table"] if r["straggler"]]
    assert stragglers == ["rank 0"]  # its step 4 took 10 s against rank 1's 9 s


def test_a_report_of_100000_spans_draws_some_and_says_so(
    browser: Browser, run: Run, tmp_path: Path
) -> None:
    trace = tmp_path / "big.jsonl"
    write_big_trace(trace, 100_000)
    page = tmp_path / "big.html"
    result = run("report", str(trace), "-o", str(page))
    assert result.status == 0, result.err
    assert result.out_lines[-1] == (
        f"wrote {page}: 100000 spans, the 20000 longest drawn as bars; open it in a browser "
        "(it needs no network)"
    )
    (worst,) = [line for line in result.out_lines if line.startswith("stragglers: ")]
    assert "the worst, rank 2 at iteration" in worst
    assert page.stat().st_size < 8_000_000

    seen = open_report(
        browser, page, tmp_path, hovers=[{"row": f"rank 1 · {SpanGroup.JOB}", "t_ms": 1000}]
    )

    assert seen["timeline"]["note"].startswith(
        "Showing the 20,000 longest of 100,000 spans as bars"
    )
    assert seen["timeline"]["painted"] > 10_000
    assert seen["hovers"][0]["lines"][0] == "train.job"
    series = seen["steps"]["series"]
    assert len(series) == 8  # per rank, a bin's mean and its slowest step
    straggler = [r["process"] for r in seen["steps"]["table"] if r["straggler"]]
    assert straggler == ["rank 2"]


@pytest.fixture
def loopback_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An HTTP server on 127.0.0.1 serving a fresh directory: (its URL, the directory)."""
    root = tmp_path / "served"
    root.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", root
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def weight_seconds(text: str) -> float:
    """speedscope's total weight as seconds: ``1:17``, ``9.00s``, ``850.00ms``."""
    if match := re.fullmatch(r"(\d+):(\d\d)", text):
        return int(match[1]) * 60 + int(match[2])
    if match := re.fullmatch(r"([\d.]+)ms", text):
        return float(match[1]) / 1000
    match = re.fullmatch(r"([\d.]+)s", text)
    assert match, text
    return float(match[1])


def test_speedscope_imports_what_convert_writes(
    browser: Browser, run: Run, tmp_path: Path, loopback_server: tuple[str, Path]
) -> None:
    url, served = loopback_server
    (rank0, *_) = crash_and_resume(tmp_path)
    assert run("convert", str(rank0), "-o", str(tmp_path / "out.chrome.json")).status == 0
    # speedscope guesses the format from the name first, and takes "*.chrome.json" for the
    # array form of the trace-event format; convert writes the object form, which its
    # content sniffing recognises under any other name.
    shutil.copy(tmp_path / "out.chrome.json", served / "trace.json")
    (served / "speedscope").symlink_to(TOOLS / "node_modules" / "speedscope" / "dist" / "release")

    screenshot = tmp_path / "speedscope.png"
    seen = browser.run(
        "speedscope.cjs",
        f"{url}/speedscope/index.html#profileURL={url}/trace.json",
        str(screenshot),
    )

    assert seen["errors"] == []
    assert seen["failed"] is False, seen["console"]
    assert seen["title"] == "trace.json - speedscope"
    assert all(request.startswith(url) for request in seen["requests"])
    assert screenshot.read_bytes().startswith(PNG)
    # One profile per row of the conversion, named for its rank and group, weighing what
    # the row's spans add up to in the trace itself.
    totals: dict[str, float] = {}
    for span in spans_in(rank0):
        group = span["attributes"]["lens.group"]
        length = (span["end_time_unix_nano"] - span["start_time_unix_nano"]) / 1e9
        totals[group] = totals.get(group, 0.0) + length
    profiles = {
        re.fullmatch(r"rank 0 \(pid 1\), (\S+) \(tid \d+\)", p["name"])[1]: p["weight"]  # type: ignore[index]
        for p in seen["profiles"]
    }
    assert seen["shown"] == f"(1/{len(totals)})"
    assert seen["profiles"][0]["name"] == f"rank 0 (pid 1), {SpanGroup.JOB} (tid 1)"
    assert set(profiles) == set(totals)
    for group, weight in profiles.items():
        assert weight_seconds(weight) == pytest.approx(totals[group], abs=0.01), group
