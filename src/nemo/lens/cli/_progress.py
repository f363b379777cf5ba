"""Progress bars for long work: reading, laying out and writing large traces.

A bar is drawn with tqdm, on standard error by default, and only when that
stream is a terminal: a log file or a pipe gets no carriage-return noise, and
the output a script parses stays exactly what it was. tqdm is optional; without
it every bar is a no-op, so nothing here is ever the reason a command fails.

Bars wait :data:`DELAY_SECONDS` before they first draw, so quick work (a small
trace) shows nothing at all, and a bar appears only once waiting is noticeable.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, TextIO

__all__ = ["DELAY_SECONDS", "Progress", "progress"]

DELAY_SECONDS: float = 0.5
"""How long work runs before its bar first draws."""


def _tqdm_class() -> Any | None:
    # Imported on first use: the CLI's quick paths (`nemo-lens groups`) never pay
    # for it, and a missing tqdm only means no bars. Typed as Any because tqdm
    # ships no type information.
    try:
        return importlib.import_module("tqdm").tqdm
    except ImportError:
        return None


class Progress:
    """One progress bar; every method is a no-op when the bar is off.

    Use it as a context manager so the bar is always closed (and its line
    cleared) even when the work fails.
    """

    __slots__ = ("_bar",)

    def __init__(self, bar: Any | None) -> None:
        self._bar = bar

    @property
    def enabled(self) -> bool:
        """Whether a bar is being drawn."""
        return self._bar is not None

    def update(self, amount: int = 1) -> None:
        """Advance the bar by ``amount`` units."""
        if self._bar is not None:
            self._bar.update(amount)

    def close(self) -> None:
        """Stop drawing (idempotent)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def progress(
    description: str,
    *,
    total: int | None = None,
    unit: str = "it",
    unit_scale: bool = False,
    stream: TextIO | None = None,
    enabled: bool | None = None,
) -> Progress:
    """Return a :class:`Progress` for work of ``total`` units (``None``: unknown).

    ``stream`` defaults to ``sys.stderr`` as it is at the call. ``enabled=None``
    draws only when the stream is a terminal; ``False`` never draws; ``True``
    draws on any stream (tests). ``unit_scale`` shows ``k``/``M`` prefixes (for
    byte counts). A finished bar is wiped: the command's own report follows it.
    """
    out = sys.stderr if stream is None else stream
    if enabled is None:
        isatty = getattr(out, "isatty", None)
        enabled = bool(isatty is not None and isatty())
    tqdm = _tqdm_class() if enabled else None
    if tqdm is None:
        return Progress(None)
    bar = tqdm(
        total=total,
        desc=description,
        unit=unit,
        unit_scale=unit_scale,
        leave=False,
        file=out,
        delay=DELAY_SECONDS,
        dynamic_ncols=True,
    )
    return Progress(bar)
