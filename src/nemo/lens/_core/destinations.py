"""Where telemetry goes: the exporter names ``NemoLensConfig.exporter`` accepts, the OTLP
transport, the files of the ``file`` exporter, and the ``OTEL_EXPORTER_OTLP_*`` variables
checked before the SDK reads them. Standard library only: config and set-up validate with it
before the SDK is imported.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import re
import stat
from collections.abc import Mapping
from typing import Final, Literal
from urllib.parse import unquote, urlsplit

from nemo.lens._core.secrets import add_secret, add_url_secrets, scrub_url

__all__ = [
    "CONSOLE_FORMATS",
    "EXPORTER_NAMES",
    "FILE_NAME_PART_BYTES",
    "OTLP_PROTOCOLS",
    "PROFILERS",
    "Signal",
    "check_otlp_environment",
    "exporter_names",
    "file_name_part",
    "file_problem",
    "otlp_protocol",
    "profiler_names",
    "register_otlp_secrets",
    "shown_path",
    "sibling_path",
    "unknown_exporter",
]

EXPORTER_NAMES: Final = ("otlp", "console", "file", "none")
"""The exporter names ``NemoLensConfig.exporter`` accepts."""

CONSOLE_FORMATS: Final = ("otel", "lens")
"""The span layouts ``NemoLensConfig.console_format`` accepts: ``otel``, the SDK's
``ReadableSpan.to_json(indent=None)`` (the default), and ``lens``, the ``file``
exporter's line."""

PROFILERS: Final = ("nvtx", "torch")
"""The profilers ``NemoLensConfig.profiler`` may mirror spans to: NVTX ranges (Nsight
Systems) and ``torch.profiler.record_function`` ranges."""

OTLP_PROTOCOLS: Final = ("grpc", "http/protobuf")
"""The OTLP transports the Python exporters implement (``http/json`` is not one)."""

_HTTP_JSON: Final = "http/json"
_warned_json: set[str] = set()

Signal = Literal["traces", "metrics", "logs"]

_CHOICES: Final = (
    f"use one of: {', '.join(EXPORTER_NAMES)}; several at once separated by commas, e.g. otlp,file"
)


def unknown_exporter(name: str, within: str | None = None) -> str:
    """The message for an exporter *name* that is not one (in the list *within*): ours, then
    0.1.0's ``Unknown exporter type: 'x'``, which callers match on, then the fix."""
    where = "" if within is None else f" in {within!r}"
    return f"unknown exporter {name!r}{where} (Unknown exporter type: {name!r}); {_CHOICES}"


def profiler_names(value: str) -> tuple[str, ...]:
    """The profilers *value* names, trimmed and lower-cased, in order (``""``: none;
    ``"nvtx, torch"`` -> ``("nvtx", "torch")``); :class:`ValueError` for an unknown name."""
    names: list[str] = []
    for entry in value.split(","):
        name = entry.strip().lower()
        if not name or name in names:
            continue
        if name not in PROFILERS:
            raise ValueError(
                f"unknown profiler {entry.strip()!r} in profiler {value!r}; use one or more of: "
                f"{', '.join(PROFILERS)}, separated by commas (or leave it empty for none)"
            )
        names.append(name)
    return tuple(names)


def exporter_names(value: str) -> tuple[str, ...]:
    """The exporters *value* names, in order: ``"otlp"`` -> ``("otlp",)``,
    ``" OTLP, file "`` -> ``("otlp", "file")``.

    Names are trimmed and lower-cased; empty entries are ignored (``"otlp,"``).
    Raises :class:`ValueError`, naming the problem and the fix, for an unknown
    name (with 0.1.0's phrase ``Unknown exporter type: 'x'``, which callers
    match on), a name given twice, ``none`` beside another exporter, or a value
    that names none at all.
    """
    entries = [entry.strip() for entry in value.split(",")]
    names = tuple(entry.lower() for entry in entries if entry)
    if len(names) == 1 and names[0] in EXPORTER_NAMES:
        return names
    if len(names) <= 1:
        # The message a single name has always had (callers match on it).
        raise ValueError(unknown_exporter(value))
    for entry in entries:
        if entry and entry.lower() not in EXPORTER_NAMES:
            raise ValueError(unknown_exporter(entry, value))
    for index, name in enumerate(names):
        if name in names[:index]:
            raise ValueError(f"exporter {value!r} names {name} twice; name each exporter once")
    if "none" in names:
        others = ",".join(name for name in names if name != "none")
        raise ValueError(
            f"exporter {value!r} combines none (export nothing) with other exporters; "
            f"use none alone, or {others} without it"
        )
    return names


