"""Run real mypy and pyright over snippets, and read what each one expects.

A snippet is a small module as a user would write it. A line that must be an
error says so in a comment, with the error code each checker must report there::

    managed_span("stpe", "x")  # expect: mypy=arg-type pyright=reportArgumentType

A comment alone on its line applies to the next line, for lines that would get
too long. Every other line must be clean. Both checkers run once per batch of snippets
(type-checker start-up dominates), and each snippet is then judged on its own.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "Findings",
    "Messages",
    "Results",
    "Snippet",
    "assert_as_expected",
    "check_snippets",
    "expected",
    "make_checkable_copy",
]

_EXPECT = re.compile(r"#\s*expect:\s*(?P<spec>.*)$")
_MYPY_LINE = re.compile(
    r"^(?P<file>[^:]+\.py):(?P<line>\d+): error: (?P<message>.*?)\s+\[(?P<code>[a-z-]+)\]$"
)

Findings = dict[str, set[tuple[int, str]]]
"""Snippet file name -> {(line, error code)}."""

Messages = dict[str, list[str]]
"""Snippet file name -> the error messages, as the checker printed them."""


@dataclass(frozen=True)
class Snippet:
    """A named snippet; ``source`` is dedented before it is written."""

    name: str
    source: str

    @property
    def filename(self) -> str:
        return f"{self.name}.py"

    @property
    def text(self) -> str:
        return textwrap.dedent(self.source).lstrip("\n")


def write_snippets(directory: Path, snippets: Sequence[Snippet]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for snippet in snippets:
        (directory / snippet.filename).write_text(snippet.text, encoding="utf-8")


def expected(snippet: Snippet, checker: str) -> set[tuple[int, str]]:
    """The (line, code) pairs the snippet's ``# expect:`` comments ask of ``checker``."""
    wanted: set[tuple[int, str]] = set()
    for number, line in enumerate(snippet.text.splitlines(), start=1):
        match = _EXPECT.search(line)
        if match is None:
            continue
        target = number + 1 if line.lstrip().startswith("#") else number
        for item in match["spec"].split():
            tool, _, codes = item.partition("=")
            if tool == checker:
                wanted.update((target, code) for code in codes.split(","))
    return wanted


def make_checkable_copy(src: Path) -> None:
    """Let a copy of nemo.lens under *src* win over the installed one for type checkers.

    The editable install puts this checkout's ``src`` on the path (so mypy and
    pyright see ``nemo.lens`` from any directory, as users need). mypy takes an
    installed PEP 561 package over a ``mypy_path`` entry whose parent, the
    ``nemo`` namespace, has no ``__init__.py``; in the copy, ``nemo`` becomes a
    regular package, which mypy then finds first. Imports at run time, with the
    copy first on ``PYTHONPATH``, are unchanged.
    """
    (src / "nemo" / "__init__.py").write_text(
        "# Test copy only: a regular package, so type checkers prefer this copy.\n",
        encoding="utf-8",
    )


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False)


def run_mypy(
    root: Path, snippets: Sequence[Snippet], paths: Sequence[Path]
) -> tuple[Findings, Messages]:
    """``mypy --strict --enable-error-code deprecated`` over the snippets in ``root``.

    ``paths`` are where the imported packages live (the ``src`` directories).
    """
    config = root / "mypy.ini"
    config.write_text(
        "[mypy]\n"
        "strict = True\n"
        "enable_error_code = deprecated\n"
        "python_version = 3.10\n"
        "explicit_package_bases = True\n"
        f"mypy_path = {':'.join(str(p) for p in paths)}\n"
        f"cache_dir = {root / '.mypy_cache'}\n"
        # The copied runtime imports torch lazily, an optional extra.
        "[mypy-torch.*,torch]\n"
        "ignore_missing_imports = True\n",
        encoding="utf-8",
    )
    result = _run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(config),
            "--no-error-summary",
            "--hide-error-context",
            *(s.filename for s in snippets),
        ],
        cwd=root,
    )
    if result.returncode not in (0, 1):
        raise RuntimeError(f"mypy did not run:\n{result.stdout}{result.stderr}")
    findings: Findings = {s.filename: set() for s in snippets}
    messages: Messages = {s.filename: [] for s in snippets}
    for line in result.stdout.splitlines():
        match = _MYPY_LINE.match(line)
        if match is not None:
            findings.setdefault(match["file"], set()).add((int(match["line"]), match["code"]))
            messages.setdefault(match["file"], []).append(match["message"])
        elif ": error:" in line:
            raise RuntimeError(f"unparsed mypy error: {line}")
    return findings, messages


def run_pyright(
    root: Path, snippets: Sequence[Snippet], paths: Sequence[Path]
) -> tuple[Findings, Messages]:
    """pyright (standard mode, deprecations as errors) over the snippets in ``root``."""
    (root / "pyrightconfig.json").write_text(
        json.dumps(
            {
                "include": [s.filename for s in snippets],
                "extraPaths": [str(p) for p in paths],
                "pythonVersion": "3.10",
                "typeCheckingMode": "standard",
                "reportDeprecated": "error",
            }
        ),
        encoding="utf-8",
    )
    result = _run(
        [
            sys.executable,
            "-m",
            "pyright",
            "--outputjson",
            "--pythonpath",
            sys.executable,
            "--project",
            str(root),
        ],
        cwd=root,
    )
    try:
        report = json.loads(result.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(f"pyright did not run:\n{result.stdout}{result.stderr}") from None
    findings: Findings = {s.filename: set() for s in snippets}
    messages: Messages = {s.filename: [] for s in snippets}
    for diagnostic in report["generalDiagnostics"]:
        if diagnostic["severity"] != "error":
            continue
        name = Path(diagnostic["file"]).name
        line = diagnostic["range"]["start"]["line"] + 1
        findings.setdefault(name, set()).add((line, diagnostic.get("rule", "")))
        messages.setdefault(name, []).append(diagnostic["message"])
    return findings, messages


@dataclass(frozen=True)
class Results:
    """Both checkers' findings for one batch of snippets."""

    mypy: Findings
    pyright: Findings
    mypy_messages: Messages
    pyright_messages: Messages

    def of(self, checker: str) -> Findings:
        found: Findings = getattr(self, checker)
        return found

    def messages(self, checker: str, snippet: Snippet) -> list[str]:
        found: Messages = getattr(self, f"{checker}_messages")
        return found.get(snippet.filename, [])


def check_snippets(root: Path, snippets: Sequence[Snippet], paths: Sequence[Path]) -> Results:
    """Write ``snippets`` into ``root`` and run both checkers over them once."""
    write_snippets(root, snippets)
    mypy, mypy_messages = run_mypy(root, snippets, paths)
    pyright, pyright_messages = run_pyright(root, snippets, paths)
    return Results(mypy, pyright, mypy_messages, pyright_messages)


def assert_as_expected(results: Results, snippet: Snippet, checker: str) -> None:
    """``checker`` found exactly the errors the snippet's ``# expect:`` comments name."""
    found = results.of(checker).get(snippet.filename, set())
    want = expected(snippet, checker)
    assert found == want, (
        f"{checker} on {snippet.filename}: expected [{_describe(want)}], got [{_describe(found)}]"
        f"\n{chr(10).join(results.messages(checker, snippet))}\n\n{snippet.text}"
    )


def _describe(found: set[tuple[int, str]]) -> str:
    return ", ".join(f"line {line}: {code}" for line, code in sorted(found))
