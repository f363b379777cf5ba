"""The public contract of span-group classes: what generated span-group modules import.

The spec grammar and its class-level view (hand-written subclasses and several classes at
once included), span categories, renamed groups, and the typed primitives' run-time values.
Nothing here imports OpenTelemetry.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, ClassVar, Final, Literal, NamedTuple, NewType, Protocol, TypeAlias, TypeVar

__all__ = [
    "CATEGORIES",
    "GOODPUT",
    "IMPLICIT_PRESETS",
    "PROFILING",
    "Category",
    "ClassOrClasses",
    "DynamicSpanGroup",
    "GroupInfo",
    "MetricInfo",
    "RenamedGroup",
    "SpanGroupClass",
    "SpecStep",
    "by_name",
    "categories_for",
    "categories_of",
    "explain_for",
    "explain_spec",
    "goodput_groups",
    "new_names",
    "presets_of",
    "primitive",
    "primitives_getattr",
    "resolve_for",
    "resolve_spec",
    "spec_in_effect",
    "union_of",
    "with_implicit_presets",
    "with_old_names",
]

Category: TypeAlias = Literal["goodput", "profiling"]
"""A group's category: the two values of the ``lens.span_category`` span attribute."""

GOODPUT: Final = "goodput"
"""A semantic boundary of the job's useful or resiliency time (a step, a checkpoint)."""
PROFILING: Final = "profiling"
"""Fine-grained detail; every group is ``profiling`` unless its schema says ``goodput``."""
CATEGORIES: Final[tuple[Category, ...]] = (GOODPUT, PROFILING)

IMPLICIT_PRESETS: Final[tuple[str, ...]] = ("all", GOODPUT, PROFILING)
"""Presets every class has without declaring them: every group, the goodput groups, and
every group again (``profiling`` names the detail a profile wants: all of it)."""


class SpanGroupClass(Protocol):
    """What this module reads of a span-group class, generated or hand-written: ``ALL_GROUPS``,
    and optionally ``_PRESETS`` or ``PRESETS``, ``GOODPUT_GROUPS`` and ``RENAMED``."""

    ALL_GROUPS: ClassVar[frozenset[str]]


ClassOrClasses: TypeAlias = "type[SpanGroupClass] | Sequence[type[SpanGroupClass]]"
"""One span-group class, or several (a process hosting several consumers)."""

DynamicSpanGroup = NewType("DynamicSpanGroup", str)
"""A span-group name only known at run time, which type checkers accept as a group
(``managed_span(DynamicSpanGroup(os.environ["MY_GROUP"]), "phase")``). At run time it is
the same ``str``: a name no class defines is simply never enabled."""


class GroupInfo(NamedTuple):
    """What the schema says about one group (for listings and docs)."""

    name: str
    description: str
    fires: str
    since: str
    deprecated: str = ""
    """Deprecation note; empty when the group is current."""
    category: str = PROFILING
    """``goodput`` or ``profiling`` (see :data:`CATEGORIES`)."""
    bucket: str = ""
    """The goodput bucket a goodput group's time feeds (``productive``, ``initialization``,
    ``checkpoint_save``, ``evaluation``); empty when it feeds none."""
    sync: bool = False
    """The group marks a synchronisation point: every rank waits there for the others."""


class MetricInfo(NamedTuple):
    """What the schema's metric catalogue says about one instrument."""

    name: str
    kind: str
    """``counter``, ``up_down_counter``, ``histogram`` or ``gauge``."""
    unit: str
    description: str
    boundaries: tuple[float, ...] | None = None
    """Explicit histogram bucket boundaries (histograms only)."""
    non_negative: bool = True
    """A negative value is bad input (a duration, a count) and is not recorded."""


_Info = TypeVar("_Info", GroupInfo, MetricInfo)


def by_name(*infos: _Info) -> Mapping[str, _Info]:
    """``{info.name: info}``, in order; a later info replaces an earlier one of its name."""
    return MappingProxyType({info.name: info for info in infos})


class SpecStep(NamedTuple):
    """One applied entry of a spec: what it added and what it removed."""

    entry: str
    added: frozenset[str]
    removed: frozenset[str]


# --- the grammar ------------------------------------------------------------------------------


def _unknown(name: str, owner: str, groups: frozenset[str], presets: Mapping[str, object]) -> str:
    preset_names = sorted(presets)
    group_names = sorted(groups)
    # Both phrases callers match on: ours, which this message has always started with,
    # and 0.1.0's; then the suggestion and the lists.
    message = (
        f"unknown span group or preset {name!r} for {owner} "
        f"(Unknown span group or preset: {name!r})"
    )
    import difflib  # only here: an unknown name is a set-up error, not the import path

    found = difflib.get_close_matches(name, preset_names + group_names, n=1, cutoff=0.6)
    if found:
        message += f"; did you mean {found[0]!r}?"
    return (
        f"{message}\n  valid presets: {', '.join(preset_names)}"
        f"\n  valid groups: {', '.join(group_names)}"
    )


