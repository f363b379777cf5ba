"""``nemo-lens diff-schema``: what an edit of a span-group schema changes for its users.

::

    nemo-lens diff-schema OLD NEW [--format text|json|github]
    nemo-lens generate --baseline OLD [--schema NEW ...]

OLD and NEW are schema files: the base schema, or a consumer's schema that
``extends = "nemo.lens"``. Both are loaded and validated as ``nemo-lens generate``
loads them. OLD is usually the schema of the last release, from git::

    git show v1.2.0:lens.toml > /tmp/old.toml
    nemo-lens diff-schema /tmp/old.toml lens.toml

Every change is classified:

- ``breaking``: a group removed without a deprecation, or renamed without
  ``renamed_to`` ("looks like a rename of X to Y"); a preset removed; a group that left
  ``default`` or another preset (consumers inherit base presets by name); a consumer
  removed, or its class or module renamed. Users of OLD break, or production loses spans.
- ``warning``: a group that fires more often while a preset holds it (``default`` is
  the one that matters); a category or goodput bucket changed, so ``nemo-lens goodput``
  figures move; a deprecated group's ``renamed_to`` now names another group.
- ``compatible``: groups, presets, consumers and preset members added; a deprecation
  added, or a deprecated group removed after it.

A consumer is compared as its users see it: its presets with the members they inherit
from the base presets, its vocabulary with the base groups. A change is reported once,
where it was made (a base preset's lost member at the base, not again at each consumer).

Each finding names the problem, the fix, and the file and line of its key in OLD and in
NEW (where it exists). ``--format text`` (the default) is for people and CI logs: the
breaking changes first, the summary line last. ``--format json`` prints one object::

    {"version": 1, "old": "OLD", "new": "NEW",
     "findings": [{"kind": "group_removed", "severity": "breaking",
                   "subject": "groups.step", "message": "...", "fix": "...",
                   "old": {"file": "OLD", "line": 12, "key": "groups.step"},
                   "new": null}],
     "summary": {"breaking": 1, "warning": 0, "compatible": 0, "breaks": true}}

``--format github`` prints a workflow annotation per breaking change (``::error``) and
warning (``::warning``), at NEW's file and line (OLD's when the key is gone), then the
summary. docs/schema-compatibility.md explains every kind of finding and its fix.

``nemo-lens generate --baseline OLD`` runs the same comparison first: when something
breaks it prints the findings, writes nothing and exits 1; warnings are printed and
generation goes on.

Exit status: 0 nothing breaks (warnings allowed), 1 something breaks, 2 bad usage or an
invalid schema (its validation report is printed).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nemo.lens.codegen.compat_model import Finding, Side
    from nemo.lens.codegen.model import Schema

__all__ = ["EXIT_BREAKING", "EXIT_OK", "EXIT_USAGE", "FORMATS", "check_baseline", "main"]

PROG = "nemo-lens diff-schema"
FORMATS: tuple[str, ...] = ("text", "json", "github")
EXIT_OK = 0
EXIT_BREAKING = 1
EXIT_USAGE = 2
"""Bad usage, or a schema that is not valid."""

_INSTALL_HINT = (
    f"{PROG} needs the code generator's extra (tomli on Python 3.10): "
    "pip install 'nemo-lens[codegen]'"
)


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Compare two span-group schemas and classify every change for the users of the "
            "old one: breaking (a group or preset removed, a rename without renamed_to, a "
            "group that left 'default' or another preset, a consumer's class or module "
            "renamed), warning (a group in a preset fires more often; a category or goodput "
            "bucket changed, so goodput figures move) or compatible (additions, "
            "deprecations). Each finding names the fix and the file:line of both sides."
        ),
        epilog=(
            "Example: git show v1.2.0:lens.toml > /tmp/old.toml && "
            f"{PROG} /tmp/old.toml lens.toml. "
            "Exit status: 0 nothing breaks (warnings allowed), 1 something breaks, "
            "2 bad usage or an invalid schema. See docs/schema-compatibility.md."
        ),
    )
    parser.add_argument(
        "old", type=Path, metavar="OLD", help="the baseline schema (the last release's)"
    )
    parser.add_argument("new", type=Path, metavar="NEW", help="the schema as edited")
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text: for people and CI logs, summary last (default); json: one object with "
        "findings and a summary; github: workflow annotations (::error, ::warning)",
    )
    return parser


def _load(path: Path, shown: str, role: str, schema: Schema | None = None) -> Side | None:
    """The side at *path*, or None after printing why it cannot be compared."""
    from nemo.lens.codegen.compat_model import load_side
    from nemo.lens.codegen.validate import SchemaError

    try:
        return load_side(path, shown, schema)
    except SchemaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        print(
            f"{PROG}: error: {role} ({shown}) cannot be compared: fix the problems above "
            "(`nemo-lens generate --validate --schema PATH` checks one alone), then compare "
            "again",
            file=sys.stderr,
        )
        return None


def _compare(old: Side, new: Side) -> tuple[Finding, ...]:
    from nemo.lens.codegen.compat import compare

    return compare(old, new)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``nemo-lens diff-schema`` with *argv*; return the exit status."""
    try:
        args = parser().parse_args(argv)
    except SystemExit as exit_:  # usage errors (2), --help (0)
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    try:
        from nemo.lens.codegen.compat import breaks
        from nemo.lens.codegen.compat_report import render
    except ImportError as exc:
        print(f"{PROG}: error: {_INSTALL_HINT} ({exc})", file=sys.stderr)
        return EXIT_USAGE
    old_shown, new_shown = args.old.as_posix(), args.new.as_posix()
    old = _load(args.old, old_shown, "OLD")
    new = _load(args.new, new_shown, "NEW")
    if old is None or new is None:
        return EXIT_USAGE
    findings = _compare(old, new)
    sys.stdout.write(render(findings, args.format, old_shown, new_shown))
    return EXIT_BREAKING if breaks(findings) else EXIT_OK


def check_baseline(baseline: Path, path: Path, shown: str, schema: Schema) -> int | None:
    """``generate --baseline``: compare *schema* (loaded from *path*, named *shown*) with
    *baseline*. Print its breaking changes and warnings on stderr; return the exit status
    when generation must stop (1: something breaks, 2: the baseline is not valid), None
    when it goes on."""
    from nemo.lens.codegen.compat import breaks
    from nemo.lens.codegen.compat_model import COMPATIBLE
    from nemo.lens.codegen.compat_report import render, summary

    old_shown = baseline.as_posix()
    old = _load(baseline, old_shown, "the baseline")
    new = _load(path, shown, "the schema", schema)
    if old is None or new is None:
        return EXIT_USAGE
    findings = _compare(old, new)
    shown_findings = [f for f in findings if f.severity != COMPATIBLE]
    report = render(shown_findings, "text", old_shown, shown).splitlines()[:-1]
    for line in (*report, summary(findings, old_shown, shown)):
        print(line, file=sys.stderr)
    if breaks(findings):
        print(
            f"error: the schema breaks users of {old_shown}: keep what they use (each fix "
            "above says how), or compare against another baseline",
            file=sys.stderr,
        )
        return EXIT_BREAKING
    return None