def otlp_protocol(signal: Signal, environ: Mapping[str, str] | None = None) -> str:
    """Return the OTLP transport for *signal*: ``"grpc"`` (default) or ``"http/protobuf"``.

    ``OTEL_EXPORTER_OTLP_{SIGNAL}_PROTOCOL`` wins over ``OTEL_EXPORTER_OTLP_PROTOCOL``;
    blank values count as unset. ``http/json`` picks the HTTP exporter, as upstream does,
    which sends protobuf (the Python exporters implement no JSON); a warning says so once.
    Raises :class:`ValueError` naming the variable for any other value, so a typo fails at
    set-up instead of silently using gRPC.
    """
    env = os.environ if environ is None else environ
    for variable in (
        f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ):
        raw = env.get(variable, "").strip()
        if not raw:
            continue
        value = raw.lower()
        if value == _HTTP_JSON:
            if variable not in _warned_json:
                _warned_json.add(variable)
                logging.getLogger("nemo.lens").warning(
                    "nemo.lens: %s=%s: the Python OTLP exporters implement no JSON, so "
                    "the HTTP exporter sends protobuf; set http/protobuf to silence this",
                    variable,
                    raw,
                )
            return "http/protobuf"
        if value not in OTLP_PROTOCOLS:
            raise ValueError(
                f"{variable}={raw!r} is not supported by the Python OTLP exporters; "
                f"use one of: {', '.join(OTLP_PROTOCOLS)}"
            )
        return value
    return "grpc"


def sibling_path(trace_path: str, signal: Signal) -> str:
    """Return the file that *signal* goes to when spans go to *trace_path*.

    ``traces/job-rank0.jsonl`` -> ``traces/job-rank0.metrics.jsonl``; a path
    without the ``.jsonl`` suffix gets ``.metrics.jsonl`` appended.
    """
    if signal == "traces":
        return trace_path
    stem = trace_path[: -len(".jsonl")] if trace_path.endswith(".jsonl") else trace_path
    return f"{stem}.{signal}.jsonl"


# -- the files of the file exporter ---------------------------------------------------------

FILE_NAME_PART_BYTES: Final = 100
"""The longest a run id or service name may be (UTF-8 bytes) once it is part of a file name."""

