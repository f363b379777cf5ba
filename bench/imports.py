"""Import cost: each form timed in a fresh interpreter, interleaved with the baseline.

Every run is a new ``python -I -c`` process that times one import statement
from inside, so interpreter start-up (the same for every form) stays out of
the figure while everything the statement pulls in is counted. Rounds run
every form once, in a rotating order, and each form's cost is reported as the
median over rounds of its difference from the baseline in the same round: a
neighbour's burst of load then hits a whole round rather than one form. Two
rounds are discarded first so that every form meets a warm page cache and
up-to-date ``.pyc`` files, as a job importing an installed package does.

Both the wall-clock time and the CPU time of the import are recorded. With
the files in the page cache an import is pure computation, so on an idle
machine the two agree; on a busy one the wall clock also counts the time other
processes held the CPU, and the CPU time is the figure that stays put. The
target is judged on CPU time; the wall-clock figures are reported next to it.

``nemo.lens`` re-exports lazily (PEP 562), so the bare ``import nemo.lens``
loads almost nothing; the target applies to what an instrumented module
imports, ``from nemo.lens import managed_span, SpanGroup``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from bench.harness import Spread, spread

__all__ = ["FORMS", "ImportForm", "ImportResult", "run_imports"]

_CHILD: Final = """\
import sys, time
before = set(sys.modules)
cpu = time.process_time_ns()
wall = time.perf_counter_ns()
{statement}
wall = time.perf_counter_ns() - wall
cpu = time.process_time_ns() - cpu
added = set(sys.modules) - before
print(wall, cpu, len(added), int(any(m.startswith("opentelemetry.sdk") for m in added)))
"""


@dataclass(frozen=True)
class ImportForm:
    """One import statement to time."""

    key: str
    statement: str
    note: str


FORMS: Final = (
    ImportForm("baseline", "import opentelemetry.trace", "baseline"),
    ImportForm("bare", "import nemo.lens", "lazy package only"),
    ImportForm(
        "instrumented_module",
        "from nemo.lens import managed_span, SpanGroup",
        "what an instrumented module imports (target)",
    ),
    ImportForm(
        "job_entry_point",
        "from nemo.lens import NemoLensConfig, setup_telemetry",
        "what a job's set-up imports (SDK still not loaded)",
    ),
)


@dataclass(frozen=True)
class ImportResult:
    """The timings of one form."""

    form: ImportForm
    ms: Spread
    """CPU milliseconds the import took."""
    delta_ms: Spread
    """CPU milliseconds more than the baseline in the same round."""
    wall_ms: Spread
    """Wall-clock milliseconds the import took."""
    wall_delta_ms: Spread
    """Wall-clock milliseconds more than the baseline in the same round."""
    modules: int
    """Modules the statement added to ``sys.modules``."""
    imports_sdk: bool

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "key": self.form.key,
            "statement": self.form.statement,
            "note": self.form.note,
            "ms": self.ms.as_dict(),
            "delta_ms": self.delta_ms.as_dict(),
            "wall_ms": self.wall_ms.as_dict(),
            "wall_delta_ms": self.wall_delta_ms.as_dict(),
            "modules": self.modules,
            "imports_sdk": self.imports_sdk,
        }


def _time_once(statement: str) -> tuple[float, float, int, bool]:
    # -I: no user site-packages, no PYTHON* variables, no current directory on
    # sys.path, so only the installed package can answer the import.
    completed = subprocess.run(
        [sys.executable, "-I", "-c", _CHILD.format(statement=statement)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"{statement!r} failed in a fresh interpreter:\n{completed.stderr}")
    wall, cpu, added, sdk = completed.stdout.split()
    return int(wall) / 1e6, int(cpu) / 1e6, int(added), sdk == "1"


def run_imports(rounds: int, progress: Callable[[str], None]) -> list[ImportResult]:
    """Time every form ``rounds`` times (after two discarded warm-up rounds)."""
    times: dict[str, list[float]] = {form.key: [] for form in FORMS}
    walls: dict[str, list[float]] = {form.key: [] for form in FORMS}
    modules: dict[str, int] = {}
    sdk: dict[str, bool] = {}
    warmup = 2
    progress(f"imports: {warmup} + {rounds} rounds of {len(FORMS)} fresh interpreters")
    for index in range(warmup + rounds):
        shift = index % len(FORMS)
        for form in FORMS[shift:] + FORMS[:shift]:
            wall, cpu, added, imports_sdk = _time_once(form.statement)
            if index >= warmup:
                times[form.key].append(cpu)
                walls[form.key].append(wall)
                modules[form.key] = added
                sdk[form.key] = imports_sdk

    def deltas(samples: dict[str, list[float]], key: str) -> Spread:
        pairs = zip(samples[key], samples["baseline"], strict=True)
        return spread([t - b for t, b in pairs])

    return [
        ImportResult(
            form=form,
            ms=spread(times[form.key]),
            delta_ms=deltas(times, form.key),
            wall_ms=spread(walls[form.key]),
            wall_delta_ms=deltas(walls, form.key),
            modules=modules[form.key],
            imports_sdk=sdk[form.key],
        )
        for form in FORMS
    ]


if __name__ == "__main__":  # pragma: no cover - a manual look at one round
    print(json.dumps([r.as_dict() for r in run_imports(3, print)], indent=2))
