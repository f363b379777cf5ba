"""``nemo-lens generate`` (render a span-group schema into modules and docs, or check them)
and ``nemo-lens diff-schema`` (what an edit of a schema changes for its users).
docs/schema.md, docs/consumer-repositories.md and docs/schema-compatibility.md say how."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib.machinery
import importlib.metadata
import os
import stat
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from nemo.lens.codegen.docs_region import END, START, RegionError, find_region
from nemo.lens.codegen.json_schema import json_schema_text
from nemo.lens.codegen.model import GroupClass, Problem, Schema
from nemo.lens.codegen.rules import RUNTIME_PACKAGE
from nemo.lens.codegen.rules import own_package as _own_package
from nemo.lens.codegen.text import generated_from

if TYPE_CHECKING:
    from nemo.lens.codegen.compat import Side

PROG = "nemo-lens generate"
DIFF_PROG = "nemo-lens diff-schema"
FORMATS: tuple[str, ...] = ("text", "json", "github")
DEFAULT_SCHEMA = Path("schema/span_groups.toml")
DEFAULT_OUT_ROOT = Path("src")
DEFAULT_DOCS = Path("docs/span-groups.md")
JSON_SCHEMA_FILE = "span_groups.schema.json"
"""The JSON Schema of the format, written beside this repository's own schema."""
DEFAULT_COMMAND = "make generate"
"""What the headers of this repository's own generated files tell readers to run."""
GENERATED_MARK = "DO NOT EDIT: generated from "
_ROOT_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg")

EXIT_OK = 0
EXIT_STALE = 1
EXIT_BREAKING = 1
EXIT_IO = 1
"""An output cannot be written (as for the trace commands)."""
EXIT_USAGE = 2
"""A usage error, an invalid schema, or a file the generator must not replace."""
EXIT_CLOSED_PIPE = 128 + 13
"""The reader of standard output went away (``| head``): a shell's status for a tool SIGPIPE
ended, as the trace commands return (the generator runs without their extra, so keeps this)."""
# Where a search for stale generated files never looks: tools' and environments' trees
# (a virtualenv under the out-root holds generated modules of installed packages).
_NOT_SEARCHED = frozenset({"__pycache__", "node_modules", "site-packages", "dist-packages"})


