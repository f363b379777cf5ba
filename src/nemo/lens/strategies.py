"""Export strategies: which ranks of a distributed job export telemetry.

A job with thousands of ranks rarely wants thousands of copies of the same
step spans. An export strategy answers one question at set-up time,
``should_export(rank, world_size, config) -> bool``, and
:func:`nemo.lens.setup_telemetry` attaches exporters only where it says yes.

Built-in strategies (selected by name through ``NemoLensConfig.export_strategy``):

``single_rank``
    Only ``config.export_rank`` exports; ``-1`` (the default) means the last
    rank, which in pipeline-parallel jobs is the one that sees the loss.
``all_ranks``
    Every rank exports.
``sampled``
    A deterministic subset: a rank exports when a hash of ``(run_id, rank)``,
    read as a fraction in [0, 1), is below ``config.export_sample_rate``. The
    same run id and rank always give the same answer, so a restarted rank keeps
    its decision; ranks of one job should share a run id (set ``run_id`` or rely
    on ``SLURM_JOB_ID`` / ``TORCHELASTIC_RUN_ID``).
``first_rank_per_node``
    The process whose rank on its node is 0. The node-local rank is read from
    the first of :data:`LOCAL_RANK_VARIABLES` that is set: torchrun's
    ``LOCAL_RANK``, SLURM's ``SLURM_LOCALID``, Open MPI's
    ``OMPI_COMM_WORLD_LOCAL_RANK``, MPICH's ``MPI_LOCALRANKID``. With none of
    them set, every process is taken to be alone on its node and exports; a
    value that is not an integer is an error at set-up.

Custom strategies register by name with :func:`register_export_strategy`; any
object with a ``should_export`` method, or a plain function with the same
signature, will do. Names are case-insensitive. The decision is taken once per
process, at set-up; :class:`nemo.lens.sampling.RankAwareSampler` turns the same
decision into a sampler.

This module imports nothing from the OpenTelemetry SDK.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
import threading
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, Protocol, runtime_checkable

if TYPE_CHECKING:
    from nemo.lens.config import NemoLensConfig

__all__ = [
    "BUILTIN_STRATEGIES",
    "LOCAL_RANK_VARIABLES",
    "AllRanksStrategy",
    "ExportStrategy",
    "FirstRankPerNodeStrategy",
    "SampledStrategy",
    "SingleRankStrategy",
    "get_export_strategy",
    "rank_sample_fraction",
    "register_export_strategy",
    "registered_strategies",
    "unregister_export_strategy",
]


@runtime_checkable
class ExportStrategy(Protocol):
    """Decides, once per process at set-up, whether this rank exports."""

    def should_export(self, rank: int, world_size: int, config: NemoLensConfig) -> bool:
        """Return ``True`` when *rank* of *world_size* should export telemetry."""
        ...


class SingleRankStrategy:
    """Export from ``config.export_rank`` only (``-1``: the last rank)."""

    def should_export(self, rank: int, world_size: int, config: NemoLensConfig) -> bool:
        """Return ``True`` on the configured export rank."""
        target = world_size - 1 if config.export_rank == -1 else config.export_rank
        return rank == target

    def __repr__(self) -> str:
        return "SingleRankStrategy()"


class AllRanksStrategy:
    """Export from every rank."""

    def should_export(self, rank: int, world_size: int, config: NemoLensConfig) -> bool:
        """Return ``True``."""
        return True

    def __repr__(self) -> str:
        return "AllRanksStrategy()"


def rank_sample_fraction(run_id: str, rank: int) -> float:
    """Map ``(run_id, rank)`` to a stable fraction in [0, 1).

    SHA-256 rather than :func:`hash` because string hashing is salted per
    process (``PYTHONHASHSEED``) and the answer must agree across processes and
    restarts.
    """
    digest = hashlib.sha256(f"{run_id}:{rank}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


class SampledStrategy:
    """Export from a deterministic fraction (``config.export_sample_rate``) of ranks."""

    def should_export(self, rank: int, world_size: int, config: NemoLensConfig) -> bool:
        """Return ``True`` when this rank's hash falls below the sample rate."""
        return rank_sample_fraction(config.run_id, rank) < config.export_sample_rate

    def __repr__(self) -> str:
        return "SampledStrategy()"


LOCAL_RANK_VARIABLES: Final = (
    "LOCAL_RANK",
    "SLURM_LOCALID",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "MPI_LOCALRANKID",
)
"""Where ``first_rank_per_node`` reads the node-local rank, first set wins.

torchrun sets ``LOCAL_RANK``; ``srun`` sets ``SLURM_LOCALID`` (also around a
torchrun it launches, hence second); ``mpirun`` sets one of the MPI names.
"""


def _local_rank() -> int | None:
    for variable in LOCAL_RANK_VARIABLES:
        raw = os.environ.get(variable, "").strip()
        if not raw:
            continue
        if not re.fullmatch(r"[+-]?\d+", raw):
            raise ValueError(
                f"{variable}={raw!r} is not an integer; the first_rank_per_node export "
                f"strategy needs the process's rank on its node (unset {variable} or fix "
                "the launcher)"
            )
        return int(raw)
    return None


