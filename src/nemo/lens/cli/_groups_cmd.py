"""``nemo-lens groups``: a vocabulary, its presets, and what a spec turns on or off."""

from __future__ import annotations

import argparse
import shlex
import sys
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from nemo.lens.cli._classes import BASE_CLASS
from nemo.lens.cli._common import EXIT_OK, PROG, print_lines
from nemo.lens.cli._table import format_table

if TYPE_CHECKING:
    from nemo.lens.groups import SpanGroup
    from nemo.lens.spec import GroupInfo

__all__ = ["cmd_groups"]


def _first_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0] if lines else ""


def _info(classes: Sequence[type[SpanGroup]], group: str) -> GroupInfo:
    from nemo.lens.spec import GroupInfo

    for cls in classes:
        info = getattr(cls, "GROUP_INFO", {}).get(group)
        if info is not None:
            return info  # type: ignore[no-any-return]
    # A hand-written subclass may add groups without describing them.
    return GroupInfo(group, "(not described)", "?", "?")


def _describe(info: GroupInfo) -> str:
    if info.deprecated:
        return f"{info.description} (deprecated: {info.deprecated})"
    if info.sync:
        return f"{info.description} (sync point)"
    return info.description


def _order(classes: Sequence[type[SpanGroup]]) -> list[str]:
    """Every group of the classes, in the order their schemas list them."""
    order: dict[str, None] = {}
    for cls in classes:
        order.update(dict.fromkeys(getattr(cls, "GROUP_INFO", {})))
    for cls in classes:
        order.update(dict.fromkeys(sorted(cls.ALL_GROUPS - set(order))))
    union = frozenset().union(*(cls.ALL_GROUPS for cls in classes))
    return [group for group in order if group in union]


def _example_spec(presets: Mapping[str, frozenset[str]], order: list[str]) -> str:
    """A spec worth trying, from this vocabulary: a preset with one of its groups removed."""
    for name in ("per_step", "default", *presets):
        members = [g for g in order if g in presets.get(name, frozenset())]
        if members:
            return f"{name},-{members[-1]}"
    return "all"


def cmd_groups(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    # Looked up on the package at call time, where tests (and readers) find it.
    from nemo.lens.cli._classes import span_group_classes
    from nemo.lens.spec import categories_for, presets_of

    available = span_group_classes()
    classes = [available[name] for name in dict.fromkeys(args.class_name or [BASE_CLASS])]
    order = _order(classes)
    if args.spec is not None:
        return _explain_spec(classes, args.spec, order, parser)
    title = " + ".join(cls.__name__ for cls in classes)
    docs = " ".join(_first_line(cls.__doc__) for cls in classes)
    lines = [f"{title}: {docs}", ""]
    categories = categories_for(classes)
    rows = []
    for group in order:
        info = _info(classes, group)
        rows.append((group, info.fires, categories[group], _describe(info)))
    lines += format_table(("group", "fires", "category", "description"), rows, ("<",) * 4)
    lines.append("")
    presets: dict[str, frozenset[str]] = {}
    for cls in classes:
        for name, members in presets_of(cls).items():
            presets[name] = presets.get(name, frozenset()) | members
    # The declared presets in schema order, then the implicit ones.
    names = [n for n in presets if n not in ("goodput", "profiling", "all")]
    names += ["goodput", "profiling", "all"]
    preset_rows = [
        (
            name,
            "every group" if name == "all" else ", ".join(g for g in order if g in presets[name]),
        )
        for name in names
    ]
    lines += format_table(("preset", "groups"), preset_rows, ("<", "<"))
    lines += ["", *_namespace_lines()]
    classes_flag = "".join(f" --class {name}" for name in args.class_name or [])
    lines += [
        "",
        "Choose groups per run with NEMO_LENS_SPAN_GROUPS, e.g. NEMO_LENS_SPAN_GROUPS=per_step.",
        f"See what a spec enables: {PROG} groups{classes_flag} "
        f"--spec {shlex.quote(_example_spec(presets, order))}",
    ]
    print_lines(lines)
    return EXIT_OK


def _namespace_lines() -> list[str]:
    """The run-time registry's namespaces: the generated modules imported so far register
    their classes; a library that calls ``SpanRegistry.register`` adds its own."""
    from nemo.lens.registry import SpanRegistry

    rows = [
        (namespace, ", ".join(sorted(groups)))
        for namespace, groups in SpanRegistry.namespace_groups().items()
    ]
    return format_table(("registered namespace", "groups"), rows, ("<", "<"))


def _explain_spec(
    classes: Sequence[type[SpanGroup]],
    spec: str,
    order: list[str],
    parser: argparse.ArgumentParser,
) -> int:
    from nemo.lens.spec import explain_for, spec_in_effect

    # An empty spec is read as the configuration reads it (as unset: the default).
    effective = spec_in_effect(spec)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DeprecationWarning)
        try:
            enabled, steps = explain_for(effective, classes)
        except ValueError as exc:
            parser.error(f"--spec {spec!r}: {exc}")
    for warning in caught:
        print(f"{PROG}: note: {warning.message}", file=sys.stderr)
    decided: dict[str, str] = {}
    for step in steps:
        for group in step.added | step.removed:
            decided[group] = step.entry
    rows = [
        (
            group,
            _info(classes, group).fires,
            "on" if group in enabled else "off",
            decided.get(group, "(not in the spec)"),
        )
        for group in order
    ]
    title = " + ".join(cls.__name__ for cls in classes)
    meaning = f" (empty: read as {effective!r}, as when unset)" if effective != spec else ""
    lines = [
        f"{title}: spec {spec!r}{meaning} enables {len(enabled)} of {len(order)} groups",
        "",
        *format_table(("group", "fires", "enabled", "decided by"), rows, ("<", "<", "<", "<")),
        "",
        f"Use it with: NEMO_LENS_SPAN_GROUPS={shlex.quote(spec)}",
    ]
    print_lines(lines)
    return EXIT_OK
