"""Compatibility of a schema against a baseline: :func:`compare` returns a :class:`Finding`
for every change from OLD to NEW that its users could notice (docs/schema-compatibility.md)."""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nemo.lens.codegen.checker import Locator
from nemo.lens.codegen.model import (
    ALL_PRESET,
    GOODPUT,
    PRODUCTION_PRESET,
    TIER_MEANING,
    TIERS,
    Group,
    GroupClass,
    KeyPath,
    Preset,
    Schema,
    format_path,
)
from nemo.lens.codegen.validate import load_schema

__all__ = ["BREAKING", "COMPATIBLE", "SEVERITIES", "WARNING", "Finding", "Side", "compare"]

BREAKING = "breaking"
WARNING = "warning"
COMPATIBLE = "compatible"
SEVERITIES: tuple[str, ...] = (BREAKING, WARNING, COMPATIBLE)
"""Most serious first: the order findings are listed in."""
JSON_VERSION = 1
"""The version of diff-schema's JSON object's shape: it changes only when a key changes meaning."""
NOTHING_TO_DO = "nothing to do"
DESCRIPTION_SIMILAR = 0.75
NAME_SIMILAR = 0.7


@dataclass(frozen=True)
class Location:
    file: str
    line: int | None
    key: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass(frozen=True)
class Finding:
    """One change between the two schemas (its fields, in order, are the JSON report's)."""

    kind: str
    severity: str
    subject: str
    """The key path the finding is about (``consumers.mylib.presets.default``)."""
    message: str
    fix: str
    old: Location | None
    new: Location | None

    @property
    def where(self) -> Location | None:
        return self.new or self.old

    @property
    def sort_key(self) -> tuple[int, int, str, str]:
        consumer = self.subject.startswith("consumers.")
        return (SEVERITIES.index(self.severity), int(consumer), self.subject, self.kind)


@dataclass(frozen=True)
class SourceFile:
    shown: str
    data: Mapping[str, Any]
    locator: Locator

    def node(self, path: KeyPath) -> Any:
        """What this file holds at *path*; None where it writes nothing (TOML has no null)."""
        node: Any = self.data
        for part in path:
            if isinstance(part, int):
                if not isinstance(node, list) or part >= len(node):
                    return None
            elif not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def locate(self, path: KeyPath) -> Location | None:
        if not path or self.node(path) is None:
            return None
        return Location(self.shown, self.locator.line(path), format_path(path))

    def array(self, path: KeyPath) -> list[Any]:
        node = self.node(path)
        return node if isinstance(node, list) else []


@dataclass(frozen=True)
class Side:
    """One schema to compare: the validated model, and the files it was read from."""

    schema: Schema
    top: SourceFile
    """The file that was named: it defines the consumers."""
    base: SourceFile
    """The file that defines the base vocabulary: the named one, or the one it extends."""

    @classmethod
    def load(cls, path: Path, shown: str) -> Side:
        """Load the schema at *path* (raises ``SchemaError``), with the files it comes from."""
        documents: list[tuple[str, dict[str, Any], Locator]] = []
        schema = load_schema(path, shown, documents=documents)
        return cls(schema, SourceFile(*documents[0]), SourceFile(*documents[-1]))

    @property
    def consumers(self) -> dict[str, GroupClass]:
        return {c.key: c for c in self.schema.consumers}

    def prefix(self, cls: GroupClass) -> tuple[SourceFile, KeyPath]:
        return (self.base, ()) if cls.base is None else (self.top, ("consumers", cls.key))

    def first(self, cls: GroupClass, *paths: KeyPath) -> Location | None:
        """The first of *paths*, relative to *cls*'s table, that its file writes."""
        source, prefix = self.prefix(cls)
        return next(filter(None, (source.locate((*prefix, *path)) for path in paths)), None)

    def group(self, cls: GroupClass, name: str, *keys: str) -> Location | None:
        """Group *name* of *cls* (or of its base): its key *keys* when it has it, else its table."""
        owner = cls if any(g.name == name for g in cls.groups) else (cls.base or cls)
        return self.first(owner, ("groups", name, *keys), ("groups", name))

    def preset(self, cls: GroupClass, name: str, member: str = "") -> Location | None:
        """Preset *name* of *cls* (*member*'s listing, when it lists it); one inherited
        without a table of its own: its consumer's table."""
        source, prefix = self.prefix(cls)
        table = (*prefix, "presets", name)
        if member:
            listed = source.array((*table, "groups"))
            at = (listed.index(member),) if member in listed else ()
            found = source.locate((*table, "groups", *at))
            if found is not None:
                return found
        return source.locate(table) or source.locate(prefix)

    def lists(self, cls: GroupClass, name: str, member: str) -> bool:
        """Whether preset *name* of *cls* lists *member* itself, not by ``extends`` or its base."""
        source, prefix = self.prefix(cls)
        return member in source.array((*prefix, "presets", name, "groups"))

    def consumer(self, key: str, *keys: str) -> Location | None:
        return self.top.locate(("consumers", key, *keys)) or self.top.locate(("consumers", key))


