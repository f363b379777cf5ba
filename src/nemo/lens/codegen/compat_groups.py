"""Compatibility of one class's groups: added, removed, renamed, deprecated, and changes to
how often a group fires, its category and its goodput bucket.

Each change is reported at the class that made it: a base group's change once, at
``SpanGroup``, not again at every consumer that inherits it; a consumer's own view of a
base group (``categories = {...}``) at that consumer.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from nemo.lens.codegen.compat_model import (
    BREAKING,
    COMPATIBLE,
    WARNING,
    Finding,
    Location,
    Pair,
    presets,
    vocabulary,
)
from nemo.lens.codegen.model import (
    ALL_PRESET,
    GOODPUT,
    PRODUCTION_PRESET,
    TIER_MEANING,
    TIERS,
    Group,
    GroupClass,
)

__all__ = ["NOTHING_TO_DO", "group_findings", "likely_renames"]

NOTHING_TO_DO = "nothing to do"
"""The fix of a compatible change."""
DESCRIPTION_SIMILAR = 0.75
NAME_SIMILAR = 0.7


def _deprecated(group: Group) -> bool:
    return bool(group.deprecated_note or group.renamed_to)


def _similarity(old: Group, new: Group) -> float:
    """How alike two groups' descriptions or names are (0 to 1); 0 when neither is alike
    enough to suggest a rename."""
    description = difflib.SequenceMatcher(
        None, old.description.lower(), new.description.lower()
    ).ratio()
    name = difflib.SequenceMatcher(None, old.name, new.name).ratio()
    old_words, new_words = set(old.name.split("_")), set(new.name.split("_"))
    # `step` -> `train_step`: one name holds all the other's words.
    contained = NAME_SIMILAR if old_words <= new_words or new_words <= old_words else 0.0
    best = max(
        description if description >= DESCRIPTION_SIMILAR else 0.0,
        name if name >= NAME_SIMILAR else 0.0,
        contained,
    )
    return best


def likely_renames(
    removed: list[Group], added: list[Group], old_cls: GroupClass, new_cls: GroupClass
) -> dict[str, Group]:
    """``{removed name: added group}`` for the pairs that look like a rename: the same tier
    and category, and a similar description or name. Each group pairs at most once, the
    most similar pairs first."""
    candidates = []
    for old in removed:
        for new in added:
            if old.fires != new.fires or old_cls.category(old.name) != new_cls.category(new.name):
                continue
            score = _similarity(old, new)
            if score:
                candidates.append((-score, old.name, new.name, new))
    matched: dict[str, Group] = {}
    taken: set[str] = set()
    for _, old_name, new_name, new in sorted(candidates, key=lambda c: c[:3]):
        if old_name not in matched and new_name not in taken:
            matched[old_name] = new
            taken.add(new_name)
    return matched


def _removed(pair: Pair, group: Group, renamed: Group | None) -> Finding:
    name, title = group.name, pair.title
    subject = pair.subject("groups", name)
    old = pair.old.group(pair.old_cls, name)
    if _deprecated(group):
        return Finding(
            "deprecated_group_removed",
            COMPATIBLE,
            subject,
            f"group {name!r} of {title} was removed after its deprecation",
            NOTHING_TO_DO,
            old,
            None,
        )
    keep = f"keep [{subject}] for a release with deprecated = {{ note = "
    if renamed is not None:
        return Finding(
            "group_renamed",
            BREAKING,
            subject,
            f"group {name!r} of {title} was removed and {renamed.name!r} added: looks like a "
            f"rename of {name!r} to {renamed.name!r}; specs and code that name {name!r} stop "
            "working",
            f'{keep}"Renamed to {renamed.name}.", renamed_to = "{renamed.name}" }}: specs '
            f"naming {name!r} then keep working (with a DeprecationWarning) and its constant "
            "becomes an alias",
            old,
            pair.new.group(pair.new_cls, renamed.name),
        )
    return Finding(
        "group_removed",
        BREAKING,
        subject,
        f"group {name!r} of {title} was removed without a deprecation; specs, presets and "
        f"code that name {name!r} stop working",
        f'{keep}"...", renamed_to = "..." }} (renamed_to names the group that replaces it, '
        "if one does), and remove it a release later",
        old,
        None,
    )


def _holders(pair: Pair, name: str) -> dict[str, list[str]]:
    """``{preset: [class, ...]}``: the declared presets of the new schema that hold group
    *name* (every class's, for a base group)."""
    classes: list[GroupClass] = [pair.new_cls]
    if name in {g.name for g in pair.new.schema.base.groups}:
        classes = list(pair.new.classes)
    held: dict[str, list[str]] = {}
    for cls in classes:
        for preset in presets(cls).values():
            if preset.name != ALL_PRESET and name in preset.members:
                held.setdefault(preset.name, []).append(cls.class_name)
    order = sorted(held, key=lambda p: (p != PRODUCTION_PRESET, p))
    return {p: held[p] for p in order}


def _fires(pair: Pair, old: Group, new: Group) -> Finding:
    name = new.name
    before, after = TIERS.index(old.fires), TIERS.index(new.fires)
    held = _holders(pair, name) if after > before else {}
    change = (
        f"group {name!r} of {pair.title} now fires {new.fires} ({TIER_MEANING[new.fires]}), "
        f"was {old.fires} ({TIER_MEANING[old.fires]})"
    )
    where = (
        pair.old.group(pair.old_cls, name, "fires"),
        pair.new.group(pair.new_cls, name, "fires"),
    )
    subject = pair.subject("groups", name)
    if not held:
        what = "less often" if after < before else "more often, and no preset holds it"
        return Finding(
            "fires_changed", COMPATIBLE, subject, f"{change}: {what}", NOTHING_TO_DO, *where
        )
    listing = ", ".join(f"{p} ({', '.join(c)})" for p, c in held.items())
    production = PRODUCTION_PRESET in held
    message = f"{change}; jobs that run the presets holding it emit more spans: {listing}; " + (
        f"{PRODUCTION_PRESET!r} is the one that matters: production jobs run it"
        if production
        else f"{PRODUCTION_PRESET!r} does not hold it, so production jobs are unaffected"
    )
    if production:
        fix = (
            f"if it fires that often, move it from {PRODUCTION_PRESET!r} to 'per_step' (a "
            f"frequent group stays in {PRODUCTION_PRESET!r} only with an allow_frequent "
            f'reason); otherwise keep fires = "{old.fires}"'
        )
    else:
        fix = (
            "if it fires that often, tell job owners of these presets in the release notes "
            f'that they emit more spans; otherwise keep fires = "{old.fires}"'
        )
    return Finding("fires_changed", WARNING, subject, message, fix, *where)


def _bucket(cls: GroupClass, group: Group) -> str:
    """The goodput bucket *group*'s time feeds in *cls*: none unless it is goodput there."""
    return group.bucket if cls.category(group.name) == GOODPUT else ""


def _goodput(pair: Pair, old: Group, new: Group, inherited: bool) -> Iterator[Finding]:
    """Category and bucket: what `nemo-lens goodput` accounts the group's time to."""
    name = new.name
    old_category, new_category = pair.old_cls.category(name), pair.new_cls.category(name)
    old_bucket, new_bucket = _bucket(pair.old_cls, old), _bucket(pair.new_cls, new)
    if inherited:
        # A base group seen from a consumer: only the consumer's own view is its change.
        base_old, base_new = pair.old.schema.base, pair.new.schema.base
        if (base_old.category(name), base_new.category(name)) == (old_category, new_category):
            return
        subject = pair.subject("categories", name)
    else:
        subject = pair.subject("groups", name)

    comparable = "goodput figures of runs before and after it are not comparable"
    if old_category != new_category:
        moves = []
        if old_bucket:
            moves.append(f"its time no longer feeds the {old_bucket!r} bucket")
        if new_bucket:
            moves.append(f"its time now feeds the {new_bucket!r} bucket")
        # A group without a bucket is transparent to the accounting, but not to dashboards
        # that read the spans' category, nor to jobs that run the `goodput` preset.
        effects = [f"its spans' category and the {GOODPUT!r} preset change"]
        if moves:
            effects.append(f"`nemo-lens goodput` figures move: {'; '.join(moves)}; {comparable}")
        yield Finding(
            "category_changed",
            WARNING,
            subject,
            f"group {name!r} of {pair.title} is now {new_category} (was {old_category}): "
            + "; ".join(effects),
            f"if intended, say so in the release notes; otherwise make it {old_category} again",
            *_where(pair, name, "category", inherited),
        )
    elif old_bucket != new_bucket:
        before = repr(old_bucket) if old_bucket else "none"
        after = f"the {new_bucket!r} bucket" if new_bucket else "no bucket"
        restore = f'restore bucket = "{old_bucket}"' if old_bucket else "remove the bucket"
        yield Finding(
            "bucket_changed",
            WARNING,
            subject,
            f"group {name!r} of {pair.title} now feeds {after} (was {before}): `nemo-lens "
            f"goodput` figures move between buckets: {comparable}",
            f"if intended, say so in the release notes; otherwise {restore}",
            *_where(pair, name, "bucket", inherited),
        )


def _where(
    pair: Pair, name: str, key: str, inherited: bool
) -> tuple[Location | None, Location | None]:
    """Both sides' line of group *name*'s *key*; a consumer's view of a base group: its
    ``categories`` entry, where it has one."""
    found = []
    for side, cls in ((pair.old, pair.old_cls), (pair.new, pair.new_cls)):
        view = side.first(cls, ("categories", name)) if inherited else None
        found.append(view or side.group(cls, name, key))
    return found[0], found[1]


def _deprecation(pair: Pair, old: Group, new: Group) -> Iterator[Finding]:
    name = new.name
    subject = pair.subject("groups", name)
    where = (
        pair.old.group(pair.old_cls, name, "deprecated"),
        pair.new.group(pair.new_cls, name, "deprecated"),
    )
    if not _deprecated(old) and _deprecated(new):
        renamed = f" (renamed to {new.renamed_to!r})" if new.renamed_to else ""
        yield Finding(
            "group_deprecated",
            COMPATIBLE,
            subject,
            f"group {name!r} of {pair.title} is deprecated{renamed}: specs naming it still "
            "work, with a DeprecationWarning",
            NOTHING_TO_DO,
            *where,
        )
    elif _deprecated(old) and not _deprecated(new):
        yield Finding(
            "deprecation_removed",
            COMPATIBLE,
            subject,
            f"group {name!r} of {pair.title} is no longer deprecated",
            NOTHING_TO_DO,
            *where,
        )
    elif old.renamed_to and old.renamed_to != new.renamed_to:
        now = repr(new.renamed_to) if new.renamed_to else f"{name!r} itself"
        yield Finding(
            "rename_retargeted",
            WARNING,
            subject,
            f"specs naming the deprecated group {name!r} of {pair.title} now enable {now} "
            f"instead of {old.renamed_to!r}",
            f"if intended, say so in the release notes; otherwise restore "
            f'renamed_to = "{old.renamed_to}"',
            *where,
        )


def group_findings(pair: Pair) -> Iterator[Finding]:
    """Every change to the groups of one class."""
    old_cls, new_cls = pair.old_cls, pair.new_cls
    old_vocabulary, new_vocabulary = vocabulary(old_cls), vocabulary(new_cls)
    old_own = {g.name for g in old_cls.groups}
    new_own = {g.name for g in new_cls.groups}
    removed = [old_vocabulary[n] for n in sorted(old_own - set(new_vocabulary))]
    added = [new_vocabulary[n] for n in sorted(new_own - set(old_vocabulary))]
    renames = likely_renames(
        [g for g in removed if not _deprecated(g)],
        [g for g in added if not g.renamed_to],
        old_cls,
        new_cls,
    )
    for group in removed:
        yield _removed(pair, group, renames.get(group.name))
    renamed_to = {g.name for g in renames.values()}
    for group in added:
        if group.name not in renamed_to:
            yield Finding(
                "group_added",
                COMPATIBLE,
                pair.subject("groups", group.name),
                f"group {group.name!r} was added to {pair.title}",
                NOTHING_TO_DO,
                None,
                pair.new.group(new_cls, group.name),
            )
    for name in sorted(set(old_vocabulary) & set(new_vocabulary)):
        old, new = old_vocabulary[name], new_vocabulary[name]
        own = name in old_own or name in new_own
        if own and (name in old_own) != (name in new_own):
            origin = "its own groups" if name in new_own else "the base vocabulary"
            yield Finding(
                "group_moved",
                COMPATIBLE,
                pair.subject("groups", name),
                f"group {name!r} of {pair.title} now comes from {origin}; its name and "
                "constant stay",
                NOTHING_TO_DO,
                pair.old.group(old_cls, name),
                pair.new.group(new_cls, name),
            )
        if own:
            yield from _deprecation(pair, old, new)
        if old.renamed_to or new.renamed_to:
            continue  # an alias: it fires as the group it names
        if own and old.fires != new.fires:
            yield _fires(pair, old, new)
        yield from _goodput(pair, old, new, inherited=not own)
