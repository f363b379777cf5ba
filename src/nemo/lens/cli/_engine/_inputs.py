"""Which reader each input needs: DuckDB's over a regular file (standard input is copied to
one first) or a Parquet dataset, or the careful pass over anything else (a pipe, a device, a
path that cannot be read), which copies what it reads for DuckDB."""

from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

__all__ = ["STDIN", "STDIN_NAME", "Inputs", "sort_inputs"]

STDIN: Final = "-"
STDIN_NAME: Final = "<stdin>"
PARQUET_SUFFIX: Final = ".parquet"


@dataclass
class Inputs:
    """The inputs, by reader; :meth:`close` removes the scratch directory (copies, spills)."""

    ordered: list[str] = field(default_factory=list)
    """Every JSON-lines input, in the order given (standard input as its copy)."""
    streams: list[str] = field(default_factory=list)
    """Inputs DuckDB cannot read itself (pipes, devices, paths that cannot be read)."""
    parquet: list[str] = field(default_factory=list)
    """Parquet files (a dataset's, found under its directory)."""
    names: dict[str, str] = field(default_factory=dict)
    """File -> the name messages give it, where it is not its path."""
    scratch: str = ""

    def name(self, path: str) -> str:
        return self.names.get(path, path)

    def close(self) -> None:
        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = ""


def _parquet_files(directory: str) -> list[str]:
    found = []
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        found += [os.path.join(root, f) for f in sorted(files) if f.endswith(PARQUET_SUFFIX)]
    return found


def sort_inputs(paths: Sequence[str]) -> Inputs:
    """Put every input with its reader (a directory without Parquet files is an error the
    careful pass names)."""
    inputs = Inputs(scratch=tempfile.mkdtemp(prefix="nemo-lens-"))
    for path in paths:
        if path == STDIN:
            spooled = os.path.join(inputs.scratch, f"stdin-{len(inputs.names)}.jsonl")
            with open(spooled, "wb") as copy:
                shutil.copyfileobj(sys.stdin.buffer, copy, 1 << 20)
            inputs.names[spooled] = STDIN_NAME
            inputs.ordered.append(spooled)
            continue
        try:
            mode = os.stat(path).st_mode
        except OSError:
            mode = 0
        parquet = _parquet_files(path) if stat.S_ISDIR(mode) else []
        if parquet or (path.endswith(PARQUET_SUFFIX) and stat.S_ISREG(mode)):
            inputs.parquet += parquet or [path]
            continue
        if not stat.S_ISREG(mode):
            inputs.streams.append(path)
        inputs.ordered.append(path)
    return inputs
