"""The JSON Schema of the schema format, so that editors know it: hover text, completion, errors.

``nemo-lens generate --print-json-schema`` prints it; a copy ships beside the bundled base
schema (``span_groups.schema.json``), which that schema's first line names
(``#:schema ./span_groups.schema.json``). Taplo, the TOML toolkit behind the Even Better
TOML editor extension, reads that line and checks the file against it (draft-07, which
Taplo validates with).

Built from the loader's own tables: the keys of each table (``GROUP_KEYS``, ...), the
choices (tiers, categories, buckets, kinds, types) and the patterns of names, so a key the
loader learns is a key the editor knows, and describing it here is the one step left (the
build fails naming the key until it is described). What the loader checks beyond keys,
types and choices (presets naming groups that exist, the preset contract, duplicates)
stays the generator's: an editor's silence is not a valid schema, ``nemo-lens generate
--validate`` is.
"""

from __future__ import annotations

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
from nemo.lens.codegen.rules import (
    CLASS_RE,
    CONSUMER_KEYS,
    DEPRECATED_KEYS,
    GROUP_KEYS,
    MODULE_RE,
    VERSION_RE,
)
from nemo.lens.codegen.rules_attributes import (
    ATTRIBUTES_KEYS,
    NAME_KEYS,
    RELEASE_RE,
)
from nemo.lens.codegen.rules_attributes import SECTION_KEYS as NAME_SECTION_KEYS
from nemo.lens.codegen.rules_metrics import (
    INSTRUMENT_KEYS,
    METRIC_NAME_RE,
    METRICS_KEYS,
)
from nemo.lens.codegen.rules_metrics import SECTION_KEYS as METRIC_SECTION_KEYS
from nemo.lens.codegen.rules_presets import PRESET_KEYS
from nemo.lens.codegen.validate import BUNDLED_BASE, SCHEMA_VERSION, TOP_KEYS

__all__ = ["BASE_ONLY_KEYS", "json_schema", "json_schema_text"]

DRAFT = "http://json-schema.org/draft-07/schema#"
BASE_ONLY_KEYS = ("groups", "presets", "metrics", "attributes")
"""Top-level tables of a base schema that a schema with ``extends`` may not have."""
LONG_NAME = 64
"""The longest key of a metric instrument or a catalogue name (the loader's ``longest``)."""

JSON = dict[str, Any]


def _pattern(regex: re.Pattern[str]) -> str:
    # The loader matches whole strings; a JSON Schema pattern matches anywhere unless anchored.
    return f"^(?:{regex.pattern})$"


def _text(description: str, **extra: Any) -> JSON:
    return {"type": "string", "description": description, **extra}


def _choice(description: str, choices: Sequence[str], meanings: Mapping[str, str]) -> JSON:
    listed = "; ".join(f"{c}: {meanings[c]}" if c in meanings else c for c in choices)
    return {"type": "string", "enum": list(choices), "description": f"{description} ({listed})."}


def _map(
    description: str, value: JSON, longest: int = MAX_NAME, reserved: Sequence[str] = ()
) -> JSON:
    """A table whose keys are names the author chooses (groups, presets, ...), spelled as the
    loader wants a name; none of *reserved*."""
    names: JSON = {"type": "string", "pattern": _pattern(NAME_RE), "maxLength": longest}
    if reserved:
        names["not"] = {"enum": list(reserved)}
    return {
        "type": "object",
        "description": description,
        "propertyNames": names,
        "additionalProperties": value,
    }


