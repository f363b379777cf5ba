# TEMPORARY hand-written stand-in; `make generate` replaces this file.
from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import ClassVar, Final, Literal

from nemo.lens._spec import GroupInfo, SpecStep, explain_spec, resolve_spec

SpanGroupName = Literal["job", "checkpoint", "evaluate", "model_init", "load_checkpoint", "step", "forward_backward", "optimizer"]


class SpanGroup:
    JOB: Final = "job"
    CHECKPOINT: Final = "checkpoint"
    EVALUATE: Final = "evaluate"
    MODEL_INIT: Final = "model_init"
    LOAD_CHECKPOINT: Final = "load_checkpoint"
    STEP: Final = "step"
    FORWARD_BACKWARD: Final = "forward_backward"
    OPTIMIZER: Final = "optimizer"
    ALL_GROUPS: ClassVar[frozenset[str]] = frozenset({JOB, CHECKPOINT, EVALUATE, MODEL_INIT, LOAD_CHECKPOINT, STEP, FORWARD_BACKWARD, OPTIMIZER})
    PRESETS: ClassVar[Mapping[str, frozenset[str]]] = MappingProxyType({
        "all": ALL_GROUPS,
        "default": frozenset({JOB, CHECKPOINT, EVALUATE}),
        "per_step": ALL_GROUPS,
    })
    RENAMED: ClassVar[Mapping[str, str]] = MappingProxyType({})
    GROUP_INFO: ClassVar[Mapping[str, GroupInfo]] = MappingProxyType({})

    @classmethod
    def resolve(cls, spec: str) -> frozenset[str]:
        return resolve_spec(spec, owner=cls.__name__, groups=cls.ALL_GROUPS, presets=cls.PRESETS, renamed=cls.RENAMED)

    @classmethod
    def explain(cls, spec: str) -> tuple[frozenset[str], tuple[SpecStep, ...]]:
        return explain_spec(spec, owner=cls.__name__, groups=cls.ALL_GROUPS, presets=cls.PRESETS, renamed=cls.RENAMED)
