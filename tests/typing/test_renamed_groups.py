"""A renamed group keeps working, warns at run time, and type checkers report each use.

The shipped schema renames nothing, so this renders the generator's fixture
schema (``iteration`` renamed to ``step``) over a copy of the runtime, plus a
consumer from "another repository" that extends it and renames a group of its
own, exactly as their authors would with ``nemo-lens generate``. The
snippets are then checked against that tree, and run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.generator.conftest import FIXTURES, REPO, run_codegen
from tests.typing.checkers import (
    Results,
    Snippet,
    assert_as_expected,
    check_snippets,
    expected,
    make_checkable_copy,
)

EXTERNAL = """\
schema_version = 1
extends = "../schema/small.toml"

[consumers.mylib]
class = "MyLibSpanGroup"
module = "mylib.lens_groups"
description = "Span groups of mylib."

[consumers.mylib.groups.shard_merge]
description = "Merging of dataset shards."
fires = "periodic"
since = "1.0.0"

[consumers.mylib.groups.merge]
description = "Old name of shard_merge."
fires = "periodic"
since = "0.9.0"
deprecated = { note = "Say which merge.", renamed_to = "shard_merge" }

[consumers.mylib.presets.default]
description = "Production."
groups = ["job", "shard_merge"]
"""


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture schema rendered over a copy of the runtime, and mylib beside it."""
    root = tmp_path_factory.mktemp("renamed")
    shutil.copytree(
        REPO / "src" / "nemo",
        root / "src" / "nemo",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    make_checkable_copy(root / "src")
    (root / "schema").mkdir()
    shutil.copy(FIXTURES / "small.toml", root / "schema" / "small.toml")
    (root / "mylib").mkdir()
    (root / "mylib" / "lens.toml").write_text(EXTERNAL, encoding="utf-8")
    for schema, out in (("schema/small.toml", "src"), ("mylib/lens.toml", "mylib/src")):
        done = run_codegen(
            "--schema", str(root / schema), "--out-root", str(root / out), "--no-docs"
        )
        assert done.returncode == 0, done.stderr
    # The copied runtime reads the real catalogues' names (state.py imports SCOPE_NAME
    # ...), which the fixture's base schema does not define: keep the real ones.
    semconv = Path("src", "nemo", "lens", "semconv")
    for name in ("attributes.py", "resource.py", "metrics.py"):
        shutil.copy(REPO / semconv / name, root / semconv / name)
    return root


def _paths(tree: Path) -> list[Path]:
    return [tree / "src", tree / "mylib" / "src"]


DEPRECATED = [
    Snippet(
        "old_constant",
        """
        from nemo.lens import managed_span
        from nemo.lens.groups import SpanGroup

        # expect: mypy=deprecated pyright=reportDeprecated
        with managed_span(SpanGroup.ITERATION, "x"):
            pass
        """,
    ),
    Snippet(
        "old_constant_inherited_by_a_consumer",
        """
        from nemo.lens.consumers.serve import ServeSpanGroup

        group = ServeSpanGroup.ITERATION  # expect: mypy=deprecated pyright=reportDeprecated
        """,
    ),
    Snippet(
        "old_literal_in_managed_span",
        """
        from nemo.lens import managed_span

        with managed_span("iteration", "x"):  # expect: mypy=deprecated pyright=reportDeprecated
            pass
        """,
    ),
    Snippet(
        "old_literal_in_trace_fn",
        """
        from nemo.lens import trace_fn


        @trace_fn("iteration", "x")  # expect: mypy=deprecated pyright=reportDeprecated
        def work() -> None: ...
        """,
    ),
    Snippet(
        "old_literal_in_is_span_group_enabled",
        """
        from nemo.lens.state import is_span_group_enabled

        is_span_group_enabled("iteration")  # expect: mypy=deprecated pyright=reportDeprecated
        """,
    ),
    Snippet(
        "another_repositorys_old_constant",
        """
        from mylib.lens_groups import MyLibSpanGroup

        group = MyLibSpanGroup.MERGE  # expect: mypy=deprecated pyright=reportDeprecated
        """,
    ),
    Snippet(
        "another_repositorys_old_literal",
        """
        from mylib.lens_groups import managed_span

        with managed_span("merge", "x"):  # expect: mypy=deprecated pyright=reportDeprecated
            pass
        """,
    ),
    Snippet(
        "a_base_old_literal_through_another_repositorys_module",
        """
        from mylib.lens_groups import is_span_group_enabled

        is_span_group_enabled("iteration")  # expect: mypy=deprecated pyright=reportDeprecated
        """,
    ),
]

CLEAN = [
    Snippet(
        "current_names_are_not_deprecated",
        """
        from typing import Any

        from nemo.lens import is_span_group_enabled, managed_span, trace_fn
        from nemo.lens.groups import DynamicSpanGroup, SpanGroup


        def instrument(untyped: Any, dynamic: DynamicSpanGroup) -> None:
            for group in (SpanGroup.STEP, "step", "request", untyped, dynamic):
                with managed_span(group, "x"):
                    pass
            trace_fn(SpanGroup.JOB, "x")
            is_span_group_enabled(SpanGroup.LEGACY_SYNC)
        """,
    ),
    Snippet(
        "another_repository_instruments_with_its_own_groups",
        """
        from mylib.lens_groups import MyLibSpanGroup, is_span_group_enabled, managed_span, trace_fn

        with managed_span(MyLibSpanGroup.SHARD_MERGE, "merge"):
            pass
        with managed_span("shard_merge", "merge"), managed_span(MyLibSpanGroup.STEP, "step"):
            pass
        trace_fn("job", "x")
        is_span_group_enabled("shard_merge")
        """,
    ),
]

WRONG = [
    Snippet(
        "misspelled_literal_in_another_repositorys_module",
        """
        from mylib.lens_groups import managed_span

        # expect: mypy=call-overload pyright=reportCallIssue,reportArgumentType
        with managed_span("shard_merg", "x"):
            pass
        """,
    ),
    Snippet(
        "misspelled_constant_in_another_repositorys_module",
        """
        from mylib.lens_groups import MyLibSpanGroup

        # expect: mypy=attr-defined pyright=reportAttributeAccessIssue
        group = MyLibSpanGroup.SHARD_MERG
        """,
    ),
    Snippet(
        "another_repositorys_group_needs_its_own_module",
        """
        from nemo.lens import managed_span

        # expect: mypy=call-overload pyright=reportCallIssue,reportArgumentType
        with managed_span("shard_merge", "x"):
            pass
        """,
    ),
]

SNIPPETS = DEPRECATED + CLEAN + WRONG


@pytest.fixture(scope="module")
def results(tree: Path) -> Results:
    return check_snippets(tree / "snippets", SNIPPETS, _paths(tree))


@pytest.mark.parametrize("checker", ["mypy", "pyright"])
@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda s: s.name)
def test_snippet(results: Results, snippet: Snippet, checker: str) -> None:
    assert_as_expected(results, snippet, checker)


