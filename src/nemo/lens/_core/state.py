"""All the process state of nemo.lens, in one place.

The enabled span groups and their tags, the tracer the primitives use, the current handle
and 0.1.0's pipeline-parallel carrier. Other modules change it only through the functions
here; :data:`enabled`, :data:`tags` and :data:`recorder` are read on the hot path and only
ever rebound.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, NoReturn, Protocol, cast

from opentelemetry import trace as _trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, SpanKind, Tracer, TracerProvider

from nemo.lens import _signatures
from nemo.lens._names import signature_of
from nemo.lens._version import __version__
from nemo.lens.semconv import SCOPE_NAME, SPAN_CATEGORY, SPAN_GROUP
from nemo.lens.spec import PROFILING, categories_for, new_names, with_old_names

if TYPE_CHECKING:
    from nemo.lens.groups import SpanGroup

__all__ = [
    "GET_TRACER",
    "SCOPE_VERSION",
    "Handle",
    "Recorder",
    "current_handle",
    "default_tracer",
    "enabled",
    "enabled_span_groups",
    "get_pp_trace_carrier",
    "group_tags",
    "installed_tracer_provider",
    "is_span_group_enabled",
    "pending_span_groups",
    "recorder",
    "refresh_enabled_span_groups",
    "reset_span_group_classes",
    "set_current_handle",
    "set_enabled_span_groups",
    "set_job_span_group_spec",
    "set_pp_trace_carrier",
    "set_span_group_classes",
    "set_span_group_spec",
    "span_group_classes",
    "tags",
    "use_tracer_provider",
]

SCOPE_VERSION: Final = __version__
"""The version of the instrumentation scope of every span nemo.lens makes."""

enabled: frozenset[str] = frozenset()
"""The enabled groups, and the old names of renamed ones (so code still passing an
old name traces as before at no extra cost). Read on the hot path; only rebound."""

# The groups as they were set, without the old names (what enabled_span_groups reports).
_selected: frozenset[str] = frozenset()

# The span-group classes whose categories tag spans, and those categories; None until
# configured, which means the base SpanGroup (imported only when first needed).
_classes: tuple[type[SpanGroup], ...] | None = None
_categories: Mapping[str, str] | None = None

tags: dict[str, Mapping[str, str]] = {}
"""Group name -> the attributes that tag its spans (``lens.group``, ``lens.span_category``),
built when the configuration changes; only ever rebound. A name missing here gets its
tags from :func:`group_tags`."""


# Type checkers see the generated signature, which takes only the schema's group
# names (or a DynamicSpanGroup); the function itself takes any str.
@signature_of(_signatures.is_span_group_enabled)
def is_span_group_enabled(group: str) -> bool:
    """Return whether spans of ``group`` are emitted.

    ``False`` before set-up and for names that were never enabled, including names
    no span-group class defines. The old name of a renamed group is enabled with
    its new name.
    """
    return group in enabled


def set_enabled_span_groups(groups: Iterable[str]) -> None:
    """Replace the enabled set with ``groups``.

    Accepts any iterable of group names (a resolved preset, a list, a set) and
    stores it as a ``frozenset``; later changes to the iterable have no effect.
    Names are not checked against a span-group class, so consumer groups work; to
    turn a spec string such as ``"per_step,-optimizer"`` into names, use
    ``SpanGroup.resolve`` (or the consumer subclass's) first.

    Raises:
        TypeError: ``groups`` is a ``str`` (iterating it would enable one group
            per character) or yields something that is not a ``str``. The enabled
            set is left unchanged.
    """
    if isinstance(groups, str):
        raise TypeError(
            "set_enabled_span_groups() takes an iterable of group names, not a str; "
            f"use [{groups!r}] for one group or SpanGroup.resolve({groups!r}) for a spec"
        )
    new = frozenset(groups)
    for name in new:
        if not isinstance(name, str):
            raise TypeError(f"span group names must be str, got {type(name).__name__} ({name!r})")
    global _spec, _pending
    _configured_categories()  # see _spec_lock
    with _spec_lock:
        # An explicit set pins the groups: a later registration must not reopen them.
        _spec = None
        _pending = frozenset()
        _enable(new)


def _enable(new: frozenset[str]) -> None:
    global enabled, _selected, tags
    names = with_old_names(new)
    # Tags first: a reader that sees the new enabled set finds its names tagged.
    tags = _build_tags(_configured_categories(), names, new)
    _selected = new
    enabled = names


def enabled_span_groups() -> frozenset[str]:
    """Return the currently enabled span groups (for introspection and tests)."""
    return _selected


# --- the spec resolved through the registry (upstream's next API) -------------------------

# The spec set_span_group_spec stored (None: the groups were set explicitly), what of it
# resolved to nothing, and the pending set last warned about. Guarded by _spec_lock, which
# is held while resolving through the registry (the lock order is state -> registry).
# Re-entrant: importing a generated consumer module while resolving registers it, and a
# registration re-resolves under this lock.
_spec_lock = threading.RLock()
_spec: str | None = None
# A job's spec (set-up) resolves through its span-group classes and the hand-registered
# namespaces as the config did; None: through the registry alone (set_span_group_spec).
_spec_classes: Any = None
_pending: frozenset[str] = frozenset()
_warned: frozenset[str] = frozenset()


def set_span_group_spec(spec: str) -> None:
    """Enable what *spec* resolves to through :class:`~nemo.lens.registry.SpanRegistry`, and
    keep *spec*: a namespace registered later is resolved into the enabled set.

    Unlike a class's ``resolve``, an entry naming nothing registered does not raise: it is
    logged once as a warning and reported by :func:`pending_span_groups`.
    """
    _keep_spec(spec, None)


def set_job_span_group_spec(spec: str, classes: object) -> None:
    """Keep a job's spec (what set-up enables): resolved as ``NemoLensConfig`` resolves it,
    against *classes* and every hand-registered namespace, and again whenever a namespace
    registers later. An entry that no longer resolves (its namespace left) is pending."""
    _keep_spec(spec, classes)


def _keep_spec(spec: str, classes: object) -> None:
    global _spec, _spec_classes, _warned
    _configured_categories()  # see _spec_lock
    with _spec_lock:
        _spec, _spec_classes, _warned = spec, classes, frozenset()
        _store(*_resolve(spec, classes))


def _resolve(spec: str, classes: object) -> tuple[frozenset[str], frozenset[str]]:
    from nemo.lens.registry import SpanRegistry, resolve_job_spec

    if classes is not None:
        try:
            return resolve_job_spec(spec, cast(Any, classes)), frozenset()
        except ValueError:
            pass  # a namespace the spec named has gone: the registry says what is pending
    return SpanRegistry.resolve(spec)


def refresh_enabled_span_groups() -> None:
    """Resolve the stored spec again (the registry calls it on every change); nothing
    when the groups were set explicitly with :func:`set_enabled_span_groups`."""
    with _spec_lock:
        if _spec is not None:
            _store(*_resolve(_spec, _spec_classes))


def _store(groups: frozenset[str], pending: frozenset[str]) -> None:
    global _pending, _warned
    _enable(groups)
    _pending = pending
    if pending and pending != _warned:
        _warned = pending
        from nemo.lens.registry import SpanRegistry

        logging.getLogger("nemo.lens.state").warning(
            "span-group spec %r names %s, which no namespace registered in this process "
            "provides; nothing is emitted for them until their namespace registers "
            "(registered namespaces: %s)",
            _spec,
            sorted(pending),
            ", ".join(SpanRegistry.namespaces()) or "(none)",
        )


def pending_span_groups() -> frozenset[str]:
    """The entries of the stored spec that resolved to nothing (empty without a spec)."""
    return _pending


# --- categories and the span attributes they give -----------------------------------------


def _configured_categories() -> Mapping[str, str]:
    global _categories
    if _categories is None:
        from nemo.lens.groups import SpanGroup

        _categories = categories_for(SpanGroup)
    return _categories


class _Tags(dict[str, str]):
    """A group's tags: a ``dict`` nothing can change through its methods (a dict, not a
    mapping proxy: ``dict.update`` with it takes the fast path, 0.2 us against 1 us)."""

    __slots__ = ()

    def _refuse(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("a span group's tags cannot be changed")

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse


def _tag(group: str, categories: Mapping[str, str]) -> Mapping[str, str]:
    return _Tags({SPAN_GROUP: group, SPAN_CATEGORY: categories.get(group, PROFILING)})


def _build_tags(
    categories: Mapping[str, str], enabled: frozenset[str], selected: frozenset[str]
) -> dict[str, Mapping[str, str]]:
    tags = {group: _tag(group, categories) for group in (*categories, *selected)}
    for name in enabled - tags.keys():
        # The old name of a renamed group: its spans are tagged with the new name.
        current = sorted(new_names(name) & selected)
        tags[name] = tags[current[0]] if current else _tag(name, categories)
    return tags


def group_tags(group: str) -> Mapping[str, str]:
    """The span attributes that tag a span of *group*: ``lens.group`` and ``lens.span_category``.

    The category comes from the classes of :func:`set_span_group_classes` (set-up
    passes ``NemoLensConfig.span_group_cls``; before that, :class:`SpanGroup`);
    a name none of them knows is ``profiling``.
    """
    found = tags.get(group)
    if found is not None:
        return found
    return _tag(group, _configured_categories())


def set_span_group_classes(classes: type[SpanGroup] | Sequence[type[SpanGroup]]) -> None:
    """Take span categories from *classes* (one span-group class or several).

    :func:`nemo.lens.setup_telemetry` calls it with ``NemoLensConfig.span_group_cls``;
    call it yourself when you enable groups with :func:`set_enabled_span_groups`
    for a consumer's classes. With several classes, the first to name a group
    decides its category.
    """
    global _classes, _categories, tags
    chosen = (classes,) if isinstance(classes, type) else tuple(classes)
    categories = categories_for(chosen)
    tags = _build_tags(categories, enabled, _selected)
    _classes = chosen
    _categories = categories


def span_group_classes() -> tuple[type[SpanGroup], ...]:
    """The classes span categories come from (see :func:`set_span_group_classes`)."""
    if _classes is None:
        from nemo.lens.groups import SpanGroup

        return (SpanGroup,)
    return _classes


def reset_span_group_classes() -> None:
    """Back to the base class's categories (tests and ``nemo.lens.testing.reset``)."""
    global _classes, _categories, tags
    _classes = None
    _categories = None
    tags = _build_tags(_configured_categories(), enabled, _selected)


