"""The JSON lines of a trace, read by DuckDB into one table: every record, classified and checked.

:func:`stage_sql` is the statement that reads the ``file`` exporter's lines --
trace format 1 (a resource on every line: older files, the console's ``lens``
layout) and format 2 (``docs/trace-format.md``: a header per lifetime, span
lines naming their lifetime, open-span and alive records) -- and the SDK's
``to_json`` layout the console prints by default, into the table ``lines``:
one row per record, with what every command needs already taken out of its
JSON (the group, the category, the iteration, the resource's rank, run and
service, the lifetime) and ``ok``, whether the record passes every check the
careful reader (:mod:`nemo.lens.cli._records`) makes of it.
:mod:`nemo.lens.cli._engine._jsonl_views` then relates the records of each
lifetime.

Every top-level field is read as ``JSON``, so that its type can be checked: a
record of the wrong shape is never read as something it is not; it only sends
the command to the careful reader, which names its file and line. (DuckDB's
typed reading would not do: it reads ``"12"`` and ``1.5`` as the integers 12
and 2, and ``7`` as the string ``'7'``.) Each value is taken out of its JSON
once, in the first step of the statement, from the text DuckDB writes for it
(minified, numbers written anew): a string is the text between its quotes
unless it holds an escape, an integer is text without a point or an exponent
that casts to a BIGINT. The checks and the columns read those values; only an
object (attributes, status, a resource) is parsed, once, for the paths taken
out of it. Each step costs a small part of reading the file: ``json_type``
would parse a value again, and a string function that walks characters
(``ltrim``) costs more than the parse.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from nemo.lens import semconv

__all__ = ["CHECK_SQL", "LINES_TABLE", "OBJECT_BYTES", "quote", "stage_sql", "whole_number"]

LINES_TABLE: Final = "lines"

OBJECT_BYTES: Final = 16 << 20
"""DuckDB's ``maximum_object_size``, its default: in DuckDB 2 it sizes the read buffers
rather than limiting a line (a longer line is read whole; the careful reader stops at
64 MiB), and 64 MiB made the read of a 10**6-span trace 0.09 s slower of 0.47 s."""

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


def _text_of(column: str) -> str:
    """The JSON *column*'s text, as DuckDB wrote it (minified)."""
    return f"CAST({column} AS VARCHAR)"


def _starts(column: str, character: str) -> str:
    """Whether the JSON *column* is a string (*character* ``"``), an object (``{``) or an
    array (``[``): a JSON value's first character says which."""
    return f"prefix({_text_of(column)}, {quote(character)})"


def _string(column: str) -> str:
    """The JSON *column*'s value when it is a string, else NULL: its text between the
    quotes, unless the text holds an escape (only then is it parsed)."""
    text = _text_of(column)
    return (
        f"CASE WHEN {_starts(column, _STR)} THEN CASE WHEN strpos({text}, '\\') = 0 "
        f"THEN substr({text}, 2, length({text}) - 2) ELSE {column} ->> '$' END END"
    )


def _whole(column: str) -> str:
    """The JSON *column* as a BIGINT when it is an integer a BIGINT holds, else NULL.
    DuckDB writes a float with a point or an exponent, and a cast of the text refuses a
    string (its quotes), a boolean, an object, an array and a number too large."""
    text = _text_of(column)
    return (
        f"CASE WHEN strpos({text}, '.') + strpos({text}, 'e') + strpos({text}, 'E') = 0 "
        f"THEN TRY_CAST({text} AS BIGINT) END"
    )


def _opt(column: str, first: str) -> str:
    return f"({column} IS NULL OR {_starts(column, first)})"


def _empty_list(column: str) -> str:
    """Whether the JSON *column* is absent or ``[]``."""
    return f"({column} IS NULL OR {_text_of(column)} = '[]')"


_INT_TYPES: Final = "('UBIGINT', 'BIGINT')"
_OBJ: Final = "{"
_STR: Final = '"'
_ISO: Final = r"'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?(Z|z|[+-]\d\d:\d\d)$'"
_HEX: Final = "'^0x[0-9a-fA-F]+$'"
_TRACE: Final = "(context -> '$.trace_id')"
_SPAN: Final = "(context -> '$.span_id')"


def _event_checks(events: str) -> str:
    """Whether *events* is absent or a list of well-formed events; only a non-empty list
    is taken apart (a CASE evaluates a branch for its own rows alone)."""
    each = (
        "lambda e: json_type(e) = 'OBJECT' AND json_type(e, '$.time_unix_nano') IN "
        f"{_INT_TYPES} AND TRY_CAST(json_extract(e, '$.time_unix_nano') AS BIGINT) >= 0 "
        "AND coalesce(json_type(e, '$.attributes') IN ('OBJECT', 'NULL'), true)"
    )
    return (
        f"(CASE WHEN {_empty_list(events)} THEN true WHEN {_starts(events, '[')} "
        f"THEN list_bool_and(list_transform(json_extract({events}, '$[*]'), {each})) "
        "ELSE false END)"
    )