def _table(
    what: str, keys: tuple[str, ...], properties: Mapping[str, JSON], description: str
) -> JSON:
    """A table of the loader's *keys*, each described in *properties* (those marked
    ``"_required": True`` are required); the table accepts no other key."""
    missing = [key for key in keys if key not in properties]
    extra = [key for key in properties if key not in keys]
    if missing or extra:
        raise LookupError(
            f"the JSON Schema of {what} does not match the keys the loader accepts "
            f"(undescribed: {', '.join(missing) or 'none'}; described but not accepted: "
            f"{', '.join(extra) or 'none'}): describe exactly the loader's keys in "
            "src/nemo/lens/codegen/json_schema.py"
        )
    out: JSON = {"type": "object", "description": description, "properties": {}}
    required = []
    for key in keys:
        spec = dict(properties[key])
        if spec.pop("_required", False):
            required.append(key)
        out["properties"][key] = spec
    if required:
        out["required"] = required
    out["additionalProperties"] = False
    return out


_CATEGORY_MEANING = {
    GOODPUT: "a boundary of the job's useful or resiliency time (the job, a step, a checkpoint)",
    PROFILING: "fine-grained detail (every group is profiling unless it says goodput)",
}
_QUIET = " and ".join(t for t in TIERS if t in QUIET_TIERS)


def _group() -> JSON:
    deprecated = _table(
        "a group's deprecation",
        DEPRECATED_KEYS,
        {
            "note": _text("Why the group is deprecated, and what to use instead.", _required=True),
            "renamed_to": _text(
                "The group this one was renamed to: its old constant and spec name keep "
                "working, as the new group, with a DeprecationWarning."
            ),
        },
        "The group is deprecated: a note, and optionally the group it was renamed to.",
    )
    return _table(
        "a group",
        GROUP_KEYS,
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
            "deprecated": deprecated,
        },
        "A span group: a name instrumentation sites tag their spans with.",
    )


def _groups(description: str) -> JSON:
    return _map(description, {"$ref": "#/definitions/group"})


def _preset(base: bool) -> JSON:
    inherits = (
        ""
        if base
        else " A preset with the name of a base preset adds to the base preset's groups "
        "(unless replace = true) and needs neither a description nor groups of its own."
    )
    return _table(
        "a preset",
        PRESET_KEYS,
        {
            "description": _text("What the preset is for, in one line.", _required=base),
            "groups": {
                "type": "array",
                "items": {"type": "string"},
                "uniqueItems": True,
                "description": "The groups the preset enables.",
                "_required": base,
            },
            "extends": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Presets whose groups this one enables too (`all`: every group).",
            },
            "replace": {
                "type": "boolean",
                "description": "true: start from nothing instead of adding to the base preset "
                "of the same name (consumer presets only).",
            },
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


def _consumer() -> JSON:
    return _table(
        "a consumer",
        CONSUMER_KEYS,
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
            "groups": _groups("The groups the consumer adds to the base groups."),
            "presets": _presets(base=False),
        },
        "A consumer: a subclass of SpanGroup with groups and presets of its own, which inherits "
        "the base groups and presets.",
    )


def _metrics() -> JSON:
    section = _table(
        "a metric section",
        METRIC_SECTION_KEYS,
        {
            "title": _text("The section's heading in the metrics page.", _required=True),
            "description": _text("What the section's instruments have in common."),
        },
        "A section of the metrics page.",
    )
    instrument = _table(
        "a metric instrument",
        INSTRUMENT_KEYS,
        {
            "name": _text(
                "The metric name as exported, dotted lowercase.",
                pattern=_pattern(METRIC_NAME_RE),
                _required=True,
            ),
            "kind": {
                "type": "string",
                "enum": list(METRIC_KINDS),
                "description": "The OpenTelemetry instrument.",
                "_required": True,
            },
            "unit": _text("The unit, in UCUM (like 's' or '{token}')."),
            "description": _text("What the instrument measures.", _required=True),
            "section": _text("The key of its section in [metrics.sections].", _required=True),
            "recorded_by": _text("What records it, for the docs.", _required=True),
            "boundaries": _text("A histogram's boundaries: a key of [metrics.boundaries]."),
            "non_negative": {
                "type": "boolean",
                "description": "Negative values are bad input and skipped (default true).",
            },
        },
        "A metric instrument: its key upper-cased is the constant of nemo.lens.semconv.",
    )
    return _table(
        "the metric catalogue",
        METRICS_KEYS,
        {
            "boundaries": _map(
                "Named histogram boundaries: non-empty arrays of numbers, strictly increasing.",
                {"type": "array", "items": {"type": "number"}, "minItems": 1},
            ),
            "sections": _map("The sections of the metrics page.", section),
            "instruments": _map("The metric instruments.", instrument, LONG_NAME),
        },
        "The metric catalogue (base schema only): rendered into nemo.lens.semconv.metrics.",
    )


