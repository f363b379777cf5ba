"""A problem (or a warning) found in a schema: where it is, and what it says.

Plain data, below both the validated schema (:mod:`~nemo.lens.codegen.model`, which
keeps the warnings) and the checker that finds them (:mod:`~nemo.lens.codegen.checker`).
"""

from __future__ import annotations

from dataclasses import dataclass

from nemo.lens.codegen.locate import KeyPath

__all__ = ["Problem", "format_path"]


@dataclass(frozen=True)
class Problem:
    """One validation failure, located in its file."""

    file: str
    line: int | None
    path: KeyPath
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {format_path(self.path)}: {self.message}"


def format_path(path: KeyPath) -> str:
    """Render a key path as `a.b[2].c`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out or "(top level)"
