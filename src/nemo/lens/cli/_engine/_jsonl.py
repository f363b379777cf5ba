"""The JSON-lines reader: the statement that stages every record (trace formats 1 and 2 of the
``file`` exporter, the SDK's ``to_json`` the console prints) into the table ``lines``, checked,
with what the views need taken out of its JSON; and the views that relate each lifetime's
records into the spans (a dead process's open spans ended)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from nemo.lens import semconv

__all__ = [
    "CHECK_SQL",
    "KINDS",
    "LINES_TABLE",
    "NAMING_KEYS",
    "OBJECT_BYTES",
    "quote",
    "stage_sql",
    "whole_number",
]

LINES_TABLE: Final = "lines"
OBJECT_BYTES: Final = 16 << 20
"""DuckDB's ``maximum_object_size``, its default: it sizes the read buffers (a longer line is
read whole); 64 MiB made reading 10**6 spans 0.09 s slower of 0.47 s."""

_FIELDS: Final = (
    *("name", "trace_id", "span_id", "parent_span_id", "status", "attributes", "events"),
    *("start_time_unix_nano", "end_time_unix_nano", "open_at_unix_nano", "alive_at_unix_nano"),
    *("resource", "lifetime", "trace_format"),  # format 2's header names a lifetime
    *("resource_metrics", "severity_number", "observed_timestamp"),  # metrics and logs
    *("context", "start_time", "end_time", "parent_id", "links"),  # the SDK's to_json
)
"""The top-level fields read (each as JSON, but ``status``)."""
_ATTRIBUTE_KEYS: Final = (
    semconv.SPAN_GROUP,
    semconv.LEGACY_SPAN_GROUP,
    semconv.SPAN_CATEGORY,
    semconv.SPAN_TRUNCATED,
)
NAMING_KEYS: Final = _ATTRIBUTE_KEYS[:3]
"""The attributes that name a span's group and category: a string each, or absent."""
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
    semconv.NV_DL_RANK,  # upstream's next key, alone in a rank-less upstream job's resource
)
_STATUS: Final = "STRUCT(code VARCHAR, description VARCHAR, status_code VARCHAR)"
"""Read as DuckDB reads the line: an object (else it refuses the file), each value as text."""
_OBJ: Final = "{"
_STR: Final = '"'
_ISO: Final = r"'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?(Z|[+-]\d\d:\d\d)$'"
_HEX: Final = "'^0x[0-9a-fA-F]+$'"
_MAX_US: Final = 2**63 // 1000
_NOTHING: Final = "CAST(NULL AS VARCHAR)"


def quote(text: str) -> str:
    """*text* as a SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _text_of(column: str) -> str:
    """The JSON *column*'s text, as DuckDB wrote it (minified)."""
    return f"CAST({column} AS VARCHAR)"


def _starts(column: str, character: str) -> str:
    """Whether the JSON *column* is a string (``"``), an object (``{``) or an array (``[``)."""
    return f"prefix({_text_of(column)}, {quote(character)})"


def _string(column: str) -> str:
    """The JSON string's value (else NULL), parsed only when its text holds an escape."""
    text = _text_of(column)
    return (
        f"CASE WHEN {_starts(column, _STR)} THEN CASE WHEN strpos({text}, '\\') = 0 "
        f"THEN substr({text}, 2, length({text}) - 2) ELSE {column} ->> '$' END END"
    )


def _integral(text: str) -> str:
    return f"strpos({text}, '.') + strpos({text}, 'e') + strpos({text}, 'E') = 0"


def _whole(column: str) -> str:
    """The JSON integer as a BIGINT, else NULL (a float has a point or an exponent)."""
    text = _text_of(column)
    return f"CASE WHEN {_integral(text)} THEN TRY_CAST({text} AS BIGINT) END"


def whole_number(value: str) -> str:
    """The JSON *value* as a BIGINT when it holds a whole number (an integer, or a float or
    a string holding one: what Python's ``int()`` reads), else NULL."""
    text = _text_of(value)
    number = f"TRY_CAST({text} AS DOUBLE)"
    return (
        f"CASE WHEN {_starts(value, _STR)} THEN CASE WHEN regexp_full_match("
        f"trim({value} ->> '$'), '[+-]?[0-9](_?[0-9])*') THEN TRY_CAST(trim({value} ->> '$') "
        f"AS BIGINT) END WHEN {_integral(text)} THEN TRY_CAST({text} AS BIGINT) "
        f"WHEN {number} = floor({number}) THEN TRY_CAST({number} AS BIGINT) END"
    )


