"""Every typed way to name a span group, in one program that mypy and pyright accept.

Run it with ``python examples/typing_example.py`` (it prints the spans it
made), or check it with ``mypy --strict examples/typing_example.py``. Misspell
any group below (``SpanGroup.STPE``, ``"microbath"``) and both type checkers
reject the line; the README's "Let the type checker catch typos" shows what they
print.
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager

from opentelemetry.trace import Span

from nemo.lens import is_span_group_enabled, managed_span, testing, trace_fn
from nemo.lens.consumers import megatron
from nemo.lens.consumers.megatron import MegatronSpanGroup, MegatronSpanGroupName
from nemo.lens.groups import DynamicSpanGroup, SpanGroup


# The generated constants: the usual way, checked by name.
@trace_fn(SpanGroup.OPTIMIZER, "train.optimizer_step")
def optimizer_step() -> None:
    pass


def forward_backward(microbatch: int) -> None:
    # A consumer module re-exports the primitives typed for its own class: here an
    # RL or gym group would be an error too, not only a misspelling.
    with megatron.managed_span(MegatronSpanGroup.MICROBATCH, "train.microbatch", mb=microbatch):
        pass


def phase(group: MegatronSpanGroupName, name: str) -> AbstractContextManager[Span | None]:
    # A helper that passes a group on takes the class's Literal type, so its
    # callers are checked as well.
    return managed_span(group, name)


def main() -> None:
    # A name only known at run time is wrapped once, where it enters the program.
    extra = DynamicSpanGroup(os.environ.get("EXTRA_SPAN_GROUP", "data_loading"))

    with testing.capture_spans("all", span_group_cls=MegatronSpanGroup) as spans:
        with managed_span(SpanGroup.STEP, "train.step", iteration=0):
            with phase("data_loading", "train.data"):  # a literal works as well
                pass
            for microbatch in range(2):
                forward_backward(microbatch)
            optimizer_step()
            with managed_span(extra, "train.extra"):
                pass
        assert is_span_group_enabled("microbatch")
    for span in spans.get_finished_spans():
        print(span.name)


if __name__ == "__main__":
    main()