def _presets(cls: GroupClass) -> dict[str, Preset]:
    return {p.name: p for p in cls.presets}


def _quoted(names: Iterable[str]) -> str:
    """`group 'a'` or `groups 'a', 'b'`, sorted."""
    ordered = sorted(names)
    listing = ", ".join(f"{n!r}" for n in ordered)
    return f"group {listing}" if len(ordered) == 1 else f"groups {listing}"


def _deprecated(group: Group) -> bool:
    return bool(group.deprecated_note or group.renamed_to)


@dataclass(frozen=True)
class _Pair:
    """One class as both sides define it (the base class, or a consumer of the same key)."""

    old: Side
    new: Side
    old_cls: GroupClass
    new_cls: GroupClass

    @property
    def is_base(self) -> bool:
        return self.new_cls.base is None

    @property
    def title(self) -> str:
        return self.new_cls.class_name

    def subject(self, *path: str) -> str:
        return format_path(path if self.is_base else ("consumers", self.new_cls.key, *path))

    def groups(self, name: str, key: str = "") -> tuple[Location | None, Location | None]:
        keys = (key,) if key else ()
        return self.old.group(self.old_cls, name, *keys), self.new.group(self.new_cls, name, *keys)


def compare(old: Side, new: Side) -> tuple[Finding, ...]:
    """Every change from *old* to *new*, most serious first, in a fixed order."""
    findings = list(_consumer_findings(old, new))
    pairs = [_Pair(old, new, old.schema.base, new.schema.base)]
    for key, cls in sorted(old.consumers.items()):
        if key in new.consumers:
            pairs.append(_Pair(old, new, cls, new.consumers[key]))
    for pair in pairs:
        findings += _group_findings(pair)
        findings += _preset_findings(pair)
    return tuple(sorted(findings, key=lambda f: f.sort_key))


def counts(findings: Sequence[Finding]) -> dict[str, int]:
    return {s: sum(1 for f in findings if f.severity == s) for s in SEVERITIES}


def breaks(findings: Sequence[Finding]) -> bool:
    return any(f.severity == BREAKING for f in findings)


def summary(findings: Sequence[Finding], old: str, new: str) -> str:
    """`summary: 1 breaking, 2 warnings, 3 compatible (OLD -> NEW)`."""
    count = counts(findings)
    warnings = f"{count[WARNING]} warning{'' if count[WARNING] == 1 else 's'}"
    return (
        f"summary: {count[BREAKING]} breaking, {warnings}, {count[COMPATIBLE]} compatible "
        f"({old} -> {new})"
    )


def _escape(text: str, property_: bool = False) -> str:
    # What GitHub's workflow commands require of a message; a property value (file=,
    # title=) also ends at ':' and ','.
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if property_ else text


