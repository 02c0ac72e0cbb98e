"""The course reading list (content/resources/reading.md): every entry is complete, names real
lessons, and every lesson's "Where next" points to the list. The file is read by the server's
own parser (gpudojo.course.reading), and served on GET course/reading."""

from __future__ import annotations

import json
import re

import pytest
from tornado.httpclient import HTTPClientError

from course_api import course_get
from gpudojo.course.catalog import load_catalog
from gpudojo.course.reading import FIELDS, lesson_ids, parse_reading_list, reading_blocks
from gpudojo.paths import material_root

CONTENT = material_root("content")
READING = CONTENT / "resources" / "reading.md"
LESSONS = load_catalog(CONTENT, material_root("labs")).lessons


def reading_entries() -> dict[str, dict[str, str]]:
    """Title -> {bullet: text} for every `###` entry of the reading list, as the server reads it."""
    return {block.title: block.fields for block in reading_blocks(READING.read_text(encoding="utf-8"))}


def test_every_reading_list_entry_says_who_where_what_for_and_which_lessons():
    entries = reading_entries()
    assert len(entries) >= 15
    lesson_ids_known = {lesson.meta.id for lesson in LESSONS}
    for title, fields in entries.items():
        assert tuple(fields) == tuple(FIELDS), (title, list(fields))
        assert re.fullmatch(r"https://\S+", fields["Link"]), (title, fields["Link"])
        named = lesson_ids(fields["Deepens"])
        assert named and set(named) <= lesson_ids_known, (title, named)


def test_the_reading_list_has_the_sources_the_course_leans_on():
    links = {fields["Link"] for fields in reading_entries().values()}
    for must in (
        "cuda-c-programming-guide",
        "nccl/user-guide",
        "1910.02054",  # ZeRO
        "2205.14135",  # FlashAttention
        "1909.08053",  # Megatron-LM
        "2205.05198",  # selective recomputation
        "ultrascale-playbook",
        "TP_tutorial",
        "torchtitan",
        "1811.06965",  # GPipe
        "3341301.3359646",  # PipeDream
        "notes/cuda.html",
        "torch_cuda_memory",
        "nsight-systems",
        "nsight-compute",
    ):
        assert any(must in link for link in links), must


def test_every_lesson_points_to_the_reading_list_from_where_next():
    covered = {lesson_id for fields in reading_entries().values() for lesson_id in lesson_ids(fields["Deepens"])}
    for lesson in LESSONS:
        where_next = lesson.path.read_text(encoding="utf-8").split("## Where next", 1)[1]
        assert "content/resources/reading.md" in where_next, lesson.meta.id
        assert lesson.meta.id in covered, f"no reading-list entry deepens {lesson.meta.id}"


def test_the_parsed_list_is_the_file_entry_for_entry_with_no_problems():
    reading = parse_reading_list(READING.read_text(encoding="utf-8"), str(READING))
    assert reading.problems == []
    entries = reading_entries()
    assert [e.title for e in reading.entries] == list(entries)
    for entry in reading.entries:
        fields = entries[entry.title]
        assert (entry.by, entry.link, entry.read_for) == (fields["By"], fields["Link"], fields["Read it for"])
        assert entry.deepens == lesson_ids(fields["Deepens"])
        assert entry.section in {"NVIDIA: CUDA, NCCL and the profilers", "PyTorch", "Papers", "Books and guides"}


BROKEN = """\
# Reading

## Good

### Complete

- **By**: Someone
- **Link**: https://example.org/a
- **Read it for**: the part that
  matters.
- **Deepens**: `gpu-intro`, `cuda-basics`

### Missing a bullet

- **By**: Someone
- **Link**: https://example.org/b
- **Deepens**: `gpu-intro`

### Not a link

- **By**: Someone
- **Link**: example.org/c
- **Read it for**: x
- **Deepens**: `gpu-intro`

### No lessons

- **By**: Someone
- **Link**: https://example.org/d
- **Read it for**: x
- **Deepens**: lesson one

### Complete

- **By**: Twice
- **Link**: https://example.org/e
- **Read it for**: x
- **Deepens**: `gpu-intro`
"""


def test_entries_that_break_the_format_are_problems_naming_entry_and_bullet_and_the_rest_loads():
    reading = parse_reading_list(BROKEN, "reading.md")
    assert [(e.section, e.title, e.read_for, e.deepens) for e in reading.entries] == [
        ("Good", "Complete", "the part that matters.", ["gpu-intro", "cuda-basics"])
    ]
    by_field = {p.field: p.message for p in reading.problems}
    assert set(by_field) == {
        "Missing a bullet (line 13)",
        "Not a link (line 19): Link",
        "No lessons (line 26): Deepens",
        "Complete (line 33)",
    }
    assert "found By, Link, Deepens" in by_field["Missing a bullet (line 13)"]
    assert "duplicate" in by_field["Complete (line 33)"]


# --- GET course/reading ------------------------------------------------------------------------


async def test_the_route_serves_every_entry_with_lessons_the_course_has(jp_fetch):
    reading = await course_get(jp_fetch, "reading")
    assert reading["problems"] == []
    entries = reading_entries()
    assert [e["title"] for e in reading["entries"]] == list(entries)
    catalog = await course_get(jp_fetch, "catalog")
    known = {lesson["id"] for lesson in catalog["lessons"]}
    for entry in reading["entries"]:
        assert set(entry) == {"section", "title", "by", "link", "read_for", "deepens"}, entry
        assert entry["deepens"] and set(entry["deepens"]) <= known, entry
        assert entry["link"] == entries[entry["title"]]["Link"]
    assert known <= {lesson for e in reading["entries"] for lesson in e["deepens"]}


async def test_the_route_refuses_callers_without_credentials(jp_fetch):
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("gpudojo", "api", "course", "reading", headers={"Authorization": ""})
    assert info.value.code == 403
    assert json.loads(info.value.response.body)["error"]["code"]


def test_unknown_lessons_are_reported_and_a_missing_list_is_unknown(tmp_path):
    from gpudojo.course.catalog import CourseCatalog
    from gpudojo.course.progress import ProgressStore
    from gpudojo.course.service import CourseService, UnknownItem

    (tmp_path / "content" / "resources").mkdir(parents=True)
    (tmp_path / "labs").mkdir()
    service = CourseService(
        CourseCatalog(tmp_path / "content", tmp_path / "labs"), ProgressStore(tmp_path / "db.sqlite3"), tmp_path
    )
    with pytest.raises(UnknownItem, match="no reading list"):
        service.reading_list()
    (tmp_path / "content" / "resources" / "reading.md").write_text(BROKEN.split("### Missing")[0])
    reading = service.reading_list()
    assert [e.title for e in reading.entries] == ["Complete"]
    assert {p.message for p in reading.problems} == {
        "no lesson 'gpu-intro' in the course",
        "no lesson 'cuda-basics' in the course",
    }