class _Formatter(argparse.HelpFormatter):
    """argparse's help, wrapped at spaces only: a marker (``nemo-lens:span-groups:start``)
    or a path must read as one word, as it is typed."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        formatter_class=_Formatter,
        description=(
            "Generate span-group classes (and their docs table) from a TOML schema. With no "
            f"--schema, reads {DEFAULT_SCHEMA} and writes under {DEFAULT_OUT_ROOT}/ and "
            f"{DEFAULT_DOCS}, as `make generate` does in the nemo.lens repository."
        ),
        epilog=(
            "Exit status: 0 done or up to date, 1 a generated file is stale (--check) or "
            "the schema breaks its --baseline, 2 invalid schema or bad usage."
        ),
    )
    parser.add_argument(
        "--schema",
        type=Path,
        help=f"the schema file (default: {DEFAULT_SCHEMA}, when it exists here)",
    )
    parser.add_argument(
        "--out-root",
        type=Path,
        help="directory that module paths are relative to "
        f"(default: {DEFAULT_OUT_ROOT} for the default schema, else the schema's directory)",
    )
    docs = parser.add_mutually_exclusive_group()
    docs.add_argument(
        "--docs",
        type=Path,
        help="where to write the docs table: a page of its own, or the region of a page you "
        f"keep between a line {START} and a line {END} (the rest of the page is kept as it is; "
        "--check checks only the region)",
    )
    docs.add_argument("--no-docs", action="store_true", help="do not generate the docs table")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--check",
        action="store_true",
        help="write nothing; print a diff and exit 1 when a generated file is stale or edited",
    )
    mode.add_argument(
        "--validate", action="store_true", help="only validate the schema; write nothing"
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="OLD",
        help="first compare the schema with OLD (e.g. the last release's, from git show) as "
        "nemo-lens diff-schema does: a breaking change writes nothing and exits 1; "
        "warnings are printed",
    )
    mode.add_argument(
        "--print-json-schema",
        action="store_true",
        help="print the JSON Schema of the schema format and exit (for editors: save it as "
        "lens.schema.json and start the schema with the line #:schema ./lens.schema.json)",
    )
    return parser


def repository_root(start: Path) -> Path | None:
    """The nearest directory at or above *start* that holds a repository or project marker."""
    for directory in (start, *start.parents):
        if any((directory / marker).exists() for marker in _ROOT_MARKERS):
            return directory
    return None


def _relative(path: Path, root: Path) -> str:
    # Never an absolute path in a generated file: relative to the output's repository.
    return Path(os.path.relpath(path.resolve(), root)).as_posix()


class _Plan:
    """Where the files go, and how their headers name the schema and the command."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.default = args.schema is None
        self.schema: Path = DEFAULT_SCHEMA if args.schema is None else args.schema
        self.out_root: Path = args.out_root or (
            DEFAULT_OUT_ROOT if self.default else self.schema.parent
        )
        self.docs: Path | None = None
        if not args.no_docs:
            self.docs = args.docs or (DEFAULT_DOCS if self.default else None)
        self.root = repository_root(self.out_root.resolve()) or Path.cwd().resolve()
        self.shown = _relative(self.schema, self.root)
        if self.default and args.out_root is None and args.docs is None and not args.no_docs:
            self.command = DEFAULT_COMMAND
        else:
            parts = [PROG, f"--schema {self.shown}"]
            parts.append(f"--out-root {_relative(self.out_root, self.root)}")
            if self.docs is not None:
                parts.append(f"--docs {_relative(self.docs, self.root)}")
            elif args.no_docs:
                parts.append("--no-docs")
            self.command = " ".join(parts)


class _Unwritable(Exception):
    """An output could not be written: the one-line reason, and what was written before."""


def _new_file_mode() -> int:
    # What a plain open() would give a new file: 0o666 less the umask. The umask can only
    # be read by setting it; this runs once, in a command-line process.
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def _write_atomically(files: dict[Path, str]) -> None:
    """Write every file through a temporary file beside it, then rename them all: a file
    that cannot be written leaves every output as it was. A new file gets the mode a plain
    open() would give it; a rewritten one keeps its own (raises :class:`_Unwritable`)."""
    new_mode = _new_file_mode()
    staged: list[tuple[str, Path]] = []
    done = 0
    try:
        for path, content in files.items():
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
                staged.append((tmp, path))
                with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
                    handle.write(content)
                mode = stat.S_IMODE(path.stat().st_mode) if path.is_file() else new_mode
                os.chmod(tmp, mode)
            except OSError as exc:
                # mkdir says "File exists" for a file where a directory should be.
                blocking = [p for p in path.parents if p.exists() and not p.is_dir()]
                reason = (
                    f"{blocking[-1].as_posix()} is not a directory" if blocking else _reason(exc)
                )
                raise _Unwritable(
                    f"cannot write {path.as_posix()}: {reason}; nothing was written"
                ) from exc
        for tmp, path in staged:
            try:
                os.replace(tmp, path)
            except OSError as exc:
                raise _Unwritable(
                    f"cannot replace {path.as_posix()}: {_reason(exc)} ({done} of "
                    f"{len(staged)} files were written; run the generator again)"
                ) from exc
            done += 1
    finally:
        for tmp, _ in staged[done:]:
            Path(tmp).unlink(missing_ok=True)


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _first_lines(path: Path) -> list[str]:
    """The first lines of the regular file at *path* (not through a symlink), or none."""
    try:
        if not stat.S_ISREG(path.lstat().st_mode):
            return []
        with path.open("rb") as handle:
            head = handle.read(1024)
    except OSError:
        return []
    return head.decode("utf-8", errors="replace").splitlines()[:2]