def _text(value: str) -> str:
    """A resource value as text (a string as it is, anything else its JSON)."""
    return f"CASE WHEN {_starts(value, _STR)} THEN {value} ->> '$' ELSE {_text_of(value)} END"


def _truthy(value: str) -> str:
    text = _text_of(value)
    return (
        f"(CASE left({text}, 1) WHEN '\"' THEN {text} <> '\"\"' "
        f"WHEN 't' THEN true WHEN 'f' THEN false WHEN 'n' THEN false "
        f"WHEN '{{' THEN {text} <> '{{}}' WHEN '[' THEN {text} <> '[]' "
        f"ELSE TRY_CAST({text} AS DOUBLE) <> 0 END)"
    )


def _nonempty(value: str) -> str:
    return f"({_starts(value, _STR)} AND {_text_of(value)} <> '\"\"')"


def _opt(column: str, first: str) -> str:
    return f"({column} IS NULL OR {_starts(column, first)})"


def _empty_list(column: str) -> str:
    return f"({column} IS NULL OR {_text_of(column)} = '[]')"


def _each(column: str, check: str) -> str:
    """Whether the JSON array *column* is absent or every element passes the lambda *check*."""
    return (
        f"(CASE WHEN {_empty_list(column)} THEN true WHEN {_starts(column, '[')} "
        f"THEN list_bool_and(list_transform(json_extract({column}, '$[*]'), {check})) "
        "ELSE false END)"
    )


def _iso_ns(text: str) -> str:
    """The ISO-8601 time *text* in epoch ns; NULL when not one, before 1970 or past 2262."""
    micros = f"epoch_us(TRY_CAST({text} AS TIMESTAMPTZ))"
    iso = f"regexp_matches({text}, {_ISO})"
    return f"CASE WHEN {iso} AND {micros} BETWEEN 0 AND {_MAX_US} THEN {micros} * 1000 END"


_SDK_IDS: Final = ("context ->> '$.trace_id'", "context ->> '$.span_id'", "parent_id ->> '$'")
"""The SDK layout's ids (``0x``-prefixed hex), as text."""


def _sdk_id(text: str) -> str:
    return f"lower(substr({text}, 3))"


def _sdk_id_ok(text: str) -> str:
    return f"coalesce(regexp_matches({text}, {_HEX}), {text} IS NULL)"


_EVENT_TIME: Final = "e ->> '$.timestamp'"
_SPAN_EVENT: Final = (
    "lambda e: json_type(e) = 'OBJECT' AND json_type(e, '$.time_unix_nano') IN "
    "('UBIGINT', 'BIGINT') AND TRY_CAST(json_extract(e, '$.time_unix_nano') AS BIGINT) >= 0 "
    "AND coalesce(json_type(e, '$.attributes') IN ('OBJECT', 'NULL'), true)"
)
_SDK_EVENT: Final = (
    f"lambda e: json_type(e) = 'OBJECT' AND {_iso_ns(_EVENT_TIME)} IS NOT NULL "
    "AND coalesce(json_type(e, '$.attributes') IN ('OBJECT', 'NULL'), true)"
)
_SDK_EVENTS: Final = (
    "CAST(to_json(list_transform(json_extract(coalesce(events, '[]'), '$[*]'), lambda e: "
    f"json_object('name', e -> '$.name', 'time_unix_nano', {_iso_ns(_EVENT_TIME)}, "
    "'attributes', coalesce(nullif(e -> '$.attributes', 'null'), '{}')))) AS VARCHAR)"
)
_EVENTS: Final = (
    f"CASE WHEN kind = 'sdk' THEN {_SDK_EVENTS} ELSE CAST(coalesce(events, '[]') AS VARCHAR) END"
)
"""A span's events as JSON text, an SDK span's in the ``file`` layout's fields."""
KINDS: Final = (
    ("trace_format", "header"),
    ("open_at_unix_nano", "open"),
    ("alive_at_unix_nano", "alive"),
    ("start_time_unix_nano", "span"),
    ("resource_metrics", "other"),  # metrics and logs: the console prints them too
    ("severity_number", "other"),
    ("observed_timestamp", "other"),
)
"""A record's kind: by the first of these keys it holds (one holding null is absent), after
the SDK's ``to_json`` layout (``context`` and ``start_time``); else it is no record."""
_KIND: Final = (
    "CASE WHEN context IS NOT NULL AND start_time IS NOT NULL THEN 'sdk' "
    + " ".join(f"WHEN {key} IS NOT NULL THEN '{kind}'" for key, kind in KINDS)
    + " ELSE 'bad' END"
)
_STRINGS: Final = {
    "name": "name",
    "trace_id": "trace",
    "span_id": "span",
    "parent_span_id": "parent",
    "lifetime": "life",
}
_WHOLES: Final = {
    "start_time_unix_nano": "start",
    "end_time_unix_nano": "end",
    "open_at_unix_nano": "open_at",
    "alive_at_unix_nano": "alive_at",
    "trace_format": "format",
}


