"""``nemo-lens check``: the schema's contract, measured on real traces.

Each span group declares how often it fires (its ``fires`` tier, see
docs/span-groups.md); the generator keeps the production preset quiet
(:data:`~nemo.lens.codegen.model.QUIET_TIERS`: a group in ``default`` fires
less than once per iteration, or the schema states why it may). This command
measures what the trace did, in SQL over the engine's views, and flags:

* **over its tier**: a group that fires more often than its tier allows. A
  ``once`` group at most once per process lifetime; a tier up to ``per_step``
  (``periodic``, ``per_step``) at most once per iteration. More frequent tiers
  (per microbatch, layer, request, item) have no bound per iteration.
* **too frequent for default**: a group of the ``default`` preset whose tier is
  quiet but that fired at least once per iteration. (A frequent tier in
  ``default`` is there with a reason the generator required; it is judged by
  its tier only.)
* **enabled, never seen**: with ``--spec``, a group the spec enables, whose tier
  fires every iteration or more often, that the trace never holds although it
  has steps. The trace does not record which groups were enabled (the resource
  carries no spec), so the job's ``NEMO_LENS_SPAN_GROUPS`` is given as ``--spec``.
  An enabled ``once`` or ``periodic`` group that never fired is listed, not
  flagged: a fresh start loads no checkpoint, a short run may save none.

"Per iteration" is per step execution of the rank (a span of a group feeding the
``productive`` bucket, as in the ``steps`` view); a group's rate is its worst
rank's. Exit status: 0 clean, 1 something flagged (or an input cannot be used),
2 bad usage.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, Final

from nemo.lens.cli._classes import selected_classes
from nemo.lens.cli._common import EXIT_BAD_INPUT, EXIT_OK, PROG, plural
from nemo.lens.cli._sql_cmd import (
    FORMATS,
    add_class_option,
    run_query,
    run_statements,
    write_result,
)

__all__ = ["add_check_command", "check_query", "cmd_check"]

_CEILING: Final = "per_step"
"""The most frequent tier that still fires at most once per iteration."""
_PER_LIFETIME: Final = "once"
"""The tier bounded per process lifetime rather than per iteration."""
_NEVER_SEEN: Final = "enabled, never seen"


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _tiers_sql() -> str:
    """The tiers as a SQL ``VALUES`` list: name, order, bounds, and whether it is quiet."""
    from nemo.lens.codegen.model import QUIET_TIERS, TIERS

    ceiling = TIERS.index(_CEILING)
    rows = []
    for position, tier in enumerate(TIERS):
        per_lifetime = "1" if tier == _PER_LIFETIME else "NULL"
        per_iteration = "1.0" if position <= ceiling and tier != _PER_LIFETIME else "NULL"
        quiet = "true" if tier in QUIET_TIERS else "false"
        rows.append(f"({_literal(tier)}, {position}, {per_lifetime}, {per_iteration}, {quiet})")
    return ",\n    ".join(rows)


def check_query(enabled: Sequence[str] | None) -> str:
    """The check as one statement over ``spans``, ``steps``, ``span_groups`` and
    ``span_group_presets``: a row per group seen (or enabled), with its finding."""
    from nemo.lens.codegen.model import PRODUCTION_PRESET

    listed = ", ".join(f"({_literal(group)})" for group in enabled or ())
    enabled_rows = (
        f"SELECT * FROM (VALUES {listed}) v(span_group)"
        if listed
        else ("SELECT CAST(NULL AS VARCHAR) AS span_group WHERE false")
    )
    return f"""
