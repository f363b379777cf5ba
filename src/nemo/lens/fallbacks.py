"""No-op stand-ins for the instrumentation primitives, importable without OpenTelemetry.

Same signatures as the real ones; spans are ``None``, ``trace_fn`` returns the function,
no group is enabled, :func:`redact_value` still redacts. Standard library only and
independent of the rest of nemo.lens, so it also works copied into a project on its own.
"""

from __future__ import annotations

# Imported under private names: the module's namespace holds only its stand-ins (__all__)
# and private helpers, so `from nemo.lens.fallbacks import *` and dir() give what it documents.
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any
from typing import Final as _Final
from typing import TypeVar as _TypeVar
from typing import cast as _cast

if _TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from collections.abc import Set as AbstractSet
    from contextlib import AbstractContextManager
    from decimal import Decimal

    from opentelemetry.context import Context
    from opentelemetry.trace import Link, Span, SpanKind, Tracer

__all__ = [
    "DEFAULT_REDACT_KEYS",
    "SpanRegistry",
    "emit_span",
    "is_span_group_enabled",
    "managed_span",
    "redact_value",
    "safe_set_span_attributes",
    "span_cm",
    "trace_fn",
]

_F = _TypeVar("_F", bound="Callable[..., _Any]")
_T = _TypeVar("_T")

DEFAULT_REDACT_KEYS: _Final[frozenset[str]] = frozenset(
    {
        "prompt",
        "input_text",
        "output_text",
        "text",
        "password",
        "token",
        "secret",
        "key",
        "api_key",
        "access_token",
        "authorization",
        "hf_token",
        "aws_secret_access_key",
    }
)
"""Attribute keys whose ``str`` values are replaced with ``"[REDACTED]"`` by default."""


class _NoSpan:
    """The one context manager the fallbacks return: enters to ``None``."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc_info: object) -> None:
        return None


_NO_SPAN: _Final = _NoSpan()


def managed_span(
    group: str,
    name: str,
    tracer: Tracer | None = None,
    *,
    kind: SpanKind | None = None,
    links: Sequence[Link] | None = None,
    **attributes: object,
) -> AbstractContextManager[Span | None]:
    """Run the ``with`` body with no span; the ``as`` target is ``None``."""
    return _NO_SPAN


def span_cm(
    name: str,
    tracer: Tracer | None = None,
    record_exception: bool = True,
    group: str | None = None,
    *,
    context: Context | None = None,
    **attributes: object,
) -> AbstractContextManager[Span]:
    """Run the ``with`` body with no span; the ``as`` target is ``None``.

    The annotation is the real one's so the two stay interchangeable for type
    checkers; at run time the value is ``None``.
    """
    return _cast("AbstractContextManager[Span]", _NO_SPAN)


def trace_fn(group: str, name: str, tracer: Tracer | None = None) -> Callable[[_F], _F]:
    """Return a decorator that returns the function unchanged."""
    return _unchanged


def _unchanged(fn: _F) -> _F:
    return fn


def is_span_group_enabled(group: str) -> bool:
    """Return ``False``: without the library no group emits."""
    return False


def safe_set_span_attributes(
    span: Span | None,
    attributes: Mapping[str, object] | None,
    redact_keys: AbstractSet[str] = DEFAULT_REDACT_KEYS,
) -> None:
    """Do nothing (there is no span to set attributes on)."""
    return None


def emit_span(
    tracer: Tracer | None,
    name: str,
    start_epoch_seconds: float | str | Decimal,
    end_epoch_seconds: float | str | Decimal,
    *,
    group: str | None = None,
    context: Context | None = None,
    attributes: Mapping[str, object] | None = None,
) -> Span | None:
    """Emit nothing and return ``None``, as the real one does for a disabled group."""
    return None


def redact_value(key: str, value: _T, redact_keys: AbstractSet[str] = DEFAULT_REDACT_KEYS) -> _T:
    """Return ``value`` with its text hidden when ``key`` is a redact key.

    Same rules as ``nemo.lens.helpers.redact_value``: a ``str`` becomes
    ``"[REDACTED]"``, a list or tuple keeps its kind with its ``str`` items
    replaced, anything else is unchanged; keys match case-insensitively, as a
    whole or by their last dot-separated segment.
    """
    lowered_keys = {k.lower() for k in redact_keys}
    lowered = key.lower()
    if lowered not in lowered_keys and lowered.rpartition(".")[2] not in lowered_keys:
        return value
    if isinstance(value, str):
        return _cast(_T, "[REDACTED]")
    if isinstance(value, (list, tuple)):
        hidden = ["[REDACTED]" if isinstance(item, str) else item for item in value]
        return _cast(_T, hidden if isinstance(value, list) else tuple(hidden))
    return value


class SpanRegistry:
    """A registry that keeps nothing: registering succeeds, nothing is registered, and every
    spec entry resolves to nothing (the real one is ``nemo.lens.groups.SpanRegistry``)."""

    @classmethod
    def register(
        cls,
        namespace: str,
        groups: Iterable[str],
        presets: Mapping[str, Iterable[str]] | None = None,
        *,
        allow_override: bool = False,
    ) -> None:
        """Accept the registration and forget it."""
        return None

    @classmethod
    def unregister(cls, namespace: str) -> None:
        """Do nothing."""
        return None

    @classmethod
    def clear(cls) -> None:
        """Do nothing."""
        return None

    @classmethod
    def groups(cls) -> frozenset[str]:
        """No group is registered."""
        return frozenset()

    @classmethod
    def namespaces(cls) -> list[str]:
        """No namespace is registered."""
        return []

    @classmethod
    def presets(cls) -> dict[str, frozenset[str]]:
        """Only ``all``, which covers no group."""
        return {"all": frozenset()}

    @classmethod
    def resolve(cls, spec: str) -> tuple[frozenset[str], frozenset[str]]:
        """Nothing enabled; every entry of *spec* pending."""
        entries = (entry.strip().lower() for entry in spec.split(","))
        return frozenset(), frozenset(entry for entry in entries if entry)


# `from __future__ import annotations` binds the name `annotations` here; the feature
# works at compile time, so the name can go with the other non-stand-ins.
del annotations