def _struct(keys: Sequence[str], *more: str) -> str:
    """A STRUCT of JSON values under *keys*: DuckDB fills it from an object as it reads."""
    return "STRUCT(" + ", ".join([f"{_ident(k)} JSON" for k in keys] + list(more)) + ")"


def _paths(keys: Sequence[str]) -> str:
    return "[" + ", ".join(quote(f'$."{key}"') for key in keys) + "]"


_NESTED: Final = 63
"""How deeply a top-level field may nest: its line is one level more (``_careful.MAX_DEPTH``)."""


def _shallow(column: str) -> str:
    """Whether the JSON *column* nests at most :data:`_NESTED` levels: counted only when it
    holds that many brackets at all, by taking the innermost pairs out that many times
    (strings gone first), which leaves nothing of a shallow value."""
    text = _text_of(column)
    brackets = (
        f"translate(regexp_replace(regexp_replace({text}, '\"([^\"\\\\]|\\\\.)*\"', '', 'g'), "
        "'[^\\[\\]{}]', '', 'g'), '{}', '[]')"
    )
    rounds = f"list_transform(range({_NESTED}), lambda i: '')"
    peeled = (
        f"list_reduce(list_prepend({brackets}, {rounds}), lambda rest, i: replace(rest, '[]', ''))"
    )
    opened = f"length({text}) - length(translate({text}, '[{{', ''))"
    # A CASE, not an OR: DuckDB skips the peeling for the rows the count clears.
    return f"coalesce(CASE WHEN {opened} <= {_NESTED} THEN true ELSE {peeled} = '' END, true)"


def _checks(objects: str, sdk_resource: str, shallow: str) -> str:
    """``ok``: whether the record passes every check of its kind (``_careful`` names why not)."""
    optional = " AND ".join(
        f"({f} IS NULL OR {_STRINGS[f]}_s IS NOT NULL)"
        for f in ("trace_id", "span_id", "parent_span_id")
    )
    common = (
        f"name_s IS NOT NULL AND start_n >= 0 AND {objects} AND {optional} "
        "AND (lifetime IS NULL OR life_s <> '')"
    )
    span = f"{common} AND end_n >= start_n AND {_each('events', _SPAN_EVENT)}"
    opened = f"{common} AND open_at_n >= 0 AND {_empty_list('events')}"
    start, end = _iso_ns("start_time ->> '$'"), _iso_ns("end_time ->> '$'")
    ids = " AND ".join(_sdk_id_ok(text) for text in _SDK_IDS)
    sdk = (
        f"name_s IS NOT NULL AND {_starts('context', _OBJ)} AND {ids} AND {start} IS NOT NULL "
        f"AND {end} >= {start} AND {objects} AND {sdk_resource} "
        f"AND {_each('events', _SDK_EVENT)} AND {_opt('links', '[')}"
    )
    header = f"format_n BETWEEN 1 AND 2 AND life_s <> '' AND {objects}"
    alive = "life_s <> '' AND alive_at_n >= 0"
    return (
        f"coalesce(CASE kind WHEN 'span' THEN {span} WHEN 'open' THEN {opened} "
        f"WHEN 'sdk' THEN {sdk} WHEN 'header' THEN {header} WHEN 'alive' THEN {alive} "
        f"WHEN 'other' THEN true ELSE false END AND {shallow}, false)"
    )


