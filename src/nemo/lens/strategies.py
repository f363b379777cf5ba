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
import inspect
import re
from collections.abc import Callable
from typing import (
    TYPE_CHECKING,
    Any,
    Final,
    Protocol,
    TypeAlias,
    cast,
    runtime_checkable,
)

from nemo.lens._core import strategy_registry as _registry
from nemo.lens._core.strategy_names import BuiltinStrategyNames, StrategyNames
from nemo.lens._core.strategy_registry import (
    BUILTIN_STRATEGIES,
    LOCAL_RANK_VARIABLES,
    AllRanksStrategy,
    FirstRankPerNodeStrategy,
    SampledStrategy,
    SingleRankStrategy,
    rank_sample_fraction,
)
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

_NAME_RE: Final = re.compile(r"[a-z0-9][a-z0-9_.\-]*")

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
    key = _registry.normalise(name)
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
    _registry.store(key, strategy, allow_override=allow_override)


def unregister_export_strategy(name: str) -> None:
    """Remove the custom strategy registered under *name*.

    Raises :class:`ValueError` for a built-in name or a name that is not registered.
    """
    _registry.remove(_registry.normalise(name))


def registered_strategies() -> StrategyNames[_Registrable]:
    """Return the sorted names of every registered strategy, built-ins included.

    The result is a ``list[str]`` (0.1.0); it also maps each name to its
    strategy (see :class:`StrategyNames`).
    """
    return StrategyNames(cast("dict[str, _Registrable]", _registry.snapshot()))


def get_export_strategy(name: str) -> Any:
    """Return exactly the strategy registered under *name*.

    Typed ``Any`` because it is whatever was registered: 0.1.0 code calls it
    (``strategy(config, rank, world_size)``, which the built-ins accept), code
    that registered an object calls its ``should_export``; to ask any of them,
    use :func:`export_decision`.

    Raises :class:`ValueError` listing the registered names (and the closest
    one) when *name* is unknown.
    """
    return _registry.lookup(name)


rehome(globals(), __all__)
