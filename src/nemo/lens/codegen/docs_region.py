"""The marked region of a hand-written page that ``nemo-lens generate --docs`` keeps current:
the lines between the ``nemo-lens:span-groups`` start and end markers (never markers inside a
fenced code block); the rest of the page is kept byte for byte."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["END", "START", "Region", "RegionError", "find_region"]

START = "<!-- nemo-lens:span-groups:start -->"
END = "<!-- nemo-lens:span-groups:end -->"
MAX_PAGE_BYTES = 8 << 20
"""A documentation page is text a person reads; anything larger is a mistake."""

_LINE = re.compile(r"([^\r\n]*)(\r\n|\n|\r|\Z)")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_FENCE_CLOSE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")
_ONE_REGION = "a page holds one generated region: remove one of them"


class RegionError(Exception):
    """The page's markers do not mark one region; :attr:`problems` says why and what to do."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


@dataclass(frozen=True)
class Region:
    """The *page* as read (line endings untranslated); the generated lines go from *start*,
    after the start marker's line, to *end*, the end marker's line, ending in *newline* as
    the start marker's line does."""

    page: str
    start: int
    end: int
    newline: str

    def with_body(self, body: str) -> str:
        """The page with *body* (lines ending in ``\\n``) between the markers, and a blank
        line before the end marker, so that the table it ends with ends there in every reader."""
        body += "\n"
        if self.newline != "\n":
            body = body.replace("\n", self.newline)
        return self.page[: self.start] + body + self.page[self.end :]


def _read(path: Path, shown: str) -> str:
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_PAGE_BYTES + 1)
    except OSError as exc:
        raise RegionError([f"--docs {shown}: cannot read it: {exc.strerror or exc}"]) from exc
    if len(data) > MAX_PAGE_BYTES:
        raise RegionError(
            [f"--docs {shown}: larger than {MAX_PAGE_BYTES >> 20} MiB; name a documentation page"]
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RegionError(
            [f"--docs {shown}: not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8"]
        ) from exc


def find_region(path: Path, shown: str) -> Region | None:
    """The marked region of the page at *path*, or None when it has no markers (or is not a
    regular file: then it is a whole generated file). *shown* is how messages name the page.
    Raises :class:`RegionError` when the markers do not mark exactly one region."""
    if path.is_symlink() or not path.is_file():
        return None
    page = _read(path, shown)
    starts: list[tuple[int, int, str]] = []  # (line, offset after the line, its ending)
    ends: list[tuple[int, int]] = []  # (line, offset of the line)
    fenced: list[int] = []
    fence = ""
    # The last match is an empty line at the very end, which changes nothing.
    for number, line in enumerate(_LINE.finditer(page), start=1):
        content, newline = line.groups()
        marker = content.strip()
        if fence:
            close = _FENCE_CLOSE.fullmatch(content)
            if close and close.group(1)[0] == fence[0] and len(close.group(1)) >= len(fence):
                fence = ""
            elif marker in (START, END):
                fenced.append(number)
            continue
        opening = _FENCE_OPEN.fullmatch(content)
        if opening and not (opening.group(1)[0] == "`" and "`" in opening.group(2)):
            fence = opening.group(1)
        elif marker == START:
            starts.append((number, line.end(), newline))
        elif marker == END:
            ends.append((number, line.start()))
    if not starts and not ends:
        if fenced:
            raise RegionError(
                [
                    f"{shown}:{fenced[0]}: this nemo-lens:span-groups marker is inside a fenced "
                    "code block, where it is example text, and the page has no marker outside "
                    "one; move the markers out of the code block to mark the generated region"
                ]
            )
        return None
    problems = _problems(shown, {START: [s[0] for s in starts], END: [e[0] for e in ends]}, fenced)
    if problems:
        raise RegionError(problems)
    _, start, newline = starts[0]
    _, end = ends[0]
    return Region(page, start, end, newline or "\n")


def _problems(shown: str, lines: dict[str, list[int]], fenced: list[int]) -> list[str]:
    """What is wrong with the markers on *lines* (of each marker), in the page's order."""
    found: list[tuple[int, str]] = []
    for marker, numbers in lines.items():
        for line in numbers[1:]:
            first = numbers[0]
            found.append((line, f"a second {marker} (the first is on line {first}); {_ONE_REGION}"))
    in_fence = ""
    if fenced:
        in_fence = (
            f" (the marker on line {fenced[0]} is inside a fenced code block, where it is text)"
        )
    for here, there, side, edge in (
        (START, END, "after", "ends"),
        (END, START, "before", "begins"),
    ):
        if lines[here] and not lines[there]:
            found.append(
                (
                    lines[here][0],
                    f"{here} has no {there} {side} it; add that line where the generated region "
                    f"{edge}{in_fence}",
                )
            )
    starts, ends = lines[START], lines[END]
    if starts and ends and ends[0] < starts[0]:
        message = f"{END} comes before {START} (line {starts[0]}); the start marker goes first"
        found.append((ends[0], message))
    return [f"{shown}:{line}: {message}" for line, message in sorted(found)]