def _attributes() -> JSON:
    section = _table(
        "an attribute section",
        NAME_SECTION_KEYS,
        {
            "title": _text("The section's heading in the attributes page.", _required=True),
            "description": _text("What the section's names have in common."),
            "resource": {
                "type": "boolean",
                "description": "Its names are resource attributes (nemo.lens.semconv.resource).",
            },
        },
        "A section of the attributes page.",
    )
    release = {"pattern": _pattern(RELEASE_RE)}
    name = _table(
        "a catalogue name",
        NAME_KEYS,
        {
            "value": _text("What the constant holds (like 'dl.rank').", _required=True),
            "section": _text("The key of its section in [attributes.sections].", _required=True),
            "description": _text("What the name means, in one line.", _required=True),
            "kind": {
                "type": "string",
                "enum": list(NAME_KINDS),
                "description": "What the name is (default: attribute).",
            },
            "type": {
                "type": "string",
                "enum": list(ATTRIBUTE_TYPES),
                "description": "The attribute's type (attributes only; resource ones state it).",
            },
            "of": _text('For a kind = "value": the key of the attribute it is a value of.'),
            "alias_of": _text("The key of the entry whose value this one repeats."),
            "upstream": _text(
                "The upstream release whose nemo.lens.semconv defines this constant.", **release
            ),
            "upstream_resource": _text(
                "The upstream release that sends this key in every resource.", **release
            ),
        },
        "One name of nemo.lens.semconv: its key upper-cased is the constant.",
    )
    return _table(
        "the attribute catalogue",
        ATTRIBUTES_KEYS,
        {
            "sections": _map("The sections of the attributes page.", section),
            "names": _map("The names.", name, LONG_NAME),
        },
        "The attribute-name catalogue (base schema only): rendered into nemo.lens.semconv.",
    )


def json_schema() -> JSON:
    """The JSON Schema (draft-07) of a span-group schema file, base or consumer."""
    top = _table(
        "the top level",
        TOP_KEYS,
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
            "groups": _groups("The base vocabulary: groups meaningful to every consumer."),
            "presets": _presets(base=True),
            "consumers": _map(
                "Consumers: each becomes a subclass of SpanGroup in a module of its own.",
                {"$ref": "#/definitions/consumer"},
            ),
            "metrics": _metrics(),
            "attributes": _attributes(),
        },
        "A nemo.lens span-group schema (nemo-lens generate). A base schema defines groups and "
        "presets; a schema with extends defines consumers only.",
    )
    return {
        "$schema": DRAFT,
        "$comment": (
            "DO NOT EDIT: generated from the rules of nemo-lens generate's schema loader. "
            "Print it again with `nemo-lens generate --print-json-schema` (in the nemo.lens "
            "repository: `make generate`)."
        ),
        "title": "nemo.lens span-group schema",
        **top,
        "if": {"required": ["extends"]},
        "then": {
            "required": ["consumers"],
            "properties": dict.fromkeys(BASE_ONLY_KEYS, False),
        },
        "else": {"required": ["groups", "presets"]},
        "definitions": {
            "group": _group(),
            "preset": _preset(base=True),
            "consumer_preset": _preset(base=False),
            "consumer": _consumer(),
        },
    }


def json_schema_text() -> str:
    """:func:`json_schema` as the shipped file holds it: indented, one final newline."""
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"