# --- the pipeline-parallel trace carrier (the 0.1.0 names) ----------------------------------

_pp_trace_carrier: dict[str, Any] | None = None


def set_pp_trace_carrier(carrier: dict[str, Any] | None) -> None:
    """Keep *carrier* (a W3C carrier, e.g. from ``broadcast_trace_context``) for later stages.

    The pipeline-parallel stages of a training loop read it with
    :func:`get_pp_trace_carrier` to link their spans across stages
    (``create_linked_span(name, get_pp_trace_carrier())``). ``None`` forgets it.
    """
    global _pp_trace_carrier
    _pp_trace_carrier = carrier


def get_pp_trace_carrier() -> dict[str, Any] | None:
    """The carrier last given to :func:`set_pp_trace_carrier`, or ``None``."""
    return _pp_trace_carrier


# --- the tracer of the primitives -------------------------------------------------------------

# The tracer of the provider set-up installed, if any (see use_tracer_provider).
_installed_provider: TracerProvider | None = None
_installed_tracer: Tracer | None = None

# (global provider it came from, tracer): rebound as one tuple so a reader never
# pairs a provider with another provider's tracer.
_global_tracer: tuple[object, Tracer] | None = None

# OpenTelemetry's global slot read directly: ~20 ns against up to ~800 ns for
# get_tracer_provider() (unset, it consults os.environ); the public call if it is renamed.
_HAS_GLOBAL_SLOT: Final = hasattr(_trace, "_TRACER_PROVIDER")


