"""Printing compatibility findings: text for people and CI logs, JSON for programs, and
GitHub workflow annotations.

Every format is deterministic (the findings come sorted; nothing depends on time or the
machine) and ends with, or holds, the same summary.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from nemo.lens.codegen.compat import breaks, counts
from nemo.lens.codegen.compat_model import BREAKING, COMPATIBLE, WARNING, Finding, Location

__all__ = ["JSON_VERSION", "render", "summary"]

JSON_VERSION = 1
"""The version of the JSON object's shape: it changes only when a key changes meaning."""
_ANNOTATION = {BREAKING: "error", WARNING: "warning"}


def summary(findings: Sequence[Finding], old: str, new: str) -> str:
    """`summary: 1 breaking, 2 warnings, 3 compatible (OLD -> NEW)`."""
    count = counts(findings)
    warnings = f"{count[WARNING]} warning{'' if count[WARNING] == 1 else 's'}"
    return (
        f"summary: {count[BREAKING]} breaking, {warnings}, {count[COMPATIBLE]} compatible "
        f"({old} -> {new})"
    )


def _side(location: Location | None) -> str:
    return f"{location} ({location.key})" if location else "absent"


def _text(findings: Sequence[Finding], old: str, new: str) -> str:
    lines = []
    for finding in findings:
        where = f"{finding.where}: " if finding.where else ""
        lines.append(f"{where}{finding.severity}: {finding.subject}: {finding.message}")
        if finding.severity != COMPATIBLE:
            lines.append(f"    old: {_side(finding.old)}")
            lines.append(f"    new: {_side(finding.new)}")
            lines.append(f"    fix: {finding.fix}")
    lines.append(summary(findings, old, new))
    return "\n".join(lines) + "\n"


def _json(findings: Sequence[Finding], old: str, new: str) -> str:
    document = {
        "version": JSON_VERSION,
        "old": old,
        "new": new,
        "findings": [
            {
                "kind": f.kind,
                "severity": f.severity,
                "subject": f.subject,
                "message": f.message,
                "fix": f.fix,
                "old": f.old.as_json() if f.old else None,
                "new": f.new.as_json() if f.new else None,
            }
            for f in findings
        ],
        "summary": {**counts(findings), "breaks": breaks(findings)},
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _escape_data(text: str) -> str:
    # What GitHub's workflow commands require of a message.
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    # A property value (file=, title=) also ends at ':' and ','.
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _github(findings: Sequence[Finding], old: str, new: str) -> str:
    lines = []
    for finding in findings:
        level = _ANNOTATION.get(finding.severity)
        if level is None:
            continue  # compatible: counted in the summary, nothing to review
        properties = []
        if finding.where:
            properties.append(f"file={_escape_property(finding.where.file)}")
            if finding.where.line:
                properties.append(f"line={finding.where.line}")
        properties.append(f"title={_escape_property(f'{finding.kind} ({finding.severity})')}")
        body = (
            f"{finding.subject}: {finding.message}\nfix: {finding.fix}\n"
            f"old: {_side(finding.old)}\nnew: {_side(finding.new)}"
        )
        lines.append(f"::{level} {','.join(properties)}::{_escape_data(body)}")
    lines.append(summary(findings, old, new))
    return "\n".join(lines) + "\n"


def render(findings: Sequence[Finding], fmt: str, old: str, new: str) -> str:
    """The findings in format *fmt* (``text``, ``json`` or ``github``), *old* and *new*
    naming the schemas as the user did."""
    return {"text": _text, "json": _json, "github": _github}[fmt](findings, old, new)
