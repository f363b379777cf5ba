"""The report page: one HTML file, styles, script, charts and data inline, that fetches nothing
(docs/architecture.md); the data block has ``<`` escaped, so no span name can end it."""

from __future__ import annotations

import functools
import html
import json
import math
import shlex
from collections.abc import Sequence
from importlib import resources
from typing import Any, Final

from nemo.lens.cli._goodput import BUCKETS, rank_label, run_name
from nemo.lens.cli._table import seconds, share

__all__ = ["render_report"]

BUCKET_COLORS: Final = {
    "productive": "#2e7d32",
    "initialization": "#1565c0",
    "checkpoint_save": "#6a1b9a",
    "evaluation": "#00838f",
    "data_loading": "#4e342e",
    "startup": "#283593",
    "recovery": "#ad1457",
    "anomalous_steps": "#f9a825",
    "wasted_progress": "#c62828",
    "restart": "#ef6c00",
    "unaccounted": "#9e9e9e",
}
_RANK_COLORS: Final = (
    *("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"),
    *("#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"),
)
_SLOW_FACTOR: Final = 1.5
"""A step this many times the median of every rank's steps is marked as slow."""
_MAX_MARKS: Final = 400


@functools.cache
def _asset(name: str) -> str:
    """The page's stylesheet or script (``cli/assets``), inlined: the page needs no network."""
    return (resources.files("nemo.lens.cli") / "assets" / name).read_text(encoding="utf-8")


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _duration_ms(ms: float | None) -> str:
    if ms is None:
        return "-"
    if ms == 0:
        return "0"
    if ms >= 1000:
        return f"{ms / 1000:.3f} s"
    if ms >= 1:
        return f"{ms:.2f} ms"
    return f"{ms * 1000:.1f} µs"


# --- goodput ---------------------------------------------------------------------------------


def _buckets_of(entry: dict[str, Any]) -> dict[str, float]:
    return {"productive": entry["productive_s"], **entry["badput"]}


def _goodput_bar(
    label: str, entry: dict[str, Any], y: int, width: int, run_wall: float
) -> list[str]:
    """One stacked bar, its length the entry's wall time on the run's scale."""
    parts = [f'<text class="bar-label" x="0" y="{y + 15}">{_e(label)}</text>']
    x = 150.0
    wall = entry["wall_s"]
    span = (width - 150 - 60) * (wall / run_wall if run_wall > 0 else 1.0)
    for bucket, spent in _buckets_of(entry).items():
        if wall <= 0 or spent <= 0:
            continue
        w = span * spent / wall
        parts.append(
            f'<rect class="segment" data-bucket="{bucket}" x="{x:.2f}" y="{y}" '
            f'width="{w:.2f}" height="20" fill="{BUCKET_COLORS[bucket]}">'
            f"<title>{_e(label)}: {bucket} {seconds(spent)} "
            f"({share(spent, wall)})</title></rect>"
        )
        x += w
    parts.append(
        f'<text class="bar-value" x="{width - 55}" y="{y + 15}">'
        f"{share(entry['productive_s'], wall)}</text>"
    )
    return parts