WITH tiers(fires, position, per_lifetime, per_iteration, quiet) AS (VALUES
    {_tiers_sql()}
),
known AS (  -- a group two classes share takes the more frequent tier
  SELECT g.span_group, arg_max(t.fires, t.position) AS fires
  FROM span_groups g JOIN tiers t ON t.fires = g.fires
  GROUP BY g.span_group
),
in_default AS (
  SELECT DISTINCT span_group FROM span_group_presets WHERE preset = {_literal(PRODUCTION_PRESET)}
),
enabled AS ({enabled_rows}),
rank_steps AS (
  SELECT run_id, service, rank, count(*) AS steps FROM steps GROUP BY ALL
),
per_rank AS (
  SELECT run_id, service, rank, span_group, count(*) AS spans
  FROM spans WHERE span_group <> '(none)' GROUP BY ALL
),
per_lifetime AS (
  SELECT span_group, max(spans) AS per_lifetime FROM (
    SELECT run_id, service, rank, lifetime, span_group, count(*) AS spans
    FROM spans GROUP BY ALL
  ) GROUP BY span_group
),
seen AS (
  SELECT p.span_group, sum(p.spans) AS spans, count(*) AS ranks,
    max(p.spans / s.steps) AS per_iteration,
    arg_max(p.rank, p.spans / s.steps) AS worst_rank
  FROM per_rank p LEFT JOIN rank_steps s
    ON s.run_id IS NOT DISTINCT FROM p.run_id AND s.service IS NOT DISTINCT FROM p.service
   AND s.rank IS NOT DISTINCT FROM p.rank
  GROUP BY p.span_group
),
has_steps AS (SELECT count(*) > 0 AS any_steps FROM steps),
measured AS (
  SELECT coalesce(s.span_group, e.span_group) AS span_group, k.fires,
    d.span_group IS NOT NULL AS in_default, e.span_group IS NOT NULL AS enabled,
    coalesce(s.spans, 0) AS spans, s.ranks, s.per_iteration, s.worst_rank, l.per_lifetime,
    t.per_lifetime AS lifetime_bound, t.per_iteration AS iteration_bound, t.quiet,
    t.position, t.position >= {_position(_CEILING)} AS every_iteration, h.any_steps
  FROM seen s FULL JOIN enabled e ON e.span_group = s.span_group
  CROSS JOIN has_steps h
  LEFT JOIN known k ON k.span_group = coalesce(s.span_group, e.span_group)
  LEFT JOIN tiers t ON t.fires = k.fires
  LEFT JOIN in_default d ON d.span_group = coalesce(s.span_group, e.span_group)
  LEFT JOIN per_lifetime l ON l.span_group = s.span_group
)
SELECT span_group AS "group", coalesce(fires, '?') AS fires,
  CASE WHEN in_default THEN 'yes' ELSE '' END AS "default",
  spans, round(per_iteration, 2) AS per_iteration, worst_rank,
  per_lifetime AS most_per_lifetime,
  concat_ws('; ',
    CASE WHEN per_lifetime > lifetime_bound THEN
      'over its tier: ' || per_lifetime || ' in one process lifetime, {_PER_LIFETIME} allows 1'
    END,
    CASE WHEN per_iteration > iteration_bound THEN
      'over its tier: ' || round(per_iteration, 2) || ' per iteration (rank ' ||
      coalesce(CAST(worst_rank AS VARCHAR), 'unknown') || '), ' || fires || ' allows 1'
    END,
    CASE WHEN in_default AND quiet AND per_iteration >= 1 THEN
      'too frequent for default: ' || round(per_iteration, 2) ||
      ' per iteration, default stays below 1 (quiet tiers only)'
    END,
    CASE WHEN enabled AND spans = 0 AND every_iteration AND any_steps
      THEN '{_NEVER_SEEN}'
    END
  ) AS finding,
  enabled AND spans = 0 AS unseen
FROM measured
ORDER BY finding = '', coalesce(position, {len(_tiers())}), span_group
"""


def _tiers() -> tuple[str, ...]:
    from nemo.lens.codegen.model import TIERS

    return TIERS


def _position(tier: str) -> int:
    return _tiers().index(tier)


def add_check_command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    classes: Sequence[str],
    *,
    traces_help: str,
    skip_help: str,
) -> None:
    """The ``check`` sub-command's parser."""
    command = commands.add_parser(
        "check",
        help="measure each span group's rate against the tier its schema declares",
        description=(
            "Measure, per span group, how often it fired (spans per iteration, the worst "
            "rank's; spans per process lifetime) and flag a group that fires more often "
            "than its schema's tier allows, a group of the default preset that fires every "
            "iteration, and (with --spec) an enabled group the trace never holds."
        ),
        epilog=(
            "Exit status: 0 clean, 1 something flagged or an input cannot be used, 2 bad "
            "usage. The trace does not record which groups were enabled: give the job's "
            "NEMO_LENS_SPAN_GROUPS as --spec."
        ),
    )
    command.add_argument("traces", nargs="+", metavar="TRACE", help=traces_help)
    add_class_option(command, classes)
    command.add_argument(
        "--spec",
        help="the span-group spec the job ran with (its NEMO_LENS_SPAN_GROUPS, e.g. "
        "'per_step'): groups it enables that fire every iteration must appear",
    )
    command.add_argument(
        "--format",
        choices=FORMATS,
        default="table",
        help="table (default), csv or json (one object a line), as `sql` prints",
    )
    command.add_argument("--skip-invalid", action="store_true", help=skip_help)
    command.set_defaults(run=cmd_check, command_parser=command)


def cmd_check(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    enabled: list[str] | None = None
    if args.spec is not None:
        from nemo.lens.spec import resolve_for

        try:
            enabled = sorted(resolve_for(args.spec, selected_classes(args.class_name)))
        except ValueError as error:
            parser.error(f"--spec {args.spec!r}: {error}")

    def work(engine: Any) -> int:
        columns, rows = run_query(engine, check_query(enabled))
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
