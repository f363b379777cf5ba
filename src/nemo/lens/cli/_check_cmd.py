"""``nemo-lens check``: each span group's rate in the trace, measured against the ``fires`` tier
its schema declares (docs/cli.md); exit 1 when a group is flagged."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from nemo.lens.cli._classes import selected_classes
from nemo.lens.cli._common import EXIT_BAD_INPUT, EXIT_OK, PROG, plural
from nemo.lens.cli._engine import query
from nemo.lens.cli._sql_cmd import run_query, run_statements, write_result

if TYPE_CHECKING:
    from nemo.lens.cli._engine import Engine

__all__ = ["cmd_check"]

_CEILING: Final = "per_step"
"""The most frequent tier that still fires at most once per iteration."""
_PER_LIFETIME: Final = "once"
"""The tier bounded per process lifetime rather than per iteration."""


def _check_tables(engine: Engine, enabled: Sequence[str]) -> dict[str, Any]:
    """The tables ``queries/check.sql`` reads (the tiers, the enabled groups); its parameters."""
    from nemo.lens.codegen.model import PRODUCTION_PRESET, QUIET_TIERS, TIERS

    ceiling = TIERS.index(_CEILING)
    engine.sql(
        "CREATE OR REPLACE TEMP TABLE check_tiers (fires VARCHAR, position INTEGER, "
        "per_lifetime INTEGER, per_iteration DOUBLE, quiet BOOLEAN)"
    )
    engine.connection.executemany(
        "INSERT INTO check_tiers VALUES (?, ?, ?, ?, ?)",
        [
            (
                tier,
                position,
                1 if tier == _PER_LIFETIME else None,
                1.0 if position <= ceiling and tier != _PER_LIFETIME else None,
                tier in QUIET_TIERS,
            )
            for position, tier in enumerate(TIERS)
        ],
    )
    engine.sql("CREATE OR REPLACE TEMP TABLE check_enabled (span_group VARCHAR)")
    if enabled:
        engine.connection.executemany(
            "INSERT INTO check_enabled VALUES (?)", [(g,) for g in enabled]
        )
    return {"preset": PRODUCTION_PRESET, "ceiling": ceiling, "tiers": len(TIERS)}


def cmd_check(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    enabled: list[str] | None = None
    if args.spec is not None:
        from nemo.lens.spec import resolve_for

        try:
            enabled = sorted(resolve_for(args.spec, selected_classes(args.class_name)))
        except ValueError as error:
            parser.error(f"--spec {args.spec!r}: {error}")

    def work(engine: Engine) -> int:
        columns, rows = run_query(engine, query("check"), _check_tables(engine, enabled or ()))
        shown = columns[:-1]
        write_result((shown, [row[:-1] for row in rows]), args.format, sys.stdout)
        finding, unseen = columns.index("finding"), columns.index("unseen")
        flagged = [row for row in rows if row[finding]]
        quiet = [f"{row[0]} ({row[1]})" for row in rows if row[unseen] and not row[finding]]
        if quiet:
            print(
                f"{PROG}: note: enabled but not seen, which a run may well not do: "
                + ", ".join(quiet),
                file=sys.stderr,
            )
        steps = run_query(engine, "SELECT count(*) FROM steps")[1][0][0]
        if not steps:
            print(
                f"{PROG}: note: the trace holds no step spans: rates per iteration cannot "
                "be measured, only spans per process lifetime",
                file=sys.stderr,
            )
        if flagged:
            print(f"{plural(len(flagged), 'group')} flagged", file=sys.stderr)
            return EXIT_BAD_INPUT
        print("every group within its tier", file=sys.stderr)
        return EXIT_OK

    return run_statements(args, parser, work)
