"""``python -m bench.check [results.json]``: judge a results file against the targets.

Exit status 0 when every target of :data:`bench.targets.TARGETS` is met, 1
when one is missed or was not measured, 2 when there is no results file. The
targets come from :mod:`bench.targets`, not from the file, so an old results
file is judged by today's targets. For use by hand (``make bench-check``):
timings on a shared machine are not a CI gate.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from bench.report import table
from bench.targets import TARGETS

__all__ = ["check", "main"]

_DEFAULT = Path(__file__).resolve().parent / "results" / "latest.json"


def check(measurements: dict[str, float], *, partial: bool = False) -> tuple[str, bool]:
    """A table of every target against ``measurements``, and whether all were met.

    A target with no measurement is a miss, unless ``partial`` (a run of some
    sections only), where it is shown as not run and not held against the run.
    """
    rows = []
    hints = []
    all_met = True
    for target in TARGETS:
        value = measurements.get(target.key)
        if value is None:
            verdict = "-" if partial else "MISS"
            rows.append([target.description, "not measured", target.describe_limit(), verdict])
            all_met = all_met and partial
            continue
        met = target.met(value)
        all_met = all_met and met
        if not met and target.hint:
            hints.append(f"{target.key}: {target.hint}")
        shown = f"{value:.3f}x" if target.unit == "x" else f"{value:,.2f} {target.unit}"
        rows.append([target.description, shown, target.describe_limit(), "ok" if met else "MISS"])
    text = table(["target", "measured", "limit", ""], rows, right=(1,))
    return "\n".join([text, *hints]), all_met


def main(argv: Sequence[str] | None = None) -> int:
    """Print the verdicts; return the exit status."""
    parser = argparse.ArgumentParser(prog="python -m bench.check", description=__doc__)
    parser.add_argument("results", nargs="?", type=Path, default=_DEFAULT)
    args = parser.parse_args(argv)
    try:
        results = json.loads(args.results.read_text(encoding="utf-8"))
    except FileNotFoundError:
        print(f"no results at {args.results}; run `make bench` first", file=sys.stderr)
        return 2
    text, all_met = check(results.get("measurements", {}))
    meta = results.get("meta", {})
    print(
        f"results of {meta.get('started', '?')} "
        f"({'quick' if meta.get('quick') else 'full'} run, load average "
        f"{meta.get('load_average_start')} -> {meta.get('load_average_end')})"
    )
    print(text)
    print("\nall targets met" if all_met else "\nsome targets missed", file=sys.stderr)
    return 0 if all_met else 1


if __name__ == "__main__":
    sys.exit(main())
