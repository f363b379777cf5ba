"""The run-time span-group registry (upstream's ``SpanRegistry``), one system with the schema.

Namespaces register groups and presets; a generated consumer module registers its class
when imported. ``SpanRegistry.resolve`` reads a spec against all of them and reports what
it could not resolve instead of raising. See docs/span-groups.md for the two resolutions.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Final

from nemo.lens.spec import (
    ClassOrClasses,
    SpanGroupClass,
    SpecStep,
    explain_spec,
    presets_of,
    union_of,
)

__all__ = [
    "ALL",
    "SpanRegistry",
    "explain_job_spec",
    "forget_hand_registered",
    "register_span_group_class",
    "resolve_job_spec",
]

ALL: Final = "all"
"""The reserved preset: every group registered in the process."""

_LOG = logging.getLogger("nemo.lens.registry")

# Guards the three tables together; never held while calling into the enabled set
# (that side holds its own lock while it resolves here: the order is state -> registry).
_LOCK = threading.Lock()
_groups: dict[str, frozenset[str]] = {}
_presets: dict[str, dict[str, frozenset[str]]] = {}
# Namespaces registered from a span-group class: their groups are a vocabulary shared by
# design (every consumer class inherits the base groups), so claiming one never warns.
_vocabulary: set[str] = set()


def _name(value: object, what: str, namespace: str) -> str:
    if not isinstance(value, str):
        raise TypeError(
            f"SpanRegistry.register({namespace!r}): a {what} must be a str, "
            f"got {type(value).__name__} ({value!r})"
        )
    name = value.strip().lower()
    if not name:
        raise ValueError(
            f"SpanRegistry.register({namespace!r}): a {what} name is empty; "
            "name each group, e.g. 'step' or 'megatron.job'"
        )
    if name == ALL:
        raise ValueError(
            f"SpanRegistry.register({namespace!r}): {ALL!r} is reserved (it means every "
            f"registered group) and cannot be a {what}; pick another name"
        )
    return name


def _names(values: Iterable[str], what: str, namespace: str) -> frozenset[str]:
    if isinstance(values, str):
        raise TypeError(
            f"SpanRegistry.register({namespace!r}): {what}s must be an iterable of names, "
            f"not a str; use [{values!r}] for one"
        )
    return frozenset(_name(value, what, namespace) for value in values)


class SpanRegistry:
    """The span groups and presets of every namespace registered in this process.

    Group names are one flat space (dotted names such as ``nvrx.ckpt.phases`` are fine);
    presets of the same name union across namespaces; ``all`` covers every group.
    """

    @classmethod
    def register(
        cls,
        namespace: str,
        groups: Iterable[str],
        presets: Mapping[str, Iterable[str]] | None = None,
        *,
        allow_override: bool = False,
    ) -> None:
        """Register *namespace*'s *groups* and *presets* (replacing it with *allow_override*).

        A preset may name groups of other namespaces, registered now or later. Raises
        :class:`ValueError` for an empty namespace or name, the reserved ``all``, or a
        namespace already registered without ``allow_override=True``.
        """
        _register(namespace, groups, presets, allow_override=allow_override, vocabulary=False)

    @classmethod
    def unregister(cls, namespace: str) -> None:
        """Remove *namespace*; :class:`ValueError` when it is not registered."""
        with _LOCK:
            if namespace not in _groups:
                raise ValueError(
                    f"span-group namespace {namespace!r} is not registered; registered: "
                    f"{', '.join(sorted(_groups)) or '(none)'}"
                )
            del _groups[namespace]
            del _presets[namespace]
            _vocabulary.discard(namespace)
        _notify()

    @classmethod
    def clear(cls) -> None:
        """Remove every namespace, the generated vocabulary's too (tests)."""
        with _LOCK:
            _groups.clear()
            _presets.clear()
            _vocabulary.clear()
        _notify()

    @classmethod
    def groups(cls) -> frozenset[str]:
        """Every registered group, across namespaces."""
        with _LOCK:
            return _every_group()

    @classmethod
    def namespaces(cls) -> list[str]:
        """The registered namespaces, sorted."""
        with _LOCK:
            return sorted(_groups)

    @classmethod
    def namespace_groups(cls) -> Mapping[str, frozenset[str]]:
        """``{namespace: its groups}``, sorted by namespace (for listings)."""
        with _LOCK:
            return MappingProxyType({ns: _groups[ns] for ns in sorted(_groups)})

    @classmethod
    def presets(cls) -> dict[str, frozenset[str]]:
        """Preset name -> its groups, unioned across namespaces, ``all`` included.

        Only registered groups count: a member nobody registered yet is left out until
        its namespace registers.
        """
        with _LOCK:
            return _merged_presets()

    @classmethod
    def resolve(cls, spec: str) -> tuple[frozenset[str], frozenset[str]]:
        """Resolve *spec* against the registry: ``(enabled, pending)``.

        Entries are comma-separated, trimmed and lower-cased: a preset or a group adds,
        ``-name`` removes. An entry that names nothing registered does not raise: it is
        returned in *pending* (its namespace may register later, or live in another
        process of the job).
        """
        if not isinstance(spec, str):
            raise TypeError(
                f"span-group spec must be a str such as 'default' or 'all,-layer', "
                f"got {type(spec).__name__}"
            )
        with _LOCK:
            presets = _merged_presets()
            known = _every_group()
        enabled: set[str] = set()
        pending: set[str] = set()
        for raw in spec.split(","):
            entry = raw.strip().lower()
            remove = entry.startswith("-")
            name = entry[1:].strip() if remove else entry
            if not name:
                continue
            members = presets.get(name)
            if members is None:
                members = frozenset((name,)) if name in known else None
            if members is None:
                pending.add(entry)
            elif remove:
                enabled -= members
            else:
                enabled |= members
        return frozenset(enabled), frozenset(pending)