def stage_sql(
    files: Sequence[str],
    names: Mapping[str, str],
    iteration: str,
    detail: bool,
    *,
    structs: bool = True,
    labels: bool = True,
) -> str:
    """The statement that creates :data:`LINES_TABLE` from the JSON-lines *files*.

    *names*: file -> the name ``source`` gives it; *iteration*: the step spans' iteration
    attribute. With *detail* a span's attributes, events and resource are kept as JSON
    text, else NULL; without *labels* so are its name, trace id and parent id (checked all
    the same: keeping them costs 0.15 s of 1.1 at 10**6 spans; ``trace_key`` holds the
    trace id all the same, for the duplicate check). With *structs* and without
    *detail*, DuckDB takes attributes and resource apart as it reads a line, and refuses a
    file where one (or an SDK resource's ``attributes``) is not an object.
    """
    keys = list(dict.fromkeys((*_ATTRIBUTE_KEYS, iteration)))
    picks = [keys.index(k) for k in (*_ATTRIBUTE_KEYS, iteration)]
    typed = {"status": _STATUS}
    if detail or not structs:
        picked = (
            f"json_extract(attributes, {_paths(keys)}) AS a, "
            f"json_extract(res, {_paths(_RESOURCE_KEYS)}) AS r"
        )
        # A key holding null reads as absent, as a struct's field does.
        a = [f"nullif(a[{n + 1}], 'null')" for n in picks]
        r = [f"nullif(r[{n}], 'null')" for n in range(1, len(_RESOURCE_KEYS) + 1)]
        objects = f"{_opt('attributes', _OBJ)} AND {_opt('resource', _OBJ)}"
        shallow = " AND ".join(_shallow(c) for c in ("attributes", "events", "resource"))
        sdk_resource = "coalesce(json_type(resource, '$.attributes') IN ('OBJECT', 'NULL'), true)"
        res = (
            ", CASE WHEN kind = 'sdk' THEN coalesce(nullif(resource -> '$.attributes', 'null'), "
            "'{}') ELSE resource END AS res"
        )
    else:
        typed["attributes"] = _struct(keys)
        typed["resource"] = _struct(_RESOURCE_KEYS, f"attributes {_struct(_RESOURCE_KEYS)}")
        picked = ", ".join(
            f"CASE WHEN kind = 'sdk' THEN resource.attributes.{_ident(k)} "
            f"ELSE resource.{_ident(k)} END AS r{n}"
            for n, k in enumerate(_RESOURCE_KEYS, 1)
        )
        a = [f"attributes.{_ident(keys[n])}" for n in picks]
        r = [f"r{n}" for n in range(1, len(_RESOURCE_KEYS) + 1)]
        objects = sdk_resource = "true"
        shallow = _shallow("events")  # the struct takes out only the keys it reads
        res = ""
    listing = "[" + ", ".join(quote(f) for f in files) + "]"
    columns = "{" + ", ".join(f"{quote(f)}: {quote(typed.get(f, 'JSON'))}" for f in _FIELDS) + "}"
    mapped = " ".join(f"WHEN {quote(f)} THEN {quote(n)}" for f, n in names.items())
    source = f"CASE filename {mapped} ELSE filename END" if mapped else "filename"
    # The trace id is kept whatever *labels* says: with the span id it names a span, and
    # a span read twice counts once (see _connect's duplicate check).
    dropped = () if labels else ("name", "parent_span_id")

    def string(field: str) -> str:
        # Each scalar is taken out of its JSON once; a label not kept is only checked.
        return (
            f"CASE WHEN {_starts(field, _STR)} THEN '' END" if field in dropped else _string(field)
        )

    valued = ", ".join(
        [f"{string(f)} AS {n}_s" for f, n in _STRINGS.items()]
        + [f"{_whole(f)} AS {n}_n" for f, n in _WHOLES.items()]
    )
    keep = (lambda text: text) if detail else (lambda text: _NOTHING)
    trace_id, span_id, parent_id = (
        f"CASE WHEN kind = 'sdk' THEN {_sdk_id(sdk)} ELSE {own}_s END"
        for sdk, own in zip(_SDK_IDS, ("trace", "span", "parent"), strict=True)
    )
    named = " AND ".join(f"({a[n]} IS NULL OR {_starts(a[n], _STR)})" for n in range(3))
    return f"""
CREATE OR REPLACE TEMP TABLE {LINES_TABLE} AS
WITH raw AS (
  SELECT *, {_KIND} AS kind
  FROM read_json({listing}, format = 'newline_delimited', filename = true,
                 columns = {columns}, maximum_object_size = {OBJECT_BYTES})
), valued AS (
  SELECT *, {valued} FROM raw
), checked AS (
  SELECT *, {_checks(objects, sdk_resource, shallow)} AS ok{res} FROM valued
), picked AS (
  SELECT *, {picked} FROM checked
)
SELECT
  {source} AS source,
  kind,
  ok AND (kind NOT IN ('span', 'open', 'sdk') OR {named}) AS ok,
  life_s AS named,
  kind IN ('span', 'open') AND lifetime IS NOT NULL AND resource IS NULL AS uses_header,
  {"name_s" if labels else _NOTHING} AS name,
  {trace_id} AS trace_key,
  {"trace_key" if labels else _NOTHING} AS trace_id,
  {span_id} AS span_id,
  {parent_id if labels else _NOTHING} AS parent_span_id,
  CASE WHEN kind = 'sdk' THEN {_iso_ns("start_time ->> '$'")} ELSE start_n END AS start_ns,
  CASE WHEN kind = 'sdk' THEN {_iso_ns("end_time ->> '$'")} WHEN kind = 'open' THEN start_n
       ELSE end_n END AS end_ns,
  greatest(end_n, start_n, open_at_n, alive_at_n,
           CASE WHEN kind = 'span' AND NOT {_empty_list("events")} THEN
             list_max(list_transform(json_extract(events, '$[*].time_unix_nano'),
                                     lambda t: TRY_CAST(t AS BIGINT))) END) AS latest_ns,
  coalesce(CASE WHEN kind = 'sdk' THEN status.status_code ELSE status.code END, 'UNSET')
    AS status_code,
  status.description AS status_description,
  CASE WHEN {a[0]} IS NOT NULL THEN CASE WHEN {_nonempty(a[0])} THEN {_string(a[0])} END
       WHEN {_nonempty(a[1])} THEN {_string(a[1])} END AS span_group,
  {_string(a[2])} AS span_category,
  coalesce(CAST({a[3]} AS VARCHAR) = 'true', false) AS truncated,
  {whole_number(a[4])} AS iteration,
  {keep("CAST(coalesce(attributes, '{}') AS VARCHAR)")} AS attributes,
  {keep(_EVENTS)} AS events,
  {keep("CAST(coalesce(res, '{}') AS VARCHAR)")} AS resource,
  coalesce({_resource_int(r[0])}, {_resource_int(r[1])}, {_resource_int(r[9])}) AS res_rank,
  coalesce(CASE WHEN {_truthy(r[2])} THEN {_text(r[2])} END,
           CASE WHEN {_truthy(r[3])} THEN {_text(r[3])} END,
           CASE WHEN {_truthy(r[4])} THEN {_text(r[4])} END, '') AS res_run,
  coalesce({_text(r[5])}, '') AS res_service,
  CASE WHEN life_s IS NOT NULL THEN NULL WHEN {_nonempty(r[6])} THEN {r[6]} ->> '$'
       ELSE {source} || ':' || coalesce({_text(r[7])}, '') || ':' || coalesce({_text(r[8])}, '')
  END AS res_lifetime
FROM picked
"""