class Recorder(Protocol):
    """What starts the primitives' spans when nemo.lens built the pipeline itself: its
    recording tracer (:mod:`nemo.lens._sdk.recording`), which is then the default tracer."""

    def start_primitive(
        self,
        name: str,
        kind: SpanKind | None,
        links: Sequence[Link] | None,
        attributes: Mapping[str, object] | None,
        group: str | None,
        owned: bool = ...,
        context: Context | None = ...,
        start_time: int | None = ...,
        record_exception: bool = ...,
        set_status_on_exception: bool = ...,
    ) -> Span:
        """Start a primitive's span: *attributes* cleaned as the primitives clean them, then
        *group*'s tags (*owned*: *attributes* is a dict of this span's own, to keep)."""
        ...


recorder: Recorder | None = None
"""The recorder of the installed provider's primitives tracer, if it has one.

Read on the hot path by every span scope made with ``tracer=None``; rebound only
with the default tracer (:func:`use_tracer_provider`)."""


def use_tracer_provider(provider: TracerProvider | None) -> None:
    """Make ``provider`` the source of the default tracer (``None``: the global one).

    Called by set-up after it installs a provider and by shutdown (with ``None``)
    after it removes it; ``nemo.lens.testing.capture_spans`` uses it too.
    """
    global _installed_provider, _installed_tracer, _global_tracer, recorder
    tracer = None
    found: Recorder | None = None
    if provider is not None:
        # nemo.lens's own provider has a tracer for the primitives that records
        # spans the light way (nemo.lens._sdk.recording); any other gives its own.
        primitives_tracer = getattr(provider, "primitives_tracer", None)
        tracer = (
            primitives_tracer()
            if callable(primitives_tracer)
            else provider.get_tracer(SCOPE_NAME, SCOPE_VERSION)
        )
        if callable(getattr(tracer, "start_primitive", None)):
            found = cast(Recorder, tracer)
    _installed_provider = provider
    _installed_tracer = tracer
    _global_tracer = None
    recorder = found


