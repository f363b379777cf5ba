"""Export strategies: which ranks of a distributed job export telemetry.

A job with thousands of ranks rarely wants thousands of copies of the same
step spans. An export strategy answers one question at set-up time -- does
this rank export? -- and :func:`nemo.lens.setup_telemetry` attaches exporters
only where it says yes.

A strategy is any of:

* a callable ``strategy(config, rank, world_size) -> bool``, the 0.1.0 form
  (:data:`ExportStrategyFunction`);
* an object with ``should_export(rank, world_size, config) -> bool``
  (:class:`ExportStrategyObject`; the built-ins are such objects, and callable
  in the 0.1.0 form too);
* a function whose first parameter is named ``rank``: it is called as
  ``strategy(rank, world_size, config)``, the order of ``should_export`` that
  nemo.lens 0.2 documented for functions.

:func:`export_decision` asks any of them the question.

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

Custom strategies register by name with :func:`register_export_strategy`;
:func:`get_export_strategy` returns exactly what was registered. Names are
case-insensitive. The decision is taken once per process, at set-up;
:class:`nemo.lens.sampling.RankAwareSampler` turns the same decision into a
sampler.

This module imports nothing from the OpenTelemetry SDK.
"""

from __future__ import annotations

import abc
import hashlib
import inspect
import os
import re
import threading
from collections.abc import Callable
from typing import (
    TYPE_CHECKING,
    Any,
    Final,
    Protocol,
    TypeAlias,
    runtime_checkable,
)

from nemo.lens._core.strategy_names import BuiltinStrategyNames, StrategyNames
from nemo.lens._names import rehome

if TYPE_CHECKING:
    from nemo.lens.config import NemoLensConfig

__all__ = [
    "BUILTIN_STRATEGIES",
    "LOCAL_RANK_VARIABLES",
    "AllRanksStrategy",
    "BuiltinStrategyNames",
    "ExportStrategy",
    "ExportStrategyFunction",
    "ExportStrategyObject",
    "FirstRankPerNodeStrategy",
    "SampledStrategy",
    "SingleRankStrategy",
    "StrategyNames",
    "export_decision",
    "get_export_strategy",
    "rank_sample_fraction",
    "register_export_strategy",
    "registered_strategies",
    "unregister_export_strategy",
]


@runtime_checkable
class ExportStrategyObject(Protocol):
    """A strategy object: decides, once per process at set-up, whether this rank exports."""

    def should_export(self, rank: int, world_size: int, config: NemoLensConfig) -> bool:
        """Return ``True`` when *rank* of *world_size* should export telemetry."""
        ...


ExportStrategyFunction: TypeAlias = Callable[["NemoLensConfig", int, int], bool]
"""The 0.1.0 strategy: ``strategy(config, rank, world_size) -> bool``."""

_RankFirstFunction: TypeAlias = Callable[[int, int, "NemoLensConfig"], bool]

# What register_export_strategy and export_decision accept. Spelled as one flat
# union: with two callable types in it, type checkers take a lambda in either
# argument order, where a nested union makes them pick one order and reject the other.
_Registrable: TypeAlias = ExportStrategyFunction | ExportStrategyObject | _RankFirstFunction

if TYPE_CHECKING:
    ExportStrategy: TypeAlias = ExportStrategyFunction | ExportStrategyObject
    """A strategy: the 0.1.0 callable or an object with ``should_export``."""
else:

    class ExportStrategy(abc.ABC):  # noqa: B024 (no abstract methods: a structural check)
        """A strategy: the 0.1.0 callable ``strategy(config, rank, world_size) -> bool``, or
        an object with ``should_export(rank, world_size, config) -> bool``.

        ``isinstance(x, ExportStrategy)`` is true for both, as it was for each in the
        release that defined it; type checkers see the union of the two.
        """

        @classmethod
        def __subclasshook__(cls, other: type) -> bool:
            if cls is not ExportStrategy:
                return NotImplemented
            for klass in other.__mro__:
                if "should_export" in vars(klass) or "__call__" in vars(klass):
                    return True
            return NotImplemented