def report(findings: Sequence[Finding], fmt: str, old: str, new: str) -> str:
    """The findings in format *fmt* (``text``, ``json`` or ``github``), *old* and *new*
    naming the schemas as the user did; the same on every machine, the summary last."""
    if fmt == "json":
        document = {
            "version": JSON_VERSION,
            "old": old,
            "new": new,
            "findings": [dataclasses.asdict(f) for f in findings],
            "summary": {**counts(findings), "breaks": breaks(findings)},
        }
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    lines = []
    for f in findings:
        if f.severity == COMPATIBLE and fmt == "github":
            continue  # counted in the summary, nothing to review
        sides = [f"{side} ({side.key})" if side else "absent" for side in (f.old, f.new)]
        if fmt == "text":
            where = f"{f.where}: " if f.where else ""
            lines.append(f"{where}{f.severity}: {f.subject}: {f.message}")
            if f.severity != COMPATIBLE:
                lines += [f"    old: {sides[0]}", f"    new: {sides[1]}", f"    fix: {f.fix}"]
            continue
        properties = []
        if f.where:
            properties.append(f"file={_escape(f.where.file, True)}")
            if f.where.line:
                properties.append(f"line={f.where.line}")
        properties.append(f"title={_escape(f'{f.kind} ({f.severity})', True)}")
        body = f"{f.subject}: {f.message}\nfix: {f.fix}\nold: {sides[0]}\nnew: {sides[1]}"
        level = "warning" if f.severity == WARNING else "error"
        lines.append(f"::{level} {','.join(properties)}::{_escape(body)}")
    lines.append(summary(findings, old, new))
    return "\n".join(lines) + "\n"


def _similarity(old: Group, new: Group) -> float:
    """How alike two groups' descriptions or names are (0 to 1); 0: not enough for a rename."""
    description = difflib.SequenceMatcher(
        None, old.description.lower(), new.description.lower()
    ).ratio()
    name = difflib.SequenceMatcher(None, old.name, new.name).ratio()
    old_words, new_words = set(old.name.split("_")), set(new.name.split("_"))
    # `step` -> `train_step`: one name holds all the other's words.
    contained = NAME_SIMILAR if old_words <= new_words or new_words <= old_words else 0.0
    return max(
        description if description >= DESCRIPTION_SIMILAR else 0.0,
        name if name >= NAME_SIMILAR else 0.0,
        contained,
    )


def likely_renames(
    removed: list[Group], added: list[Group], old_cls: GroupClass, new_cls: GroupClass
) -> dict[str, Group]:
    """``{removed name: added group}``: pairs of the same tier and category, similar enough
    to look like a rename, each group in one pair at most, the most similar first."""
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


def _group_findings(pair: _Pair) -> Iterator[Finding]:
    """Every change to the groups of one class, reported at the class that made it."""
    old_cls, new_cls = pair.old_cls, pair.new_cls
    old_vocabulary, new_vocabulary = old_cls.vocabulary, new_cls.vocabulary
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
            message = f"group {group.name!r} was added to {pair.title}"
            subject = pair.subject("groups", group.name)
            new_at = pair.new.group(new_cls, group.name)
            yield Finding("group_added", COMPATIBLE, subject, message, NOTHING_TO_DO, None, new_at)
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
                *pair.groups(name),
            )
        if own:
            yield from _deprecation(pair, old, new)
        if old.renamed_to or new.renamed_to:
            continue  # an alias: it fires as the group it names
        if own and old.fires != new.fires:
            yield _fires(pair, old, new)
        yield from _goodput(pair, old, new, inherited=not own)


def _removed(pair: _Pair, group: Group, renamed: Group | None) -> Finding:
    name, title = group.name, pair.title
    subject = pair.subject("groups", name)
    old = pair.old.group(pair.old_cls, name)
    if _deprecated(group):
        message = f"group {name!r} of {title} was removed after its deprecation"
        return Finding(
            "deprecated_group_removed", COMPATIBLE, subject, message, NOTHING_TO_DO, old, None
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


def _holders(pair: _Pair, name: str) -> dict[str, list[str]]:
    """``{preset: [class, ...]}``: the new schema's declared presets that hold group *name*."""
    classes = [pair.new_cls]
    if name in {g.name for g in pair.new.schema.base.groups}:
        classes = [pair.new.schema.base, *pair.new.schema.consumers]
    held: dict[str, list[str]] = {}
    for cls in classes:
        for preset in cls.presets:
            if preset.name != ALL_PRESET and name in preset.members:
                held.setdefault(preset.name, []).append(cls.class_name)
    return {p: held[p] for p in sorted(held, key=lambda p: (p != PRODUCTION_PRESET, p))}


def _fires(pair: _Pair, old: Group, new: Group) -> Finding:
    name = new.name
    before, after = TIERS.index(old.fires), TIERS.index(new.fires)
    held = _holders(pair, name) if after > before else {}
    change = (
        f"group {name!r} of {pair.title} now fires {new.fires} ({TIER_MEANING[new.fires]}), "
        f"was {old.fires} ({TIER_MEANING[old.fires]})"
    )
    where = pair.groups(name, "fires")
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


def _goodput(pair: _Pair, old: Group, new: Group, inherited: bool) -> Iterator[Finding]:
    """Category and bucket: what `nemo-lens goodput` accounts the group's time to."""
    name = new.name
    old_category, new_category = pair.old_cls.category(name), pair.new_cls.category(name)
    # The bucket a group's time feeds: none unless it is goodput in that class.
    old_bucket = old.bucket if old_category == GOODPUT else ""
    new_bucket = new.bucket if new_category == GOODPUT else ""
    subject = pair.subject("groups", name)
    where = pair.groups(name, "category" if old_category != new_category else "bucket")
    if inherited:
        # A base group seen from a consumer: only the consumer's own view is its change.
        base_old, base_new = pair.old.schema.base, pair.new.schema.base
        if (base_old.category(name), base_new.category(name)) == (old_category, new_category):
            return
        subject = pair.subject("categories", name)
        view = (
            pair.old.first(pair.old_cls, ("categories", name)),
            pair.new.first(pair.new_cls, ("categories", name)),
        )
        where = (view[0] or where[0], view[1] or where[1])

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
            *where,
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
            *where,
        )