def _goodput_section(runs: Sequence[dict[str, Any]]) -> str:
    width = 960
    out = ['<section id="goodput"><h2>Goodput</h2>']
    legend = "".join(
        f'<span class="key"><i style="background:{color}"></i>{bucket}</span>'
        for bucket, color in BUCKET_COLORS.items()
    )
    out.append(f'<div class="legend">{legend}</div>')
    for run in runs:
        name = run_name(run["run_id"])
        bars = [("run", run)]
        if len(run["ranks"]) > 1 or run["lifetimes"] > 1:
            bars += [(rank_label(entry["rank"]), entry) for entry in run["ranks"]]
        height = 30 * len(bars) + 6
        bound = ""
        if len(run["ranks"]) > 1:
            bound = f"; {rank_label(run['bounding_rank'])}, the slowest, bounds the run"
        out.append(
            f'<h3 class="run-heading" data-run="{_e(run["run_id"])}">{_e(name)}: goodput '
            f'<span class="goodput-figure">{share(run["productive_s"], run["wall_s"])}'
            f"</span> ({seconds(run['productive_s'])} productive of "
            f"{seconds(run['wall_s'])} wall{bound})</h3>"
        )
        svg = [
            f'<svg class="goodput-chart" data-run="{_e(run["run_id"])}" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
            f'aria-label="goodput breakdown of {_e(name)}">'
        ]
        for index, (label, entry) in enumerate(bars):
            svg += _goodput_bar(label, entry, 4 + 30 * index, width, run["wall_s"])
        svg.append("</svg>")
        out.append("".join(svg))
        head = "".join(f"<th>{_e(label)}</th>" for label, _ in bars)
        rows = []
        for bucket in BUCKETS:
            cells = "".join(
                f"<td>{seconds(_buckets_of(entry)[bucket])}"
                f"<small>{share(_buckets_of(entry)[bucket], entry['wall_s'])}</small></td>"
                for _, entry in bars
            )
            swatch = f'<i class="swatch" style="background:{BUCKET_COLORS[bucket]}"></i>'
            rows.append(f'<tr data-bucket="{bucket}"><th>{swatch}{bucket}</th>{cells}</tr>')
        wall = "".join(f"<td>{seconds(entry['wall_s'])}</td>" for _, entry in bars)
        rows.append(f'<tr data-bucket="wall" class="total"><th>wall</th>{wall}</tr>')
        out.append(
            f'<table class="figures goodput-table" data-run="{_e(run["run_id"])}">'
            f"<thead><tr><th></th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        )
    out.append("</section>")
    return "".join(out)


# --- step durations --------------------------------------------------------------------------


def _nice_step(span: float, ticks: int = 6) -> float:
    raw = span / max(1, ticks)
    if raw <= 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if raw <= factor * magnitude:
            return float(factor * magnitude)
    return float(10 * magnitude)


def _steps_section(steps: dict[str, Any]) -> str:
    ranks = steps["ranks"]
    out = ['<section id="steps"><h2>Step duration</h2>']
    if not ranks:
        out.append(
            '<p class="note">No step spans in this trace: record the step group '
            "(NEMO_LENS_SPAN_GROUPS=per_step) to see step durations.</p></section>"
        )
        return "".join(out)
    xs: list[float] = []
    ys: list[float] = []
    for entry in ranks:
        if entry["points"] is not None:
            xs += [p[0] for p in entry["points"]]
            ys += [p[1] for p in entry["points"]]
        else:
            xs += [b[0] for b in entry["bins"]] + [b[1] for b in entry["bins"]]
            ys += [b[3] for b in entry["bins"]]
    counted = sorted(
        p[1] for entry in ranks if entry["points"] is not None for p in entry["points"] if not p[2]
    )
    median = counted[len(counted) // 2] if counted else None
    width, height = 960, 320
    left, right, top, bottom = 70, 20, 14, 40
    x0, x1 = min(xs), max(xs)
    if x1 == x0:
        x1 = x0 + 1
    y1 = max(ys) * 1.05 or 1.0

    def px(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * (width - left - right)

    def py(y: float) -> float:
        return top + (1 - y / y1) * (height - top - bottom)

    svg = [
        f'<svg id="steps-chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="step duration over '
        f'{steps["x"]}s, per rank">'
    ]
    y_step = _nice_step(y1)
    tick = 0.0
    while tick <= y1:
        y = py(tick)
        svg.append(
            f'<line class="grid" x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="tick" x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{_e(_duration_ms(tick))}</text>"
        )
        tick += y_step
    x_step = max(1.0, _nice_step(x1 - x0))
    tick = math.ceil(x0 / x_step) * x_step
    while tick <= x1:
        x = px(tick)
        svg.append(
            f'<text class="tick" x="{x:.1f}" y="{height - bottom + 16}" text-anchor="middle">'
            f"{tick:g}</text>"
        )
        tick += x_step
    svg.append(
        f'<text class="axis-label" x="{(left + width - right) / 2}" y="{height - 6}" '
        f'text-anchor="middle">{steps["x"]}</text>'
    )
    marks = 0
    for index, entry in enumerate(ranks):
        color = _RANK_COLORS[index % len(_RANK_COLORS)]
        label = _e(entry["process"])
        if entry["points"] is not None:
            kept = [p for p in entry["points"] if not p[2]]
            line = " ".join(f"{px(p[0]):.1f},{py(p[1]):.1f}" for p in kept)
            svg.append(
                f'<polyline class="series" data-process="{label}" points="{line}" '
                f'stroke="{color}"><title>{label}</title></polyline>'
            )
            for x, ms, wasted in entry["points"]:
                slow = median is not None and not wasted and ms > _SLOW_FACTOR * median
                if (wasted or slow) and marks < _MAX_MARKS:
                    marks += 1
                    kind = "wasted" if wasted else "slow"
                    svg.append(
                        f'<circle class="mark {kind}" data-process="{label}" cx="{px(x):.1f}" '
                        f'cy="{py(ms):.1f}" r="4" stroke="{color}"><title>{label}, '
                        f"{steps['x']} {x:g}: {_duration_ms(ms)}"
                        f"{' (executed again later: wasted)' if wasted else ' (slow)'}"
                        "</title></circle>"
                    )
        else:
            mean = " ".join(f"{px((b[0] + b[1]) / 2):.1f},{py(b[2]):.1f}" for b in entry["bins"])
            peak = " ".join(f"{px((b[0] + b[1]) / 2):.1f},{py(b[3]):.1f}" for b in entry["bins"])
            svg.append(
                f'<polyline class="series" data-process="{label}" points="{mean}" '
                f'stroke="{color}"><title>{label}: mean of {entry["bin_size"]} steps'
                "</title></polyline>"
                f'<polyline class="series peak" data-process="{label}" points="{peak}" '
                f'stroke="{color}"><title>{label}: slowest of {entry["bin_size"]} steps'
                "</title></polyline>"
            )
    svg.append("</svg>")
    legend = "".join(
        f'<span class="key"><i style="background:{_RANK_COLORS[i % len(_RANK_COLORS)]}"></i>'
        f"{_e(entry['process'])}</span>"
        for i, entry in enumerate(ranks)
    )
    out.append(f'<div class="legend">{legend}</div>')
    out.append("".join(svg))
    notes = []
    if any(entry["bins"] is not None for entry in ranks):
        size = max(entry.get("bin_size", 1) for entry in ranks if entry["bins"] is not None)
        notes.append(
            f"Long series are reduced to bins of {size} consecutive steps: the solid line is "
            "each bin's mean, the faint one its slowest step."
        )
    if median is not None:
        notes.append(
            f"Circles mark steps over {_SLOW_FACTOR:g} times the median step "
            f"({_duration_ms(median)}) and, hollow, executions whose iteration ran again "
            "after a restart (wasted)."
        )
    if notes:
        out.append(f'<p class="note">{_e(" ".join(notes))}</p>')
    several = len(ranks) > 1
    head = "<th>rank</th><th>steps</th><th>wasted</th><th>median</th><th>p90</th><th>max</th>"
    if several:
        head += "<th>slowest at</th>"
    worst = max((entry["slowest"] or 0 for entry in ranks), default=0)
    body = []
    for entry in ranks:
        straggler = several and worst > 0 and entry["slowest"] == worst
        cells = (
            f"<td>{_e(entry['process'])}</td><td>{entry['count']}</td><td>{entry['wasted']}</td>"
            f"<td>{_duration_ms(entry['median_ms'])}</td><td>{_duration_ms(entry['p90_ms'])}</td>"
            f"<td>{_duration_ms(entry['max_ms'])}</td>"
        )
        if several:
            cells += f"<td>{entry['slowest']} {steps['x']}s</td>"
        css = ' class="straggler"' if straggler else ""
        body.append(f'<tr data-process="{_e(entry["process"])}"{css}>{cells}</tr>')
    out.append(
        f'<table class="figures" id="steps-table"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )
    if several and worst > 0:
        out.append(
            '<p class="note">“slowest at”: at how many '
            f"{steps['x']}s this rank's step took longest; the most often slowest rank, "
            "the straggler, is highlighted.</p>"
        )
    out.append("</section>")
    return "".join(out)


def _stragglers_section(stragglers: dict[str, Any]) -> str:
    """The iterations with the largest lag of the slowest rank over the median rank."""
    if not stragglers["iterations"]:
        return ""  # no iteration that two ranks executed
    out = ['<section id="stragglers"><h2>Stragglers</h2>']
    rows, lagging = stragglers["rows"], stragglers["lagging"]
    if not rows:
        out.append(
            f'<p class="note">At none of the {stragglers["iterations"]:,} iterations that '
            "two ranks or more executed was the slowest rank slower than the median rank.</p>"
        )
        return "".join(out) + "</section>"
    shown = (
        f"All {lagging:,} iterations"
        if len(rows) == lagging
        else f"The {len(rows):,} (the table's most) of {lagging:,} iterations with the largest lag"
    )
    out.append(
        f'<p class="note">{shown} at which the slowest rank was slower than the median rank, '
        f"of {stragglers['iterations']:,} that two ranks or more executed; the worst first. "
        "Each rank's counted execution of the iteration (not a wasted one); a tie for the "
        "slowest goes to the lowest rank. The figures are the straggler query's "
        "(<code>nemo-lens sql</code>, docs/sql.md).</p>"
    )
    head = (
        "<th>iteration</th><th>slowest rank</th><th>its step</th><th>median rank's</th>"
        "<th>lag</th><th>ranks</th>"
    )
    body = [
        f'<tr data-iteration="{row["iteration"]}" data-process="{_e(row["process"])}" '
        f'data-lag-ns="{row["lag_ns"]}"><td>{row["iteration"]}</td><td>{_e(row["process"])}</td>'
        f"<td>{_duration_ms(row['slowest_ns'] / 1e6)}</td>"
        f"<td>{_duration_ms(row['median_ns'] / 1e6)}</td>"
        f"<td>{_duration_ms(row['lag_ns'] / 1e6)}</td><td>{row['ranks']}</td></tr>"
        for row in rows
    ]
    out.append(
        f'<table class="figures" id="stragglers-table"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></section>"
    )
    return "".join(out)


def _arrivals_section(arrivals: dict[str, Any]) -> str:
    """The ranks that arrived last at a sync point: who the others waited for."""
    if not arrivals["compared"]:
        return ""  # no sync-point span that two ranks reached
    out = ['<section id="arrivals"><h2>Late arrivals</h2>']
    rows = arrivals["rows"]
    if not rows:
        out.append(
            '<p class="note">No rank arrived after the median rank at any synchronisation '
            "point (the groups the schema marks sync = true).</p></section>"
        )
        return "".join(out)
    shown = "" if len(rows) == arrivals["late"] else f" (the {len(rows)} worst)"
    out.append(
        f'<p class="note">{arrivals["late"]:,} of {arrivals["compared"]:,} ranks and sync '
        f"groups had a rank last at some iteration{shown}, the worst score first. Lateness: a "
        "rank's first start in the group and iteration against the median rank's; a rank whose "
        "steps last as long as everyone's still shows here. Persistent: last at most "
        "iterations; rotating: at some. The figures are <code>nemo-lens stragglers</code>' "
        "(docs/stragglers.md).</p>"
    )
    head = (
        "<th>group</th><th>rank</th><th>node</th><th>times last</th><th>median lateness</th>"
        "<th>score</th><th>pattern</th>"
    )
    body = [
        f'<tr data-group="{_e(row["span_group"])}" data-process="{_e(row["process"])}" '
        f'data-times-last="{row["times_last"]}"><td>{_e(row["span_group"])}</td>'
        f"<td>{_e(row['process'])}</td><td>{_e(row['node'] or '-')}</td>"
        f"<td>{row['times_last']} of {row['iterations']}</td>"
        f"<td>{'-' if row['median_lateness_ns'] < 0 else ''}"
        f"{_duration_ms(abs(row['median_lateness_ns']) / 1e6)}</td>"
        f"<td>{row['score']:.3f}</td><td>{_e(row['pattern'])}</td></tr>"
        for row in rows
    ]
    out.append(
        f'<table class="figures" id="arrivals-table"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></section>"
    )
    return "".join(out)


# --- the page --------------------------------------------------------------------------------


def _timeline_section(data: dict[str, Any]) -> str:
    total, drawn = data["span_count"], data["drawn_count"]
    if drawn < total:
        note = (
            f"Showing the {drawn:,} longest of {total:,} spans as bars (a browser cannot "
            "draw them all); the shading behind the bars is every span of the row: how much "
            "of each slice of time it covers."
        )
    else:
        note = f"All {total:,} spans are drawn."
    if data["rows_total"] > len(data["rows"]):
        note += (
            f" The first {len(data['rows']):,} of {data['rows_total']:,} rows (ranks in order) "
            "are shown."
        )
    note += " Hover a bar for its details; scroll to zoom, drag to pan, double-click to reset."
    return (
        '<section id="timeline"><h2>Timeline</h2>'
        f'<p class="note" id="timeline-note">{_e(note)}</p>'
        f'<p class="note" id="timeline-perfetto">{_perfetto_note(data["sources"])}</p>'
        '<div id="timeline-view"><div id="timeline-labels"></div>'
        '<canvas id="timeline-canvas"></canvas></div>'
        '<div id="tooltip" role="tooltip" hidden></div></section>'
    )


def _perfetto_note(sources: Sequence[str]) -> str:
    """How to see every span in Perfetto UI: the page cannot hand it a file (it fetches
    nothing, and the UI opens only files chosen in it), so it says what to run and open."""
    named = [source for source in sources if source != "-"]
    if named and len(named) == len(sources):
        first = named[0]
        output = (first[: -len(".jsonl")] if first.endswith(".jsonl") else first) + ".pftrace"
        command = "nemo-lens convert --to perfetto " + " ".join(map(shlex.quote, named))
    else:  # standard input: the reader must name the file it writes
        output = "trace.pftrace"
        command = "nemo-lens convert --to perfetto TRACE... -o trace.pftrace"
    return (
        "Every span, with its attributes, in Perfetto: run <code>"
        + _e(command)
        + "</code>, then open ui.perfetto.dev in a browser and choose 'Open trace file' with <code>"
        + _e(output)
        + "</code> (the UI reads it in the browser; nothing is uploaded)."
    )


def _embed(data: dict[str, Any]) -> str:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    # Inside <script>, "</script" or "<!--" would end or confuse the block.
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def render_report(data: dict[str, Any]) -> str:
    """The whole page for ``data`` (:meth:`nemo.lens.cli._report.ReportBuilder.data`)."""
    sources = ", ".join(data["sources"])
    meta = (
        f"{data['span_count']:,} spans from {data['processes']} "
        f"process{'es' if data['processes'] != 1 else ''}, "
        f"{seconds(data['wall_ms'] / 1000)} from the first span's start to the last span's end"
    )
    return "".join(
        [
            "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>",
            "<meta name='viewport' content='width=device-width, initial-scale=1'>",
            f"<title>{_e(data['title'])}</title><style>{_asset('report.css')}</style></head><body>",
            f"<header><h1>{_e(data['title'])}</h1><p class='meta' id='meta'>{_e(meta)}</p>",
            f"<p class='meta'>from {_e(sources)}; written by {_e(data['generator'])}</p></header>",
            _goodput_section(data["goodput"]),
            _timeline_section(data),
            _steps_section(data["steps"]),
            _stragglers_section(data["stragglers"]),
            _arrivals_section(data["arrivals"]),
            "<script type='application/json' id='report-data'>",
            _embed(
                {
                    key: data[key]
                    for key in (
                        "wall_ms",
                        "rows",
                        "names",
                        "spans",
                        "attributes",
                        "coverage",
                        "restarts",
                        "coverage_bins",
                    )
                }
                | {"colors": BUCKET_COLORS}
            ),
            "</script>",
            f"<script>{_asset('report.js')}</script></body></html>\n",
        ]
    )