# Separators, NUL and every other control character, and lone surrogates (which no file
# system name can encode): each becomes "_".
_UNSAFE_IN_NAME: Final = re.compile(r"[/\\\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_DOTS: Final = re.compile(r"\.{2,}|^\.")


def file_name_part(value: str) -> str:
    """*value* (a run id, a service name: data from the environment) made safe to be part of
    a file name: ``/``, ``\\``, NUL and control characters become ``_``, and so do the dots
    of a ``..`` and a leading dot; an empty value is ``_``; a value longer than
    :data:`FILE_NAME_PART_BYTES` is cut and ends with ``-`` and 8 hex digits of its hash,
    so distinct long values stay distinct. ``"x/../y"`` -> ``"x____y"``.
    """
    safe = _DOTS.sub(lambda found: "_" * len(found.group()), _UNSAFE_IN_NAME.sub("_", value))
    encoded = safe.encode("utf-8")
    if len(encoded) <= FILE_NAME_PART_BYTES:
        return safe or "_"
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    kept = encoded[: FILE_NAME_PART_BYTES - len(digest) - 1].decode("utf-8", "ignore")
    return f"{kept}-{digest}"


def shown_path(path: str) -> str:
    """*path* quoted for a message; a path of thousands of characters by its two ends."""
    return repr(path) if len(path) <= 120 else f"{path[:60]!r}...{path[-40:]!r}"


def _limit(directory: str, name: str, default: int) -> int:
    try:
        return os.pathconf(directory or ".", name)
    except (OSError, ValueError):
        return default


class _Unreachable(Exception):
    """The walk up a path could not tell what is there (its message says why)."""


def _nearest_existing(path: str) -> str:
    """The nearest existing place at or above *path* (``""``: the working directory)."""
    place = path
    while True:
        try:
            os.stat(place or ".")
        except (FileNotFoundError, NotADirectoryError):
            if not place:
                raise _Unreachable("the working directory no longer exists") from None
            if os.path.islink(place):
                raise _Unreachable(
                    f"{shown_path(place)} is a symbolic link to a place that does not exist"
                ) from None
            parent = os.path.dirname(place)
            if parent == place:
                raise _Unreachable(f"{shown_path(place)} does not exist") from None
            place = parent
        except PermissionError:
            raise _Unreachable(
                f"{shown_path(place or '.')} cannot be reached: this process may not search a "
                "directory on its way"
            ) from None
        except OSError as exc:
            raise _Unreachable(f"{shown_path(place or '.')}: {exc.strerror or exc}") from None
        else:
            return place


def file_problem(path: str) -> str | None:
    """Why the ``file`` exporter could not append to *path*, or ``None`` when it can. Asks
    the file system and creates nothing; the reason names the place at fault: the file, or
    the nearest existing directory above it, where the missing ones would be created."""
    try:
        encoded = os.fsencode(path)
    except UnicodeEncodeError:
        return "it holds characters no file name can have (lone surrogates)"
    if b"\0" in encoded:
        return "it holds a NUL character"
    if path.endswith(("/", os.sep)):
        return "it ends with a separator, so it names a directory, not a file"
    root = os.sep if os.path.isabs(path) else "."
    path_max = _limit(root, "PC_PATH_MAX", 4096)
    if len(encoded) >= path_max:
        return f"it is {len(encoded)} bytes long; this file system takes paths under {path_max}"
    name_max = _limit(root, "PC_NAME_MAX", 255)
    for part in path.split(os.sep):
        size = len(os.fsencode(part))
        if size > name_max:
            return (
                f"its part {shown_path(part)} is {size} bytes long; this file system takes "
                f"names of at most {name_max}"
            )
    try:
        existing = _nearest_existing(path)
    except _Unreachable as exc:
        return str(exc)
    mode = os.stat(existing or ".").st_mode
    if existing == path:
        if stat.S_ISDIR(mode):
            return "it is a directory"
        if not os.access(path, os.W_OK):
            return "the file exists and this process may not write to it"
        return None
    if not stat.S_ISDIR(mode):
        return (
            f"{shown_path(existing)} is a file, not a directory, so nothing can be created under it"
        )
    shown = shown_path(existing) if existing else "the working directory"
    if os.stat(existing or ".").st_nlink == 0:  # still open, but removed: mkdir says ENOENT
        return f"{shown} was removed (it has no name left to create anything under)"
    if not os.access(existing or ".", os.W_OK | os.X_OK):
        return f"this process may not create files or directories in {shown}"
    return None


# -- the OTLP variables ---------------------------------------------------------------------
# The Python exporters (1.45) read them at construction and react to a bad value each in its
# own way (an exception from deep inside, a warning and a default, a header printed with its
# token to stderr); set-up checks them first, so each is one ValueError naming the variable.

_BASE: Final = "OTEL_EXPORTER_OTLP_"
_HEADER_NAME: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_VALUE: Final = re.compile(r"[\x20\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]*")
_SEPARATOR: Final = re.compile(r"[ \t]*,[ \t]*")
_HTTP_COMPRESSION: Final = ("none", "deflate", "gzip")
_HEADER_HINT: Final = (
    "write it as name1=value1,name2=value2 with each value URL-encoded, e.g. "
    "authorization=Bearer%20<token>"
)


def _variables(signal: Signal, setting: str) -> tuple[str, str]:
    return f"{_BASE}{signal.upper()}_{setting}", f"{_BASE}{setting}"


def _effective(
    env: Mapping[str, str], signal: Signal, setting: str, *, empty_counts: bool = False
) -> tuple[str, str] | None:
    """The variable (and value) the exporters use for *setting*: the per-signal one when it
    is set and not empty (with *empty_counts*, as gRPC reads timeout and compression: set at
    all), else the general one."""
    for variable in _variables(signal, setting):
        value = env.get(variable)
        if value or (empty_counts and value is not None):
            return variable, value
    return None


def _header_problem(entry: str) -> str | None:
    name, equals, value = entry.partition("=")
    if not equals:
        return "has no '=' between a name and a value"
    if not _HEADER_NAME.fullmatch(name.strip(" \t")):
        return "has a name that is empty or holds a character header names cannot have"
    if not _HEADER_VALUE.fullmatch(value.strip(" \t")):
        return (
            "has a value holding a character that must be URL-encoded (a quote, comma, "
            "semicolon, backslash or non-ASCII character)"
        )
    return None


def _parse_headers(variable: str, raw: str) -> dict[str, str]:
    entries = [entry.strip() for entry in _SEPARATOR.split(raw)]
    entries = [entry for entry in entries if entry]
    headers: dict[str, str] = {}
    for index, entry in enumerate(entries, 1):
        problem = _header_problem(entry)
        if problem is not None:
            # Never the entry itself: it is usually "Authorization: Bearer <token>".
            raise ValueError(
                f"{variable} is malformed: entry {index} of {len(entries)} {problem} (its text "
                f"is not shown: it may hold a credential); {_HEADER_HINT}"
            )
        name, _, value = entry.partition("=")
        headers[unquote(name).strip().lower()] = unquote(value).strip()
    return headers


def _check_timeout(env: Mapping[str, str], signal: Signal, protocol: str) -> None:
    found = _effective(env, signal, "TIMEOUT", empty_counts=protocol == "grpc")
    if found is None:
        return
    variable, raw = found
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(
            f"{variable}={raw!r} is not a timeout: write a positive number of seconds such "
            "as 10 (the Python OTLP exporters read seconds, not milliseconds), or unset it "
            "for the default of 10"
        )


def _check_compression(env: Mapping[str, str], signal: Signal, protocol: str) -> None:
    if protocol == "grpc":
        found = _effective(env, signal, "COMPRESSION", empty_counts=True)
        if found is not None and found[1].strip().lower() != "gzip":
            raise ValueError(
                f"{found[0]}={found[1]!r} is not supported by the OTLP/gRPC exporters, which "
                "accept only gzip; unset it for no compression"
            )
        return
    found = _effective(env, signal, "COMPRESSION")
    if found is not None and found[1].strip().lower() not in _HTTP_COMPRESSION:
        raise ValueError(
            f"{found[0]}={found[1]!r} is not a compression the OTLP/HTTP exporters support; "
            f"use one of: {', '.join(_HTTP_COMPRESSION)}"
        )


def _check_endpoint(env: Mapping[str, str], signal: Signal, protocol: str) -> None:
    found = _effective(env, signal, "ENDPOINT")
    if found is None:
        return
    variable, raw = found
    shown = scrub_url(raw)
    try:
        parts = urlsplit(raw.strip())
        if parts.netloc:
            parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as exc:
        raise ValueError(
            f"{variable}={shown!r} is not a valid URL ({exc}); write it as "
            "http://host:port (IPv6 hosts in brackets: http://[::1]:4318)"
        ) from None
    if protocol != "grpc" and (parts.scheme not in ("http", "https") or not parts.netloc):
        raise ValueError(
            f"{variable}={shown!r} is not an http:// or https:// URL, which the OTLP/HTTP "
            "exporters need; write it as http://host:4318"
        )
    if protocol == "grpc" and "://" in raw and not parts.netloc:
        raise ValueError(
            f"{variable}={shown!r} names no host; write it as http://host:4317 (or host:4317)"
        )


def check_otlp_environment(signal: Signal, environ: Mapping[str, str] | None = None) -> None:
    """Raise :class:`ValueError` for an ``OTEL_EXPORTER_OTLP_*`` value the exporter for
    *signal* would reject, warn about or misread: the protocol (:func:`otlp_protocol`);
    headers (``name=value`` pairs, values URL-encoded); a timeout (positive **seconds**, as
    the Python exporters read it); compression (``gzip``, ``deflate`` or ``none`` over HTTP,
    only ``gzip`` over gRPC); an endpoint (a URL with a valid port; ``http(s)://`` over HTTP).

    The message names the variable; it never quotes a header value or the user, password or
    query of an endpoint.
    """
    env = os.environ if environ is None else environ
    protocol = otlp_protocol(signal, env)
    found = _effective(env, signal, "HEADERS")
    if found is not None:
        _parse_headers(*found)
    _check_timeout(env, signal, protocol)
    _check_compression(env, signal, protocol)
    _check_endpoint(env, signal, protocol)


def register_otlp_secrets(signal: Signal, environ: Mapping[str, str] | None = None) -> None:
    """Register the credentials the exporter for *signal* is configured with (its header
    values, the user, password and query of its endpoint) so that no message nemo.lens
    logs shows them (:func:`nemo.lens._core.secrets.scrub`)."""
    env = os.environ if environ is None else environ
    for variable in _variables(signal, "HEADERS"):
        raw = env.get(variable)
        if raw:
            try:
                headers = _parse_headers(variable, raw)
            except ValueError:
                continue
            for value in headers.values():
                add_secret(value)
    for variable in _variables(signal, "ENDPOINT"):
        raw = env.get(variable)
        if raw:
            add_url_secrets(raw)
