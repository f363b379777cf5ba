"""The built-in export strategies, the registry of strategies by name, and the name collections
it hands out. Below :mod:`nemo.lens.config` (which checks names against it) and
:mod:`nemo.lens.strategies` (the public front, which gives it its types)."""

from __future__ import annotations

import difflib
import hashlib
import os
import re
import threading
from collections.abc import ItemsView, KeysView, Mapping, ValuesView
from types import MappingProxyType
from typing import Any, Final, Generic, Protocol, SupportsIndex, TypeVar, overload

__all__ = [
    "BUILTIN_STRATEGIES",
    "LOCAL_RANK_VARIABLES",
    "LOCK",
    "REGISTRY",
    "AllRanksStrategy",
    "BuiltinStrategy",
    "BuiltinStrategyNames",
    "FirstRankPerNodeStrategy",
    "SampledStrategy",
    "SingleRankStrategy",
    "StrategyConfig",
    "StrategyNames",
    "lookup",
    "normalise",
    "rank_sample_fraction",
    "remove",
    "snapshot",
    "store",
    "unknown_message",
]

_S = TypeVar("_S")


class StrategyConfig(Protocol):
    """What the built-in strategies read of a ``NemoLensConfig``."""

    export_rank: int
    export_sample_rate: float
    run_id: str


class BuiltinStrategy:
    """A built-in strategy: an object with ``should_export``, callable the 0.1.0 way too."""

    def should_export(self, rank: int, world_size: int, config: StrategyConfig) -> bool:
        raise NotImplementedError

    def __call__(self, config: StrategyConfig, rank: int, world_size: int) -> bool:
        """``strategy(config, rank, world_size)``: the 0.1.0 call of a strategy."""
        return self.should_export(rank, world_size, config)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class SingleRankStrategy(BuiltinStrategy):
    """Export from ``config.export_rank`` only (``-1``: the last rank, which in
    pipeline-parallel jobs is the one that sees the loss)."""

    def should_export(self, rank: int, world_size: int, config: StrategyConfig) -> bool:
        """Return ``True`` on the configured export rank."""
        return rank == (world_size - 1 if config.export_rank == -1 else config.export_rank)


class AllRanksStrategy(BuiltinStrategy):
    """Export from every rank."""

    def should_export(self, rank: int, world_size: int, config: StrategyConfig) -> bool:
        """Return ``True``."""
        return True