def _candidates(plan: _Plan) -> Iterator[Path]:
    """The files where a module or page generated from the schema could be: Python files
    under the out-root, Markdown pages beside the docs page."""
    for top, dirs, names in os.walk(plan.out_root):
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".")
            and d not in _NOT_SEARCHED
            and not os.path.exists(os.path.join(top, d, "pyvenv.cfg"))
        )
        yield from (Path(top, name) for name in sorted(names) if name.endswith(".py"))
    if plan.docs is not None and plan.docs.parent.is_dir():
        yield from sorted(plan.docs.parent.glob("*.md"))


def stale_files(plan: _Plan, files: Mapping[Path, str]) -> list[Path]:
    """Files generated from this schema (their header says so) that it no longer generates:
    a consumer's module renamed, a docs page moved. A file without the header is never one."""
    mark = generated_from(plan.shown)
    wanted = {os.path.abspath(path) for path in files}
    stale = []
    for path in _candidates(plan):
        if os.path.abspath(path) in wanted:
            continue
        header = [f"# {mark}"] if path.suffix == ".py" else ["<!--", mark]
        if _first_lines(path)[: len(header)] == header:
            stale.append(path)
    return stale


def _stale(files: dict[Path, str], read: Mapping[Path, str]) -> list[str]:
    """The diff of each file that differs from what is on disk (or in *read*, as read)."""
    diffs = []
    for path, content in sorted(files.items()):
        try:
            current = read[path] if path in read else path.read_text(encoding="utf-8")
        except FileNotFoundError:
            diffs.append(f"{path.as_posix()}: missing\n")
            continue
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
            )
    return diffs


def _is_generated(path: Path, marker: str) -> bool:
    """Whether *path* is absent, or a file this generator wrote (holding *marker*)."""
    if not path.exists() and not path.is_symlink():
        return True
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            text = handle.read(1 << 20)
    except OSError:
        return False
    head = "\n".join(text.splitlines()[:3])
    return GENERATED_MARK in head and marker in text


def _where(schema: Schema, cls: GroupClass) -> str:
    return f"{schema.source}:{cls.module_line}" if cls.module_line else schema.source


def _inside(path: str, root: Path) -> bool:
    return Path(os.path.abspath(path or ".")).is_relative_to(root)


def installed_elsewhere(top: str, out_root: Path) -> str | None:
    """Where the top-level module *top* is installed other than in *out_root*, or None.
    The consumer's own package (a regular package in *out_root*, or found there through an
    editable install) shadows nothing; nor does a namespace package, which takes portions
    from every directory (*top* names one only when the module has more parts)."""
    if (out_root / top / "__init__.py").is_file():
        return None
    root = Path(os.path.abspath(out_root))
    search = [entry for entry in sys.path if not _inside(entry, root)]
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            # The path finder over sys.path less the out-root (a file generated there
            # before is not an installed module); other finders (editable installs) as set up.
            if finder is importlib.machinery.PathFinder:
                spec = finder.find_spec(top, search)
            else:
                spec = find(top, None)
        except Exception:  # a third-party finder's failure says nothing about *top*
            continue
        if spec is None:
            continue
        places = list(spec.submodule_search_locations or ()) or [spec.origin or ""]
        if all(place and _inside(place, root) for place in places):
            continue
        if spec.origin in (None, "namespace"):
            return "namespace"
        return spec.origin or places[0]
    return None


def _distribution(top: str) -> str:
    names = importlib.metadata.packages_distributions().get(top, [])
    return f" by the distribution {names[0]!r}" if names else ""


def _shadows(schema: Schema, out_root: Path) -> list[str]:
    """Consumer modules whose top-level name an installed module has already (the
    standard library's names are the validator's: rules.check_module)."""
    problems = []
    for cls in schema.consumers:
        parts = cls.module.split(".")
        if cls.module.startswith(f"{RUNTIME_PACKAGE}."):
            continue  # nemo.lens's own consumers (rules.check_module): shipped with it
        found = installed_elsewhere(parts[0], out_root)
        if found is None or (found == "namespace" and len(parts) > 1):
            continue
        where = f"at {found}" if found != "namespace" else "as a namespace package"
        problems.append(
            f"{_where(schema, cls)}: module {cls.module!r} would shadow {parts[0]!r}, installed "
            f"{where}{_distribution(parts[0])} (whichever comes first on sys.path hides the "
            f"other); put it in your own package, e.g. {_own_package(parts)!r}"
        )
    return problems