def installed_tracer_provider() -> TracerProvider | None:
    """The provider given to :func:`use_tracer_provider`, or ``None``."""
    return _installed_provider


def _global_provider_key() -> object:
    if _HAS_GLOBAL_SLOT:
        return cast(object, _trace._TRACER_PROVIDER)
    return _trace.get_tracer_provider()


# OpenTelemetry's get_tracer as imported: while it is something else (v0.2.0's users' tests
# monkeypatch nemo.lens.helpers.trace.get_tracer), the default tracer is what it returns.
GET_TRACER: Final = _trace.get_tracer


def default_tracer() -> Tracer:
    """Return the tracer used when a primitive is given ``tracer=None``.

    The installed provider's (cached), else the global provider's (cached per global
    provider); while ``opentelemetry.trace.get_tracer`` is replaced (see
    :data:`GET_TRACER`), what the replacement returns.
    """
    if _trace.get_tracer is not GET_TRACER:
        return _trace.get_tracer(SCOPE_NAME, SCOPE_VERSION)
    tracer = _installed_tracer
    if tracer is not None:
        return tracer
    cached = _global_tracer
    if cached is not None and cached[0] is _global_provider_key():
        return cached[1]
    return _refresh_global_tracer()


def _refresh_global_tracer() -> Tracer:
    global _global_tracer
    # Read the key before the lookup: if the global provider changes in between
    # (another thread, or get_tracer_provider() installing the provider named by
    # OTEL_PYTHON_TRACER_PROVIDER), the stored key is the old one and the next call
    # refreshes again; read after, an old tracer could be filed under the new key.
    key = _global_provider_key()
    tracer = _trace.get_tracer_provider().get_tracer(SCOPE_NAME, SCOPE_VERSION)
    _global_tracer = (key, tracer)
    return tracer


# --- the current handle -----------------------------------------------------------------------


class Handle(Protocol):
    """What the current handle is to the rest of the state's users: a
    :class:`~nemo.lens.handle.TelemetryHandle` (declared here so that the state, which the
    handle's module reads, does not depend on it)."""

    def force_flush(self, timeout_ms: float = ...) -> bool:
        """Export what is buffered; wait at most *timeout_ms*."""
        ...

    def shutdown(self, timeout_ms: float = ...) -> bool:
        """Flush and shut down what set-up installed; wait at most *timeout_ms*."""
        ...


_current: Handle | None = None


def current_handle() -> Handle | None:
    """The handle whose providers are published (``None`` before set-up and after shutdown)."""
    return _current


def set_current_handle(handle: Handle | None) -> None:
    """Record *handle* as the current one (set-up and shutdown, under their own lock)."""
    global _current
    _current = handle
