"""The schema format: each table's keys, with the type, pattern, choices and description of
each, as the JSON Schema editors read (Taplo, Even Better TOML). The loader allows exactly
these keys; ``nemo-lens generate --print-json-schema`` prints it."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from nemo.lens.codegen.checker import MAX_NAME, NAME_RE
from nemo.lens.codegen.model import (
    ATTRIBUTE_TYPES,
    BUCKETS,
    CATEGORIES,
    GOODPUT,
    IMPLICIT_PRESETS,
    METRIC_KINDS,
    NAME_KINDS,
    PRODUCTION_PRESET,
    PROFILING,
    QUIET_TIERS,
    TIER_MEANING,
    TIERS,
)

__all__ = ["BASE_ONLY_KEYS", "json_schema", "json_schema_text", "keys"]

JSON = dict[str, Any]
DRAFT = "http://json-schema.org/draft-07/schema#"
SCHEMA_VERSION = 1
BUNDLED_BASE = "nemo.lens"
"""`extends` value naming the base schema that ships beside this generator."""
BASE_ONLY_KEYS = ("groups", "presets", "metrics", "attributes")
"""Top-level tables of a base schema that a schema with ``extends`` may not have."""
LONG_NAME = 64
"""The longest key of a metric instrument or a catalogue name."""
VERSION_RE = re.compile(r"\d+\.\d+(?:\.\d+)?")
CLASS_RE = re.compile(r"[A-Z][A-Za-z0-9]*")
MODULE_RE = re.compile(r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*")
DOTTED_RE = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*")
"""Metric names, attribute keys and scope names, as OpenTelemetry spells them."""
RELEASE_RE = re.compile(r"\d+\.\d+\.\d+")
_CATEGORY_MEANING = {
    GOODPUT: "a boundary of the job's useful or resiliency time (the job, a step, a checkpoint)",
    PROFILING: "fine-grained detail (every group is profiling unless it says goodput)",
}
_QUIET = " and ".join(t for t in TIERS if t in QUIET_TIERS)


def keys(table: JSON) -> tuple[str, ...]:
    """The keys a table of the format allows, in order."""
    return tuple(table["properties"])


def _pattern(regex: re.Pattern[str]) -> str:
    # The loader matches whole strings; a JSON Schema pattern matches anywhere unless anchored.
    return f"^(?:{regex.pattern})$"


def _text(description: str, **extra: Any) -> JSON:
    return {"type": "string", "description": description, **extra}


def _flag(description: str) -> JSON:
    return {"type": "boolean", "description": description}


def _enum(description: str, choices: Sequence[str], **extra: Any) -> JSON:
    return {"type": "string", "enum": list(choices), "description": description, **extra}


def _choice(description: str, choices: Sequence[str], meanings: Mapping[str, str]) -> JSON:
    listed = "; ".join(f"{c}: {meanings[c]}" if c in meanings else c for c in choices)
    return _enum(f"{description} ({listed}).", choices)


def _names(description: str, **extra: Any) -> JSON:
    return {"type": "array", "items": {"type": "string"}, **extra, "description": description}


def _map(
    description: str, value: JSON, longest: int = MAX_NAME, reserved: Sequence[str] = ()
) -> JSON:
    """A table whose keys are names the author chooses (groups, presets, ...)."""
    names: JSON = {"type": "string", "pattern": _pattern(NAME_RE), "maxLength": longest}
    if reserved:
        names["not"] = {"enum": list(reserved)}
    return {
        "type": "object",
        "description": description,
        "propertyNames": names,
        "additionalProperties": value,
    }


def _table(properties: Mapping[str, JSON], description: str) -> JSON:
    """A table of exactly these keys; those marked ``"_required": True`` are required."""
    out: JSON = {"type": "object", "description": description, "properties": {}}
    required = []
    for key, spec in properties.items():
        spec = dict(spec)
        if spec.pop("_required", False):
            required.append(key)
        out["properties"][key] = spec
    if required:
        out["required"] = required
    out["additionalProperties"] = False
    return out


DEPRECATED = _table(
    {
        "note": _text("Why the group is deprecated, and what to use instead.", _required=True),
        "renamed_to": _text(
            "The group this one was renamed to: its old constant and spec name keep "
            "working, as the new group, with a DeprecationWarning."
        ),
    },
    "The group is deprecated: a note, and optionally the group it was renamed to.",
)
GROUP = _table(
    {
        "description": _text(
            "What the group's spans are, in one line: it becomes the constant's docstring "
            "and the docs table's description.",
            _required=True,
        ),
        "fires": {
            **_choice("How often the group fires, least to most frequent", TIERS, TIER_MEANING),
            "_required": True,
        },
        "since": _text(
            "The version the group appeared in, like '0.2.0'.",
            pattern=_pattern(VERSION_RE),
            _required=True,
        ),
        "category": _choice(
            "The group's category, carried by every span as lens.span_category",
            CATEGORIES,
            _CATEGORY_MEANING,
        ),
        "bucket": _choice(
            "The goodput bucket the time of this goodput group feeds in `nemo-lens goodput`",
            tuple(BUCKETS),
            BUCKETS,
        ),
        "sync": _flag(
            "true: the group's spans mark a synchronisation point (every rank waits there "
            "for the others); `nemo-lens stragglers` ranks the ranks by when they arrive."
        ),
        "deprecated": DEPRECATED,
    },
    "A span group: a name instrumentation sites tag their spans with.",
)


def _preset(base: bool) -> JSON:
    inherits = (
        ""
        if base
        else " A preset with the name of a base preset adds to the base preset's groups "
        "(unless replace = true) and needs neither a description nor groups of its own."
    )
    return _table(
        {
            "description": _text("What the preset is for, in one line.", _required=base),
            "groups": _names("The groups the preset enables.", uniqueItems=True, _required=base),
            "extends": _names("Presets whose groups this one enables too (`all`: every group)."),
            "replace": _flag(
                "true: start from nothing instead of adding to the base preset of the same name "
                "(consumer presets only)."
            ),
            "allow_frequent": _map(
                f"Frequent groups the {PRODUCTION_PRESET!r} preset keeps on purpose, each with "
                f"the reason (only {_QUIET} groups belong in {PRODUCTION_PRESET!r} otherwise).",
                {"type": "string", "minLength": 1},
            ),
        },
        "A named set of groups, for a job to enable in one word." + inherits,
    )


def _presets(base: bool) -> JSON:
    implicit = ", ".join(IMPLICIT_PRESETS)
    out = _map(
        f"Named sets of groups. {implicit} are implicit (every group, the goodput groups, every "
        f"group for profiling). {PRODUCTION_PRESET!r} is what a job enables when nobody chose: "
        "it stays quiet enough for production.",
        {"$ref": f"#/definitions/{'preset' if base else 'consumer_preset'}"},
        reserved=IMPLICIT_PRESETS,
    )
    if base:
        out["required"] = [PRODUCTION_PRESET]
    return out


def _section(page: str, names: str, **extra: JSON) -> JSON:
    return _table(
        {
            "title": _text(f"The section's heading in the {page} page.", _required=True),
            "description": _text(f"What the section's {names} have in common."),
            **extra,
        },
        f"A section of the {page} page.",
    )


PRESET = _preset(base=True)
CONSUMER = _table(
    {
        "class": _text(
            "The generated subclass of SpanGroup, in CamelCase.",
            pattern=_pattern(CLASS_RE),
            _required=True,
        ),
        "module": _text(
            "The module the class is generated into, relative to --out-root "
            "(a module of your own package, like 'mylib.lens_groups').",
            pattern=_pattern(MODULE_RE),
            _required=True,
        ),
        "description": _text("What the consumer is, in one line.", _required=True),
        "categories": _map(
            "This consumer's own category of inherited base groups.",
            {"type": "string", "enum": list(CATEGORIES)},
        ),
        "groups": _map(
            "The groups the consumer adds to the base groups.", {"$ref": "#/definitions/group"}
        ),
        "presets": _presets(base=False),
    },
    "A consumer: a subclass of SpanGroup with groups and presets of its own, which inherits "
    "the base groups and presets.",
)
METRIC_SECTION = _section("metrics", "instruments")
INSTRUMENT = _table(
    {
        "name": _text(
            "The metric name as exported, dotted lowercase.",
            pattern=_pattern(DOTTED_RE),
            _required=True,
        ),
        "kind": _enum("The OpenTelemetry instrument.", METRIC_KINDS, _required=True),
        "unit": _text("The unit, in UCUM (like 's' or '{token}')."),
        "description": _text("What the instrument measures.", _required=True),
        "section": _text("The key of its section in [metrics.sections].", _required=True),
        "recorded_by": _text("What records it, for the docs.", _required=True),
        "boundaries": _text("A histogram's boundaries: a key of [metrics.boundaries]."),
        "non_negative": _flag("Negative values are bad input and skipped (default true)."),
    },
    "A metric instrument: its key upper-cased is the constant of nemo.lens.semconv.",
)
METRICS = _table(
    {
        "boundaries": _map(
            "Named histogram boundaries: non-empty arrays of numbers, strictly increasing.",
            {"type": "array", "items": {"type": "number"}, "minItems": 1},
        ),
        "sections": _map("The sections of the metrics page.", METRIC_SECTION),
        "instruments": _map("The metric instruments.", INSTRUMENT, LONG_NAME),
    },
    "The metric catalogue (base schema only): rendered into nemo.lens.semconv.metrics.",
)
NAME_SECTION = _section(
    "attributes",
    "names",
    resource=_flag("Its names are resource attributes (nemo.lens.semconv.resource)."),
)
_RELEASE = {"pattern": _pattern(RELEASE_RE)}
NAME = _table(
    {
        "value": _text("What the constant holds (like 'dl.rank').", _required=True),
        "section": _text("The key of its section in [attributes.sections].", _required=True),
        "description": _text("What the name means, in one line.", _required=True),
        "kind": _enum("What the name is (default: attribute).", NAME_KINDS),
        "type": _enum(
            "The attribute's type (attributes only; resource ones state it).",
            tuple(ATTRIBUTE_TYPES),
        ),
        "of": _text('For a kind = "value": the key of the attribute it is a value of.'),
        "alias_of": _text("The key of the entry whose value this one repeats."),
        "upstream": _text(
            "The upstream release whose nemo.lens.semconv defines this constant.", **_RELEASE
        ),
        "upstream_resource": _text(
            "The upstream release that sends this key in every resource.", **_RELEASE
        ),
    },
    "One name of nemo.lens.semconv: its key upper-cased is the constant.",
)
ATTRIBUTES = _table(
    {
        "sections": _map("The sections of the attributes page.", NAME_SECTION),
        "names": _map("The names.", NAME, LONG_NAME),
    },
    "The attribute-name catalogue (base schema only): rendered into nemo.lens.semconv.",
)
TOP = _table(
    {
        "schema_version": {
            "const": SCHEMA_VERSION,
            "description": f"The version of the schema format: {SCHEMA_VERSION}.",
            "_required": True,
        },
        "extends": _text(
            f"The base vocabulary this schema builds on: {BUNDLED_BASE!r} (the base schema "
            "in the installed package) or a path relative to this file. A schema that "
            "extends another defines consumers only."
        ),
        "groups": _map(
            "The base vocabulary: groups meaningful to every consumer.",
            {"$ref": "#/definitions/group"},
        ),
        "presets": _presets(base=True),
        "consumers": _map(
            "Consumers: each becomes a subclass of SpanGroup in a module of its own.",
            {"$ref": "#/definitions/consumer"},
        ),
        "metrics": METRICS,
        "attributes": ATTRIBUTES,
    },
    "A nemo.lens span-group schema (nemo-lens generate). A base schema defines groups and "
    "presets; a schema with extends defines consumers only.",
)


def json_schema() -> JSON:
    """The JSON Schema (draft-07) of a span-group schema file, base or consumer."""
    return copy.deepcopy(
        {
            "$schema": DRAFT,
            "$comment": (
                "DO NOT EDIT: generated from the rules of nemo-lens generate's schema loader. "
                "Print it again with `nemo-lens generate --print-json-schema` (in the nemo.lens "
                "repository: `make generate`)."
            ),
            "title": "nemo.lens span-group schema",
            **TOP,
            "if": {"required": ["extends"]},
            "then": {
                "required": ["consumers"],
                "properties": dict.fromkeys(BASE_ONLY_KEYS, False),
            },
            "else": {"required": ["groups", "presets"]},
            "definitions": {
                "group": GROUP,
                "preset": PRESET,
                "consumer_preset": _preset(base=False),
                "consumer": CONSUMER,
            },
        }
    )


def json_schema_text() -> str:
    """:func:`json_schema` as the shipped file holds it: indented, one final newline."""
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"
