"""The JSON lines of a trace, read by DuckDB into one table: every record, classified and checked.

:func:`stage_sql` is the statement that reads the ``file`` exporter's lines --
trace format 1 (a resource on every line: older files, the console's ``lens``
layout) and format 2 (``docs/trace-format.md``: a header per lifetime, span
lines naming their lifetime, open-span and alive records) -- and the SDK's
``to_json`` layout the console prints by default, into the table ``lines``:
one row per record, with what every command needs already taken out of its
JSON (the group, the category, the iteration, the resource's rank, run and
service, the lifetime) and ``ok``, whether the record passes every check the
careful reader (:mod:`nemo.lens.cli._records`) makes of it. :data:`SPANS_VIEW`
then relates the records of each lifetime: a span line gets its header's
resource, and a span recorded open whose line never came (its process died)
is ended at its lifetime's last recorded instant, marked truncated.

Every top-level field is read as ``JSON``, so that its type can be checked: a
record of the wrong shape is never read as something it is not; it only sends
the command to the careful reader, which names its file and line. The checks
read a value's type from its text (:func:`_text_of`), which DuckDB writes
minified: the first character tells a string, an object, an array, and a
whole number is its digits alone. Parsing each value again for ``json_type``
would cost several times the reading of the file; an object is parsed once,
for the paths taken out of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from nemo.lens import semconv
from nemo.lens.cli._records import NO_GROUP

__all__ = ["CHECK_SQL", "LINES_TABLE", "SPANS_VIEW", "quote", "stage_sql", "whole_number"]

LINES_TABLE: Final = "lines"

MAX_OBJECT_BYTES: Final = 64 << 20
"""The longest line DuckDB reads (as the careful reader's limit)."""

_FIELDS: Final = (
    "name",
    "trace_id",
    "span_id",
    "parent_span_id",
    "start_time_unix_nano",
    "end_time_unix_nano",
    "status",
    "attributes",
    "events",
    "links",
    "resource",
    "lifetime",
    "trace_format",
    "open_at_unix_nano",
    "alive_at_unix_nano",
    "resource_metrics",
    "severity_number",
    "context",
    "start_time",
    "end_time",
    "parent_id",
    "_source",
    "_line",
)


def quote(text: str) -> str:
    """*text* as a SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def _key(name: str) -> str:
    return '$."' + name + '"'


_INT_TYPES: Final = "('UBIGINT', 'BIGINT')"


def _text_of(column: str) -> str:
    """The JSON *column*'s text, as DuckDB wrote it (minified)."""
    return f"CAST({column} AS VARCHAR)"


def _starts(column: str, character: str) -> str:
    """Whether the JSON *column* is a string (*character* ``"``), an object (``{``) or an
    array (``[``): a JSON value's first character says which."""
    return f"prefix({_text_of(column)}, {quote(character)})"


def _digits(column: str) -> str:
    """Whether the JSON *column* is a non-negative integer: its text is digits alone (a
    float's has a point or an exponent; a string's, its quotes)."""
    text = _text_of(column)
    return f"({text} <> '' AND ltrim({text}, '0123456789') = '')"


def _unquoted(column: str) -> str:
    """The JSON string *column*'s value: its text less the quotes, unless it holds an
    escape (only then is it parsed)."""
    text = _text_of(column)
    return f"CASE WHEN strpos({text}, '\\') = 0 THEN {text}[2:-2] ELSE {column} ->> '$' END"


def _integer(column: str) -> str:
    """Whether the JSON *column* is an integer (its text digits, after a minus)."""
    signed = f"ltrim({_text_of(column)}, '-')"
    return f"({signed} <> '' AND ltrim({signed}, '0123456789') = '')"


def _ns(column: str) -> str:
    """Whether the JSON *column* is a whole number of nanoseconds a BIGINT holds."""
    return f"({_digits(column)} AND TRY_CAST({_text_of(column)} AS BIGINT) IS NOT NULL)"


def _str(column: str) -> str:
    return _starts(column, '"')


def _nonempty(column: str) -> str:
    return f"({_str(column)} AND {_text_of(column)} <> '\"\"')"


def _opt(column: str, first: str) -> str:
    return f"({column} IS NULL OR {_starts(column, first)})"


_OBJ: Final = "{"
_STR: Final = '"'
_ISO: Final = r"'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?(Z|z|[+-]\d\d:\d\d)$'"
_HEX: Final = "'^0x[0-9a-fA-F]+$'"
_TRACE: Final = "(context -> '$.trace_id')"
_SPAN: Final = "(context -> '$.span_id')"


def _event_checks(events: str) -> str:
    each = (
        "lambda e: json_type(e) = 'OBJECT' AND json_type(e, '$.time_unix_nano') IN "
        f"{_INT_TYPES} AND TRY_CAST(json_extract(e, '$.time_unix_nano') AS BIGINT) >= 0 "
        "AND coalesce(json_type(e, '$.attributes') IN ('OBJECT', 'NULL'), true)"
    )
    return (
        f"({events} IS NULL OR {_text_of(events)} = '[]' OR ({_starts(events, '[')}"
        f" AND list_bool_and(list_transform(json_extract({events}, '$[*]'), {each}))))"
    )


def _sdk_time(column: str) -> str:
    return f"epoch_us(TRY_CAST({column} ->> '$' AS TIMESTAMPTZ)) * 1000"


def _sdk_id(column: str) -> str:
    return f"lower(substr({column} ->> '$', 3))"


def _sdk_id_ok(column: str) -> str:
    return f"({column} IS NULL OR ({_str(column)} AND regexp_matches({column} ->> '$', {_HEX})))"


def whole_number(value: str) -> str:
    """The JSON *value* as a BIGINT when it holds a whole number (as the classifier reads
    an iteration: an integer, or a float or string holding one), else NULL."""
    text = _text_of(value)
    return (
        f"CASE WHEN {_str(value)} THEN TRY_CAST(trim({value} ->> '$') AS BIGINT) "
        f"WHEN {_integer(value)} THEN TRY_CAST({text} AS BIGINT) "
        f"WHEN TRY_CAST({text} AS DOUBLE) = floor(TRY_CAST({text} AS DOUBLE)) "
        f"THEN TRY_CAST(TRY_CAST({text} AS DOUBLE) AS BIGINT) END"
    )


def _text(value: str) -> str:
    """A resource value as the careful reader's ``str()`` gives it (strings as they are)."""
    return f"CASE WHEN {_str(value)} THEN {value} ->> '$' ELSE {_text_of(value)} END"


def _truthy(value: str) -> str:
    text = _text_of(value)
    return (
        f"(CASE left({text}, 1) WHEN '\"' THEN {text} <> '\"\"' "
        f"WHEN 't' THEN true WHEN 'f' THEN false WHEN 'n' THEN false "
        f"WHEN '{{' THEN {text} <> '{{}}' WHEN '[' THEN {text} <> '[]' "
        f"ELSE TRY_CAST({text} AS DOUBLE) <> 0 END)"
    )


_RESOURCE_KEYS: Final = (
    semconv.DL_RANK,
    semconv.RANK,
    semconv.NEMO_RUN_ID,
    semconv.RUN_ID,
    semconv.SERVICE_INSTANCE_ID,
    semconv.SERVICE_NAME,
    semconv.LIFETIME_ID,
    semconv.HOST_NAME,
    semconv.PROCESS_PID,
)


def stage_sql(files: Sequence[str], names: dict[str, str], iteration: str, detail: bool) -> str:
    """The statement that creates :data:`LINES_TABLE` from the JSON-lines *files*.

    *names* maps a file to the name errors and ``source`` give it (a spooled standard
    input is ``<stdin>``); *iteration* is the step spans' iteration attribute; with
    *detail*, each span's attributes, events and resource are kept as JSON text (what
    ``report``, ``convert`` and ``sql`` show), else left NULL (what the figures need is
    taken out of them either way).
    """
    listing = "[" + ", ".join(quote(f) for f in files) + "]"
    columns = "{" + ", ".join(f"{quote(f)}: 'JSON'" for f in _FIELDS) + "}"
    mapped = " ".join(f"WHEN {quote(f)} THEN {quote(n)}" for f, n in names.items())
    source = f"CASE filename {mapped} ELSE filename END" if mapped else "filename"
    attr_paths = (
        "["
        + ", ".join(
            quote(p)
            for p in (
                _key(semconv.SPAN_GROUP),
                _key(semconv.LEGACY_SPAN_GROUP),
                _key(semconv.SPAN_CATEGORY),
                _key(semconv.SPAN_TRUNCATED),
                _key(iteration),
            )
        )
        + "]"
    )
    resource_paths = "[" + ", ".join(quote(_key(k)) for k in _RESOURCE_KEYS) + "]"
    nothing = "CAST(NULL AS VARCHAR)"
    keep = (lambda text: text) if detail else (lambda text: nothing)
    # One record's kind, by the keys it has (as kind_of reads them, the SDK layout first).
    kind = (
        "CASE WHEN context IS NOT NULL AND start_time IS NOT NULL THEN 'sdk' "
        "WHEN trace_format IS NOT NULL THEN 'header' "
        "WHEN open_at_unix_nano IS NOT NULL THEN 'open' "
        "WHEN alive_at_unix_nano IS NOT NULL THEN 'alive' "
        "WHEN start_time_unix_nano IS NOT NULL THEN 'span' "
        "WHEN resource_metrics IS NOT NULL OR severity_number IS NOT NULL THEN 'other' "
        "ELSE 'bad' END"
    )
    lifetime_ok = f"(lifetime IS NULL OR {_nonempty('lifetime')})"
    common = (
        f"{_str('name')} AND {_ns('start_time_unix_nano')} AND {_opt('attributes', _OBJ)} "
        f"AND {_opt('status', _OBJ)} AND {_opt('resource', _OBJ)} AND {lifetime_ok} "
        f"AND {_opt('trace_id', _STR)} AND {_opt('span_id', _STR)} "
        f"AND {_opt('parent_span_id', _STR)}"
    )
    span_ok = (
        f"{common} AND {_ns('end_time_unix_nano')} AND TRY_CAST(end_time_unix_nano AS BIGINT) "
        f">= TRY_CAST(start_time_unix_nano AS BIGINT) AND {_event_checks('events')}"
    )
    open_ok = (
        f"{common} AND {_ns('open_at_unix_nano')} AND "
        "(events IS NULL OR CAST(events AS VARCHAR) = '[]')"
    )
    sdk_ok = (
        f"{_str('name')} AND json_type(context) = 'OBJECT' "
        f"AND {_sdk_id_ok(_TRACE)} AND {_sdk_id_ok(_SPAN)} AND {_sdk_id_ok('parent_id')} "
        f"AND {_str('start_time')} AND regexp_matches(start_time ->> '$', {_ISO}) "
        f"AND {_str('end_time')} AND regexp_matches(end_time ->> '$', {_ISO}) "
        f"AND {_sdk_time('start_time')} >= 0 "
        f"AND {_sdk_time('end_time')} >= {_sdk_time('start_time')} "
        f"AND {_opt('attributes', _OBJ)} AND {_opt('status', _OBJ)} AND {_opt('resource', _OBJ)} "
        "AND coalesce(json_type(resource, '$.attributes') IN ('OBJECT', 'NULL'), true) "
        "AND (events IS NULL OR CAST(events AS VARCHAR) = '[]') "
        "AND (links IS NULL OR CAST(links AS VARCHAR) = '[]')"
    )
    header_ok = (
        f"{_integer('trace_format')} AND TRY_CAST(trace_format AS BIGINT) "
        f"BETWEEN 1 AND 2 AND {_nonempty('lifetime')} AND {_opt('resource', _OBJ)}"
    )
    alive_ok = f"{_nonempty('lifetime')} AND {_ns('alive_at_unix_nano')}"
    ok = (
        f"CASE kind WHEN 'span' THEN {span_ok} WHEN 'open' THEN {open_ok} "
        f"WHEN 'sdk' THEN {sdk_ok} WHEN 'header' THEN {header_ok} WHEN 'alive' THEN {alive_ok} "
        "WHEN 'other' THEN true ELSE false END"
    )
    return f"""
CREATE OR REPLACE TEMP TABLE {LINES_TABLE} AS
WITH raw AS (
  SELECT *, {kind} AS kind
  FROM read_json({listing}, format = 'newline_delimited', filename = true,
                 columns = {columns}, maximum_object_size = {MAX_OBJECT_BYTES})
), checked AS (
  SELECT *, coalesce({ok}, false) AS ok,
         CASE WHEN kind = 'sdk' THEN coalesce(resource -> '$.attributes', '{{}}')
              ELSE resource END AS res
  FROM raw
), picked AS (
  SELECT *, json_extract(attributes, {attr_paths}) AS a,
         json_extract(res, {resource_paths}) AS r,
         json_extract(status, ['$.code', '$.description', '$.status_code']) AS st
  FROM checked
)
SELECT
  coalesce(_source ->> '$', {source}) AS source,
  TRY_CAST(_line AS BIGINT) AS line,
  kind,
  ok,
  {_unquoted("lifetime")} AS named,
  kind IN ('span', 'open') AND lifetime IS NOT NULL AND resource IS NULL AS uses_header,
  {_unquoted("name")} AS name,
  CASE WHEN kind = 'sdk' THEN {_sdk_id(_TRACE)} ELSE {_unquoted("trace_id")} END
    AS trace_id,
  CASE WHEN kind = 'sdk' THEN {_sdk_id(_SPAN)} ELSE {_unquoted("span_id")} END
    AS span_id,
  CASE WHEN kind = 'sdk' THEN {_sdk_id("parent_id")} ELSE {_unquoted("parent_span_id")} END
    AS parent_span_id,
  CASE WHEN kind = 'sdk' THEN {_sdk_time("start_time")}
       ELSE TRY_CAST(start_time_unix_nano AS BIGINT) END AS start_ns,
  CASE WHEN kind = 'sdk' THEN {_sdk_time("end_time")}
       WHEN kind = 'open' THEN TRY_CAST(start_time_unix_nano AS BIGINT)
       ELSE TRY_CAST(end_time_unix_nano AS BIGINT) END AS end_ns,
  greatest(TRY_CAST(end_time_unix_nano AS BIGINT), TRY_CAST(start_time_unix_nano AS BIGINT),
           TRY_CAST(open_at_unix_nano AS BIGINT), TRY_CAST(alive_at_unix_nano AS BIGINT),
           CASE WHEN kind = 'span' AND CAST(events AS VARCHAR) <> '[]' THEN
             list_max(list_transform(json_extract(events, '$[*].time_unix_nano'),
                                     lambda t: TRY_CAST(t AS BIGINT))) END) AS latest_ns,
  coalesce(CASE WHEN kind = 'sdk' THEN {_text("st[3]")} ELSE {_text("st[1]")} END, 'UNSET')
    AS status_code,
  {_text("st[2]")} AS status_description,
  CASE WHEN a[1] IS NOT NULL THEN CASE WHEN {_nonempty("a[1]")} THEN {_unquoted("a[1]")} END
       WHEN {_nonempty("a[2]")} THEN {_unquoted("a[2]")} END AS span_group,
  CASE WHEN {_str("a[3]")} THEN {_unquoted("a[3]")} END AS span_category,
  coalesce(CAST(a[4] AS VARCHAR) = 'true', false) AS truncated,
  {whole_number("a[5]")} AS iteration,
  {keep("CAST(coalesce(attributes, '{}') AS VARCHAR)")} AS attributes,
  {keep("CAST(coalesce(events, '[]') AS VARCHAR)")} AS events,
  {keep("CAST(coalesce(res, '{}') AS VARCHAR)")} AS resource,
  coalesce(CASE WHEN {_integer("r[1]")} THEN TRY_CAST(r[1] AS BIGINT) END,
           CASE WHEN {_integer("r[2]")} THEN TRY_CAST(r[2] AS BIGINT) END) AS res_rank,
  coalesce(CASE WHEN {_truthy("r[3]")} THEN {_text("r[3]")} END,
           CASE WHEN {_truthy("r[4]")} THEN {_text("r[4]")} END,
           CASE WHEN {_truthy("r[5]")} THEN {_text("r[5]")} END, '') AS res_run,
  coalesce({_text("r[6]")}, '') AS res_service,
  CASE WHEN {_nonempty("r[7]")} THEN r[7] ->> '$'
       ELSE {source} || ':' || coalesce({_text("r[8]")}, '') || ':' || coalesce({_text("r[9]")}, '')
  END AS res_lifetime
FROM picked
"""


CHECK_SQL: Final = f"""
SELECT count(*) FILTER (WHERE NOT ok),
       list(DISTINCT source) FILTER (WHERE kind IN ('span', 'open', 'sdk'))
FROM {LINES_TABLE}
"""

SPANS_VIEW: Final = f"""
CREATE OR REPLACE TEMP VIEW jsonl_spans AS
WITH heads AS (
  SELECT named AS lifetime, any_value(res_rank) AS rank, any_value(res_run) AS run_id,
         any_value(res_service) AS service, any_value(resource) AS resource
  FROM {LINES_TABLE} WHERE kind = 'header' GROUP BY named
), resolved AS (
  SELECT l.*,
         CASE WHEN l.uses_header THEN h.rank ELSE l.res_rank END AS rank,
         CASE WHEN l.uses_header THEN coalesce(h.run_id, '') ELSE l.res_run END AS run_id,
         CASE WHEN l.uses_header THEN coalesce(h.service, '') ELSE l.res_service END AS service,
         CASE WHEN l.uses_header THEN coalesce(h.resource, l.resource) ELSE l.resource END
           AS resource_text,
         coalesce(l.named, l.res_lifetime) AS lifetime
  FROM {LINES_TABLE} l LEFT JOIN heads h ON l.uses_header AND h.lifetime = l.named
  WHERE l.kind IN ('span', 'sdk', 'open')
), last AS (
  SELECT coalesce(named, res_lifetime) AS lifetime, max(latest_ns) AS last_ns
  FROM {LINES_TABLE} WHERE kind IN ('span', 'open', 'alive') GROUP BY 1
), ended AS (
  SELECT DISTINCT lifetime, span_id FROM resolved WHERE kind <> 'open' AND span_id IS NOT NULL
), dead AS (
  SELECT o.* FROM (
    SELECT *, row_number() OVER (PARTITION BY lifetime, span_id ORDER BY source, line) AS nth
    FROM resolved WHERE kind = 'open' AND span_id IS NOT NULL
  ) o
  WHERE o.nth = 1
    AND NOT EXISTS (SELECT 1 FROM ended e WHERE e.lifetime = o.lifetime AND e.span_id = o.span_id)
)
SELECT run_id, rank, service, lifetime, name, coalesce(span_group, {quote(NO_GROUP)}) AS span_group,
       trace_id, span_id, parent_span_id, start_ns, end_ns, end_ns - start_ns AS duration_ns,
       status_code, status_description, iteration, truncated, span_category,
       attributes, events, resource_text AS resource, source, line, false AS reconstructed
FROM resolved WHERE kind <> 'open'
UNION ALL
SELECT d.run_id, d.rank, d.service, d.lifetime, d.name,
       coalesce(d.span_group, {quote(NO_GROUP)}),
       d.trace_id, d.span_id, d.parent_span_id, d.start_ns,
       greatest(l.last_ns, d.start_ns), greatest(l.last_ns, d.start_ns) - d.start_ns,
       d.status_code, d.status_description, d.iteration, true, d.span_category,
       json_merge_patch(d.attributes, {quote('{"' + semconv.SPAN_TRUNCATED + '": true}')}),
       CASE WHEN d.events IS NOT NULL THEN CAST(to_json(list_append(
         CAST(d.events AS JSON[]),
         json_object('name', {quote(semconv.SPAN_TRUNCATED_EVENT)},
                     'time_unix_nano', greatest(l.last_ns, d.start_ns),
                     'attributes', json_object({quote(semconv.SPAN_TRUNCATED_REASON)},
                                               {quote(semconv.SPAN_TRUNCATED_PROCESS_ENDED)}))))
       AS VARCHAR) END,
       d.resource_text, d.source, d.line, true
FROM dead d JOIN last l ON l.lifetime = d.lifetime
"""
