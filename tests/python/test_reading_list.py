"""The course reading list (content/resources/reading.md): every entry is complete, names real
lessons, and every lesson's "Where next" points to the list."""

from __future__ import annotations

import re

from gpudojo.course.catalog import load_catalog
from gpudojo.paths import material_root

CONTENT = material_root("content")
READING = CONTENT / "resources" / "reading.md"
LESSONS = load_catalog(CONTENT, material_root("labs")).lessons
FIELDS = ("By", "Link", "Read it for", "Deepens")


def reading_entries() -> dict[str, dict[str, str]]:
    """Title -> {field: text} for every `###` entry of the reading list."""
    entries = {}
    for block in re.split(r"^### ", READING.read_text(encoding="utf-8"), flags=re.M)[1:]:
        title, _, body = block.partition("\n")
        body = re.split(r"^## ", body, flags=re.M)[0]
        fields = dict(re.findall(r"^- \*\*(.+?)\*\*: (.+?)(?=^- \*\*|\Z)", body, flags=re.M | re.S))
        entries[title.strip()] = {k: " ".join(v.split()) for k, v in fields.items()}
    return entries


def test_every_reading_list_entry_says_who_where_what_for_and_which_lessons():
    entries = reading_entries()
    assert len(entries) >= 15
    lesson_ids = {lesson.meta.id for lesson in LESSONS}
    for title, fields in entries.items():
        assert tuple(fields) == FIELDS, (title, list(fields))
        assert re.fullmatch(r"https://\S+", fields["Link"]), (title, fields["Link"])
        named = re.findall(r"`([a-z0-9-]+)`", fields["Deepens"])
        assert named and set(named) <= lesson_ids, (title, named)


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
    covered = {
        lesson_id
        for fields in reading_entries().values()
        for lesson_id in re.findall(r"`([a-z0-9-]+)`", fields["Deepens"])
    }
    for lesson in LESSONS:
        where_next = lesson.path.read_text(encoding="utf-8").split("## Where next", 1)[1]
        assert "content/resources/reading.md" in where_next, lesson.meta.id
        assert lesson.meta.id in covered, f"no reading-list entry deepens {lesson.meta.id}"
