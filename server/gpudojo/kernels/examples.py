"""Kernel launches that labs offer to the playground: the [[kernels]] of each lab.toml,
with the source read from the lab's folder (never from outside it)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import ValidationError

from .models import KernelExample, KernelExampleProblem, KernelExamples, KernelExampleSpec


def load_examples(labs_root: Path, lab: str | None = None) -> KernelExamples:
    examples: list[KernelExample] = []
    problems: list[KernelExampleProblem] = []
    for manifest in sorted(labs_root.glob("*/lab.toml")):
        folder = manifest.parent.resolve()
        try:
            data = tomllib.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as err:
            problems.append(KernelExampleProblem(lab=manifest.parent.name, message=f"lab.toml: {err}"))
            continue
        lab_id = str(data.get("id", manifest.parent.name))
        if lab is not None and lab_id != lab:
            continue
        for index, entry in enumerate(data.get("kernels", [])):
            try:
                spec = KernelExampleSpec.model_validate(entry)
            except ValidationError as err:
                first = err.errors(include_url=False)[0]
                where = ".".join(str(p) for p in first["loc"])
                problems.append(KernelExampleProblem(lab=lab_id, index=index, message=f"{where}: {first['msg']}"))
                continue
            path = (folder / spec.file).resolve()
            if path.parent != folder:
                problems.append(KernelExampleProblem(lab=lab_id, index=index, message=f"{spec.file}: not in the lab"))
                continue
            try:
                source = path.read_text(encoding="utf-8")
            except OSError as err:
                problems.append(KernelExampleProblem(lab=lab_id, index=index, message=f"{spec.file}: {err.strerror}"))
                continue
            examples.append(KernelExample(**spec.model_dump(), lab=lab_id, index=index, source=source))
    return KernelExamples(examples=examples, problems=problems)
