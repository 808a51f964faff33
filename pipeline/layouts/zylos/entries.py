"""The zylos entry grammar, one definition for the reader and the writer.

A reference file (`reference/*.md`) is a run of blocks: a `### Title` heading opens an entry, which
runs until the next heading of level 1-3 outside fenced code (fences paired as CommonMark pairs them,
`text.lines.fenced_blocks`); `## Section` headings set the section.
A fence no later fence line closes (`unclosed_fence`) leaves the file's blocks unknown: read to the end
of the file it would hide every heading after it, so one entry would take the ones written after it.
An entry's lines are `- **Field:** value` fields (continued by indented lines) and notes. The
reader parses entries with `parse_reference`; the writer cuts blocks at the same `boundaries` and
writes new fields with `field_line`, so what it writes is what the next read finds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...text.lines import fenced_blocks, split_lines

# rotate-session.js: `^# Session Log:\s*(\d{4}-\d{2}-\d{2})\s*$`, anywhere in the file.
SESSION_HEADER = re.compile(r"^# Session Log:\s*(\d{4}-\d{2}-\d{2})\s*$", re.MULTILINE)
# ATX heading; a closing run of `#` counts only after a space, so "### Use C#" keeps its `#`.
# The title takes a run of blanks only when more than a closing run follows it (possessive, so a long
# run of blanks is scanned a bounded number of times: a lazy `(.*?)` here was quadratic in it).
HEADING = re.compile(r"^(#{1,6})[ \t]+((?:[^ \t\n]|[ \t]++(?!#*+[ \t]*+$))*+)(?:[ \t]+#+)?[ \t]*$")
# `- **Field:** value`, and the `- **Field**: value` variant hand edits produce.
FIELD = re.compile(r"^[ \t]*[-*+][ \t]+\*\*(?P<name>[^*]+?)\*\*[ \t]*:?[ \t]*(?P<value>.*)$")


@dataclass
class Entry:
    title: str
    section: str | None
    line_start: int  # 1-based line of the `### Title` heading
    line_end: int  # 1-based last non-blank line of the entry
    fields: dict[str, str] = field(default_factory=dict)  # lowercased field name -> value
    notes: list[str] = field(default_factory=list)  # lines that are not fields
    text: str = ""  # the block without its heading, as written


@dataclass
class ReferenceText:
    entries: list[Entry]
    # 1-based lines of the headings (level 1-3, outside fenced code) that end the block before them
    boundaries: list[int]
    # 1-based line of a fence line no later fence line closes, else None: the entries and boundaries
    # after it are not to be trusted (the reader reads no entry of such a file)
    unclosed_fence: int | None = None


def _strip_md(value: str) -> str:
    return value.strip().strip("*_`").strip()


def parse_reference(text: str) -> ReferenceText:
    """The `### Title` blocks of a reference file, with their fields, section and line span, and
    the lines where blocks end.

    A block runs until the next heading of level 1-3 (or the end of the file); `##` headings set the
    section (`## Active`, `## Completed`, ...). Headings inside fenced code blocks do not count. A
    line that follows a field and is neither a field nor blank continues that field's value.
    """
    lines = split_lines(text)
    entries: list[Entry] = []
    section: str | None = None
    current: Entry | None = None
    body_lines: list[str] = []
    # Field values as parts, joined once at the end of the entry: growing one string per line was
    # quadratic in a field with many continuation lines.
    parts: dict[str, list[str]] = {}
    last_field: str | None = None
    fences = fenced_blocks(lines)
    boundaries: list[int] = []

    def close(end_index: int) -> None:
        nonlocal current
        if current is None:
            return
        current.fields = {k: " ".join(p for p in v if p) for k, v in parts.items()}
        last = end_index
        while last > current.line_start - 1 and not lines[last - 1].strip():
            last -= 1
        current.line_end = max(last, current.line_start)
        block = body_lines[: current.line_end - current.line_start]
        current.text = "\n".join(block).strip("\n")
        entries.append(current)
        current = None

    for index, line in enumerate(lines, start=1):
        in_fence = fences.code[index - 1]
        heading = None if in_fence else HEADING.match(line)
        if heading and len(heading.group(1)) <= 3:
            boundaries.append(index)
            close(index - 1)
            level, title = len(heading.group(1)), heading.group(2).strip()
            if level == 3:
                current = Entry(title=title, section=section, line_start=index, line_end=index)
                body_lines = []
                parts = {}
                last_field = None
            elif level == 2:
                section = title
            else:
                section = None
            continue
        if current is None:
            continue
        body_lines.append(line)
        match = None if in_fence else FIELD.match(line)
        if match:
            name = _strip_md(match.group("name")).rstrip(":").strip()
            key = name.casefold()
            value = match.group("value").strip()
            # A field written twice reads as one value, in the order written.
            parts.setdefault(key, []).append(value)
            last_field = key
        elif line.strip():
            if last_field is not None and line[:1] in (" ", "\t"):
                parts[last_field].append(line.strip())
            else:
                current.notes.append(line.strip())
                last_field = None
        else:
            last_field = None
    close(len(lines))
    return ReferenceText(entries, boundaries, fences.unclosed[0] + 1 if fences.unclosed else None)


def parse_entries(text: str) -> list[Entry]:
    return parse_reference(text).entries


def field_line(name: str, value: str) -> str:
    """A field as the writer adds it (`- **Archived:** ...`); FIELD reads it back as `name`."""
    return f"- **{name}:** {value}"


def session_header(day: object) -> str:
    """The first line of a session log; SESSION_HEADER reads its date back."""
    return f"# Session Log: {day}"
