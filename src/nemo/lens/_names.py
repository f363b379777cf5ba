"""Span-group names for type checkers, and the run-time side of renamed groups.

The generated span-group modules give mypy and pyright the schema's vocabulary
as ``Literal`` types, so a misspelled group is an error at the call site. This
module holds the hand-written pieces they share:

- :data:`DynamicSpanGroup`, the one typed way to pass a group name that is only
  known at run time (read from a config file, built from a loop variable);
- :class:`RenamedGroup`, the class attribute a renamed group's old constant
  becomes: reading it warns and gives the new name;
- :func:`signature_of`, which gives the primitives of :mod:`nemo.lens.helpers`
  and :mod:`nemo.lens.state` the group-checked signatures generated into
  :mod:`nemo.lens._signatures`, at no run-time cost;
- the process-wide record of renamed groups, so the enabled set can also hold
  the old names of enabled groups and an old name keeps working on the hot path
  without any per-call work.

Nothing here imports OpenTelemetry.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Final, NewType, TypeVar

__all__ = ["DynamicSpanGroup", "RenamedGroup", "primitive", "signature_of", "with_old_names"]

_F = TypeVar("_F")

DynamicSpanGroup = NewType("DynamicSpanGroup", str)
"""A span-group name only known at run time, which type checkers accept as a group.

Group-taking primitives accept the schema's names as literals or constants; a
plain ``str`` is a type error there, because nothing proves it names a group.
Wrap it once, where it enters the program::

    group = DynamicSpanGroup(os.environ["MY_GROUP"])
    with managed_span(group, "phase"): ...

At run time this is the very same ``str`` (no copy, no check): a name no class
defines is simply never enabled.
"""


# Old name -> the new names it was renamed to (one per class that renamed it).
# Filled in as span-group classes are created; read when the enabled set is set.
_renamed: dict[str, set[str]] = {}


class RenamedGroup:
    """The class attribute that a renamed group's old constant becomes.

    Reading it (``SpanGroup.ITERATION``) emits a :class:`DeprecationWarning`
    with ``message`` pointing at the reading line, and gives the new group's
    name, so old code keeps tracing the same spans. Type checkers see a
    generated subclass whose ``__get__`` is marked deprecated, and report each
    use. Creating one records the rename for :func:`with_old_names`.
    """

    __slots__ = ("_message", "_new", "_old")

    def __init__(self, old: str, new: str, message: str) -> None:
        self._old = old
        self._new = new
        self._message = message
        _renamed.setdefault(old, set()).add(new)

    def __get__(self, instance: object, owner: type[object] | None = None) -> str:
        warnings.warn(self._message, DeprecationWarning, stacklevel=2)
        return self._new

    def __repr__(self) -> str:
        return f"<span group {self._old!r}, renamed to {self._new!r}>"


def with_old_names(groups: frozenset[str]) -> frozenset[str]:
    """Return ``groups`` plus the old name of every renamed group it enables.

    Used where the enabled set is stored, so ``managed_span("old_name", ...)``
    stays one ``frozenset`` test. Only renames of classes imported so far are
    known; setting up with a span-group class imports it first.
    """
    old_names = {old for old, new in _renamed.items() if not new.isdisjoint(groups)}
    return groups | old_names if old_names else groups


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


_PRIMITIVES: Final[Mapping[str, str]] = {
    "managed_span": "nemo.lens.helpers",
    "trace_fn": "nemo.lens.helpers",
    "is_span_group_enabled": "nemo.lens.state",
}


def primitive(module: str, name: str) -> object:
    """The run-time value of a span-group module's group-checked primitive ``name``.

    Generated consumer modules declare ``managed_span``, ``trace_fn`` and
    ``is_span_group_enabled`` for type checkers with their own groups, and
    serve them from a module ``__getattr__`` that calls this: the value is the
    very function of :mod:`nemo.lens.helpers` or :mod:`nemo.lens.state`,
    imported on first use so importing a span-group module stays light.
    """
    source = _PRIMITIVES.get(name)
    if source is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    value: object = getattr(importlib.import_module(source), name)
    return value
