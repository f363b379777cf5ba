"""The collections of strategy names :mod:`nemo.lens.strategies` hands out.

Each has been more than one type over the releases its users wrote code for: 0.1.0's
``registered_strategies()`` was a sorted ``list`` of names and nemo.lens 0.2's a
``name -> strategy`` mapping; v0.2.0's ``BUILTIN_STRATEGIES`` is a ``frozenset`` of
names and nemo.lens's was a mapping. So each is the older type, and reads like the
mapping too.
"""

from __future__ import annotations

from collections.abc import ItemsView, KeysView, Mapping, ValuesView
from types import MappingProxyType
from typing import Any, Generic, SupportsIndex, TypeVar, overload

__all__ = ["BuiltinStrategyNames", "StrategyNames"]

_S = TypeVar("_S")


class StrategyNames(list[str], Generic[_S]):
    """The sorted names of the registered strategies (what 0.1.0 returned).

    It also reads like the ``name -> strategy`` mapping that nemo.lens 0.2
    returned: ``names["sampled"]``, ``names.get(...)``, ``.keys()``,
    ``.values()``, ``.items()`` and ``dict(names)`` give the strategies. A
    snapshot: later registrations do not change it.
    """

    def __init__(self, registry: Mapping[str, _S]) -> None:
        super().__init__(sorted(registry))
        self._strategies: Mapping[str, _S] = MappingProxyType(dict(registry))

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

    def get(self, name: str, default: Any = None) -> Any:
        """The strategy registered under *name* when the snapshot was taken, else *default*."""
        return self._strategies.get(name, default)

    def keys(self) -> KeysView[str]:
        """The names, as a mapping's keys."""
        return self._strategies.keys()

    def values(self) -> ValuesView[_S]:
        """The strategies, in name order."""
        return MappingProxyType(dict(sorted(self._strategies.items()))).values()

    def items(self) -> ItemsView[str, _S]:
        """``(name, strategy)`` pairs, in name order."""
        return MappingProxyType(dict(sorted(self._strategies.items()))).items()


class BuiltinStrategyNames(frozenset[str], Generic[_S]):
    """The names of the built-in strategies: a ``frozenset`` (as in 0.1.0 and v0.2.0),
    which also maps each name to its strategy (``names["sampled"]``, ``.get``,
    ``.keys()``, ``.values()``, ``.items()``), as nemo.lens's earlier mapping did."""

    __slots__ = ("_strategies",)
    _strategies: Mapping[str, _S]

    def __new__(cls, strategies: Mapping[str, _S]) -> BuiltinStrategyNames[_S]:
        names = super().__new__(cls, strategies)
        names._strategies = MappingProxyType(dict(strategies))
        return names

    def __getitem__(self, name: str) -> _S:
        return self._strategies[name]

    def get(self, name: str, default: Any = None) -> Any:
        """The built-in strategy called *name*, else *default*."""
        return self._strategies.get(name, default)

    def keys(self) -> KeysView[str]:
        """The names, as a mapping's keys."""
        return self._strategies.keys()

    def values(self) -> ValuesView[_S]:
        """The built-in strategies."""
        return self._strategies.values()

    def items(self) -> ItemsView[str, _S]:
        """``(name, strategy)`` pairs."""
        return self._strategies.items()

    def __reduce__(self) -> tuple[type[BuiltinStrategyNames[_S]], tuple[dict[str, _S]]]:
        # frozenset's own would rebuild it from the names alone.
        return (type(self), (dict(self._strategies),))

    def __repr__(self) -> str:
        return f"BuiltinStrategyNames({sorted(self)!r})"
