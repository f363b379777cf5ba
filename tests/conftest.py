"""Shared fixtures: every test starts and ends with nemo.lens's global state reset."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from nemo.lens import testing

# The jobs, demos and type checkers the tests start often run in another directory,
# where a relative PYTHONPATH entry (PYTHONPATH=src) points nowhere: they would import
# another copy of nemo.lens than the one under test, or none. Make each entry absolute.
if os.environ.get("PYTHONPATH"):
    os.environ["PYTHONPATH"] = os.pathsep.join(
        os.path.abspath(entry) if entry else entry
        for entry in os.environ["PYTHONPATH"].split(os.pathsep)
    )


@pytest.fixture(autouse=True)
def _reset_nemo_lens() -> Iterator[None]:
    testing.reset()
    yield
    testing.reset()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Capture nemo.lens spans in memory with every base span group enabled."""
    with testing.capture_spans("all") as exporter:
        yield exporter
