"""The course catalog: lessons (MyST markdown), their quizzes, labs and exercises manifests.

A manifest that fails to load is reported as a Problem naming the file and the field;
the rest of the catalog still loads. The catalog is re-read when a file under the
content or labs folder changes (checked by modification times, cheaply).
"""

from __future__ import annotations

import functools
import re
import threading
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from .models import ExerciseMeta, GpuCellMeta, ItemMeta, LessonCell, LessonMeta, Problem, Quiz, TocEntry

GPU_TAG = "needs-gpu"
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.M)
_FENCE = re.compile(r"^```.*?^```", re.M | re.S)


@dataclass
class Lesson:
    meta: LessonMeta
    path: Path
    quiz: Quiz | None = None


@dataclass
class Item:
    kind: str
    meta: ItemMeta
    path: Path


@dataclass
class CatalogData:
    lessons: list[Lesson] = field(default_factory=list)
    labs: list[Item] = field(default_factory=list)
    exercises: list[Item] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def lesson(self, lesson_id: str) -> Lesson | None:
        return next((lesson for lesson in self.lessons if lesson.meta.id == lesson_id), None)

    def title_of(self, kind: str, item_id: str) -> str | None:
        if kind == "lesson":
            found = self.lesson(item_id)
            return found.meta.title if found else None
        items = self.labs if kind == "lab" else self.exercises
        return next((i.meta.title for i in items if i.meta.id == item_id), None)


def _problems(path: Path, err: ValidationError, prefix: str = "") -> list[Problem]:
    return [
        Problem(file=str(path), field=prefix + ".".join(str(p) for p in e["loc"]), message=e["msg"])
        for e in err.errors(include_url=False)
    ]


def read_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """The YAML front matter of a markdown file and the body after it."""
    if not text.startswith("---"):
        return {}, text
    end = text.find("\n---", 3)
    if end < 0:
        raise ValueError("front matter is not closed with ---")
    data = yaml.safe_load(text[3:end]) or {}
    if not isinstance(data, dict):
        raise ValueError("front matter is not a mapping")
    return data, text[end + 4 :].lstrip("\n")


def load_lesson(path: Path) -> tuple[Lesson | None, list[Problem]]:
    try:
        front, _ = read_front_matter(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as err:
        return None, [Problem(file=str(path), field="front matter", message=str(err))]
    try:
        meta = LessonMeta.model_validate(front.get("gpudojo"))
    except ValidationError as err:
        return None, _problems(path, err, "gpudojo.")
    lesson = Lesson(meta=meta, path=path)
    try:
        problems = lesson_cell_problems(path)
    except Exception as err:  # jupytext could not read the body: the lesson cannot be shown
        return None, [Problem(file=str(path), field="cells", message=f"cannot read the cells: {err}")]
    quiz_path = path.with_suffix(".quiz.toml")
    if quiz_path.exists():
        quiz, quiz_problems = load_toml(quiz_path, Quiz)
        lesson.quiz = quiz  # type: ignore[assignment]
        problems += quiz_problems
        if quiz is not None:
            problems += _quiz_problems(quiz_path, quiz)
    return lesson, problems


def _quiz_problems(path: Path, quiz: Quiz) -> list[Problem]:
    out = []
    for i, q in enumerate(quiz.questions):
        right = sum(c.correct for c in q.choices)
        if right == 0 or (q.kind == "single" and right != 1):
            out.append(Problem(file=str(path), field=f"questions.{i}.choices", message=f"{right} correct choices"))
    return out


def load_toml(path: Path, model: type[BaseModel]) -> tuple[BaseModel | None, list[Problem]]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        return None, [Problem(file=str(path), message=f"not valid TOML: {err}")]
    try:
        return model.model_validate(data), []
    except ValidationError as err:
        return None, _problems(path, err)


def load_catalog(content_root: Path, labs_root: Path) -> CatalogData:
    """Read every lesson, lab and exercise manifest; collect problems instead of failing."""
    data = CatalogData()
    for path in sorted((content_root / "lessons").glob("*.md")):
        if path.name.isupper() or path.stem.isupper():  # FORMAT.md, README.md: documentation
            continue
        lesson, problems = load_lesson(path)
        data.problems += problems
        if lesson is not None:
            data.lessons.append(lesson)
    for kind, pattern, target, model in (
        ("lab", labs_root.glob("*/lab.toml"), data.labs, ItemMeta),
        ("exercise", (content_root / "exercises").glob("*/exercise.toml"), data.exercises, ExerciseMeta),
    ):
        for path in sorted(pattern):
            meta, problems = load_toml(path, model)
            data.problems += problems
            if meta is not None:
                target.append(Item(kind=kind, meta=meta, path=path))  # type: ignore[arg-type]
    for items in (data.lessons, data.labs, data.exercises):
        seen: set[str] = set()
        for item in list(items):
            if item.meta.id in seen:
                data.problems.append(Problem(file=str(item.path), field="id", message="duplicate id"))
                items.remove(item)
            seen.add(item.meta.id)
        items.sort(key=lambda i: (i.meta.order, i.meta.id))
    return data


def lesson_cells(path: Path) -> list[LessonCell]:
    """The lesson's cells as jupytext reads them (markdown, and code with GPU tags)."""
    return list(_parsed_cells(path)[0])


def lesson_cell_problems(path: Path) -> list[Problem]:
    """What is wrong in the lesson's GPU cells' `gpudojo:` blocks (file and field named)."""
    return list(_parsed_cells(path)[1])


def _parsed_cells(path: Path) -> tuple[tuple[LessonCell, ...], tuple[Problem, ...]]:
    st = path.stat()
    return _lesson_cells(path, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=64)
def _lesson_cells(path: Path, mtime_ns: int, size: int) -> tuple[tuple[LessonCell, ...], tuple[Problem, ...]]:
    # Keyed by the file's version, so an edited lesson is parsed again and nothing stale is served.
    import jupytext

    nb = jupytext.read(path, fmt="md:myst")
    cells: list[LessonCell] = []
    problems: list[Problem] = []
    for i, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {})
        raw = meta.get("gpudojo")
        extra = raw if isinstance(raw, dict) else {}
        needs_gpu = cell.cell_type == "code" and GPU_TAG in (meta.get("tags") or [])
        gpu: GpuCellMeta | None = None
        if needs_gpu:
            try:
                gpu = GpuCellMeta.model_validate(raw if raw is not None else {})
            except ValidationError as err:
                first = next((line for line in cell.source.splitlines() if line.strip()), "")[:60]
                problems += [
                    p.model_copy(update={"message": f"{p.message} (GPU cell starting {first!r})"})
                    for p in _problems(path, err, f"cells.{i}.gpudojo.")
                ]
        fields = gpu.model_dump() if gpu is not None else _lenient(extra)
        cells.append(
            LessonCell(
                type="code" if cell.cell_type == "code" else "markdown",
                source=cell.source,
                needs_gpu=needs_gpu,
                **(fields if needs_gpu else {}),
            )
        )
    return tuple(cells), tuple(problems)


