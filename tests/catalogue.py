"""The shipped schema's attribute-name catalogue, for tests that derive what to expect from it.

What upstream nemo-lens defines and sends is marked in the catalogue (``upstream``,
``upstream_resource``); tests read those marks here instead of restating the names.
"""

from __future__ import annotations

import builtins
import functools
from pathlib import Path

from nemo.lens.codegen.model import ATTRIBUTE_TYPES, Name, NameCatalogue
from nemo.lens.codegen.validate import load_schema

SCHEMA = Path(__file__).resolve().parents[1] / "schema" / "span_groups.toml"
UPSTREAM = "0.2.0"
"""The upstream release nemo.lens replaces."""


@functools.cache
def catalogue() -> NameCatalogue:
    """The ``[attributes]`` catalogue of the shipped schema."""
    names = load_schema(SCHEMA).names
    assert names is not None, "the shipped schema has no [attributes] catalogue"
    return names


def python_type(name: Name) -> type:
    """The Python type of a value of *name* (its catalogue ``type``)."""
    found = getattr(builtins, ATTRIBUTE_TYPES[name.type])
    assert isinstance(found, type)
    return found


def upstream_constants() -> dict[str, str]:
    """``{constant: value}`` of every constant upstream's ``nemo.lens.semconv`` defines."""
    return {n.constant: n.value for n in catalogue().names if n.upstream == UPSTREAM}


def resource_names() -> tuple[Name, ...]:
    """Every name of the catalogue's resource sections (each states its type)."""
    resource = {s.key for s in catalogue().sections if s.resource}
    return tuple(n for n in catalogue().names if n.section in resource)


def upstream_resource() -> dict[str, type]:
    """``{key: Python type}`` of every key upstream sends in the resource of every signal."""
    return {n.value: python_type(n) for n in resource_names() if n.upstream_resource == UPSTREAM}


def resource_types() -> dict[str, type]:
    """``{key: Python type}`` of every resource key nemo.lens sends, upstream's and its own."""
    return {n.value: python_type(n) for n in resource_names()}