def _refusals(schema: Schema, plan: _Plan, docs_region: bool) -> list[str]:
    """Why a file must not be written: it exists and was not generated for the same class
    (a hand-written module, a package, another consumer's module) or page."""
    from nemo.lens.codegen.render import module_path

    problems = []
    for cls in (() if schema.extends_base else (schema.base,)) + schema.consumers:
        path = module_path(plan.out_root, cls.module)
        where = _where(schema, cls)
        package = path.with_suffix("")
        if package.is_dir():
            problems.append(
                f"{where}: module {cls.module!r} is a package ({package.as_posix()}/): "
                "name a new module for the generated class"
            )
        elif not _is_generated(path, f"class {cls.class_name}"):
            problems.append(
                f"{where}: module {cls.module!r} would replace {path.as_posix()}, which the "
                f"generator did not write for {cls.class_name}: name a new module "
                "(a generated module is never written over a hand-written one)"
            )
    if plan.docs is not None and not docs_region and not _is_generated(plan.docs, "# Span groups"):
        problems.append(
            f"--docs {plan.docs.as_posix()} names a file the generator did not write; "
            f"choose a new file, or mark where the generated part goes with the lines {START} "
            f"and {END}"
        )
    return problems


def _print_warnings(warnings: Sequence[Problem]) -> None:
    # Standard error, and never the exit status: a warning is valid input that has a
    # better form, so generate, --check and --validate all go on.
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)


def _nothing_written(*lines: str, status: int = EXIT_USAGE) -> int:
    for line in (*lines, "nothing was written."):
        print(line, file=sys.stderr)
    return status


def _missing_extra(prog: str, needs: str, exc: ImportError) -> int:
    hint = f"needs the code generator's extra ({needs}): pip install 'nemo-lens[codegen]'"
    print(f"{prog}: error: {prog} {hint} ({exc})", file=sys.stderr)
    return EXIT_USAGE


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace | int:
    try:
        return parser.parse_args(argv)
    except SystemExit as exit_:  # usage errors (2), --help (0)
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE


def _unwritable_docs(docs: Path) -> str | None:
    """Why the docs page cannot be written, when it names something other than a file."""
    try:
        mode = docs.stat().st_mode
    except OSError:
        return None  # absent (or unreachable: the write will say why)
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None  # a directory is refused as a file the generator did not write
    kind = (
        "a character device"
        if stat.S_ISCHR(mode)
        else "a pipe"
        if stat.S_ISFIFO(mode)
        else "not a regular file"
    )
    return (
        f"cannot write {docs.as_posix()}: it is {kind}; name a file for the docs table "
        "(it is replaced in one rename, with the modules)"
    )


