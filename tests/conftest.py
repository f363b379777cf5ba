"""Shared fixtures: every test starts and ends with nemo.lens's global state reset."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from nemo.lens import testing


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
