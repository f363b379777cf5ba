"""The validated schema as plain, immutable data (each field's meaning: json_schema.py), and a
problem found in a schema."""

from __future__ import annotations

from dataclasses import dataclass

KeyPath = tuple[str | int, ...]
"""A key's place in the TOML document: table keys and array indexes."""

# Frequency tiers, least to most frequent. `default` may hold only the quiet ones
# unless the schema states a reason (the preset contract).
TIERS: tuple[str, ...] = (
    "once",
    "periodic",
    "per_step",
    "per_microbatch",
    "per_layer",
    "per_request",
    "per_item",
)
QUIET_TIERS: frozenset[str] = frozenset({"once", "periodic"})
TIER_MEANING: dict[str, str] = {
    "once": "once per job or process",
    "periodic": "every N iterations",
    "per_step": "every iteration",
    "per_microbatch": "every microbatch",
    "per_layer": "every layer of every microbatch",
    "per_request": "every request",
    "per_item": "every item of a batch",
}
PRODUCTION_PRESET = "default"
ALL_PRESET = "all"
GOODPUT = "goodput"
PROFILING = "profiling"
CATEGORIES: tuple[str, ...] = (GOODPUT, PROFILING)
BUCKETS: dict[str, str] = {
    "productive": "time that trained the model (a step whose iteration was not run again)",
    "initialization": "start-up: building the model, loading a checkpoint, set-up phases",
    "checkpoint_save": "saving checkpoints",
    "evaluation": "evaluation passes",
    "data_loading": "waiting for the next batch: data loading the step blocks on",
}
"""The goodput buckets a goodput group can feed (`nemo-lens goodput` accounts by them)."""
IMPLICIT_PRESETS: tuple[str, ...] = (GOODPUT, PROFILING, ALL_PRESET)
"""Presets every class has without declaring them, in the order they are listed."""
METRIC_KINDS: tuple[str, ...] = ("counter", "up_down_counter", "histogram", "gauge")
NAME_KINDS: tuple[str, ...] = ("attribute", "value", "event", "field", "scope", "version")
ATTRIBUTE_TYPES: dict[str, str] = {
    "string": "str",
    "int": "int",
    "double": "float",
    "boolean": "bool",
}

BASE_CLASS = "SpanGroup"
BASE_MODULE = "nemo.lens.groups"
SIGNATURES_MODULE = "nemo.lens._signatures"
METRICS_MODULE = "nemo.lens.semconv.metrics"
ATTRIBUTES_MODULE = "nemo.lens.semconv.attributes"
RESOURCE_MODULE = "nemo.lens.semconv.resource"


def format_path(path: KeyPath) -> str:
    """Render a key path as `a.b[2].c`."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + part
    return out or "(top level)"


@dataclass(frozen=True)
class Problem:
    """One validation failure (or warning), located in its file."""

    file: str
    line: int | None
    path: KeyPath
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {format_path(self.path)}: {self.message}"


@dataclass(frozen=True)
class Group:
    name: str
    description: str
    fires: str
    since: str
    deprecated_note: str = ""
    renamed_to: str = ""
    category: str = PROFILING
    bucket: str = ""
    sync: bool = False
    """The group's spans mark a synchronisation point: every rank waits there for the others."""

    @property
    def constant(self) -> str:
        return self.name.upper()

    @property
    def sort_key(self) -> tuple[int, str]:
        return (TIERS.index(self.fires), self.name)


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    members: frozenset[str]
    """Every group the preset enables, `extends` and the base preset already expanded."""
    allow_frequent: tuple[tuple[str, str], ...] = ()
    """(group, reason) pairs: frequent groups deliberately kept in `default`."""
    from_base: frozenset[str] = frozenset()
    """The members inherited from the base preset of the same name (consumers only)."""
    replaces_base: bool = False


