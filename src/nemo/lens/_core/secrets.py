"""Credentials never reach a message nemo.lens prints: :func:`scrub` removes the user, password
and query of any URL in a message, and every value registered with :func:`add_secret` (set-up
registers the OTLP header values and endpoint credentials). Standard library only.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import parse_qsl, unquote, urlsplit

__all__ = ["add_secret", "add_url_secrets", "scrub", "scrub_url"]

# "scheme://user:password@" and a bare "user:password@host" (gRPC endpoints).
_USERINFO: Final = re.compile(r"(?:(?<=://)|(?<![\w.:/@-]))[^\s/@'\"]+:[^\s/@'\"]*@")
# "scheme://user@" (a token as the user name, no password).
_USER: Final = re.compile(r"(?<=://)[^\s/@'\"?#]+@")
# The query and fragment of a URL or request path ("/v1/traces?token=..."): where
# tokens ride when a collector takes them in the URL.
_QUERY: Final = re.compile(r"(?<=[\w/.\]-])[?#][^\s'\"<>()\[\]{},;]+")
# Credentials known to this process, removed wherever they appear. Short values
# are not registered: they would mangle every message while hiding little.
_SECRETS: set[str] = set()
_SECRET_MIN_CHARS: Final = 6
_HIDDEN: Final = "[REDACTED]"


def add_secret(text: str) -> None:
    """Never show *text* (nor each of its space-separated words) in a message nemo.lens logs.

    Values shorter than 6 characters are not registered.
    """
    for candidate in (text, *text.split()):
        candidate = candidate.strip()
        if len(candidate) >= _SECRET_MIN_CHARS:
            _SECRETS.add(candidate)


def add_url_secrets(url: str) -> None:
    """Register the user, password and query values of *url* with :func:`add_secret`."""
    try:
        parts = urlsplit(url)
        username, password = parts.username, parts.password
    except ValueError:
        return
    for value in (username, password):
        if value:
            add_secret(unquote(value))
    for _, value in parse_qsl(parts.query, keep_blank_values=False):
        add_secret(value)
    if parts.fragment:
        add_secret(parts.fragment)


def scrub(text: str) -> str:
    """*text* without credentials: the user and password and the query of any URL or
    endpoint in it, and every value registered with :func:`add_secret`."""
    text = _QUERY.sub("", _USER.sub("", _USERINFO.sub("", text)))
    for secret in sorted(_SECRETS, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, _HIDDEN)
    return text


def scrub_url(url: str) -> str:
    """*url* safe to show: without user, password, query or fragment (even if malformed)."""
    return scrub(url).split("?", 1)[0].split("#", 1)[0]
