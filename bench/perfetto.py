"""``convert --to perfetto`` against ``convert`` (Chrome JSON) over one trace, in one run.

Runs in its own interpreter (``python -m bench.perfetto --spans N [--ten-million]``). It
writes :mod:`bench.cli`'s trace (a training job's shape, format 2), then converts it both ways,
alternately, each in a fresh interpreter timed from start to exit with its peak RSS; prints
bytes per span, seconds and peak MiB of each and Perfetto's ratios to Chrome's, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from bench.cli import TEN_MILLION, _compile_package, _lens, _median

__all__ = ["main", "run"]

_RANKS: Final = 4
_FORMATS: Final = {"chrome": ".chrome.json", "perfetto": ".pftrace"}


def run(spans: int, repeats: int) -> dict[str, Any]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.cli.big_traces import write_big_trace

    _compile_package()
    with tempfile.TemporaryDirectory(prefix="nemo-lens-bench-perfetto-") as scratch:
        directory = Path(scratch)
        trace = directory / "trace.jsonl"
        written = write_big_trace(trace, spans, ranks=_RANKS)
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in _FORMATS}
        sizes: dict[str, int] = {}
        for _ in range(repeats):  # alternately, so that a slow moment hits both
            for name, suffix in _FORMATS.items():
                out = directory / f"out{suffix}"
                runs[name].append(_lens("convert", str(trace), "--to", name, "-o", str(out)))
                sizes[name] = out.stat().st_size
                out.unlink()  # two outputs of ten million spans would fill a small disk
    results: dict[str, Any] = {"spans": written.spans, "formats": {}}
    for name, measured in runs.items():
        figures = _median(measured)
        figures["bytes_per_span"] = sizes[name] / written.spans
        figures["spans_per_s"] = written.spans / figures["seconds"]
        results["formats"][name] = figures
    chrome, perfetto = results["formats"]["chrome"], results["formats"]["perfetto"]
    results["ratios"] = {
        key: perfetto[key] / chrome[key] for key in ("bytes_per_span", "seconds", "rss_peak_mib")
    }
    return results


def describe(results: dict[str, Any]) -> str:
    lines = [f"{results['spans']:,} spans"]
    lines.append(f"{'format':<10}{'bytes/span':>12}{'s':>9}{'spans/s':>12}{'RSS MiB':>9}")
    for name, f in results["formats"].items():
        lines.append(
            f"{name:<10}{f['bytes_per_span']:12.1f}{f['seconds']:9.1f}"
            f"{f['spans_per_s']:12,.0f}{f['rss_peak_mib']:9.0f}"
        )
    ratios = results["ratios"]
    lines.append(
        f"perfetto / chrome: bytes {ratios['bytes_per_span']:.2f}, time "
        f"{ratios['seconds']:.2f}, peak memory {ratios['rss_peak_mib']:.2f}"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.perfetto")
    parser.add_argument("--spans", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--ten-million",
        action="store_true",
        help="also measure 10,000,000 spans, once each (about 4 GB of JSON lines; minutes)",
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    results = run(args.spans, args.repeats)
    print(describe(results), file=sys.stderr)
    if args.ten_million:
        results["ten_million"] = run(TEN_MILLION, 1)
        print(describe(results["ten_million"]), file=sys.stderr)
    results["bench_s"] = time.perf_counter() - started
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
