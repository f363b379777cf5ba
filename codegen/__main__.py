"""Command line of the span-group generator.

    python -m codegen generate   write the generated modules and docs
    python -m codegen check      write nothing; print a diff and exit 1 when stale
    python -m codegen validate   only validate the schema

Exit status: 0 done (or up to date), 1 generated files are stale, 2 the schema
is invalid or the command line is wrong.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from codegen.render import DEFAULT_COMMAND, render_all
from codegen.validate import SchemaError, load_schema

DEFAULT_SCHEMA = Path("schema/span_groups.toml")
DEFAULT_OUT_ROOT = Path("src")
DEFAULT_DOCS = Path("docs/span-groups.md")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m codegen",
        description="Generate span-group classes and docs from a TOML schema.",
    )
    parser.add_argument("command", choices=("generate", "check", "validate"))
    parser.add_argument(
        "--schema",
        type=Path,
        default=DEFAULT_SCHEMA,
        help=f"schema file (default: {DEFAULT_SCHEMA})",
    )
    parser.add_argument(
        "--out-root",
        type=Path,
        default=None,
        help="directory that module paths are relative to "
        f"(default: {DEFAULT_OUT_ROOT} for the default schema, else the schema's directory)",
    )
    docs = parser.add_mutually_exclusive_group()
    docs.add_argument("--docs", type=Path, default=None, help="where to write the docs table")
    docs.add_argument("--no-docs", action="store_true", help="do not generate the docs table")
    return parser


def _command_for(args: argparse.Namespace) -> str:
    """The command a generated header tells readers to run again."""
    if args.schema == DEFAULT_SCHEMA and args.out_root is None and args.docs is None:
        return DEFAULT_COMMAND
    parts = ["python -m codegen generate", f"--schema {args.schema.as_posix()}"]
    if args.out_root is not None:
        parts.append(f"--out-root {args.out_root.as_posix()}")
    if args.no_docs:
        parts.append("--no-docs")
    elif args.docs is not None:
        parts.append(f"--docs {args.docs.as_posix()}")
    return " ".join(parts)


def _write_atomically(files: dict[Path, str]) -> None:
    # Render everything first (done by the caller), then replace each file in one
    # rename, so an interrupted run never leaves a half-written module.
    for path, content in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(content)
        os.replace(tmp, path)


def _stale(files: dict[Path, str]) -> list[str]:
    diffs = []
    for path, content in sorted(files.items()):
        try:
            current = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            current = ""
        if current != content:
            diffs.append(
                "".join(
                    difflib.unified_diff(
                        current.splitlines(keepends=True),
                        content.splitlines(keepends=True),
                        fromfile=f"{path.as_posix()} (on disk)",
                        tofile=f"{path.as_posix()} (from the schema)",
                    )
                )
                or f"{path.as_posix()}: missing\n"
            )
    return diffs


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    default_schema = args.schema == DEFAULT_SCHEMA
    out_root = args.out_root or (DEFAULT_OUT_ROOT if default_schema else args.schema.parent)
    docs: Path | None = None
    if not args.no_docs:
        docs = args.docs or (DEFAULT_DOCS if default_schema else None)
    try:
        schema = load_schema(args.schema)
    except SchemaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        print("nothing was written.", file=sys.stderr)
        return 2
    if args.command == "validate":
        print(f"{args.schema.as_posix()}: valid")
        return 0
    files = render_all(schema, out_root, docs, command=_command_for(args))
    if args.command == "check":
        diffs = _stale(files)
        if diffs:
            sys.stdout.write("".join(diffs))
            print(
                f"error: {len(diffs)} generated file(s) differ from {args.schema.as_posix()}; "
                f"run `{_command_for(args)}` (generated files are never edited by hand)",
                file=sys.stderr,
            )
            return 1
        print(f"{len(files)} generated file(s) are up to date")
        return 0
    _write_atomically(files)
    for path in sorted(files):
        print(f"wrote {path.as_posix()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