def _io_error(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return EXIT_IO


def _guarded(
    prog: str, run: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None
) -> int:
    """*run* (*argv*), with standard output that cannot be written ending it as the trace
    commands end: quietly when the reader went away (`| head`, exit 141), else in a one-line
    error (exit 1). ``nemo-lens`` guards its streams itself; this serves ``python -m``."""
    try:
        status = run(argv)
        sys.stdout.flush()
        return status
    except OSError as exc:
        # Every file the generator writes is reported where it is written, naming it.
        if not isinstance(exc, BrokenPipeError):
            where = exc.filename or "standard output"
            print(f"{prog}: error: cannot write {where}: {_reason(exc)}", file=sys.stderr)
        # Point stdout at devnull so the interpreter's final flush does not fail again.
        with contextlib.suppress(OSError):  # io.UnsupportedOperation: stdout is no file
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return EXIT_CLOSED_PIPE if isinstance(exc, BrokenPipeError) else EXIT_IO


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``nemo-lens generate`` with *argv*; return the exit status: 0 done (or up to
    date), 1 a generated file is stale (or the schema breaks its ``--baseline``, or an
    output cannot be written), 2 the schema is invalid, a file must not be replaced, or the
    command line is wrong."""
    return _guarded(PROG, _generate, argv)


def _generate(argv: Sequence[str] | None) -> int:
    args = _parse(parser(), argv)
    if isinstance(args, int):
        return args
    if args.print_json_schema:
        sys.stdout.write(json_schema_text())
        return EXIT_OK
    plan = _Plan(args)
    if plan.default and not plan.schema.exists():
        print(
            f"{PROG}: error: no --schema given, and there is no {DEFAULT_SCHEMA} here; "
            "name your schema: nemo-lens generate --schema PATH --out-root DIR",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        from nemo.lens.codegen.render import render_all
        from nemo.lens.codegen.validate import SchemaError, load_schema
    except ImportError as exc:
        return _missing_extra(PROG, "Jinja2, and tomli on Python 3.10", exc)

    try:
        schema = load_schema(plan.schema, plan.shown)
    except SchemaError as exc:
        _print_warnings(exc.warnings)
        return _nothing_written(f"error: {exc}")
    _print_warnings(schema.warnings)
    if args.baseline is not None:
        status = check_baseline(args.baseline, plan.schema, plan.shown)
        if status is not None:
            return _nothing_written(status=status)
    shadows = _shadows(schema, plan.out_root)
    if args.validate:
        if shadows:
            return _nothing_written(f"error: {_count(shadows)} in the schema:", *shadows)
        print(f"{plan.shown}: valid")
        return EXIT_OK
    unwritable = None if plan.docs is None else _unwritable_docs(plan.docs)
    if unwritable is not None:
        return _io_error(f"{unwritable}; nothing was written")
    region = None
    if plan.docs is not None:
        try:
            region = find_region(plan.docs, plan.docs.as_posix())
        except RegionError as exc:
            return _nothing_written(*(f"error: {line}" for line in exc.problems))
    files = render_all(
        schema, plan.out_root, plan.docs, command=plan.command, docs_region=region is not None
    )
    read: dict[Path, str] = {}
    if region is not None and plan.docs is not None:
        files[plan.docs] = region.with_body(files[plan.docs])
        read[plan.docs] = region.page
    if plan.default:
        # This repository's own schema names the JSON Schema beside it (its #:schema line).
        files[plan.schema.with_name(JSON_SCHEMA_FILE)] = json_schema_text()
    refusals = shadows + _refusals(schema, plan, docs_region=region is not None)
    if refusals:
        return _nothing_written(f"error: {_count(refusals)} in the schema:", *refusals)
    stale = stale_files(plan, files)
    if args.check:
        diffs = _stale(files, read)
        leftovers = [
            f"{path.as_posix()}: generated from {plan.shown}, which no longer generates it "
            f"(`{plan.command}` removes it)\n"
            for path in stale
        ]
        if diffs or leftovers:
            sys.stdout.write("".join(diffs + leftovers))
            found = [f"{len(diffs)} generated file(s) differ from {plan.shown}"] if diffs else []
            if leftovers:
                found.append(
                    f"{len(leftovers)} {'' if diffs else f'generated from {plan.shown} '}"
                    "no longer belong to it"
                )
            print(
                f"error: {' and '.join(found)}; run `{plan.command}` (generated files are "
                "never edited by hand)",
                file=sys.stderr,
            )
            return EXIT_STALE
        print(f"{len(files)} generated file(s) are up to date")
        return EXIT_OK
    try:
        _write_atomically(files)
    except _Unwritable as exc:
        return _io_error(str(exc))
    for path in sorted(files):
        print(f"wrote {path.as_posix()}")
    for path in stale:
        try:
            path.unlink()
        except OSError as exc:
            return _io_error(f"cannot remove the stale {path.as_posix()}: {_reason(exc)}")
        print(
            f"removed {path.as_posix()} (generated from {plan.shown}, which no longer generates it)"
        )
    return EXIT_OK


def _count(problems: Sequence[str]) -> str:
    return f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"


def diff_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=DIFF_PROG,
        description=(
            "Compare two span-group schemas and classify every change for the users of the "
            "old one: breaking (a group or preset removed, a rename without renamed_to, a "
            "group that left 'default' or another preset, a consumer's class or module "
            "renamed), warning (a group in a preset fires more often; a category or goodput "
            "bucket changed, so goodput figures move) or compatible (additions, "
            "deprecations). Each finding names the fix and the file:line of both sides."
        ),
        epilog=(
            "Example: git show v1.2.0:lens.toml > /tmp/old.toml && "
            f"{DIFF_PROG} /tmp/old.toml lens.toml. "
            "Exit status: 0 nothing breaks (warnings allowed), 1 something breaks, "
            "2 bad usage or an invalid schema. See docs/schema-compatibility.md."
        ),
    )
    parser.add_argument(
        "old", type=Path, metavar="OLD", help="the baseline schema (the last release's)"
    )
    parser.add_argument("new", type=Path, metavar="NEW", help="the schema as edited")
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text: for people and CI logs, summary last (default); json: one object with "
        "findings and a summary; github: workflow annotations (::error, ::warning)",
    )
    return parser


def _load_side(path: Path, shown: str, role: str) -> Side | None:
    """The side at *path*, or None after printing why it cannot be compared."""
    from nemo.lens.codegen.compat import Side
    from nemo.lens.codegen.validate import SchemaError

    try:
        return Side.load(path, shown)
    except SchemaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        print(
            f"{DIFF_PROG}: error: {role} ({shown}) cannot be compared: fix the problems above "
            "(`nemo-lens generate --validate --schema PATH` checks one alone), then compare "
            "again",
            file=sys.stderr,
        )
        return None


def diff_schema(argv: Sequence[str] | None = None) -> int:
    """Run ``nemo-lens diff-schema OLD NEW`` with *argv*; return the exit status: 0 nothing
    breaks (warnings allowed), 1 something breaks (or the report cannot be written), 2 bad
    usage or an invalid schema."""
    return _guarded(DIFF_PROG, _diff_schema, argv)


def _diff_schema(argv: Sequence[str] | None) -> int:
    args = _parse(diff_parser(), argv)
    if isinstance(args, int):
        return args
    try:
        from nemo.lens.codegen.compat import breaks, compare, report
    except ImportError as exc:
        return _missing_extra(DIFF_PROG, "tomli on Python 3.10", exc)
    old_shown, new_shown = args.old.as_posix(), args.new.as_posix()
    old = _load_side(args.old, old_shown, "OLD")
    new = _load_side(args.new, new_shown, "NEW")
    if old is None or new is None:
        return EXIT_USAGE
    findings = compare(old, new)
    sys.stdout.write(report(findings, args.format, old_shown, new_shown))
    return EXIT_BREAKING if breaks(findings) else EXIT_OK


def check_baseline(baseline: Path, path: Path, shown: str) -> int | None:
    """``generate --baseline``: compare the schema at *path* (named *shown*) with *baseline*,
    printing its breaking changes and warnings on stderr. The exit status when generation
    must stop (1: something breaks, 2: the baseline is not valid), else None."""
    from nemo.lens.codegen.compat import COMPATIBLE, breaks, compare, report, summary

    old_shown = baseline.as_posix()
    old = _load_side(baseline, old_shown, "the baseline")
    new = _load_side(path, shown, "the schema")
    if old is None or new is None:
        return EXIT_USAGE
    findings = compare(old, new)
    shown_findings = [f for f in findings if f.severity != COMPATIBLE]
    for line in report(shown_findings, "text", old_shown, shown).splitlines()[:-1]:
        print(line, file=sys.stderr)
    print(summary(findings, old_shown, shown), file=sys.stderr)
    if breaks(findings):
        print(
            f"error: the schema breaks users of {old_shown}: keep what they use (each fix "
            "above says how), or compare against another baseline",
            file=sys.stderr,
        )
        return EXIT_BREAKING
    return None