def _lenient(extra: dict[str, Any]) -> dict[str, Any]:
    """What can be shown of a GPU cell whose block did not validate (its problem is reported)."""
    text = {k: extra.get(k) if isinstance(extra.get(k), str) else None for k in ("expected_output", "expected_on")}
    gpus = extra.get("gpus")
    kind = extra.get("expected_kind")
    source = extra.get("expected_source")
    return {
        **text,
        "gpus": gpus if isinstance(gpus, int) and not isinstance(gpus, bool) and gpus >= 1 else 1,
        "expected_kind": kind if kind in ("written", "captured") else None,
        "expected_source": source if isinstance(source, str) else None,
    }


def table_of_contents(cells: list[LessonCell]) -> list[TocEntry]:
    toc = []
    for cell in cells:
        if cell.type != "markdown":
            continue
        text = _FENCE.sub("", cell.source)
        for hashes, title in _HEADING.findall(text):
            toc.append(TocEntry(level=len(hashes), title=title))
    return toc


class CourseCatalog:
    """The catalog of one content and one labs folder, re-read when files change."""

    # Authors' edits show up within this many seconds; requests in between skip the file scan.
    recheck_s = 1.0

    def __init__(self, content_root: Path, labs_root: Path) -> None:
        self.content_root = content_root
        self.labs_root = labs_root
        self._lock = threading.Lock()
        self._checked_at = -float("inf")
        self._stamp: tuple[tuple[str, float, int], ...] | None = None
        self._data = CatalogData()

    def _fingerprint(self) -> tuple[tuple[str, float, int], ...]:
        files = []
        for root in (self.content_root, self.labs_root):
            if root.is_dir():
                for p in root.rglob("*"):
                    if p.suffix in (".md", ".toml") and p.is_file():
                        st = p.stat()
                        files.append((str(p), st.st_mtime, st.st_size))
        return tuple(sorted(files))

    def data(self) -> CatalogData:
        """The current catalog (re-read only if a manifest changed)."""
        with self._lock:
            now = time.monotonic()
            if now - self._checked_at >= self.recheck_s:
                self._checked_at = now
                stamp = self._fingerprint()
                if stamp != self._stamp:
                    self._data = load_catalog(self.content_root, self.labs_root)
                    self._stamp = stamp
            return self._data