def rank_sample_fraction(run_id: str, rank: int) -> float:
    """Map ``(run_id, rank)`` to a stable fraction in [0, 1).

    SHA-256 rather than :func:`hash` because string hashing is salted per
    process (``PYTHONHASHSEED``) and the answer must agree across processes and
    restarts.
    """
    digest = hashlib.sha256(f"{run_id}:{rank}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


class SampledStrategy(BuiltinStrategy):
    """Export from a deterministic fraction (``config.export_sample_rate``) of ranks: those
    whose :func:`rank_sample_fraction` of ``(run_id, rank)`` is below it, so a restarted rank
    keeps its decision (ranks of one job should share a run id)."""

    def should_export(self, rank: int, world_size: int, config: StrategyConfig) -> bool:
        """Return ``True`` when this rank's hash falls below the sample rate."""
        return rank_sample_fraction(config.run_id, rank) < config.export_sample_rate


LOCAL_RANK_VARIABLES: Final = (
    "LOCAL_RANK",
    "SLURM_LOCALID",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "MPI_LOCALRANKID",
)
"""Where ``first_rank_per_node`` reads the node-local rank, first set wins (torchrun, then
``srun``, which may wrap a torchrun, then the MPI launchers)."""


class FirstRankPerNodeStrategy(BuiltinStrategy):
    """Export from the first process of each node: node-local rank 0, read from
    :data:`LOCAL_RANK_VARIABLES`; with none set, every process is alone on its node."""

    def should_export(self, rank: int, world_size: int, config: StrategyConfig) -> bool:
        """Return ``True`` when this process is local rank 0 (or alone on its node)."""
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
            return int(raw) == 0
        return True


class _NameMap(Generic[_S]):
    """Reads like the ``name -> strategy`` mapping these collections were in nemo.lens 0.2
    (``names["sampled"]``, ``.get``, ``.keys()``, ``.values()``, ``.items()``, in name order)."""

    __slots__ = ()
    _strategies: Mapping[str, _S]

    def get(self, name: str, default: Any = None) -> Any:
        """The strategy registered under *name*, else *default*."""
        return self._strategies.get(name, default)

    def keys(self) -> KeysView[str]:
        """The names, as a mapping's keys."""
        return self._strategies.keys()

    def values(self) -> ValuesView[_S]:
        """The strategies, in name order."""
        return self._strategies.values()

    def items(self) -> ItemsView[str, _S]:
        """``(name, strategy)`` pairs, in name order."""
        return self._strategies.items()


def _sorted_view(strategies: Mapping[str, _S]) -> Mapping[str, _S]:
    return MappingProxyType(dict(sorted(strategies.items())))


class StrategyNames(list[str], _NameMap[_S]):
    """The sorted names of the registered strategies (0.1.0's list), which also maps each
    name to its strategy. A snapshot: later registrations do not change it."""

    def __init__(self, registry: Mapping[str, _S]) -> None:
        super().__init__(sorted(registry))
        self._strategies = _sorted_view(registry)

    @overload
    def __getitem__(self, key: SupportsIndex) -> str: ...

    @overload
    def __getitem__(self, key: slice) -> list[str]: ...

    @overload
    def __getitem__(self, key: str) -> _S: ...

    def __getitem__(self, key: SupportsIndex | slice | str) -> Any:
        if isinstance(key, str):
            return self._strategies[key]
        return super().__getitem__(key)


class BuiltinStrategyNames(frozenset[str], _NameMap[_S]):
    """The names of the built-in strategies: a ``frozenset`` (as in 0.1.0 and v0.2.0),
    which also maps each name to its strategy."""

    __slots__ = ("_strategies",)

    def __new__(cls, strategies: Mapping[str, _S]) -> BuiltinStrategyNames[_S]:
        names = super().__new__(cls, strategies)
        names._strategies = _sorted_view(strategies)
        return names

    def __getitem__(self, name: str) -> _S:
        return self._strategies[name]

    def __reduce__(self) -> tuple[type[BuiltinStrategyNames[_S]], tuple[dict[str, _S]]]:
        # frozenset's own would rebuild it from the names alone.
        return (type(self), (dict(self._strategies),))

    def __repr__(self) -> str:
        return f"BuiltinStrategyNames({sorted(self)!r})"


BUILTIN_STRATEGIES: Final[BuiltinStrategyNames[BuiltinStrategy]] = BuiltinStrategyNames(
    {
        "single_rank": SingleRankStrategy(),
        "all_ranks": AllRanksStrategy(),
        "sampled": SampledStrategy(),
        "first_rank_per_node": FirstRankPerNodeStrategy(),
    }
)
"""The names of the strategies every process starts with (they cannot be unregistered)."""

_LOCK = threading.Lock()
# Name -> what was registered under it (typed by nemo.lens.strategies, which registers).
_REGISTRY: dict[str, object] = dict(BUILTIN_STRATEGIES.items())
REGISTRY: Final = _REGISTRY
"""The registry itself (upstream's ``strategies._REGISTRY``): change it only under LOCK."""
LOCK: Final = _LOCK


def normalise(name: object) -> str:
    """A strategy name as the registry keys it: stripped and lower-cased."""
    if not isinstance(name, str):
        raise TypeError(f"export strategy name must be a str, got {type(name).__name__}")
    return name.strip().lower()


def unknown_message(name: str, *, unregistering: bool = False) -> str:
    """Why *name* is not a strategy: ours, 0.1.0's phrase (which callers match on), the
    closest name, the list."""
    names = sorted(snapshot())
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
    if key in BUILTIN_STRATEGIES:
        raise ValueError(
            f"export strategy {key!r} is built in and cannot be unregistered (built-in "
            "strategies stay registered)"
        )
    if _REGISTRY.pop(key, None) is None:
        raise ValueError(unknown_message(key, unregistering=True))


def snapshot() -> dict[str, object]:
    """Every registered name and strategy, built-ins included, as of now."""
    return _REGISTRY.copy()
