"""Python literals, docstrings and Markdown cells made from schema text: held as data, never
as code (quoted as ruff format quotes it, wrapped, escaped); output depends on the text alone."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable

from nemo.lens.codegen.model import Schema

LINE = 100
_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def pystr(text: str) -> str:
    """A Python string literal of *text*, quoted as ruff format quotes it (single quotes
    when the text holds more double quotes); non-ASCII stays readable."""
    quote = "'" if text.count('"') > text.count("'") else '"'
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif char == quote:
            out.append("\\" + char)
        elif not char.isprintable():
            out.append(char.encode("unicode_escape").decode("ascii"))
        else:
            out.append(char)
    return quote + "".join(out) + quote


def _fit(
    text: str, width: int, limit: int, render: Callable[[str], str], literal: bool
) -> list[str]:
    """Wrap *text* at *width* so that every rendered line is at most *limit* characters
    (escapes make a rendered line longer than its text: wrap narrower until it fits). The
    lines of a *literal* join up again: they keep every space and never split a word."""
    while True:
        chunks = textwrap.wrap(
            text, width=width, drop_whitespace=not literal, break_on_hyphens=not literal
        )
        lines = [render(chunk) for chunk in chunks]
        longest = max((len(line) for line in lines), default=0)
        if width <= 20 or longest <= limit:
            return lines
        width -= longest - limit


def pystr_block(text: str, indent: int) -> str:
    """A string literal at *indent*; too long for the line, parenthesized parts."""
    literal = pystr(text)
    if indent + len(literal) + 1 <= LINE:
        return literal
    return "(\n" + "\n".join(string_lines(text, indent + 4)) + "\n" + " " * indent + ")"


def _inert(line: str) -> str:
    """*line* as docstring text that cannot end the string or start an escape sequence."""
    return line.replace("\\", "\\\\").replace('"', '\\"')


def docstring(text: str, indent: int) -> str:
    """A triple-quoted docstring wrapped to the line length; its text is always inert."""
    pad = " " * indent
    lines = _fit(text, LINE - indent - 6, LINE - indent - 6, _inert, literal=False) or [""]
    if len(lines) == 1:
        return f'{pad}"""{lines[0]}"""'
    body = "\n".join(pad + line for line in lines[1:])
    return f'{pad}"""{lines[0]}\n{body}\n{pad}"""'


def decorator(name: str, text: str, indent: int) -> str:
    """`@name("text")` at *indent*, the text split into implicitly joined literals if too long."""
    pad = " " * indent
    one_line = f"{pad}@{name}({pystr(text)})"
    if len(one_line) <= LINE:
        return one_line
    lines = string_lines(text, indent + 4)
    return f"{pad}@{name}(\n" + "\n".join(lines) + f"\n{pad})"


def string_lines(text: str, indent: int) -> tuple[str, ...]:
    """*text* as string literals, one per line at *indent*, that together fit the line length."""
    pad = " " * indent
    if indent + len(pystr(text)) + 1 <= LINE:
        return (pad + pystr(text),)
    chunks = _fit(text, LINE - indent - 4, LINE - indent - 2, pystr, literal=True)
    return tuple(pad + chunk for chunk in chunks)


def one_line(text: str) -> str:
    """*text* safe inside a one-line comment: no line breaks, no control characters."""
    return json.dumps(text, ensure_ascii=False)[1:-1].replace("-->", "--\\>")


def generated_from(source: str) -> str:
    """The first line of a generated file's header (after its comment mark): how the
    generator knows its own files, stale ones too."""
    return f"DO NOT EDIT: generated from {one_line(source)} by nemo-lens generate."


def header(schema: Schema, command: str, comment: str = "#") -> str:
    lines = [
        generated_from(schema.source),
        f"Edit the schema, then run `{one_line(command)}`.",
        f"schema-sha256: {schema.digest}",
    ]
    if comment == "#":
        return "\n".join(f"# {line}" for line in lines)
    return "<!--\n" + "\n".join(lines) + "\n-->"


def region_note(schema: Schema, command: str) -> str:
    """The invisible first line of a region in a page the author keeps (a page with no header)."""
    return (
        f"<!-- Generated from {one_line(schema.source)} by nemo-lens generate, up to the end "
        f"marker: edit the schema, not this region, then run `{one_line(command)}`. -->"
    )


def ruff_sorted(names: set[str]) -> tuple[str, ...]:
    """*names* in the order ruff keeps an ``__all__``: CONSTANTS, then Classes, then the rest."""

    def order(name: str) -> tuple[int, str]:
        kind = 0 if name.isupper() else 1 if name[0].isupper() else 2
        return (kind, name)

    return tuple(sorted(names, key=order))


def markdown_text(text: str) -> str:
    """Schema text as inert Markdown table text: no cell breaks, no HTML."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