def _sdk_time(column: str) -> str:
    return f"epoch_us(TRY_CAST({column} ->> '$' AS TIMESTAMPTZ)) * 1000"


def _sdk_id(column: str) -> str:
    return f"lower(substr({column} ->> '$', 3))"


def _sdk_id_ok(column: str) -> str:
    return (
        f"({column} IS NULL OR ({_starts(column, _STR)} "
        f"AND regexp_matches({column} ->> '$', {_HEX})))"
    )


def whole_number(value: str) -> str:
    """The JSON *value* as a BIGINT when it holds a whole number (as the classifier reads
    an iteration: an integer, or a float or string holding one), else NULL. A string
    is what Python's ``int()`` reads (DuckDB's cast would read ``"4.0"`` and ``"0x4"``)."""
    text = _text_of(value)
    number = f"TRY_CAST({text} AS DOUBLE)"
    return (
        f"CASE WHEN {_starts(value, _STR)} THEN CASE WHEN regexp_full_match("
        f"trim({value} ->> '$'), '[+-]?[0-9](_?[0-9])*') THEN TRY_CAST(trim({value} ->> '$') "
        "AS BIGINT) END "
        f"WHEN strpos({text}, '.') + strpos({text}, 'e') + strpos({text}, 'E') = 0 "
        f"THEN TRY_CAST({text} AS BIGINT) "
        f"WHEN {number} = floor({number}) THEN TRY_CAST({number} AS BIGINT) END"
    )


def _text(value: str) -> str:
    """A resource value as the careful reader's ``str()`` gives it (strings as they are)."""
    return f"CASE WHEN {_starts(value, _STR)} THEN {value} ->> '$' ELSE {_text_of(value)} END"


def _truthy(value: str) -> str:
    text = _text_of(value)
    return (
        f"(CASE left({text}, 1) WHEN '\"' THEN {text} <> '\"\"' "
        f"WHEN 't' THEN true WHEN 'f' THEN false WHEN 'n' THEN false "
        f"WHEN '{{' THEN {text} <> '{{}}' WHEN '[' THEN {text} <> '[]' "
        f"ELSE TRY_CAST({text} AS DOUBLE) <> 0 END)"
    )


_ATTRIBUTE_KEYS: Final = (
    semconv.SPAN_GROUP,
    semconv.LEGACY_SPAN_GROUP,
    semconv.SPAN_CATEGORY,
    semconv.SPAN_TRUNCATED,
)
_STATUS: Final = "STRUCT(code VARCHAR, description VARCHAR, status_code VARCHAR)"
"""A span's status as DuckDB reads it: an object (else DuckDB refuses the line), each value
as text (a string as it is, anything else its JSON), as the careful reader's ``str()``."""


def _ident(name: str) -> str:
    """*name* as a SQL identifier (a struct's field)."""
    return '"' + name.replace('"', '""') + '"'


def _struct(keys: Sequence[str], *more: str) -> str:
    """A STRUCT of JSON values under *keys* (and the fields *more*): DuckDB reads an
    object's keys into it, as it reads the line."""
    return "STRUCT(" + ", ".join([f"{_ident(k)} JSON" for k in keys] + list(more)) + ")"


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


