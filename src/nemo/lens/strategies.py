"""Export strategies: which ranks of a distributed job export telemetry.

A strategy is a callable ``strategy(config, rank, world_size) -> bool`` (0.1.0), an object
with ``should_export(rank, world_size, config)``, or a function whose first parameter is
``rank``; :func:`export_decision` asks any of them. Built-ins and custom strategies are
registered by name (case-insensitive); the decision is taken once per process, at set-up.
"""

from __future__ import annotations

import abc
import inspect
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias, cast, runtime_checkable

from nemo.lens._core import strategy_registry as _registry
from nemo.lens._core.strategy_registry import (
    BUILTIN_STRATEGIES,
    LOCAL_RANK_VARIABLES,
    AllRanksStrategy,
    BuiltinStrategyNames,
    FirstRankPerNodeStrategy,
    SampledStrategy,
    SingleRankStrategy,
    StrategyNames,
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
        """A strategy: the 0.1.0 callable or an object with ``should_export``;
        ``isinstance(x, ExportStrategy)`` is true for both (type checkers see the union)."""

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
    strategy: _Registrable, config: NemoLensConfig, rank: int, world_size: int
) -> bool:
    """Ask *strategy* whether *rank* of *world_size* exports under *config*: an object's
    ``should_export(rank, world_size, config)``, else ``strategy(config, rank, world_size)``
    (0.1.0), or ``strategy(rank, world_size, config)`` when its first parameter is ``rank``."""
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
    name: str, strategy: _Registrable, *, allow_override: bool = False
) -> None:
    """Register *strategy* (any form :func:`export_decision` asks) under *name*
    (case-insensitive) for ``export_strategy=name``.

    Raises :class:`ValueError` when the name is malformed or already registered (pass
    ``allow_override=True`` to replace it, built-ins included) and :class:`TypeError` when
    *strategy* is a class rather than an instance, or neither callable nor has
    ``should_export``.
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
    """Remove the custom strategy registered under *name* (:class:`ValueError` for a built-in
    name or one not registered)."""
    _registry.remove(_registry.normalise(name))


def registered_strategies() -> StrategyNames[_Registrable]:
    """Return the sorted names of every registered strategy, built-ins included: a
    ``list[str]`` (0.1.0) that also maps each name to its strategy (:class:`StrategyNames`)."""
    return StrategyNames(cast("dict[str, _Registrable]", _registry.snapshot()))


def get_export_strategy(name: str) -> Any:
    """Return exactly the strategy registered under *name* (typed ``Any``: whatever was
    registered). Raises :class:`ValueError` listing the registered names when it is unknown."""
    return _registry.lookup(name)


# Upstream's names for the registry and its lock: its test fixtures snapshot and restore
# the registry through them between tests, so they must be the very objects used here.
_REGISTRY: Final = _registry.REGISTRY
_REGISTRY_LOCK: Final = _registry.LOCK

rehome(globals(), __all__)