@dataclass(frozen=True)
class GroupClass:
    """One generated class: the base `SpanGroup` or a consumer subclass."""

    key: str
    """`base`, or the consumer's key in the schema."""
    class_name: str
    module: str
    description: str
    groups: tuple[Group, ...]
    """The groups this class defines itself, renamed ones included."""
    presets: tuple[Preset, ...]
    base: GroupClass | None = None
    recategorized: tuple[tuple[str, str], ...] = ()
    """(inherited group, category) pairs: a consumer's own view of a base group's category."""
    module_line: int | None = None
    """The schema line that names the module (to report a module that must not be written)."""

    @property
    def current_groups(self) -> tuple[Group, ...]:
        """Own groups minus the renamed ones (those are aliases, not groups)."""
        return tuple(g for g in self.groups if not g.renamed_to)

    @property
    def goodput(self) -> frozenset[str]:
        """The class's goodput groups: inherited ones (unless recategorized) and its own."""
        inherited = self.base.goodput if self.base else frozenset()
        overrides = dict(self.recategorized)
        out = {g for g in inherited if overrides.get(g, GOODPUT) == GOODPUT}
        out |= {g for g, c in overrides.items() if c == GOODPUT}
        out |= {g.name for g in self.current_groups if g.category == GOODPUT}
        return frozenset(out)

    @property
    def sync(self) -> frozenset[str]:
        """The class's synchronisation-point groups: inherited ones and its own."""
        inherited = self.base.sync if self.base else frozenset()
        return inherited | {g.name for g in self.current_groups if g.sync}

    def category(self, group: str) -> str:
        return GOODPUT if group in self.goodput else PROFILING

    @property
    def all_groups(self) -> tuple[Group, ...]:
        """Inherited and own current groups, in tier order."""
        inherited = self.base.current_groups if self.base else ()
        return tuple(sorted((*inherited, *self.current_groups), key=lambda g: g.sort_key))

    @property
    def vocabulary(self) -> dict[str, Group]:
        """Every group name the class knows: the base's (renamed ones included) and its own."""
        return {g.name: g for g in (*(self.base.groups if self.base else ()), *self.groups)}

    def preset(self, name: str) -> Preset:
        return next(p for p in self.presets if p.name == name)


@dataclass(frozen=True)
class Metric:
    key: str
    """The schema key; its upper case is the constant (`gen_ai_client_token_usage`)."""
    name: str
    """The metric name as exported (`gen_ai.client.token.usage`)."""
    kind: str
    unit: str
    description: str
    section: str
    recorded_by: str
    boundaries: str = ""
    non_negative: bool = True

    @property
    def constant(self) -> str:
        return self.key.upper()


@dataclass(frozen=True)
class Name:
    """One name of the attribute catalogue: a ``Final`` constant of ``nemo.lens.semconv``."""

    key: str
    value: str
    section: str
    description: str
    kind: str = "attribute"
    type: str = ""
    of: str = ""
    alias_of: str = ""
    upstream: str = ""
    upstream_resource: str = ""

    @property
    def constant(self) -> str:
        return self.key.upper()


@dataclass(frozen=True)
class Section:
    """A section of the metrics page, or of the attributes page (and module)."""

    key: str
    title: str
    description: str
    resource: bool = False


@dataclass(frozen=True)
class Catalogue:
    """The `[metrics]` table: named boundaries, sections and instruments, sorted."""

    boundaries: tuple[tuple[str, tuple[float, ...]], ...]
    sections: tuple[Section, ...]
    metrics: tuple[Metric, ...]


@dataclass(frozen=True)
class NameCatalogue:
    """The `[attributes]` table: sections and names, sorted."""

    sections: tuple[Section, ...]
    names: tuple[Name, ...]


@dataclass(frozen=True)
class Schema:
    """Everything one schema file defines, ready to render."""

    source: str
    """The schema file as the user named it (for headers and messages)."""
    digest: str
    """sha256 of the canonical content: key order and formatting do not change it."""
    base: GroupClass
    consumers: tuple[GroupClass, ...]
    extends_base: bool
    """True for a consumer-only schema that extends another file's base vocabulary."""
    catalogue: Catalogue | None = None
    names: NameCatalogue | None = None
    warnings: tuple[Problem, ...] = ()
    """What validation found valid but worth changing, located like problems, in order."""
