"""Public names that look public, and static group-checked signatures at no run-time cost.

:func:`signature_of` gives the primitives the generated declarations of
:mod:`nemo.lens._signatures` (the schema's group names as ``Literal`` types) for type checkers
only; :func:`rehome` makes re-exported names say the module users import them from.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable, MutableMapping
from typing import TypeVar

__all__ = ["rehome", "signature_of"]

_F = TypeVar("_F")


def signature_of(signature: _F) -> Callable[[_F], _F]:
    """Give the decorated function the static type of ``signature``; at run time, nothing.

    ``signature`` is a declaration that exists only for type checkers (its
    run-time value is a placeholder). The decorated function is returned
    unchanged, so the hot path pays nothing. Type checkers check that the
    implementation accepts everything the signature does, and then check every
    caller against the signature: its group type, and ``@deprecated`` overloads
    for renamed groups.
    """

    def keep(function: _F) -> _F:
        return function

    return keep


def rehome(namespace: MutableMapping[str, object], names: Iterable[str]) -> None:
    """Make the functions and classes *names* of a public module's *namespace* say they
    are that module's (``__module__``), as httpx does for what it re-exports.

    The implementations live in private modules (``nemo.lens._core``); ``help()``,
    reprs, tracebacks and code that checks ``managed_span.__module__`` then show the
    module users import them from. Pickling by reference still finds them there.
    """
    module = namespace["__name__"]
    for name in names:
        value = namespace[name]
        if isinstance(value, (types.FunctionType, type)):
            value.__module__ = str(module)