def forget_hand_registered() -> None:
    """Remove the namespaces registered by hand, keep the generated vocabulary's: what a
    fresh import has (``nemo.lens.testing.reset``)."""
    with _LOCK:
        for namespace in [ns for ns in _groups if ns not in _vocabulary]:
            del _groups[namespace]
            del _presets[namespace]
    _notify()


def register_span_group_class(cls: type[SpanGroupClass], namespace: str | None = None) -> None:
    """Register a span-group class's groups and presets under *namespace* (default: its
    module). Generated modules call it when imported; calling it again replaces."""
    presets = {name: members for name, members in presets_of(cls).items() if name != ALL}
    _register(
        cls.__module__ if namespace is None else namespace,
        cls.ALL_GROUPS,
        presets,
        allow_override=True,
        vocabulary=True,
    )


def explain_job_spec(
    spec: str, classes: ClassOrClasses
) -> tuple[frozenset[str], tuple[SpecStep, ...]]:
    """Resolve a job's spec (``NemoLensConfig.span_groups``) against *classes* and every
    namespace registered by hand, entry by entry (see :func:`resolve_job_spec`)."""
    owner, groups, presets, renamed = union_of(classes)
    with _LOCK:
        hand = [ns for ns in sorted(_groups) if ns not in _vocabulary]
        extra = frozenset().union(*(_groups[ns] for ns in hand))
        extra_presets: dict[str, frozenset[str]] = {}
        for ns in hand:
            for name, members in _presets[ns].items():
                extra_presets[name] = extra_presets.get(name, frozenset()) | members
        every = _every_group()
    if hand:
        merged = dict(presets)
        for name, members in extra_presets.items():
            merged[name] = merged.get(name, frozenset()) | (members & every)
        merged[ALL] = merged[ALL] | extra
        presets, groups = merged, groups | extra
        owner = " + ".join((owner, *hand))
    return explain_spec(spec, owner=owner, groups=groups, presets=presets, renamed=renamed)


def resolve_job_spec(spec: str, classes: ClassOrClasses) -> frozenset[str]:
    """The groups a job's spec enables: *classes* resolve it as their ``resolve`` does, and
    every namespace registered by hand joins them (its groups, its presets unioned with
    same-named ones, and ``all``). An unknown name is a :class:`ValueError`, as there."""
    enabled, _ = explain_job_spec(spec, classes)
    return enabled


def _register(
    namespace: str,
    groups: Iterable[str],
    presets: Mapping[str, Iterable[str]] | None,
    *,
    allow_override: bool,
    vocabulary: bool,
) -> None:
    if not isinstance(namespace, str) or not namespace.strip():
        raise ValueError(
            f"SpanRegistry.register(): the namespace must be a non-empty str such as "
            f"'megatron', got {namespace!r}"
        )
    names = _names(groups, "group", namespace)
    if presets is not None and not isinstance(presets, Mapping):
        raise TypeError(
            f"SpanRegistry.register({namespace!r}): presets must be a mapping of preset "
            f"name to group names, got {type(presets).__name__}"
        )
    table = {
        _name(name, "preset", namespace): _names(members, "preset member", namespace)
        for name, members in (presets or {}).items()
    }
    with _LOCK:
        if namespace in _groups and not allow_override:
            raise ValueError(
                f"span-group namespace {namespace!r} is already registered; pass "
                "allow_override=True to replace it, or unregister it first"
            )
        clashes = {
            other: sorted(owned & names)
            for other, owned in _groups.items()
            if other != namespace and other not in _vocabulary and owned & names
        }
        _groups[namespace] = names
        _presets[namespace] = table
        if vocabulary:
            _vocabulary.add(namespace)
        else:
            _vocabulary.discard(namespace)
        known = _every_group()
    # Logged outside the lock: a handler is user code.
    if not allow_override and not vocabulary:
        for other, shared in sorted(clashes.items()):
            _LOG.warning(
                "span-group namespace %r registers %s, which namespace %r registered too: "
                "one name is one gate, so enabling it enables both; rename, or pass "
                "allow_override=True if sharing is intended",
                namespace,
                shared,
                other,
            )
    for preset, members in sorted(table.items()):
        missing = members - known
        if missing:
            _LOG.warning(
                "preset %r of span-group namespace %r names %s, which no namespace has "
                "registered; they count once their namespace registers (a typo never will)",
                preset,
                namespace,
                sorted(missing),
            )
    _notify()


def _every_group() -> frozenset[str]:
    return frozenset().union(*_groups.values())


def _merged_presets() -> dict[str, frozenset[str]]:
    every = _every_group()
    merged: dict[str, frozenset[str]] = {}
    for table in _presets.values():
        for name, members in table.items():
            merged[name] = merged.get(name, frozenset()) | (members & every)
    merged[ALL] = every
    return merged


def _notify() -> None:
    # The enabled set lives with OpenTelemetry's side of the state; when it was never
    # imported no spec is stored, so there is nothing to re-resolve (and this module stays
    # importable without OpenTelemetry, as the generated modules that import it are).
    state = sys.modules.get("nemo.lens._core.state")
    if state is not None:
        state.refresh_enabled_span_groups()