def _deprecation(pair: _Pair, old: Group, new: Group) -> Iterator[Finding]:
    name = new.name
    subject = pair.subject("groups", name)
    where = pair.groups(name, "deprecated")
    if not _deprecated(old) and _deprecated(new):
        renamed = f" (renamed to {new.renamed_to!r})" if new.renamed_to else ""
        message = (
            f"group {name!r} of {pair.title} is deprecated{renamed}: specs naming it still "
            "work, with a DeprecationWarning"
        )
        yield Finding("group_deprecated", COMPATIBLE, subject, message, NOTHING_TO_DO, *where)
    elif _deprecated(old) and not _deprecated(new):
        message = f"group {name!r} of {pair.title} is no longer deprecated"
        yield Finding("deprecation_removed", COMPATIBLE, subject, message, NOTHING_TO_DO, *where)
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


def _inherited_only(preset: Preset) -> bool:
    return preset.members == preset.from_base and not preset.replaces_base


def _inherit_note(pair: _Pair, name: str, them: str) -> str:
    if not pair.is_base:
        return ""
    return (
        f"; consumers inherit {name!r} by name, so theirs lose {them} too (unless they replace it)"
    )


def _preset_findings(pair: _Pair) -> Iterator[Finding]:
    """Every change to the presets of one class as job owners get them (inherited members
    included); a change of a base preset is reported once, at the base."""
    old_presets, new_presets = _presets(pair.old_cls), _presets(pair.new_cls)
    base_old, base_new = _presets(pair.old.schema.base), _presets(pair.new.schema.base)
    for name in sorted(set(old_presets) - set(new_presets)):
        if not pair.is_base and name not in base_new and _inherited_only(old_presets[name]):
            continue  # the base preset went, and with it the inherited one: reported there
        subject = pair.subject("presets", name)
        yield Finding(
            "preset_removed",
            BREAKING,
            subject,
            f"preset {name!r} of {pair.title} was removed: jobs whose spec names it "
            f"(NEMO_LENS_SPAN_GROUPS={name}) fail at start-up with an unknown name"
            + _inherit_note(pair, name, "it"),
            f"keep [{subject}]; a preset has no deprecation, so remove one only in a "
            "breaking release and name the spec that replaces it in the release notes",
            pair.old.preset(pair.old_cls, name),
            None,
        )
    for name in sorted(set(new_presets) - set(old_presets)):
        if not pair.is_base and name not in base_old and _inherited_only(new_presets[name]):
            continue
        message = f"preset {name!r} was added to {pair.title}"
        new_at = pair.new.preset(pair.new_cls, name)
        subject = pair.subject("presets", name)
        yield Finding("preset_added", COMPATIBLE, subject, message, NOTHING_TO_DO, None, new_at)
    for name in sorted(set(old_presets) & set(new_presets)):
        yield from _members(pair, name, old_presets[name], new_presets[name])


