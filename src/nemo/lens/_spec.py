"""The span-group spec grammar shared by every generated span-group class.

A spec is what a job owner writes in ``NEMO_LENS_SPAN_GROUPS``: comma-separated
entries, each trimmed and lower-cased, applied left to right. An entry names a
preset (its groups are added) or a group (added); ``-name`` removes the group or
the preset's groups. Empty entries are ignored and the empty spec selects nothing.

Resolution happens once, at configuration time; the hot path only ever sees the
resulting ``frozenset``. The generated classes hold the data (groups, presets,
renames); this module holds the one implementation of the grammar, so every
class, including consumer classes generated in other repositories, resolves
specs the same way.
"""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Mapping
from typing import NamedTuple

__all__ = ["GroupInfo", "SpecStep", "explain_spec", "resolve_spec"]


class GroupInfo(NamedTuple):
    """What the schema says about one group (for listings and docs)."""

    name: str
    description: str
    fires: str
    since: str
    deprecated: str = ""
    """Deprecation note; empty when the group is current."""


class SpecStep(NamedTuple):
    """One applied entry of a spec: what it added and what it removed."""

    entry: str
    added: frozenset[str]
    removed: frozenset[str]


def _closest(word: str, candidates: list[str]) -> str | None:
    found = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return found[0] if found else None


def _unknown(name: str, owner: str, groups: frozenset[str], presets: Mapping[str, object]) -> str:
    preset_names = sorted(presets)
    group_names = sorted(groups)
    message = f"unknown span group or preset {name!r} for {owner}"
    suggestion = _closest(name, preset_names + group_names)
    if suggestion is not None:
        message += f"; did you mean {suggestion!r}?"
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

    Returns the enabled set and one :class:`SpecStep` per non-empty entry.
    Raises :class:`ValueError` for an unknown name (listing the valid names and
    the closest match) and :class:`TypeError` when *spec* is not a string.
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