def _takes_rank_first(function: Callable[..., object]) -> bool:
    """Whether *function* is a 0.2-style strategy function: first parameter named ``rank``."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):  # a builtin or a C callable: no signature to read
        return False
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return bool(parameters) and parameters[0].kind in positional and parameters[0].name == "rank"


def export_decision(
    strategy: _Registrable,
    config: NemoLensConfig,
    rank: int,
    world_size: int,
) -> bool:
    """Ask *strategy* whether *rank* of *world_size* exports under *config*.

    An object with ``should_export`` is asked ``should_export(rank, world_size,
    config)``; a callable is called as ``strategy(config, rank, world_size)``
    (0.1.0), unless its first parameter is named ``rank``, when it is called as
    ``strategy(rank, world_size, config)``.
    """
    method = getattr(strategy, "should_export", None)
    if callable(method):
        return bool(method(rank, world_size, config))
    if not callable(strategy):
        raise TypeError(
            f"an export strategy is a callable strategy(config, rank, world_size) -> bool or "
            f"an object with should_export(rank, world_size, config), got {strategy!r}"
        )
    if _takes_rank_first(strategy):
        return bool(strategy(rank, world_size, config))  # type: ignore[arg-type]
    return bool(strategy(config, rank, world_size))  # type: ignore[arg-type]


class _BuiltinStrategy:
    """A built-in strategy: an object with ``should_export``, callable the 0.1.0 way too."""

    def should_export(self, rank: int, world_size: int, config: NemoLensConfig) -> bool:
        raise NotImplementedError

    def __call__(self, config: NemoLensConfig, rank: int, world_size: int) -> bool:
        """``strategy(config, rank, world_size)``: the 0.1.0 call of a strategy."""
        return self.should_export(rank, world_size, config)


class SingleRankStrategy(_BuiltinStrategy):
    """Export from ``config.export_rank`` only (``-1``: the last rank)."""

    def should_export(self, rank: int, world_size: int, config: NemoLensConfig) -> bool:
        """Return ``True`` on the configured export rank."""
        target = world_size - 1 if config.export_rank == -1 else config.export_rank
        return rank == target

    def __repr__(self) -> str:
        return "SingleRankStrategy()"


class AllRanksStrategy(_BuiltinStrategy):
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


class SampledStrategy(_BuiltinStrategy):
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


class FirstRankPerNodeStrategy(_BuiltinStrategy):
    """Export from the first process of each node: node-local rank 0.

    The node-local rank comes from :data:`LOCAL_RANK_VARIABLES`.
    """

    def should_export(self, rank: int, world_size: int, config: NemoLensConfig) -> bool:
        """Return ``True`` when this process is local rank 0 (or alone on its node)."""
        local = _local_rank()
        return local is None or local == 0

    def __repr__(self) -> str:
        return "FirstRankPerNodeStrategy()"


BUILTIN_STRATEGIES: Final[BuiltinStrategyNames[_BuiltinStrategy]] = BuiltinStrategyNames(
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
_REGISTRY: dict[str, _Registrable] = dict(BUILTIN_STRATEGIES.items())
_NAME_RE = re.compile(r"[a-z0-9][a-z0-9_.\-]*")


def _normalise(name: object) -> str:
    if not isinstance(name, str):
        raise TypeError(f"export strategy name must be a str, got {type(name).__name__}")
    return name.strip().lower()


def _unknown_message(name: str, *, unregistering: bool = False) -> str:
    names = sorted(_REGISTRY)
    # Ours, then 0.1.0's phrase (which callers match on), then the suggestion and list.
    registered = f": {name!r} is not registered" if unregistering else ""
    message = f"unknown export strategy {name!r} (Unknown export_strategy {name!r}{registered})"
    import difflib  # only here: an unknown name is a set-up error, not the import path

    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    if close:
        message += f"; did you mean {close[0]!r}?"
    return (
        f"{message}\n  registered strategies: {', '.join(names)}"
        "\n  register a custom one with nemo.lens.register_export_strategy(name, strategy)"
    )


def register_export_strategy(
    name: str,
    strategy: _Registrable,
    *,
    allow_override: bool = False,
) -> None:
    """Register *strategy* under *name* (case-insensitive) for ``export_strategy=name``.

    *strategy* is a callable ``strategy(config, rank, world_size) -> bool``, an
    object with ``should_export(rank, world_size, config)``, or a function whose
    first parameter is named ``rank`` (called as ``(rank, world_size, config)``);
    see :func:`export_decision`. :func:`get_export_strategy` returns it as given.

    Raises :class:`ValueError` when the name is malformed or already registered
    (pass ``allow_override=True`` to replace it, built-ins included, or
    unregister a custom one first) and :class:`TypeError` when *strategy* is a
    class rather than an instance, or neither callable nor has ``should_export``.
    """
    key = _normalise(name)
    if not _NAME_RE.fullmatch(key):
        raise ValueError(
            f"export strategy name {name!r} is not valid (a strategy name must be a non-empty "
            "string): use letters, digits, '_', '.' or '-', starting with a letter or digit "
            "(e.g. 'every_other_rank')"
        )
    if not isinstance(allow_override, bool):
        raise TypeError(f"allow_override must be a bool, got {allow_override!r}")
    if isinstance(strategy, type):
        # A class has a should_export attribute too, so the protocol check below
        # would accept it and the first call would fail on a missing argument.
        raise TypeError(
            f"export strategy {key!r} is the class {strategy.__name__}, not an instance; "
            f"register an instance: register_export_strategy({key!r}, {strategy.__name__}())"
        )
    if not callable(getattr(strategy, "should_export", None)) and not callable(strategy):
        raise TypeError(
            f"export strategy {key!r} must have a should_export(rank, world_size, config) "
            "method or be a function strategy(config, rank, world_size) -> bool, got "
            f"{type(strategy).__name__}"
        )
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


def unregister_export_strategy(name: str) -> None:
    """Remove the custom strategy registered under *name*.

    Raises :class:`ValueError` for a built-in name or a name that is not registered.
    """
    key = _normalise(name)
    with _LOCK:
        if key in BUILTIN_STRATEGIES:
            raise ValueError(
                f"export strategy {key!r} is built in and cannot be unregistered (built-in "
                "strategies stay registered)"
            )
        if key not in _REGISTRY:
            raise ValueError(_unknown_message(key, unregistering=True))
        del _REGISTRY[key]


def registered_strategies() -> StrategyNames[_Registrable]:
    """Return the sorted names of every registered strategy, built-ins included.

    The result is a ``list[str]`` (0.1.0); it also maps each name to its
    strategy (see :class:`StrategyNames`).
    """
    with _LOCK:
        return StrategyNames(_REGISTRY)


def get_export_strategy(name: str) -> Any:
    """Return exactly the strategy registered under *name*.

    Typed ``Any`` because it is whatever was registered: 0.1.0 code calls it
    (``strategy(config, rank, world_size)``, which the built-ins accept), code
    that registered an object calls its ``should_export``; to ask any of them,
    use :func:`export_decision`.

    Raises :class:`ValueError` listing the registered names (and the closest
    one) when *name* is unknown.
    """
    key = _normalise(name)
    with _LOCK:
        found = _REGISTRY.get(key)
        if found is None:
            raise ValueError(_unknown_message(key))
        return found


rehome(globals(), __all__)