@pytest.mark.parametrize("checker", ["mypy", "pyright"])
def test_each_deprecated_and_wrong_snippet_expects_errors(checker: str) -> None:
    assert all(expected(s, checker) for s in DEPRECATED + WRONG)
    assert not any(expected(s, checker) for s in CLEAN)


@pytest.mark.parametrize("checker", ["mypy", "pyright"])
def test_the_report_names_the_new_group(results: Results, checker: str) -> None:
    by_name = {s.name: s for s in SNIPPETS}
    (constant,) = results.messages(checker, by_name["old_constant"])
    assert "SpanGroup.ITERATION: span group 'iteration' was renamed to 'step'" in constant
    assert "use SpanGroup.STEP" in constant
    (literal,) = results.messages(checker, by_name["another_repositorys_old_literal"])
    assert "span group 'merge' was renamed to 'shard_merge'; use MyLibSpanGroup.SHARD_MERGE" in (
        literal
    )


RUN = """
import json
import sys
import warnings

import mylib.lens_groups
from mylib.lens_groups import MyLibSpanGroup
from nemo.lens import helpers, is_span_group_enabled, managed_span, testing
from nemo.lens.groups import SpanGroup
from nemo.lens.state import enabled_span_groups, set_enabled_span_groups

out = {}


def caught(read):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        value = read()
    return value, [(w.category.__name__, str(w.message), w.filename) for w in seen]


out["constant"] = caught(lambda: SpanGroup.ITERATION)
out["inherited_constant"] = caught(lambda: MyLibSpanGroup.ITERATION)
out["own_constant"] = caught(lambda: MyLibSpanGroup.MERGE)
out["resolved"] = caught(lambda: sorted(SpanGroup.resolve("iteration")))
out["all_groups"] = sorted(SpanGroup.ALL_GROUPS)

with testing.capture_spans("per_step") as spans:
    with managed_span("iteration", "old.name") as span:
        out["old_name_traced"] = span is not None and span.is_recording()
    out["old_name_enabled"] = is_span_group_enabled("iteration")
    out["reported_enabled"] = sorted(enabled_span_groups())
out["exported"] = [s.name for s in spans.get_finished_spans()]

set_enabled_span_groups(MyLibSpanGroup.resolve("default"))
out["own_old_name_enabled"] = is_span_group_enabled("merge")
set_enabled_span_groups([])
out["own_old_name_after_disable"] = is_span_group_enabled("merge")
out["front_door"] = mylib.lens_groups.managed_span is helpers.managed_span
print(json.dumps(out))
"""


def test_at_run_time_the_old_names_warn_and_keep_tracing(tree: Path) -> None:
    script = tree / "run_renamed.py"
    script.write_text(textwrap.dedent(RUN), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, _paths(tree)))}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    here = str(script)

    # Reading an old constant gives the new name, with one warning pointing at the reader.
    assert out["constant"] == [
        "step",
        [
            [
                "DeprecationWarning",
                "SpanGroup.ITERATION: span group 'iteration' was renamed to 'step'; "
                "use SpanGroup.STEP",
                here,
            ]
        ],
    ]
    assert out["inherited_constant"][0] == "step"
    assert out["own_constant"] == [
        "shard_merge",
        [
            [
                "DeprecationWarning",
                "MyLibSpanGroup.MERGE: span group 'merge' was renamed to 'shard_merge'; "
                "use MyLibSpanGroup.SHARD_MERGE",
                here,
            ]
        ],
    ]
    # A spec naming the old group resolves to the new one, and says so.
    resolved, warned = out["resolved"]
    assert resolved == ["step"]
    assert [category for category, _, _ in warned] == ["DeprecationWarning"]
    assert "renamed to 'step'" in warned[0][1]
    assert "iteration" not in out["all_groups"]
    # Code still passing the old name traces exactly as before.
    assert out["old_name_traced"] is True
    assert out["old_name_enabled"] is True
    assert out["exported"] == ["old.name"]
    assert out["reported_enabled"] == ["checkpoint", "job", "step"]
    assert out["own_old_name_enabled"] is True
    assert out["own_old_name_after_disable"] is False
    # The consumer module's primitives are nemo.lens's own functions.
    assert out["front_door"] is True


def test_importing_a_span_group_module_stays_free_of_opentelemetry(tree: Path) -> None:
    code = (
        "import sys, mylib.lens_groups, nemo.lens.consumers.serve\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, _paths(tree)))}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