def explain_spec(
    spec: str,
    *,
    owner: str,
    groups: frozenset[str],
    presets: Mapping[str, frozenset[str]],
    renamed: Mapping[str, str],
) -> tuple[frozenset[str], tuple[SpecStep, ...]]:
    """Resolve *spec* and report, entry by entry, what each one changed.

    A spec is comma-separated entries, each trimmed and lower-cased, applied left to right:
    a preset or a group is added, ``-name`` removes it; empty entries are ignored. Returns
    the enabled set and one :class:`SpecStep` per non-empty entry. Raises
    :class:`ValueError` for an unknown name (listing the valid names and the closest match)
    and :class:`TypeError` when *spec* is not a string.
    """
    if not isinstance(spec, str):
        raise TypeError(
            f"span-group spec must be a str such as 'default' or 'per_step,-optimizer', "
            f"got {type(spec).__name__}"
        )
    enabled: set[str] = set()
    steps: list[SpecStep] = []
    for raw in spec.split(","):
        entry = raw.strip().lower()
        if not entry:
            continue
        remove = entry.startswith("-")
        name = entry[1:].strip() if remove else entry
        if not name:
            raise ValueError(
                f"span-group spec entry {raw.strip()!r} removes nothing: "
                "write '-' followed by a group or preset name, e.g. 'all,-layer'"
            )
        if name in renamed:
            new = renamed[name]
            warnings.warn(
                f"span group {name!r} was renamed to {new!r}; write {new!r} in the spec",
                DeprecationWarning,
                stacklevel=3,
            )
            name = new
        if name in presets:
            members = presets[name]
        elif name in groups:
            members = frozenset((name,))
        else:
            raise ValueError(_unknown(name, owner, groups, presets))
        if remove:
            changed = frozenset(members & enabled)
            enabled -= members
            steps.append(SpecStep(entry, frozenset(), changed))
        else:
            changed = frozenset(members - enabled)
            enabled |= members
            steps.append(SpecStep(entry, changed, frozenset()))
    return frozenset(enabled), tuple(steps)


def spec_in_effect(spec: str) -> str:
    """The spec a configuration's *spec* stands for: itself, or ``"default"`` when it names
    no entry (``""``, blanks, commas only), as an empty ``NEMO_LENS_SPAN_GROUPS`` is unset.
    The configuration (``NemoLensConfig.span_groups``) and ``nemo-lens groups --spec`` read
    a spec through it; the class-level grammar (``SpanGroup.resolve("")``) does not.
    """
    if isinstance(spec, str) and not spec.replace(",", "").strip():
        return "default"
    return spec


def resolve_spec(
    spec: str,
    *,
    owner: str,
    groups: frozenset[str],
    presets: Mapping[str, frozenset[str]],
    renamed: Mapping[str, str],
) -> frozenset[str]:
    """Resolve *spec* to the frozenset of enabled group names (see :func:`explain_spec`)."""
    enabled, _ = explain_spec(spec, owner=owner, groups=groups, presets=presets, renamed=renamed)
    return enabled


# --- classes: generated, hand-written, and several at once ------------------------------------


def _explicit_presets(cls: type[SpanGroupClass]) -> Mapping[str, frozenset[str]]:
    # The nearest class that declares presets decides: a generated class declares
    # PRESETS (and _PRESETS, the same mapping); a hand-written 0.1.0-style subclass
    # declares only _PRESETS, which must win over the PRESETS it inherits.
    for klass in cls.__mro__:
        own = vars(klass)
        for attribute in ("_PRESETS", "PRESETS"):
            if attribute in own:
                presets: Mapping[str, frozenset[str]] = own[attribute]
                return presets
    return {}


def goodput_groups(cls: type[SpanGroupClass]) -> frozenset[str]:
    """The groups of *cls* whose category is ``goodput``."""
    declared: frozenset[str] = getattr(cls, "GOODPUT_GROUPS", frozenset())
    return declared & cls.ALL_GROUPS


def presets_of(cls: type[SpanGroupClass]) -> Mapping[str, frozenset[str]]:
    """Every preset of *cls*: the ones it declares, plus ``all``, ``goodput`` and ``profiling``.

    A hand-written class that declares ``_PRESETS`` (the 0.1.0 pattern) resolves against
    its own presets, never the base class's; ``all`` is always its own ``ALL_GROUPS``.
    """
    presets = {name: frozenset(members) for name, members in _explicit_presets(cls).items()}
    presets.setdefault(GOODPUT, goodput_groups(cls))
    presets.setdefault(PROFILING, cls.ALL_GROUPS)
    presets["all"] = cls.ALL_GROUPS
    return MappingProxyType(presets)


def with_implicit_presets(
    declared: Mapping[str, frozenset[str]], *, every: frozenset[str], goodput: frozenset[str]
) -> Mapping[str, frozenset[str]]:
    """A generated class's ``PRESETS``: the presets its schema declares, then the ones every
    class has, ``goodput`` (its goodput groups), ``profiling`` and ``all`` (every group)."""
    return MappingProxyType({**declared, GOODPUT: goodput, PROFILING: every, "all": every})


