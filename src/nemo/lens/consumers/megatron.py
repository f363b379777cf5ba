# TEMPORARY hand-written stand-in; `make generate` replaces this file.
from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import ClassVar, Final

from nemo.lens.groups import SpanGroup


class MegatronSpanGroup(SpanGroup):
    MICROBATCH: Final = "microbatch"
    LAYER: Final = "layer"
    COMMUNICATION: Final = "communication"
    ACTIVATION_OFFLOAD: Final = "activation_offload"
    DATA_LOADING: Final = "data_loading"
    INFERENCE: Final = "inference"
    FIRST_ITERATION: Final = "first_iteration"
    ALL_GROUPS: ClassVar[frozenset[str]] = SpanGroup.ALL_GROUPS | frozenset({MICROBATCH, LAYER, COMMUNICATION, ACTIVATION_OFFLOAD, DATA_LOADING, INFERENCE, FIRST_ITERATION})
    PRESETS: ClassVar[Mapping[str, frozenset[str]]] = MappingProxyType({
        "all": ALL_GROUPS,
        "default": frozenset({"job", "checkpoint", "evaluate", INFERENCE}),
        "per_step": frozenset({"job", "checkpoint", "evaluate", INFERENCE, "model_init", "load_checkpoint", "step", "forward_backward", "optimizer", COMMUNICATION, DATA_LOADING, FIRST_ITERATION}),
    })
