"""The built-in export strategies and the registry of strategies by name.

Below :mod:`nemo.lens.config` and :mod:`nemo.lens.strategies`, which both ask it:
the config checks that its ``export_strategy`` is registered, the public module
registers and hands out strategies. The built-ins read three fields of the config
(:class:`StrategyConfig`); the public module gives the registry its types.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
import threading
from typing import Final, Protocol

from nemo.lens._core.strategy_names import BuiltinStrategyNames

__all__ = [
    "BUILTIN_STRATEGIES",
    "LOCAL_RANK_VARIABLES",
    "AllRanksStrategy",
    "BuiltinStrategy",
    "FirstRankPerNodeStrategy",
    "SampledStrategy",
    "SingleRankStrategy",
    "StrategyConfig",
    "lookup",
    "normalise",
    "rank_sample_fraction",
    "remove",
    "snapshot",
    "store",
    "unknown_message",
]


class StrategyConfig(Protocol):
    """What the built-in strategies read of a ``NemoLensConfig``."""

    @property
    def export_rank(self) -> int: ...

    @property
    def export_sample_rate(self) -> float: ...

    @property
    def run_id(self) -> str: ...


class BuiltinStrategy:
    """A built-in strategy: an object with ``should_export``, callable the 0.1.0 way too."""

    def should_export(self, rank: int, world_size: int, config: StrategyConfig) -> bool:
        raise NotImplementedError

    def __call__(self, config: StrategyConfig, rank: int, world_size: int) -> bool:
        """``strategy(config, rank, world_size)``: the 0.1.0 call of a strategy."""
        return self.should_export(rank, world_size, config)


class SingleRankStrategy(BuiltinStrategy):
    """Export from ``config.export_rank`` only (``-1``: the last rank)."""

    def should_export(self, rank: int, world_size: int, config: StrategyConfig) -> bool:
        """Return ``True`` on the configured export rank."""
        target = world_size - 1 if config.export_rank == -1 else config.export_rank
        return rank == target

    def __repr__(self) -> str:
        return "SingleRankStrategy()"


class AllRanksStrategy(BuiltinStrategy):
    """Export from every rank."""

    def should_export(self, rank: int, world_size: int, config: StrategyConfig) -> bool:
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


class SampledStrategy(BuiltinStrategy):
    """Export from a deterministic fraction (``config.export_sample_rate``) of ranks."""

    def should_export(self, rank: int, world_size: int, config: StrategyConfig) -> bool:
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


def _node_local_rank() -> int | None:
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


class FirstRankPerNodeStrategy(BuiltinStrategy):
    """Export from the first process of each node: node-local rank 0.

    The node-local rank comes from :data:`LOCAL_RANK_VARIABLES`.
    """

    def should_export(self, rank: int, world_size: int, config: StrategyConfig) -> bool:
        """Return ``True`` when this process is local rank 0 (or alone on its node)."""
        local = _node_local_rank()
        return local is None or local == 0

    def __repr__(self) -> str:
        return "FirstRankPerNodeStrategy()"


BUILTIN_STRATEGIES: Final[BuiltinStrategyNames[BuiltinStrategy]] = BuiltinStrategyNames(
    {
        "single_rank": SingleRankStrategy(),
        "all_ranks": AllRanksStrategy(),
        "sampled": SampledStrategy(),
        "first_rank_per_node": FirstRankPerNodeStrategy(),
    }
)
"""The names of the strategies every process starts with (they cannot be unregistered):
a ``frozenset``, that also maps each name to its strategy (see
:class:`BuiltinStrategyNames`)."""

_LOCK = threading.Lock()
# Name -> what was registered under it (typed by nemo.lens.strategies, which registers).
_REGISTRY: dict[str, object] = dict(BUILTIN_STRATEGIES.items())


def normalise(name: object) -> str:
    """A strategy name as the registry keys it: stripped and lower-cased."""
    if not isinstance(name, str):
        raise TypeError(f"export strategy name must be a str, got {type(name).__name__}")
    return name.strip().lower()


def unknown_message(name: str, *, unregistering: bool = False) -> str:
    """Why *name* is not a strategy: ours, 0.1.0's phrase, the closest name, the list."""
    with _LOCK:
        names = sorted(_REGISTRY)
    # Ours, then 0.1.0's phrase (which callers match on), then the suggestion and list.
    registered = f": {name!r} is not registered" if unregistering else ""
    message = f"unknown export strategy {name!r} (Unknown export_strategy {name!r}{registered})"
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    if close:
        message += f"; did you mean {close[0]!r}?"
    return (
        f"{message}\n  registered strategies: {', '.join(names)}"
        "\n  register a custom one with nemo.lens.register_export_strategy(name, strategy)"
    )


def lookup(name: str) -> object:
    """What is registered under *name* (any case); ``ValueError`` naming the choices else."""
    key = normalise(name)
    with _LOCK:
        found = _REGISTRY.get(key)
    if found is None:
        raise ValueError(unknown_message(key))
    return found


def store(key: str, strategy: object, *, allow_override: bool) -> None:
    """Register *strategy* under the normalised *key* (checked by the caller)."""
    with _LOCK:
        if key in BUILTIN_STRATEGIES and not allow_override:
            raise ValueError(
                f"export strategy {key!r} is built in and cannot be replaced (the name is "
                "already registered); register yours under another name, or pass "
                "allow_override=True to replace the built-in"
            )
        if key in _REGISTRY and not allow_override:
            raise ValueError(
                f"export strategy {key!r} is already registered ({_REGISTRY[key]!r}); "
                f"call unregister_export_strategy({key!r}) first to replace it, or pass "
                "allow_override=True"
            )
        _REGISTRY[key] = strategy


def remove(key: str) -> None:
    """Unregister the custom strategy under the normalised *key*."""
    with _LOCK:
        if key in BUILTIN_STRATEGIES:
            raise ValueError(
                f"export strategy {key!r} is built in and cannot be unregistered (built-in "
                "strategies stay registered)"
            )
        if key in _REGISTRY:
            del _REGISTRY[key]
            return
    raise ValueError(unknown_message(key, unregistering=True))


def snapshot() -> dict[str, object]:
    """Every registered name and strategy, built-ins included, as of now."""
    with _LOCK:
        return dict(_REGISTRY)
