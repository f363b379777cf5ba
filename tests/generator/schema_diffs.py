"""Helpers for the `nemo-lens diff-schema` tests: a small schema of the tests' own, edits
of it, and a runner that compares two schemas as a user would.

The vocabulary below belongs to these tests (never the shipped one): a base with four
groups and two presets, and one consumer, `srv`, with its own groups and presets.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nemo.lens.codegen.command import diff_schema as main

BASE = """\
schema_version = 1

[groups.run]
description = "The whole run."
fires = "once"
since = "1.0.0"
category = "goodput"

[groups.save]
description = "Saving a snapshot."
fires = "periodic"
since = "1.0.0"
category = "goodput"
bucket = "checkpoint_save"

[groups.tick]
description = "One iteration of the loop."
fires = "per_step"
since = "1.0.0"
category = "goodput"
bucket = "productive"

[groups.flush]
description = "Flushing buffers to disk."
fires = "periodic"
since = "1.0.0"

[presets.default]
description = "Production."
groups = ["run", "save", "flush"]

[presets.per_step]
description = "Every iteration."
extends = ["default"]
groups = ["tick"]

[consumers.srv]
class = "SrvSpanGroup"
module = "srv.lens_groups"
description = "A server."

[consumers.srv.groups.request]
description = "One request served."
fires = "per_request"
since = "1.0.0"

[consumers.srv.groups.warmup]
description = "Warm-up before the first request."
fires = "once"
since = "1.0.0"
category = "goodput"
bucket = "initialization"

[consumers.srv.presets.default]
description = "Production: the base default and the warm-up."
groups = ["warmup"]

[consumers.srv.presets.serving]
description = "Requests."
groups = ["request"]
"""

CONSUMER = """\
schema_version = 1
extends = "nemo.lens"

[consumers.mylib]
class = "MyLibSpanGroup"
module = "mylib.lens_groups"
description = "Span groups of mylib."

[consumers.mylib.groups.shard_merge]
description = "Merging of dataset shards."
fires = "periodic"
since = "1.0.0"
category = "goodput"

[consumers.mylib.presets.default]
description = "Production: the base default, and shard merges."
groups = ["shard_merge"]
"""
"""A consumer in another repository, as the README's worked example writes it."""


def edit(text: str, *replacements: tuple[str, str]) -> str:
    """*text* with each (old, new) replaced once; each old text must be there."""
    for old, new in replacements:
        assert old in text, f"the schema has no {old!r} to replace"
        text = text.replace(old, new, 1)
    return text


def line_of(text: str, needle: str) -> int:
    """The 1-based number of the first line of *text* that holds *needle*."""
    for number, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return number
    raise AssertionError(f"no line holds {needle!r}")


def without_table(text: str, header: str) -> str:
    """*text* without the TOML table *header* (``[groups.flush]``) and its keys."""
    lines = text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.strip() == header)
    end = start + 1
    while end < len(lines) and not lines[end].startswith("["):
        end += 1
    return "".join(lines[:start] + lines[end:])


@dataclass(frozen=True)
class Result:
    status: int
    out: str
    err: str

    @property
    def document(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.out)
        return value

    @property
    def findings(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.document["findings"]
        return found

    def kinds(self) -> list[tuple[str, str, str]]:
        """(kind, severity, subject) of every finding, in the order printed."""
        return [(f["kind"], f["severity"], f["subject"]) for f in self.findings]

    def one(self, kind: str) -> dict[str, Any]:
        (found,) = [f for f in self.findings if f["kind"] == kind]
        return found


class Differ:
    """Writes OLD and NEW into a directory and runs `nemo-lens diff-schema` there."""

    def __init__(
        self, where: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        self.where = where
        self.capsys = capsys
        monkeypatch.chdir(where)

    def __call__(self, old: str, new: str, *args: str, fmt: str = "json") -> Result:
        (self.where / "old.toml").write_text(old, encoding="utf-8")
        (self.where / "new.toml").write_text(new, encoding="utf-8")
        self.capsys.readouterr()
        status = main(["old.toml", "new.toml", "--format", fmt, *args])
        captured = self.capsys.readouterr()
        return Result(status, captured.out, captured.err)
