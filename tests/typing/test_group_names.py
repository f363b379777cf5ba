"""mypy and pyright reject a misspelled span group and accept every group the schema defines.

The snippets are checked against the shipped package (``src/``), as a user's
project would check its own code. Each negative snippet must give exactly the
expected error code at the expected line, and each positive snippet none.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nemo.lens.consumers.gym import GymSpanGroup
from nemo.lens.consumers.megatron import MegatronSpanGroup
from nemo.lens.consumers.rl import RLSpanGroup
from nemo.lens.groups import SpanGroup
from tests.typing.checkers import Results, Snippet, assert_as_expected, check_snippets, expected

REPO = Path(__file__).resolve().parents[2]

# A group only Megatron has, and one only Gym has (not RL): read from the classes.
MEGATRON_ONLY = sorted(MegatronSpanGroup.ALL_GROUPS - SpanGroup.ALL_GROUPS)[0]
GYM_ONLY = sorted(GymSpanGroup.ALL_GROUPS - SpanGroup.ALL_GROUPS)[0]
NOT_RL = sorted(MegatronSpanGroup.ALL_GROUPS - RLSpanGroup.ALL_GROUPS)[0]

CLASSES: list[tuple[type[SpanGroup], str]] = [
    (SpanGroup, "nemo.lens.groups"),
    (MegatronSpanGroup, "nemo.lens.consumers.megatron"),
    (RLSpanGroup, "nemo.lens.consumers.rl"),
    (GymSpanGroup, "nemo.lens.consumers.gym"),
]


def _every_name(cls: type[SpanGroup], module: str) -> Snippet:
    """Every group of ``cls``, as a literal and as its constant, through every entry point."""
    name = cls.__name__
    front_door = module != "nemo.lens.groups"
    lines = [
        "from nemo.lens import is_span_group_enabled, managed_span, trace_fn",
        f"from {module} import {name}",
    ]
    if front_door:
        lines.append(f"import {module} as own")
    lines += ["", "", "def _work() -> None: ...", "", "", "def instrumented() -> None:"]
    for group in sorted(cls.ALL_GROUPS):
        for value in (repr(group), f"{name}.{group.upper()}"):
            lines += [
                f"    with managed_span({value}, 'x'):",
                "        pass",
                f"    trace_fn({value}, 'x')(_work)",
                f"    is_span_group_enabled({value})",
            ]
            if front_door:
                lines += [
                    f"    with own.managed_span({value}, 'x'):",
                    "        pass",
                    f"    own.trace_fn({value}, 'x')(_work)",
                    f"    own.is_span_group_enabled({value})",
                ]
    return Snippet(f"every_{name.lower()}_group", "\n".join(lines) + "\n")


POSITIVE = [
    *(_every_name(cls, module) for cls, module in CLASSES),
    Snippet(
        "runtime_names_through_dynamic_span_group",
        """
        import os

        from nemo.lens import is_span_group_enabled, managed_span, trace_fn
        from nemo.lens.consumers import megatron
        from nemo.lens.groups import DynamicSpanGroup, SpanGroup

        group = DynamicSpanGroup(os.environ.get("MY_GROUP", "step"))
        with managed_span(group, "x"):
            pass
        trace_fn(group, "x")
        is_span_group_enabled(group)
        megatron.is_span_group_enabled(group)
        for name in SpanGroup.ALL_GROUPS:
            is_span_group_enabled(DynamicSpanGroup(name))
        """,
    ),
    Snippet(
        "typed_wrappers_pass_groups_on",
        f"""
        from contextlib import AbstractContextManager

        from opentelemetry.trace import Span

        from nemo.lens import managed_span
        from nemo.lens.consumers.megatron import MegatronSpanGroupName, MegatronSpanGroupPresetName
        from nemo.lens.groups import SpanGroupArg


        def phase(group: MegatronSpanGroupName) -> AbstractContextManager[Span | None]:
            return managed_span(group, "phase")


        def any_phase(group: SpanGroupArg) -> AbstractContextManager[Span | None]:
            return managed_span(group, "phase")


        def choose(preset: MegatronSpanGroupPresetName) -> str:
            return preset


        phase("{MEGATRON_ONLY}")
        any_phase("{GYM_ONLY}")
        choose("per_step")
        """,
    ),
    Snippet(
        "typed_preset_constants",
        """
        from nemo.lens.consumers.megatron import (
            DEFAULT_PRESET,
            GOODPUT_PRESET,
            PER_STEP_PRESET,
            MegatronSpanGroupName,
        )
        from nemo.lens.state import set_enabled_span_groups

        chosen: frozenset[MegatronSpanGroupName] = DEFAULT_PRESET | GOODPUT_PRESET
        set_enabled_span_groups(chosen | PER_STEP_PRESET)
        """,
    ),
    Snippet(
        "fallback_import_pattern",
        """
        try:
            from nemo.lens import is_span_group_enabled, managed_span, trace_fn
        except ImportError:
            from nemo.lens.fallbacks import is_span_group_enabled, managed_span, trace_fn
        from nemo.lens.groups import SpanGroup

        with managed_span(SpanGroup.STEP, "x", iteration=1):
            pass
        trace_fn("optimizer", "x")
        is_span_group_enabled("job")
        """,
    ),
]

NEGATIVE = [
    Snippet(
        "misspelled_base_constant",
        """
        from nemo.lens import managed_span
        from nemo.lens.groups import SpanGroup

        # expect: mypy=attr-defined pyright=reportAttributeAccessIssue
        with managed_span(SpanGroup.STPE, "x"):
            pass
        """,
    ),
    Snippet(
        "misspelled_consumer_constant",
        """
        from nemo.lens import managed_span
        from nemo.lens.consumers.megatron import MegatronSpanGroup

        # expect: mypy=attr-defined pyright=reportAttributeAccessIssue
        with managed_span(MegatronSpanGroup.MICROBATH, "x"):
            pass
        """,
    ),
    Snippet(
        "misspelled_literal_in_managed_span",
        """
        from nemo.lens import managed_span

        with managed_span("stpe", "x"):  # expect: mypy=arg-type pyright=reportArgumentType
            pass
        """,
    ),
    Snippet(
        "misspelled_literal_in_trace_fn",
        """
        from nemo.lens import trace_fn


        @trace_fn("stpe", "x")  # expect: mypy=arg-type pyright=reportArgumentType
        def work() -> None: ...
        """,
    ),
    Snippet(
        "misspelled_literal_in_is_span_group_enabled",
        """
        from nemo.lens import is_span_group_enabled

        is_span_group_enabled("stpe")  # expect: mypy=arg-type pyright=reportArgumentType
        """,
    ),
    Snippet(
        "misspelled_literal_through_the_implementation_modules",
        """
        from nemo.lens.helpers import managed_span
        from nemo.lens.state import is_span_group_enabled

        with managed_span("microbath", "x"):  # expect: mypy=arg-type pyright=reportArgumentType
            pass
        is_span_group_enabled("microbath")  # expect: mypy=arg-type pyright=reportArgumentType
        """,
    ),
    Snippet(
        "misspelled_literal_under_the_fallback_pattern",
        """
        try:
            from nemo.lens import managed_span
        except ImportError:
            from nemo.lens.fallbacks import managed_span

        with managed_span("stpe", "x"):  # expect: mypy=arg-type pyright=reportArgumentType
            pass
        """,
    ),
    Snippet(
        "another_consumers_group_in_a_consumer_module",
        f"""
        from nemo.lens.consumers.rl import managed_span

        with managed_span("{NOT_RL}", "x"):  # expect: mypy=arg-type pyright=reportArgumentType
            pass
        """,
    ),
    Snippet(
        "a_plain_str_is_not_a_group",
        """
        import os

        from nemo.lens import managed_span

        group = os.environ["MY_GROUP"]
        with managed_span(group, "x"):  # expect: mypy=arg-type pyright=reportArgumentType
            pass
        """,
    ),
    Snippet(
        "misspelled_preset_where_a_preset_is_taken",
        """
        from nemo.lens.consumers.megatron import MegatronSpanGroupPresetName


        def choose(preset: MegatronSpanGroupPresetName) -> str:
            return preset


        choose("per_stpe")  # expect: mypy=arg-type pyright=reportArgumentType
        """,
    ),
    Snippet(
        "misspelled_preset_constant",
        """
        from nemo.lens.consumers import megatron

        # expect: mypy=attr-defined pyright=reportAttributeAccessIssue
        megatron.PER_STPE_PRESET
        """,
    ),
    Snippet(
        "a_preset_constant_holds_only_group_names",
        """
        from nemo.lens.groups import DEFAULT_PRESET, SpanGroupName

        first: SpanGroupName = sorted(DEFAULT_PRESET)[0]
        # expect: mypy=arg-type pyright=reportAssignmentType
        more: frozenset[SpanGroupName] = DEFAULT_PRESET | {"stpe"}
        """,
    ),
    Snippet(
        "misspelled_name_of_a_typed_variable",
        """
        from nemo.lens.consumers.megatron import MegatronSpanGroupName

        # expect: mypy=assignment pyright=reportAssignmentType
        group: MegatronSpanGroupName = "microbath"
        """,
    ),
]


SNIPPETS = POSITIVE + NEGATIVE


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Results:
    return check_snippets(tmp_path_factory.mktemp("names"), SNIPPETS, [REPO / "src"])


@pytest.mark.parametrize("checker", ["mypy", "pyright"])
@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda s: s.name)
def test_snippet(results: Results, snippet: Snippet, checker: str) -> None:
    assert_as_expected(results, snippet, checker)


@pytest.mark.parametrize("checker", ["mypy", "pyright"])
def test_each_negative_snippet_expects_errors_and_each_positive_none(checker: str) -> None:
    # A negative snippet that expected nothing would pass by checking nothing.
    assert all(expected(s, checker) for s in NEGATIVE)
    assert not any(expected(s, checker) for s in POSITIVE)


def test_a_typo_reads_as_the_checkers_print_it(results: Results) -> None:
    (snippet,) = (s for s in NEGATIVE if s.name == "misspelled_literal_in_managed_span")
    (mypy,) = results.messages("mypy", snippet)
    assert mypy.startswith('Argument 1 to "managed_span" has incompatible type "Literal[\'stpe\']"')
    assert "'step'" in mypy and "DynamicSpanGroup" in mypy
    (pyright,) = results.messages("pyright", snippet)
    assert pyright.startswith(
        'Argument of type "Literal[\'stpe\']" cannot be assigned to parameter "group" of type '
        '"SpanGroupArg"'
    )
