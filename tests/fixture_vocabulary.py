"""Span-group classes generated from the test fixture schema, for tests of exact output.

Tests that print or compare whole vocabularies use these rather than the shipped
classes, so they never restate the shipped schema: the fixture schema
(``tests/generator/fixtures/small.toml``) is theirs. The generated modules are
loaded under their own names (``lens_fixture.groups``, ``lens_fixture.serve``),
next to the real ``nemo.lens.groups``.
"""

from __future__ import annotations

import functools
import sys
import types
from pathlib import Path
from typing import TYPE_CHECKING

from nemo.lens import spec
from nemo.lens.codegen.render import render_all
from nemo.lens.codegen.validate import load_schema

if TYPE_CHECKING:
    from nemo.lens.groups import SpanGroup

FIXTURE = Path(__file__).resolve().parent / "generator" / "fixtures" / "small.toml"
_BASE_IMPORT = "from nemo.lens.groups import SpanGroup\n"


def _load(name: str, source: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = f"<{name}>"
    sys.modules[name] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


@functools.cache
def fixture_classes() -> dict[str, type[SpanGroup]]:
    """``{"base": SpanGroup, "serve": ServeSpanGroup}`` of the fixture schema."""
    # Renamed groups register their old names process-wide when their class is built;
    # the fixture's must not leak into the shipped vocabulary of other tests.
    registered = {old: set(new) for old, new in spec._renamed.items()}
    try:
        return _generate()
    finally:
        spec._renamed.clear()
        spec._renamed.update(registered)


def _generate() -> dict[str, type[SpanGroup]]:
    schema = load_schema(FIXTURE, shown="fixtures/small.toml")
    files = render_all(schema, Path("src"), None, command="nemo-lens generate")
    by_module = {path.with_suffix("").as_posix().replace("/", "."): t for path, t in files.items()}
    base = _load("lens_fixture.groups", by_module["src.nemo.lens.groups"])
    consumer_source = by_module["src.nemo.lens.consumers.serve"]
    assert _BASE_IMPORT in consumer_source
    serve = _load(
        "lens_fixture.serve",
        consumer_source.replace(_BASE_IMPORT, "from lens_fixture.groups import SpanGroup\n"),
    )
    return {"base": base.SpanGroup, "serve": serve.ServeSpanGroup}