def _resource_int(value: str) -> str:
    return f"CASE WHEN NOT {_starts(value, _STR)} THEN {_whole(value)} END"


CHECK_SQL: Final = f"""
SELECT list(DISTINCT source) FILTER (WHERE NOT ok),
       list(DISTINCT source) FILTER (WHERE kind IN ('span', 'open', 'sdk')),
       count(*) FILTER (WHERE kind = 'open')
FROM {LINES_TABLE}
"""
"""The inputs holding a record that fails a check, the inputs holding spans, and how many
spans were recorded open (only then can a process have died with spans unended)."""


# --- the records of each lifetime, related --------------------------------------------------

NO_GROUP: Final = "(none)"
"""The group of a span that carries no ``lens.group`` (nor old ``nemo.span_group``)."""

RESOLVED_VIEW: Final = f"""
CREATE OR REPLACE TEMP VIEW jsonl_resolved AS
WITH heads AS (
  SELECT named AS lifetime, any_value(res_rank) AS rank, any_value(res_run) AS run_id,
         any_value(res_service) AS service, any_value(resource) AS resource
  FROM {LINES_TABLE} WHERE kind = 'header' GROUP BY named
)
SELECT l.*,
       CASE WHEN l.uses_header THEN h.rank ELSE l.res_rank END AS rank,
       CASE WHEN l.uses_header THEN coalesce(h.run_id, '') ELSE l.res_run END AS run_id,
       CASE WHEN l.uses_header THEN coalesce(h.service, '') ELSE l.res_service END AS service,
       CASE WHEN l.uses_header THEN coalesce(h.resource, l.resource) ELSE l.resource END
         AS resource_text,
       coalesce(l.named, l.res_lifetime) AS lifetime
FROM {LINES_TABLE} l LEFT JOIN heads h ON l.uses_header AND h.lifetime = l.named
WHERE l.kind IN ('span', 'sdk', 'open')
"""
"""Every span and open-span record with its lifetime's resource (a format-2 line's from
its header)."""

