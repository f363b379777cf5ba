"""Which reader each input needs: DuckDB's over a regular file or a Parquet dataset, or the
careful line reader over anything else (a pipe, a device), and standard input spooled.

DuckDB reads a file by seeking in it, in parallel: a regular file. Standard input
is copied to a temporary file first (named ``<stdin>`` in messages); a pipe or a
device (``/dev/zero``) is read by the careful reader, which reads line by line
with a limit. A directory is a Parquet dataset (``convert --to parquet``) when it
holds ``.parquet`` files; otherwise it is the error it always was.
"""

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
    """The inputs, by reader; :meth:`close` removes the spooled copy of standard input."""

    ordered: list[str] = field(default_factory=list)
    """Every JSON-lines input, in the order given (standard input as its spooled copy)."""
    careful: list[str] = field(default_factory=list)
    """Inputs only the careful line reader reads (pipes, devices, missing files)."""
    parquet: list[str] = field(default_factory=list)
    """Parquet files (a dataset's, found under its directory)."""
    names: dict[str, str] = field(default_factory=dict)
    """File -> the name messages give it."""
    scratch: str | None = None

    def close(self) -> None:
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None


def _parquet_files(directory: str) -> list[str]:
    found = []
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        found += [os.path.join(root, f) for f in sorted(files) if f.endswith(PARQUET_SUFFIX)]
    return found


def sort_inputs(paths: Sequence[str]) -> Inputs:
    """Put every input with its reader (see the module docstring)."""
    inputs = Inputs()
    for path in paths:
        if path == STDIN:
            if inputs.scratch is None:
                inputs.scratch = tempfile.mkdtemp(prefix="nemo-lens-")
            spooled = os.path.join(inputs.scratch, f"stdin-{len(inputs.names)}.jsonl")
            with open(spooled, "wb") as copy:
                shutil.copyfileobj(sys.stdin.buffer, copy, 1 << 20)
            inputs.names[spooled] = STDIN_NAME
            inputs.ordered.append(spooled)
            continue
        try:
            found = os.stat(path)
        except OSError:
            inputs.careful.append(path)  # the careful reader says why it cannot be read
            inputs.ordered.append(path)
            continue
        if stat.S_ISDIR(found.st_mode):
            files = _parquet_files(path)
            if not files:
                inputs.careful.append(path)  # the careful reader's error: "is a directory"
                inputs.ordered.append(path)
                continue
            inputs.parquet += files
        elif path.endswith(PARQUET_SUFFIX) and stat.S_ISREG(found.st_mode):
            inputs.parquet.append(path)
        else:
            if not stat.S_ISREG(found.st_mode):
                inputs.careful.append(path)
            inputs.ordered.append(path)
    return inputs
