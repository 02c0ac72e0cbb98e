"""The wheel's course material: content/ and labs/ under gpudojo/_packaged/, without our
exercise solutions (content/exercises/<id>/solution/: the tests use them; a learner's
installed copy ships the starters and the checks only) and without caches."""

from __future__ import annotations

from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

MATERIAL = ("content", "labs")
SKIPPED_PARTS = {"__pycache__", ".ipynb_checkpoints", ".pytest_cache"}


def shipped(relative: Path) -> bool:
    """Whether a file of content/ or labs/ goes into the wheel."""
    parts = relative.parts
    if SKIPPED_PARTS & set(parts) or relative.suffix == ".pyc":
        return False
    # content/exercises/<id>/solution/...
    return not (len(parts) > 3 and parts[:2] == ("content", "exercises") and parts[3] == "solution")


class CourseMaterialHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel" or version == "editable":
            return  # an editable install reads content/ and labs/ from the tree (gpudojo.paths)
        root = Path(self.root)
        for name in MATERIAL:
            for path in sorted((root / name).rglob("*")):
                relative = path.relative_to(root)
                if path.is_file() and shipped(relative):
                    build_data["force_include"][str(path)] = f"gpudojo/_packaged/{relative.as_posix()}"
