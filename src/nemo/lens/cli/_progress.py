"""Progress bars for long reads and conversions: tqdm on standard error, only when it is a
terminal and only after :data:`DELAY_SECONDS`; without tqdm every bar is a no-op."""

from __future__ import annotations

import importlib
import sys
from typing import Any, TextIO

__all__ = ["DELAY_SECONDS", "Progress", "progress"]

DELAY_SECONDS: float = 0.5
"""How long work runs before its bar first draws (quick work shows nothing)."""


def _tqdm_class() -> Any | None:
    # Imported on first use (`nemo-lens groups` never pays for it); tqdm ships no types.
    try:
        return importlib.import_module("tqdm").tqdm
    except ImportError:
        return None


class Progress:
    """One bar, a no-op when off; a context manager, so the bar is cleared even on failure."""

    def __init__(self, bar: Any | None) -> None:
        self._bar = bar

    @property
    def enabled(self) -> bool:
        return self._bar is not None

    def update(self, amount: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(amount)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def progress(
    description: str,
    *,
    total: int | None = None,
    unit: str = "it",
    unit_scale: bool = False,
    stream: TextIO | None = None,
    enabled: bool | None = None,
) -> Progress:
    """A bar for work of *total* units on *stream* (standard error): ``enabled=None`` draws
    only on a terminal, ``True`` on any stream; *unit_scale* shows ``k``/``M`` prefixes."""
    out = sys.stderr if stream is None else stream
    if enabled is None:
        isatty = getattr(out, "isatty", None)
        enabled = bool(isatty is not None and isatty())
    tqdm = _tqdm_class() if enabled else None
    if tqdm is None:
        return Progress(None)
    return Progress(
        tqdm(
            total=total,
            desc=description,
            unit=unit,
            unit_scale=unit_scale,
            leave=False,  # the command's own report follows
            file=out,
            delay=DELAY_SECONDS,
            dynamic_ncols=True,
        )
    )