class FirstRankPerNodeStrategy:
    """Export from the first process of each node: node-local rank 0.

    The node-local rank comes from :data:`LOCAL_RANK_VARIABLES`.
    """

    def should_export(self, rank: int, world_size: int, config: NemoLensConfig) -> bool:
        """Return ``True`` when this process is local rank 0 (or alone on its node)."""
        local = _local_rank()
        return local is None or local == 0

    def __repr__(self) -> str:
        return "FirstRankPerNodeStrategy()"


class _FunctionStrategy:
    """Adapts a plain function to :class:`ExportStrategy`."""

    def __init__(self, function: Callable[[int, int, NemoLensConfig], bool]) -> None:
        self._function = function

    def should_export(self, rank: int, world_size: int, config: NemoLensConfig) -> bool:
        return bool(self._function(rank, world_size, config))

    def __repr__(self) -> str:
        return f"_FunctionStrategy({self._function!r})"


BUILTIN_STRATEGIES: Mapping[str, ExportStrategy] = MappingProxyType(
    {
        "single_rank": SingleRankStrategy(),
        "all_ranks": AllRanksStrategy(),
        "sampled": SampledStrategy(),
        "first_rank_per_node": FirstRankPerNodeStrategy(),
    }
)
"""The strategies every process starts with; they cannot be unregistered."""

_LOCK = threading.Lock()
_REGISTRY: dict[str, ExportStrategy] = dict(BUILTIN_STRATEGIES)
_NAME_RE = re.compile(r"[a-z0-9][a-z0-9_.\-]*")


def _normalise(name: object) -> str:
    if not isinstance(name, str):
        raise TypeError(f"export strategy name must be a str, got {type(name).__name__}")
    return name.strip().lower()


def _unknown_message(name: str) -> str:
    names = sorted(_REGISTRY)
    message = f"unknown export strategy {name!r}"
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    if close:
        message += f"; did you mean {close[0]!r}?"
    return (
        f"{message}\n  registered strategies: {', '.join(names)}"
        "\n  register a custom one with nemo.lens.register_export_strategy(name, strategy)"
    )


def register_export_strategy(
    name: str,
    strategy: ExportStrategy | Callable[[int, int, NemoLensConfig], bool],
) -> None:
    """Register *strategy* under *name* (case-insensitive) for ``export_strategy=name``.

    *strategy* is an object with ``should_export(rank, world_size, config)`` or a
    function with that signature. Raises :class:`ValueError` when the name is
    malformed or already registered (unregister it first to replace a custom
    strategy; built-in names cannot be replaced) and :class:`TypeError` when
    *strategy* is a class rather than an instance, or has no ``should_export``
    and is not callable.
    """
    key = _normalise(name)
    if not _NAME_RE.fullmatch(key):
        raise ValueError(
            f"export strategy name {name!r} is not valid: use letters, digits, '_', '.' or "
            "'-', starting with a letter or digit (e.g. 'every_other_rank')"
        )
    adapted: ExportStrategy
    if isinstance(strategy, type):
        # A class has a should_export attribute too, so the protocol check below
        # would accept it and the first call would fail on a missing argument.
        raise TypeError(
            f"export strategy {key!r} is the class {strategy.__name__}, not an instance; "
            f"register an instance: register_export_strategy({key!r}, {strategy.__name__}())"
        )
    if isinstance(strategy, ExportStrategy):
        adapted = strategy
    elif callable(strategy):
        adapted = _FunctionStrategy(strategy)
    else:
        raise TypeError(
            f"export strategy {key!r} must have a should_export(rank, world_size, config) "
            f"method or be a function with that signature, got {type(strategy).__name__}"
        )
    with _LOCK:
        if key in BUILTIN_STRATEGIES:
            raise ValueError(
                f"export strategy {key!r} is built in and cannot be replaced; "
                "register yours under another name"
            )
        if key in _REGISTRY:
            raise ValueError(
                f"export strategy {key!r} is already registered ({_REGISTRY[key]!r}); "
                f"call unregister_export_strategy({key!r}) first to replace it"
            )
        _REGISTRY[key] = adapted


def unregister_export_strategy(name: str) -> None:
    """Remove the custom strategy registered under *name*.

    Raises :class:`ValueError` for a built-in name or a name that is not registered.
    """
    key = _normalise(name)
    with _LOCK:
        if key in BUILTIN_STRATEGIES:
            raise ValueError(f"export strategy {key!r} is built in and cannot be unregistered")
        if key not in _REGISTRY:
            raise ValueError(_unknown_message(key))
        del _REGISTRY[key]


def registered_strategies() -> Mapping[str, ExportStrategy]:
    """Return a read-only snapshot of the registry: name -> strategy, built-ins included."""
    with _LOCK:
        return MappingProxyType(dict(sorted(_REGISTRY.items())))


def get_export_strategy(name: str) -> ExportStrategy:
    """Return the strategy registered under *name*.

    Raises :class:`ValueError` listing the registered names (and the closest
    one) when *name* is unknown.
    """
    key = _normalise(name)
    with _LOCK:
        found = _REGISTRY.get(key)
        if found is None:
            raise ValueError(_unknown_message(key))
        return found


def _reset_registry_for_testing() -> None:
    """Forget every custom strategy (tests only)."""
    with _LOCK:
        _REGISTRY.clear()
        _REGISTRY.update(BUILTIN_STRATEGIES)