def _members(pair: _Pair, name: str, old: Preset, new: Preset) -> Iterator[Finding]:
    # What the base preset lost or gained is reported at the base, not again here.
    base_lost = base_gained = frozenset[str]()
    base_old, base_new = _presets(pair.old.schema.base), _presets(pair.new.schema.base)
    inherits = name in base_old and name in base_new
    if not pair.is_base and inherits and not (old.replaces_base or new.replaces_base):
        before, after = base_old[name].members, base_new[name].members
        base_lost, base_gained = before - after, after - before
    new_vocabulary = pair.new_cls.vocabulary
    lost = []
    for member in sorted(old.members - new.members - base_lost):
        group = new_vocabulary.get(member)
        if group is None:
            continue  # the group is gone: reported as such
        if group.renamed_to and group.renamed_to in new.members:
            continue  # a spec naming it enables the group it was renamed to
        lost.append(member)
    subject = pair.subject("presets", name)
    if lost:
        replaced = ""
        if new.replaces_base and not old.replaces_base:
            replaced = f" (it now says replace = true: it no longer inherits the base {name!r})"
        them, they = ("it", "it") if len(lost) == 1 else ("them", "they")
        where = "drop replace = true, or list" if replaced else "list"
        origin = ""
        if not all(pair.old.lists(pair.old_cls, name, m) for m in lost):
            origin = f" (or where {pair.title}'s {name!r} had {them} from: a preset it extends"
            origin += ", the base preset)" if not pair.is_base else ")"
        if name == PRODUCTION_PRESET:
            who = f"production jobs (the {name!r} preset, what a job runs unless told)"
        else:
            who = f"jobs that run {name!r}"
        yield Finding(
            "preset_members_removed",
            BREAKING,
            subject,
            f"{_quoted(lost)} left preset {name!r} of {pair.title}{replaced}: "
            f"{who} stop emitting {'its' if them == 'it' else 'their'} spans"
            f"{_inherit_note(pair, name, them)}",
            f"{where} {', '.join(repr(m) for m in lost)} in [{subject}] again{origin}; "
            f"if {they} must leave {name!r}, that is a breaking "
            f"release: say so in the release notes (a job keeps {them} with "
            f"NEMO_LENS_SPAN_GROUPS={name},{','.join(lost)})",
            pair.old.preset(pair.old_cls, name, lost[0]),
            pair.new.preset(pair.new_cls, name, lost[0]),
        )
    gained = sorted(new.members - old.members - base_gained)
    if gained:
        yield Finding(
            "preset_members_added",
            COMPATIBLE,
            subject,
            f"{_quoted(gained)} joined preset {name!r} of {pair.title}",
            NOTHING_TO_DO,
            pair.old.preset(pair.old_cls, name),
            pair.new.preset(pair.new_cls, name, gained[0]),
        )


def _consumer_findings(old: Side, new: Side) -> Iterator[Finding]:
    old_classes, new_classes = old.consumers, new.consumers
    for key in sorted(set(old_classes) - set(new_classes)):
        cls = old_classes[key]
        yield Finding(
            "consumer_removed",
            BREAKING,
            f"consumers.{key}",
            f"consumer {key!r} was removed: code that imports {cls.class_name} from "
            f"{cls.module} breaks, and its groups and presets are gone",
            f"keep [consumers.{key}]; to retire it, deprecate its groups for a release first",
            old.consumer(key),
            None,
        )
    for key in sorted(set(new_classes) - set(old_classes)):
        cls = new_classes[key]
        message = f"consumer {key!r} was added ({cls.class_name} in {cls.module})"
        new_at = new.consumer(key)
        yield Finding(
            "consumer_added", COMPATIBLE, f"consumers.{key}", message, NOTHING_TO_DO, None, new_at
        )
    for key in sorted(set(old_classes) & set(new_classes)):
        before, after = old_classes[key], new_classes[key]
        for what, was, now in (
            ("class", before.class_name, after.class_name),
            ("module", before.module, after.module),
        ):
            if was != now:
                yield Finding(
                    f"consumer_{what}_changed",
                    BREAKING,
                    f"consumers.{key}.{what}",
                    f"the {what} of consumer {key!r} is now {now!r} (was {was!r}): "
                    f"`from {before.module} import {before.class_name}` stops working",
                    f'keep {what} = "{was}"',
                    old.consumer(key, what),
                    new.consumer(key, what),
                )
