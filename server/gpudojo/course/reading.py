"""The course reading list (content/resources/reading.md), read into ReadingEntry models.

The file's format is described at its top: `##` headings group the entries; each entry is a
`###` heading with its title, then exactly four bullets, `- **By**:`, `- **Link**:`,
`- **Read it for**:` and `- **Deepens**:` (lesson ids in backticks), a bullet's text going on
over the lines that follow it. An entry that breaks the format is reported as a Problem naming
the file, the entry and the bullet; the rest of the list still loads.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from .models import Problem, ReadingEntry, ReadingList

# Where the list lives, under the content folder.
READING_FILE = Path("resources") / "reading.md"
# The bullets of an entry, in their order, and the ReadingEntry field each one fills.
FIELDS: dict[str, str] = {"By": "by", "Link": "link", "Read it for": "read_for", "Deepens": "deepens"}

_BULLET = re.compile(r"^- \*\*(.+?)\*\*:\s*(.*)$")
_LESSON_ID = re.compile(r"`([a-z0-9-]+)`")


@dataclass
class ReadingBlock:
    """One `###` entry as written: its section, title, line and bullets (label -> text, in order,
    whitespace collapsed)."""

    section: str
    title: str
    line: int
    fields: dict[str, str] = field(default_factory=dict)
    repeated: list[str] = field(default_factory=list)


def reading_blocks(text: str) -> list[ReadingBlock]:
    """Every `###` entry of the reading list, in the file's order (fenced code is skipped)."""
    blocks: list[ReadingBlock] = []
    section = ""
    current: ReadingBlock | None = None
    label: str | None = None
    parts: dict[str, list[str]] = {}
    in_fence = False

    def close() -> None:
        if current is not None:
            current.fields = {k: " ".join(" ".join(v).split()) for k, v in parts.items()}

    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if line.startswith("## ") or line.startswith("### ") or line.startswith("# "):
            close()
            current, label, parts = None, None, {}
            if line.startswith("## "):
                section = line[3:].strip()
            elif line.startswith("### "):
                current = ReadingBlock(section=section, title=line[4:].strip(), line=number)
                blocks.append(current)
            continue
        if current is None:
            continue
        bullet = _BULLET.match(line)
        if bullet:
            label = bullet.group(1)
            if label in parts:
                current.repeated.append(label)
            parts[label] = [bullet.group(2)]
        elif label is not None:
            parts[label].append(line)
    close()
    return blocks


def lesson_ids(deepens: str) -> list[str]:
    """The lesson ids a `Deepens` bullet names (in backticks), in its order."""
    return _LESSON_ID.findall(deepens)


def parse_reading_list(text: str, file: str) -> ReadingList:
    """The reading list in ``text``; entries that break the format become problems in ``file``."""
    entries: list[ReadingEntry] = []
    problems: list[Problem] = []
    seen: set[str] = set()
    for block in reading_blocks(text):
        where = f"{block.title} (line {block.line})"
        if block.title in seen:
            problems.append(Problem(file=file, field=where, message="duplicate title: another entry has it"))
            continue
        seen.add(block.title)
        if tuple(block.fields) != tuple(FIELDS) or block.repeated:
            found = ", ".join(block.fields) or "no bullets"
            problems.append(
                Problem(
                    file=file,
                    field=where,
                    message=f"an entry has the bullets {', '.join(FIELDS)} in that order, once each; found {found}",
                )
            )
            continue
        values = {FIELDS[label]: value for label, value in block.fields.items()}
        try:
            entry = ReadingEntry(
                section=block.section,
                title=block.title,
                **{**values, "deepens": lesson_ids(values["deepens"])},
            )
        except ValidationError as err:
            names = {v: k for k, v in FIELDS.items()}
            for e in err.errors(include_url=False):
                name = str(e["loc"][0]) if e["loc"] else ""
                label = names.get(name, name)
                message = e["msg"]
                if name == "deepens":
                    message = "names no lesson id in backticks, e.g. `gpu-intro`"
                elif name == "section":
                    message = "comes before any `##` section heading"
                problems.append(Problem(file=file, field=f"{where}: {label}", message=message))
            continue
        entries.append(entry)
    return ReadingList(entries=entries, problems=problems)


def unknown_lessons(reading: ReadingList, known: Iterable[str], file: str) -> list[Problem]:
    """A problem for each lesson id an entry names that the course does not have."""
    known = set(known)
    return [
        Problem(file=file, field=f"{entry.title}: Deepens", message=f"no lesson {lesson!r} in the course")
        for entry in reading.entries
        for lesson in entry.deepens
        if lesson not in known
    ]


def load_reading_list(path: Path) -> ReadingList | None:
    """The reading list at ``path``, parsed again only when the file changes; None when absent."""
    try:
        st = path.stat()
    except OSError:
        return None
    return _load(path, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=4)
def _load(path: Path, mtime_ns: int, size: int) -> ReadingList:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        return ReadingList(entries=[], problems=[Problem(file=str(path), message=f"cannot be read: {err}")])
    return parse_reading_list(text, str(path))