def categories_of(cls: type[SpanGroupClass]) -> Mapping[str, str]:
    """``{group: "goodput" | "profiling"}`` for every group of *cls*."""
    goodput = goodput_groups(cls)
    return MappingProxyType(
        {group: GOODPUT if group in goodput else PROFILING for group in sorted(cls.ALL_GROUPS)}
    )


def _classes(classes: ClassOrClasses) -> tuple[type[SpanGroupClass], ...]:
    return (classes,) if isinstance(classes, type) else tuple(classes)


# What a spec is resolved against for one class or several: their owner's name (for
# messages), every group, every preset and every renamed group's new name. A plain
# tuple: a NamedTuple class costs more to create at import than this is worth.
_Union: TypeAlias = tuple[str, frozenset[str], Mapping[str, frozenset[str]], Mapping[str, str]]


def union_of(classes: ClassOrClasses) -> _Union:
    """What a spec is resolved against for *classes*: ``(owner, groups, presets, renamed)``."""
    chosen = _classes(classes)
    if not chosen:
        raise ValueError("span-group classes: name at least one class, e.g. (SpanGroup,)")
    groups: frozenset[str] = frozenset()
    presets: dict[str, frozenset[str]] = {}
    renamed: dict[str, str] = {}
    for cls in chosen:
        groups |= cls.ALL_GROUPS
        # Same-named presets union: `per_step` of an RL job with a Megatron backend
        # is RL's per_step and Megatron's per_step.
        for name, members in presets_of(cls).items():
            presets[name] = presets.get(name, frozenset()) | members
        for old, new in getattr(cls, "RENAMED", {}).items():
            renamed.setdefault(old, new)
    owner = " + ".join(cls.__name__ for cls in chosen)
    return owner, groups, presets, renamed


def explain_for(spec: str, classes: ClassOrClasses) -> tuple[frozenset[str], tuple[SpecStep, ...]]:
    """:func:`explain_spec` against one class or the union of several (see :func:`resolve_for`)."""
    owner, groups, presets, renamed = union_of(classes)
    return explain_spec(spec, owner=owner, groups=groups, presets=presets, renamed=renamed)


def resolve_for(spec: str, classes: ClassOrClasses) -> frozenset[str]:
    """Resolve *spec* against one span-group class, or against the union of several.

    With several classes, a spec may name any group of any of them, and a preset name
    selects the union of that preset in every class that has it. An unknown name is a
    :class:`ValueError` naming the valid names of all of them.
    """
    enabled, _ = explain_for(spec, classes)
    return enabled


def categories_for(classes: ClassOrClasses) -> Mapping[str, str]:
    """The category of every group of one class or several; the first class to name a group
    decides its category (so put the job's main consumer first)."""
    merged: dict[str, str] = {}
    for cls in _classes(classes):
        for group, category in categories_of(cls).items():
            merged.setdefault(group, category)
    return MappingProxyType(merged)


# --- renamed groups -----------------------------------------------------------------------------

# Old name -> the new names it was renamed to (one per class that renamed it).
# Filled in as span-group classes are created; read when the enabled set is set.
_renamed: dict[str, set[str]] = {}


class RenamedGroup:
    """The class attribute that a renamed group's old constant becomes.

    Reading it (``SpanGroup.ITERATION``) warns (:class:`DeprecationWarning`, at the reading
    line) and gives the new group's name, so old code keeps tracing the same spans.
    Creating one records the rename for :func:`with_old_names`.
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


def new_names(old: str) -> frozenset[str]:
    """The names a renamed group's old name *old* stands for now (empty when not renamed;
    several when classes renamed it differently)."""
    return frozenset(_renamed.get(old, ()))


def with_old_names(groups: Iterable[str]) -> frozenset[str]:
    """Return ``groups`` plus the old name of every renamed group it enables, so
    ``managed_span("old_name", ...)`` stays one ``frozenset`` test (renames of the classes
    imported so far)."""
    groups = frozenset(groups)
    old_names = {old for old, new in _renamed.items() if not new.isdisjoint(groups)}
    return groups | old_names if old_names else groups


# --- the typed primitives of generated modules ------------------------------------------------

_PRIMITIVES: Final[Mapping[str, str]] = MappingProxyType(
    {
        "managed_span": "nemo.lens.helpers",
        "trace_fn": "nemo.lens.helpers",
        "is_span_group_enabled": "nemo.lens.state",
    }
)


def primitive(module: str, name: str) -> object:
    """The run-time value of a span-group module's group-checked primitive ``name``: the
    very function nemo.lens exports, imported on first use (generated modules declare them
    with their own groups for type checkers only)."""
    source = _PRIMITIVES.get(name)
    if source is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    value: object = getattr(importlib.import_module(source), name)
    return value


def primitives_getattr(module: str, namespace: dict[str, Any]) -> Callable[[str], object]:
    """The module ``__getattr__`` of a generated span-group module: serves each primitive
    (:func:`primitive`) on first use and stores it in *namespace*, its ``globals()``."""

    def __getattr__(name: str) -> object:
        value = primitive(module, name)
        namespace[name] = value
        return value

    return __getattr__
