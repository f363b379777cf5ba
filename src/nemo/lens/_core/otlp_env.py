"""Check the ``OTEL_EXPORTER_OTLP_*`` variables before the SDK reads them.

The OTLP exporters read their endpoint, headers, timeout and compression from
the environment when they are constructed, and react to a bad value each in its
own way: the gRPC exporter raises from deep inside its constructor
(``could not convert string to float: 'abc'``, ``Invalid IPv6 URL``), the HTTP
exporter warns and carries on with a default, and a malformed header makes
both print the header -- bearer token and all -- to stderr. set-up calls
:func:`check_otlp_environment` while it validates, before anything global
changes, so each of these is a :class:`ValueError` naming the variable, what is
wrong and what to write instead, and never quoting a header value or the
credentials of an endpoint.

The rules are those of the Python exporters (opentelemetry-exporter-otlp 1.45):

* headers: comma-separated ``name=value`` pairs; names are HTTP tokens, values
  printable ASCII without ``"``, ``,``, ``;`` or ``\\`` (URL-encode others);
* timeout: a positive number of **seconds** (the Python exporters read
  seconds, where the specification says milliseconds);
* compression: ``gzip``, ``deflate`` or ``none`` over HTTP; only ``gzip`` over
  gRPC (unset it for none);
* endpoint: a URL that parses, with a valid port; over HTTP it must start
  with ``http://`` or ``https://``.

Standard library only: set-up validates before it imports the SDK.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from typing import Final
from urllib.parse import unquote, urlsplit

from nemo.lens._core.destinations import Signal, otlp_protocol
from nemo.lens._core.secrets import add_secret, add_url_secrets, scrub_url

__all__ = ["check_otlp_environment", "register_otlp_secrets"]

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


def _effective(env: Mapping[str, str], signal: Signal, setting: str) -> tuple[str, str] | None:
    """The variable (and value) the exporters use for *setting*: the per-signal one
    when it is set and not empty, else the general one."""
    for variable in _variables(signal, setting):
        value = env.get(variable)
        if value:
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


def _present(env: Mapping[str, str], signal: Signal, setting: str) -> tuple[str, str] | None:
    """The variable the gRPC exporters read timeout and compression from: the
    per-signal one when it is set at all (even empty), else the general one."""
    for variable in _variables(signal, setting):
        value = env.get(variable)
        if value is not None:
            return variable, value
    return None


def _check_timeout(env: Mapping[str, str], signal: Signal, protocol: str) -> None:
    found = (_present if protocol == "grpc" else _effective)(env, signal, "TIMEOUT")
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
        found = _present(env, signal, "COMPRESSION")
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
    """Raise :class:`ValueError` for an ``OTEL_EXPORTER_OTLP_*`` value the exporter
    for *signal* would reject, warn about or misread (see the module docstring).

    Checks the protocol too (:func:`nemo.lens._sdk.exporters.otlp_protocol`). The
    message names the variable; it never quotes a header value or the user,
    password or query of an endpoint.
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
