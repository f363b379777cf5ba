"""Load a schema file and check every rule: a :class:`Schema` safe to render, or a
:class:`SchemaError` with every problem found (file, line, key path, did-you-mean)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any

from nemo.lens.codegen.catalogues import read_metrics, read_names
from nemo.lens.codegen.checker import Checker, Locator, SchemaError, SchemaUnreadable
from nemo.lens.codegen.json_schema import BUNDLED_BASE, SCHEMA_VERSION, TOP, keys
from nemo.lens.codegen.model import (
    BASE_CLASS,
    BASE_MODULE,
    SIGNATURES_MODULE,
    GroupClass,
    KeyPath,
    Problem,
    Schema,
)
from nemo.lens.codegen.rules import read_base, read_consumers

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = [
    "BUNDLED_BASE",
    "MAX_SCHEMA_BYTES",
    "Problem",
    "SchemaError",
    "load_schema",
]

BUNDLED_BASE_PATH = Path(__file__).resolve().parent / "schema" / "span_groups.toml"
MAX_SCHEMA_BYTES = 1 << 20
"""A schema is a short hand-written file; anything larger is a mistake (or /dev/zero)."""


def _read_text(path: Path) -> str:
    # Open first and ask the open file: a FIFO, a device (`extends = "/dev/zero"`) or a
    # file that grows without end is refused instead of read until memory runs out.
    # (Asked before opening too: opening a FIFO would wait for a writer.)
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise OSError(0, "not a regular file (a schema is a TOML file)")
    with path.open("rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(0, "not a regular file (a schema is a TOML file)")
        data = handle.read(MAX_SCHEMA_BYTES + 1)
    if len(data) > MAX_SCHEMA_BYTES:
        raise OSError(
            0, f"larger than {MAX_SCHEMA_BYTES // 1024} KiB; a schema is a short TOML file"
        )
    return data.decode("utf-8")


def read_document(path: Path, shown: str) -> tuple[dict[str, Any], Locator]:
    """The parsed TOML at *path* and the lines of its keys, unvalidated (raises
    :class:`SchemaError` when it cannot be read or parsed)."""
    try:
        text = _read_text(path)
    except UnicodeDecodeError as exc:
        reason = f"the schema is not UTF-8 text: {exc.reason}"
        raise SchemaUnreadable([Problem(shown, None, (), reason)]) from exc
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        reason = getattr(exc, "strerror", None) or str(exc)
        problem = Problem(shown, None, (), f"cannot read the schema: {reason}")
        raise SchemaUnreadable([problem]) from exc
    try:
        data = tomllib.loads(text)
    except RecursionError as exc:
        # tomllib parses nested arrays and inline tables recursively.
        reason = "not valid TOML here: arrays or tables nested too deeply"
        raise SchemaUnreadable([Problem(shown, None, (), reason)]) from exc
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None)
        match = re.search(r"line (\d+)", str(exc))
        if line is None and match:
            line = int(match.group(1))
        # The position is reported as the problem's line; keep the message short.
        message = re.sub(r"\s*\(at line \d+, column \d+\)$", "", getattr(exc, "msg", str(exc)))
        raise SchemaUnreadable([Problem(shown, line, (), f"not valid TOML: {message}")]) from exc
    return data, Locator(text)


def _problem(chk: Checker, path: KeyPath, message: str) -> Problem:
    return Problem(chk.file, chk.locator.line(path), path, message)


def load_schema(
    path: Path,
    shown: str | None = None,
    *,
    documents: list[tuple[str, dict[str, Any], Locator]] | None = None,
    _extending: tuple[Path, ...] = (),
) -> Schema:
    """Parse and validate the schema at *path*; raise :class:`SchemaError` on any problem.
    *shown* is how messages and headers name the file (default: as given); *documents* gets
    each file read, this one first; *_extending* lists the files that extend this one."""
    shown = shown or path.as_posix()
    data, locator = read_document(path, shown)
    if documents is not None:
        documents.append((shown, data, locator))
    chk = Checker(shown, locator)
    chk.known_keys(data, keys(TOP), ())
    version = data.get("schema_version")
    if version is None:
        chk.error((), f"missing 'schema_version = {SCHEMA_VERSION}'")
    elif version != SCHEMA_VERSION:
        chk.error(
            ("schema_version",),
            f"unsupported schema_version {version!r}; this generator reads {SCHEMA_VERSION}",
        )

    extends = data.get("extends")
    base: GroupClass
    base_digest = ""
    if extends is not None:
        if not chk.expect(extends, str, ("extends",)):
            raise SchemaError(chk.problems)
        for key in ("groups", "presets"):
            if key in data:
                chk.error(
                    (key,),
                    f"a schema that extends another defines consumers only; move [{key}] "
                    "into a consumer table or into the base schema",
                )
        base_path = BUNDLED_BASE_PATH if extends == BUNDLED_BASE else path.parent / extends
        try:
            chain = (*_extending, path.resolve())
            cycle = base_path.resolve() in chain
        except (OSError, ValueError) as exc:  # a NUL byte, a symlink loop
            reason = f"extends {extends!r} is not a usable path: {exc}"
            raise SchemaUnreadable([_problem(chk, ("extends",), reason)]) from None
        if cycle:
            reason = (
                f"extends {extends!r} leads back to this schema (an extends cycle); "
                "extend the base schema instead"
            )
            raise SchemaUnreadable([_problem(chk, ("extends",), reason)])
        if not base_path.exists():
            reason = (
                f"extends {extends!r} names no file ({base_path.as_posix()} does not exist; "
                f"a path is read from this schema's directory, and {BUNDLED_BASE!r} names "
                "the base vocabulary of nemo.lens)"
            )
            raise SchemaUnreadable([_problem(chk, ("extends",), reason)])
        try:
            parent = load_schema(base_path, extends, documents=documents, _extending=chain)
        except SchemaUnreadable:
            raise  # alone: this file's problems may only follow from it
        except SchemaError as exc:
            raise SchemaError([*chk.problems, *exc.problems]) from None
        base, base_digest = parent.base, parent.digest
    else:
        base = read_base(chk, data)

    catalogue = names = None
    for key in ("metrics", "attributes"):
        if key in data and extends is not None:
            chk.error((key,), f"[{key}] belongs to the base schema, not to a consumer's")
    if "metrics" in data and extends is None:
        catalogue = read_metrics(chk, data["metrics"])
    if "attributes" in data and extends is None:
        # After the metrics: the two catalogues' constants share nemo.lens.semconv.
        names = read_names(chk, data["attributes"], catalogue)
    taken: dict[str, KeyPath] = dict.fromkeys(
        (BASE_CLASS, BASE_MODULE, SIGNATURES_MODULE), ("groups",)
    )
    consumers = read_consumers(
        chk, data.get("consumers", {}), base, taken, "" if extends is None else str(extends)
    )
    if extends is not None and not data.get("consumers"):
        chk.error((), "a schema that extends another must define at least one [consumers.NAME]")
    warnings = sorted(chk.warnings, key=lambda p: (p.file, p.line or 0))
    if chk.problems:
        raise SchemaError(sorted(chk.problems, key=lambda p: (p.file, p.line or 0)), warnings)
    # sha256 of the parsed content with sorted keys: formatting changes nothing.
    canonical = json.dumps(
        {"schema": data, "base": base_digest},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return Schema(
        source=shown,
        digest=hashlib.sha256(canonical.encode("utf-8")).hexdigest(),
        base=base,
        consumers=tuple(sorted(consumers, key=lambda c: c.key)),
        extends_base=extends is not None,
        catalogue=catalogue,
        names=names,
        warnings=tuple(warnings),
    )