def stage_sql(
    files: Sequence[str],
    names: dict[str, str],
    iteration: str,
    detail: bool,
    *,
    structs: bool = True,
    labels: bool = True,
) -> str:
    """The statement that creates :data:`LINES_TABLE` from the JSON-lines *files*.

    *names* maps a file to the name errors and ``source`` give it (a spooled standard
    input is ``<stdin>``); *iteration* is the step spans' iteration attribute; with
    *detail*, each span's attributes, events and resource are kept as JSON text (what
    ``report``, ``convert`` and ``sql`` show), else left NULL (what the figures need is
    taken out of them either way). Without *detail* and with *structs*, attributes and
    resource are read as structs, which DuckDB fills as it reads the line (refusing a line
    whose resource's ``attributes``, the SDK layout's, is not an object: the careful
    reader's own file, which may hold one, is read without *structs*). Without *labels*,
    each span's name, trace id and parent id are checked but not kept (NULL: the figures
    do not read them, and taking three strings out of a million lines costs 0.15 s of 1.1).
    """
    listing = "[" + ", ".join(quote(f) for f in files) + "]"
    attribute_keys = list(dict.fromkeys((*_ATTRIBUTE_KEYS, iteration)))
    picks = [attribute_keys.index(k) for k in (*_ATTRIBUTE_KEYS, iteration)]
    typed = {"_source": "VARCHAR", "_line": "BIGINT", "status": _STATUS}
    whole = detail or not structs
    if not whole:
        # Taken apart by DuckDB as it reads the line, which refuses any but an object.
        typed["attributes"] = _struct(attribute_keys)
        typed["resource"] = _struct(_RESOURCE_KEYS, f"attributes {_struct(_RESOURCE_KEYS)}")
    columns = "{" + ", ".join(f"{quote(f)}: {quote(typed.get(f, 'JSON'))}" for f in _FIELDS) + "}"
    mapped = " ".join(f"WHEN {quote(f)} THEN {quote(n)}" for f, n in names.items())
    source = f"CASE filename {mapped} ELSE filename END" if mapped else "filename"
    if whole:
        attr_paths = "[" + ", ".join(quote(_key(k)) for k in attribute_keys) + "]"
        resource_paths = "[" + ", ".join(quote(_key(k)) for k in _RESOURCE_KEYS) + "]"
        picked = (
            f"json_extract(attributes, {attr_paths}) AS a, json_extract(res, {resource_paths}) AS r"
        )

        def attribute(n: int) -> str:
            return f"a[{picks[n - 1] + 1}]"

        def resource(n: int) -> str:
            return f"r[{n}]"

        objects = " AND ".join(_opt(f, _OBJ) for f in ("attributes", "resource"))
        res = (
            ", CASE WHEN kind = 'sdk' THEN coalesce(resource -> '$.attributes', '{}') "
            "ELSE resource END AS res"
        )
        sdk_resource = "coalesce(json_type(resource, '$.attributes') IN ('OBJECT', 'NULL'), true)"
    else:
        picked = ", ".join(
            f"CASE WHEN kind = 'sdk' THEN resource.attributes.{_ident(k)} "
            f"ELSE resource.{_ident(k)} END AS r{n}"
            for n, k in enumerate(_RESOURCE_KEYS, 1)
        )

        def attribute(n: int) -> str:
            return f"attributes.{_ident(attribute_keys[picks[n - 1]])}"

        def resource(n: int) -> str:
            return f"r{n}"

        objects = sdk_resource = "true"
        res = ""
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
    # Each scalar taken out of its JSON once (the step "valued"): *_s a string, *_n an
    # integer, NULL when the field holds something else (or nothing).
    strings = {
        "name": "name",
        "trace_id": "trace",
        "span_id": "span",
        "parent_span_id": "parent",
        "lifetime": "life",
    }
    wholes = {
        "start_time_unix_nano": "start",
        "end_time_unix_nano": "end",
        "open_at_unix_nano": "open_at",
        "alive_at_unix_nano": "alive_at",
        "trace_format": "format",
    }
    dropped = () if labels else ("name", "trace_id", "parent_span_id")

    def string_value(field: str) -> str:
        # A label not kept is only checked: '' when its JSON is a string, else NULL.
        if field in dropped:
            return f"CASE WHEN {_starts(field, _STR)} THEN '' END"
        return _string(field)

    valued = ", ".join(
        [f"{string_value(f)} AS {n}_s" for f, n in strings.items()]
        + [f"{_whole(f)} AS {n}_n" for f, n in wholes.items()]
    )

    def optional(field: str) -> str:
        return f"({field} IS NULL OR {strings[field]}_s IS NOT NULL)"

    def ns(field: str) -> str:
        return f"{wholes[field]}_n >= 0"

    lifetime_ok = "(lifetime IS NULL OR life_s <> '')"
    common = (
        f"name_s IS NOT NULL AND {ns('start_time_unix_nano')} AND {objects} AND {lifetime_ok} "
        f"AND {optional('trace_id')} AND {optional('span_id')} AND {optional('parent_span_id')}"
    )
    span_ok = (
        f"{common} AND {ns('end_time_unix_nano')} AND end_n >= start_n "
        f"AND {_event_checks('events')}"
    )
    open_ok = f"{common} AND {ns('open_at_unix_nano')} AND {_empty_list('events')}"
    sdk_ok = (
        f"name_s IS NOT NULL AND {_starts('context', _OBJ)} "
        f"AND {_sdk_id_ok(_TRACE)} AND {_sdk_id_ok(_SPAN)} AND {_sdk_id_ok('parent_id')} "
        f"AND {_starts('start_time', _STR)} AND regexp_matches(start_time ->> '$', {_ISO}) "
        f"AND {_starts('end_time', _STR)} AND regexp_matches(end_time ->> '$', {_ISO}) "
        f"AND {_sdk_time('start_time')} >= 0 "
        f"AND {_sdk_time('end_time')} >= {_sdk_time('start_time')} "
        f"AND {objects} AND {sdk_resource} "
        f"AND {_empty_list('events')} AND {_empty_list('links')}"
    )
    header_ok = f"format_n BETWEEN 1 AND 2 AND life_s <> '' AND {objects}"
    alive_ok = f"life_s <> '' AND {ns('alive_at_unix_nano')}"
    ok = (
        f"CASE kind WHEN 'span' THEN {span_ok} WHEN 'open' THEN {open_ok} "
        f"WHEN 'sdk' THEN {sdk_ok} WHEN 'header' THEN {header_ok} WHEN 'alive' THEN {alive_ok} "
        "WHEN 'other' THEN true ELSE false END"
    )

    trace_id = f"CASE WHEN kind = 'sdk' THEN {_sdk_id(_TRACE)} ELSE trace_s END"
    parent_id = f"CASE WHEN kind = 'sdk' THEN {_sdk_id('parent_id')} ELSE parent_s END"
    if not labels:
        trace_id = parent_id = nothing
    a1, a2, a3, a4, a5 = (attribute(n) for n in range(1, 6))
    r1, r2, r3, r4, r5, r6, r7, r8, r9 = (resource(n) for n in range(1, 10))

    def nonempty(value: str) -> str:
        return f"({_starts(value, _STR)} AND {_text_of(value)} <> '\"\"')"

    def integer(value: str) -> str:
        return f"CASE WHEN NOT {_starts(value, _STR)} THEN {_whole(value)} END"

    return f"""
CREATE OR REPLACE TEMP TABLE {LINES_TABLE} AS
WITH raw AS (
  SELECT *, {kind} AS kind
  FROM read_json({listing}, format = 'newline_delimited', filename = true,
                 columns = {columns}, maximum_object_size = {OBJECT_BYTES})
), valued AS (
  SELECT *, {valued} FROM raw
), checked AS (
  SELECT *, coalesce({ok}, false) AS ok{res} FROM valued
), picked AS (
  SELECT *, {picked} FROM checked
)
SELECT
  coalesce(_source, {source}) AS source,
  _line AS line,
  kind,
  ok,
  life_s AS named,
  kind IN ('span', 'open') AND lifetime IS NOT NULL AND resource IS NULL AS uses_header,
  {"name_s" if labels else nothing} AS name,
  {trace_id} AS trace_id,
  CASE WHEN kind = 'sdk' THEN {_sdk_id(_SPAN)} ELSE span_s END AS span_id,
  {parent_id} AS parent_span_id,
  CASE WHEN kind = 'sdk' THEN {_sdk_time("start_time")} ELSE start_n END AS start_ns,
  CASE WHEN kind = 'sdk' THEN {_sdk_time("end_time")} WHEN kind = 'open' THEN start_n
       ELSE end_n END AS end_ns,
  greatest(end_n, start_n, open_at_n, alive_at_n,
           CASE WHEN kind = 'span' AND NOT {_empty_list("events")} THEN
             list_max(list_transform(json_extract(events, '$[*].time_unix_nano'),
                                     lambda t: TRY_CAST(t AS BIGINT))) END) AS latest_ns,
  coalesce(CASE WHEN kind = 'sdk' THEN status.status_code ELSE status.code END, 'UNSET')
    AS status_code,
  status.description AS status_description,
  CASE WHEN {a1} IS NOT NULL THEN CASE WHEN {nonempty(a1)} THEN {_string(a1)} END
       WHEN {nonempty(a2)} THEN {_string(a2)} END AS span_group,
  {_string(a3)} AS span_category,
  coalesce(CAST({a4} AS VARCHAR) = 'true', false) AS truncated,
  {whole_number(a5)} AS iteration,
  {keep("CAST(coalesce(attributes, '{}') AS VARCHAR)")} AS attributes,
  {keep("CAST(coalesce(events, '[]') AS VARCHAR)")} AS events,
  {keep("CAST(coalesce(res, '{}') AS VARCHAR)")} AS resource,
  coalesce({integer(r1)}, {integer(r2)}) AS res_rank,
  coalesce(CASE WHEN {_truthy(r3)} THEN {_text(r3)} END,
           CASE WHEN {_truthy(r4)} THEN {_text(r4)} END,
           CASE WHEN {_truthy(r5)} THEN {_text(r5)} END, '') AS res_run,
  coalesce({_text(r6)}, '') AS res_service,
  CASE WHEN life_s IS NOT NULL THEN NULL WHEN {nonempty(r7)} THEN {r7} ->> '$'
       ELSE {source} || ':' || coalesce({_text(r8)}, '') || ':' || coalesce({_text(r9)}, '')
  END AS res_lifetime
FROM picked
"""


CHECK_SQL: Final = f"""
SELECT count(*) FILTER (WHERE NOT ok),
       list(DISTINCT source) FILTER (WHERE kind IN ('span', 'open', 'sdk')),
       count(*) FILTER (WHERE kind = 'open')
FROM {LINES_TABLE}
"""
"""How many records fail a check, which inputs hold spans, how many spans were recorded
open (only then can a process have died with spans unended)."""
