"""What importing nemo.lens costs: no OpenTelemetry SDK, and fallbacks with no OpenTelemetry."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap


def _run(code: str) -> dict[str, object]:
    """Run ``code`` in a fresh interpreter; it prints one JSON object as its last line."""
    completed = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    result: dict[str, object] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def test_importing_the_runtime_does_not_import_the_sdk() -> None:
    result = _run(
        """
        import json, sys
        import nemo.lens
        import nemo.lens.fallbacks
        import nemo.lens.helpers
        import nemo.lens.state
        from nemo.lens.helpers import managed_span
        from nemo.lens.state import set_enabled_span_groups

        # Using the primitives before set-up must not pull the SDK in either.
        set_enabled_span_groups(["step"])
        with managed_span("step", "x") as span:
            pass
        print(json.dumps({
            "api": "opentelemetry.trace" in sys.modules,
            "sdk": sorted(m for m in sys.modules if m.startswith("opentelemetry.sdk")),
            "recording": span.is_recording(),
        }))
        """
    )

    # The first assertion proves the probe can see OpenTelemetry modules at all.
    assert result["api"] is True
    assert result["sdk"] == []
    assert result["recording"] is False


def test_the_fallbacks_work_where_opentelemetry_cannot_be_imported() -> None:
    result = _run(
        """
        import importlib.abc, json, sys

        class NoOpenTelemetry(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "opentelemetry" or name.startswith("opentelemetry."):
                    raise ImportError(f"blocked: {name}")
                return None

        sys.meta_path.insert(0, NoOpenTelemetry())
        try:
            import opentelemetry.trace
        except ImportError:
            blocked = True
        else:
            blocked = False

        from nemo.lens.fallbacks import (
            is_span_group_enabled, managed_span, redact_value, safe_set_span_attributes,
            span_cm, trace_fn,
        )

        @trace_fn("step", "double")
        def double(x):
            return 2 * x

        with managed_span("step", "outer", iteration=1) as outer:
            with span_cm("inner", prompt="p") as inner:
                safe_set_span_attributes(inner, {"a": 1})
                value = double(21)

        print(json.dumps({
            "blocked": blocked,
            "spans": [outer, inner],
            "value": value,
            "enabled": is_span_group_enabled("step"),
            "redacted": redact_value("prompt", "secret"),
            "otel": sorted(m for m in sys.modules if m.startswith("opentelemetry")),
        }))
        """
    )

    assert result["blocked"] is True
    assert result["spans"] == [None, None]
    assert result["value"] == 42
    assert result["enabled"] is False
    assert result["redacted"] == "[REDACTED]"
    assert result["otel"] == []


def _modules_after(statement: str) -> set[str]:
    found = _run(f"import json, sys\n{statement}\nprint(json.dumps({{'m': sorted(sys.modules)}}))")
    modules = found["m"]
    assert isinstance(modules, list)
    return set(modules)


def test_an_instrumented_module_imports_nothing_the_api_does_not() -> None:
    # The import cost target is judged against `import opentelemetry.trace`: whatever
    # else the primitives' import pulls in (difflib, for an error message's "did you
    # mean", once did) every instrumented module of every job pays for.
    baseline = _modules_after("import opentelemetry.trace")
    instrumented = _modules_after("from nemo.lens import managed_span, SpanGroup")

    extra = instrumented - baseline
    assert "nemo.lens.groups" in extra  # the probe sees what it should
    ours = {"nemo", "nemo.lens"}
    assert sorted(m for m in extra if m not in ours and not m.startswith("nemo.lens.")) == []
