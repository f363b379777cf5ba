"""Plain-text tables for the terminal, from the JSON-ready results."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench.targets import TARGETS

__all__ = ["format_report", "table"]


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[int] = ()) -> str:
    """Align ``rows`` under ``headers``; columns listed in ``right`` are right-aligned."""
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            cell.rjust(w) if i in right else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), rule, *(line(row) for row in rows)])


def _ns(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def _micro(results: Sequence[Mapping[str, Any]]) -> str:
    limits = {t.key: t for t in TARGETS}
    rows = []
    for r in results:
        ratio = r["ratio"]
        target = limits.get(r["key"])
        verdict = "info" if target is None else ("ok" if target.met(ratio["median"]) else "MISS")
        rows.append(
            [
                r["title"],
                r["baseline_title"],
                f"{ratio['median']:.3f}x",
                f"{ratio['iqr_pct']:.1f}%",
                f"{ratio['ci_low']:.3f}-{ratio['ci_high']:.3f}",
                target.describe_limit() if target else "-",
                _ns(r["candidate_ns"]["median"]),
                _ns(r["baseline_ns"]["median"]),
                verdict,
            ]
        )
    headers = ["case", "baseline (same run)", "ratio", "IQR", "95% CI", "target"]
    headers += ["ns/op", "base ns/op", ""]
    return table(headers, rows, right=(2, 3, 6, 7))


def _imports(results: Sequence[Mapping[str, Any]]) -> str:
    rows = [
        [
            r["statement"],
            f"{r['ms']['median']:.1f}",
            f"{r['ms']['p25']:.1f}-{r['ms']['p75']:.1f}",
            "-" if r["key"] == "baseline" else f"{r['delta_ms']['median']:+.1f}",
            f"{r['wall_ms']['median']:.1f}",
            "-" if r["key"] == "baseline" else f"{r['wall_delta_ms']['median']:+.1f}",
            str(r["modules"]),
            "yes" if r["imports_sdk"] else "no",
            r["note"],
        ]
        for r in results
    ]
    headers = ["import (fresh interpreter)", "CPU ms", "IQR", "vs baseline", "wall ms"]
    headers += ["vs baseline", "modules", "SDK", ""]
    return table(headers, rows, right=(1, 2, 3, 4, 5, 6))


def _memory(results: Mapping[str, Mapping[str, int]]) -> str:
    rows = [
        [label, f"{r['calls']:,}", f"{r['growth_bytes']:,}", f"{r['transient_bytes']:,}"]
        for label, r in results.items()
    ]
    headers = ["statement (nothing set up)", "calls", "growth B", "peak over start B"]
    return table(headers, rows, right=(1, 2, 3))


def _throughput(runs: Mapping[str, Mapping[str, Any]]) -> str:
    rows = []
    queued = runs.get("queued")
    for name, r in runs.items():
        if name == "queued":
            continue
        rate = (
            f"{r['achieved_rate']:,.0f}/{r['target_rate']:,}/s"
            if "achieved_rate" in r
            else "as fast as possible"
        )
        tries = r.get("attempt_rates", [])
        if len(tries) > 1:
            rate += f" (try {len(tries)}: {', '.join(f'{t:,}' for t in tries)})"
        bursts = r.get("burst_rates", [])
        if len(bursts) > 1:
            rate += f" (the median of {len(bursts)}: {', '.join(f'{b:,}/s' for b in bursts)})"
        rows.append(
            [
                name,
                f"{r['emitted']:,}",
                rate,
                f"{r['spans_per_s']:,.0f}",
                f"{r['spans_per_cpu_s']:,.0f}",
                f"{r['emitter_cpu_us_per_span']:.1f}+{r['export_cpu_us_per_span']:.1f}",
                f"{r['bytes_per_span']:.0f}",
                f"{r['rss_before_mib']:.0f}->{r['rss_peak_mib']:.0f}",
                f"{r['dropped']:,} ({r['dropped_logged']:,})",
            ]
        )
    headers = ["file exporter", "spans", "emitted at", "spans/s", "spans/CPU-s"]
    headers += ["CPU us/span emit+export", "B/span", "RSS MiB", "dropped (logged)"]
    text = table(headers, rows, right=(1, 3, 4, 5, 6, 7))
    burst, baseline = runs.get("burst"), runs.get("burst_sdk_spans")
    if burst and baseline and baseline["spans_per_s"]:
        text += (
            f"\nburst: {burst['spans_per_s'] / baseline['spans_per_s']:.2f}x the spans/s of the "
            "same burst of SDK spans (burst_sdk_spans)"
        )
    if queued:
        text += (
            f"\nmemory per queued span: {queued['bytes_per_queued_span']:,.0f} B "
            f"({queued['emitted']:,} spans queued, export stalled)"
        )
    return text


def _cli(results: Mapping[str, Any]) -> str:
    rows = [
        [
            f"nemo-lens {command}",
            f"{results['spans']:,}",
            f"{r['seconds']:.1f}",
            f"{r['spans_per_s']:,.0f}",
            f"{r['rss_peak_mib']:.0f}",
        ]
        for command, r in results["commands"].items()
    ]
    title = f"reading a trace back ({results['trace_mib']:.0f} MiB of JSON lines, 4 ranks):\n"
    return title + table(["command", "spans", "s", "spans/s", "peak RSS MiB"], rows, (1, 2, 3, 4))


def format_report(results: Mapping[str, Any]) -> str:
    """Every section present in ``results``, as text tables (the targets: :mod:`bench.check`)."""
    meta = results["meta"]
    parts = [
        f"nemo.lens benchmarks ({'quick' if meta['quick'] else 'full'}) - "
        f"Python {meta['python']}, OpenTelemetry SDK {meta['opentelemetry_sdk']}, "
        f"{meta['cpu_count']} CPUs, load average {meta['load_average_start']} -> "
        f"{meta['load_average_end']}, {meta['duration_s']:.0f} s"
    ]
    start, end = meta["load_average_start"], meta["load_average_end"]
    if start and end and max(start[0], end[0]) > meta["cpu_count"]:
        parts.append(
            "note: the load average exceeded the CPU count: other processes competed for the "
            "CPUs. Ratios stay meaningful (each pair shares the conditions); absolute times, "
            "import wall times and the sustained rate do not."
        )
    if results.get("micro"):
        parts.append(
            "Per call: ratio = median over interleaved pairs of candidate/baseline CPU time; "
            "IQR of the pair ratios as % of the median; 95% CI of the median.\n"
            + _micro(results["micro"])
        )
    if results.get("imports"):
        parts.append(_imports(results["imports"]))
    if results.get("memory"):
        parts.append("tracemalloc, disabled paths:\n" + _memory(results["memory"]))
    if results.get("throughput"):
        parts.append(_throughput(results["throughput"]))
    if results.get("cli"):
        parts.append(_cli(results["cli"]))
    return "\n\n".join(parts)