_DEAD_COLUMNS: Final = f"""
SELECT d.run_id, d.rank, d.service, d.lifetime, d.name,
       coalesce(d.span_group, {quote(NO_GROUP)}) AS span_group,
       d.trace_id, d.span_id, d.parent_span_id, d.start_ns,
       greatest(l.last_ns, d.start_ns) AS end_ns,
       greatest(l.last_ns, d.start_ns) - d.start_ns AS duration_ns,
       d.status_code, d.status_description, d.iteration, true AS truncated, d.span_category,
       CASE WHEN d.attributes IS NOT NULL THEN json_merge_patch(d.attributes,
         {quote('{"' + semconv.SPAN_TRUNCATED + '": true}')}) END AS attributes,
       CASE WHEN d.events IS NOT NULL THEN CAST(to_json(list_append(
         CAST(d.events AS JSON[]),
         json_object('name', {quote(semconv.SPAN_TRUNCATED_EVENT)},
                     'time_unix_nano', greatest(l.last_ns, d.start_ns),
                     'attributes', json_object({quote(semconv.SPAN_TRUNCATED_REASON)},
                                               {quote(semconv.SPAN_TRUNCATED_PROCESS_ENDED)}))))
       AS VARCHAR) END AS events,
       d.resource_text AS resource, d.source, CAST(NULL AS BIGINT) AS line,
       true AS reconstructed, d.trace_key
"""


def dead_sql(any_open: bool) -> str:
    """The statement that creates the table ``jsonl_dead``: each span recorded open whose
    line never came (its process died), ended at its lifetime's last recorded instant.
    Without open records (*any_open* false) it is empty and nothing else is read."""
    if not any_open:
        return (
            f"CREATE OR REPLACE TEMP TABLE jsonl_dead AS {_DEAD_COLUMNS}"
            "FROM jsonl_resolved d, (SELECT NULL::BIGINT AS last_ns) l WHERE false"
        )
    return f"""
CREATE OR REPLACE TEMP TABLE jsonl_dead AS
WITH opened AS (
  SELECT * FROM (
    SELECT *, row_number() OVER (PARTITION BY lifetime, span_id ORDER BY source, latest_ns) AS nth
    FROM jsonl_resolved WHERE kind = 'open' AND span_id IS NOT NULL
  ) WHERE nth = 1
), ended AS (
  SELECT DISTINCT r.lifetime, r.span_id FROM jsonl_resolved r
  SEMI JOIN opened o ON o.lifetime = r.lifetime AND o.span_id = r.span_id
  WHERE r.kind <> 'open'
), last AS (
  SELECT coalesce(named, res_lifetime) AS lifetime, max(latest_ns) AS last_ns
  FROM {LINES_TABLE} WHERE kind IN ('span', 'open', 'alive') GROUP BY 1
), dead AS (
  SELECT o.* FROM opened o ANTI JOIN ended e ON e.lifetime = o.lifetime AND e.span_id = o.span_id
)
{_DEAD_COLUMNS}
FROM dead d JOIN last l ON l.lifetime = d.lifetime
"""


SPANS_VIEW: Final = f"""
CREATE OR REPLACE TEMP VIEW jsonl_spans AS
SELECT run_id, rank, service, lifetime, name, coalesce(span_group, {quote(NO_GROUP)}) AS span_group,
       trace_id, span_id, parent_span_id, start_ns, end_ns, end_ns - start_ns AS duration_ns,
       status_code, status_description, iteration, truncated, span_category,
       attributes, events, resource_text AS resource, source, CAST(NULL AS BIGINT) AS line,
       false AS reconstructed, trace_key
FROM jsonl_resolved WHERE kind <> 'open'
UNION ALL
SELECT * FROM jsonl_dead
"""
"""The spans of the JSON lines: every finished span, and the dead process's (see
:func:`dead_sql`; :data:`RESOLVED_VIEW` and that table first)."""
