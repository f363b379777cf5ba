"""Profiler mirroring: a recorded span also opens a range in NVTX and/or the PyTorch profiler.

Set-up builds one :class:`Mirror` for the tools ``NemoLensConfig.profiler`` names and gives it
to the recording tracer; with none named nothing here runs (docs/configuration.md).
"""

from __future__ import annotations

import importlib
import logging
from typing import Any, Final

from nemo.lens._core import fork as _fork

__all__ = ["NVTX_DOMAIN", "Mirror", "build_mirror"]

NVTX_DOMAIN: Final = "nemo.lens"
"""The NVTX domain every mirrored range is opened in."""

# Names with their event attributes built once; past this many (names made per call,
# such as "step 1234") the attributes are built per span instead of kept forever.
_CACHED_NAMES: Final = 4096

_logger = logging.getLogger("nemo.lens.profiler")


def _missing(tool: str, package: str, extra: str) -> ImportError:
    return ImportError(
        f"the profiler {tool!r} (NemoLensConfig.profiler, NEMO_LENS_PROFILER) needs the "
        f"{package!r} package, which is not installed; install it with "
        f"pip install 'nemo-lens[{extra}]', or leave {tool!r} out of the profiler setting"
    )


class Mirror:
    """Opens a span's ranges in the tools chosen at set-up, and closes them at its end.

    NVTX ranges are start/end ranges, not push/pop: a span may end on another thread or
    out of order (an async generator's), and a push/pop stack would then pair the wrong
    ranges. A range opened before a fork is not closed in the child (the tools there
    never saw it open).
    """

    __slots__ = ("__weakref__", "_attributes", "_domain", "_generation", "_record_function")

    def __init__(self, domain: Any, record_function: Any) -> None:
        self._domain = domain
        self._record_function = record_function
        self._attributes: dict[tuple[str, str | None], Any] = {}
        self._generation = 0
        _fork.register(self)

    def _after_fork_in_child(self) -> None:
        self._generation += 1

    def open(self, name: str, group: str | None) -> tuple[int, Any, Any]:
        """Open *name*'s ranges (tagged with *group*); what :meth:`close` takes."""
        range_id = None
        domain = self._domain
        if domain is not None:
            key = (name, group)
            attributes = self._attributes.get(key)
            if attributes is None:
                attributes = domain.get_event_attributes(message=name, category=group)
                if len(self._attributes) < _CACHED_NAMES:
                    self._attributes[key] = attributes
            range_id = domain.start_range(attributes)
        annotation = None
        if self._record_function is not None:
            annotation = self._record_function(name if group is None else f"{group}/{name}")
            annotation.__enter__()
        return self._generation, range_id, annotation

    def close(self, opened: tuple[int, Any, Any]) -> None:
        """Close the ranges :meth:`open` returned (innermost tool first)."""
        generation, range_id, annotation = opened
        if generation != self._generation:
            return
        try:
            if annotation is not None:
                annotation.__exit__(None, None, None)
            if range_id is not None:
                self._domain.end_range(range_id)
        except Exception:  # a profiler's failure must not fail the job's span
            _logger.debug("nemo.lens: closing a profiler range failed", exc_info=True)


def build_mirror(profilers: tuple[str, ...]) -> Mirror | None:
    """The :class:`Mirror` for *profilers* (checked names), or ``None`` for none; an
    :class:`ImportError` naming the extra when a tool's package is not installed."""
    if not profilers:
        return None
    domain: Any = None
    annotate: Any = None
    if "nvtx" in profilers:
        try:
            # By name: nvtx ships no type information, and a consumer's own mypy run that
            # follows this import must not fail on it.
            nvtx: Any = importlib.import_module("nvtx")
        except ImportError:
            raise _missing("nvtx", "nvtx", "nvtx") from None
        # A stand-in domain when no tool (Nsight Systems) is attached: its calls do nothing.
        domain = nvtx.get_domain(NVTX_DOMAIN)
    if "torch" in profilers:
        try:
            from torch.profiler import record_function
        except ImportError:
            raise _missing("torch", "torch", "torch") from None
        annotate = record_function
    return Mirror(domain, annotate)
