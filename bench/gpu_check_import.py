"""`make gpu-check-import DIR=...`: file what `make gpu-check` brought back from a GPU machine.

    python bench/gpu_check_import.py DIR [--repo ROOT] [--lessons DIR] [--dry-run]

- recording.jsonl.gz -> tests/data/gpu/<N>gpu-<gpu>.jsonl (checked to replay first; the replay
  test in tests/python/test_gpu_check_data.py replays every recording there)
- snapshots.tar.gz   -> tests/data/memory/<gpu>/: each CUDA snapshot, labkit's sidecar and the
  analysis figures taken on the GPU machine (<name>.expected.json), which a test pins
- cells.json         -> the lessons: each GPU cell that ran cleanly gets the output it printed as
  its expected output, with expected_on = the GPU, expected_kind: captured and
  expected_source: "captured by make gpu-check on <date>". A cell whose source changed since the
  capture is left alone and named.
- occupancy.json     -> tests/data/gpu/occupancy-<gpu>.json (a test pins our calculator to the
  driver's answers in it)
- trace.json.gz      -> tests/data/gpu/trace-<gpu>-lab02-step.json.gz (test data for the profile
  feature)

It prints what went where, and every occupancy case where our calculator and the driver differ.
Exit 0 when everything found was filed, 1 when something was refused.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "server"), str(Path(__file__).resolve().parent)]

from gpucheck.lesson_cells import gpu_cells, gpudojo_block, is_gpu_cell_meta  # noqa: E402

# A code cell with a YAML metadata block, as jupytext writes MyST: the fence, ---, YAML, ---.
_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n---\n(?P<meta>.*?)\n---\n", re.M | re.S)


def gpu_slug(name: str | None) -> str:
    """'NVIDIA H200' -> 'h200'; 'NVIDIA H100 80GB HBM3' -> 'h100-80gb-hbm3'."""
    name = re.sub(r"^nvidia\s+", "", name or "unknown", flags=re.I)
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "unknown"


# --- lesson cells --------------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def clean_output(text: str) -> str:
    """Printed text as a YAML literal block can hold it: no trailing spaces, one final newline."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n" if lines else ""


def rewrite_cell_meta(text: str, ordinal: int, gpu: str, date: str, output: str) -> str:
    """The lesson text with the ``ordinal``-th needs-gpu cell's gpudojo block rewritten."""
    seen = -1
    for m in _CELL.finditer(text):
        meta = yaml.safe_load(m.group("meta")) or {}
        if not is_gpu_cell_meta(meta):
            continue
        seen += 1
        if seen != ordinal:
            continue
        block = gpudojo_block(meta)
        block["expected_output"] = output
        block["expected_on"] = gpu
        block["expected_kind"] = "captured"
        block["expected_source"] = f"captured by make gpu-check on {date}"
        meta["gpudojo"] = block
        dumped = yaml.dump(
            meta, Dumper=_Dumper, sort_keys=False, default_flow_style=None, allow_unicode=True, width=1000
        )
        start, end = m.span("meta")
        return text[:start] + dumped.rstrip("\n") + text[end:]
    raise LookupError(f"no needs-gpu cell number {ordinal} with a YAML metadata block")


def import_cells(doc: dict[str, Any], lessons: Path, gpu: str, date: str, dry: bool) -> dict[str, list[str]]:
    report: dict[str, list[str]] = {"written": [], "left": []}
    by_lesson: dict[str, list[dict[str, Any]]] = {}
    for cell in doc.get("cells", []):
        by_lesson.setdefault(cell["lesson"], []).append(cell)
    for lesson, cells in sorted(by_lesson.items()):
        path = lessons / lesson
        label = f"{lesson}"
        if not path.is_file():
            report["left"] += [f"{label} cell {c['ordinal']}: no such lesson here" for c in cells]
            continue
        now = {c["ordinal"]: c for c in gpu_cells(path)}
        text = path.read_text(encoding="utf-8")
        changed = False
        for c in sorted(cells, key=lambda c: c["ordinal"]):
            where = f"{label} cell {c['ordinal']} ({c.get('first_line', '')[:40]!r})"
            if c.get("status") != "ok":
                report["left"].append(f"{where}: {c.get('status')}{': ' + c['why'] if c.get('why') else ''}")
                continue
            here = now.get(c["ordinal"])
            if here is None or here["source_sha"] != c["source_sha"]:
                report["left"].append(f"{where}: the cell's source changed since the capture")
                continue
            output = clean_output(c.get("output", ""))
            if not output:
                report["left"].append(f"{where}: printed nothing")
                continue
            try:
                text = rewrite_cell_meta(text, c["ordinal"], gpu, date, output)
            except (LookupError, yaml.YAMLError) as err:
                report["left"].append(f"{where}: {err}")
                continue
            changed = True
            report["written"].append(where)
        if changed and not dry:
            path.write_text(text, encoding="utf-8")
            # The rewrite must leave every cell's source as it was.
            after = {c["ordinal"]: c["source_sha"] for c in gpu_cells(path)}
            if after != {k: v["source_sha"] for k, v in now.items()}:
                raise RuntimeError(f"rewriting {path} changed a cell's source; restore it from git")
    return report


# --- the rest ------------------------------------------------------------------------------------


def import_recording(src: Path, data: Path, gpu: str, dry: bool) -> str:
    from gpudojo.gpu.probe import GpuProbe
    from gpudojo.gpu.replay import ReplayBackend

    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / "recording.jsonl"
        with gzip.open(src, "rb") as f:
            plain.write_bytes(f.read())
        probe = GpuProbe(ReplayBackend(plain))
        try:
            devices = probe.devices()
        finally:
            probe.close()
        if not devices.available or not devices.gpus:
            raise ValueError(f"the recording does not replay: {devices.reason}")
        target = data / f"{len(devices.gpus)}gpu-{gpu_slug(gpu)}.jsonl"
        if not dry:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(plain, target)
    return str(target)


def import_snapshots(src: Path, memory: Path, gpu: str, dry: bool) -> list[str]:
    target = memory / gpu_slug(gpu)
    written = []
    with tarfile.open(src) as tar:
        for member in tar.getmembers():
            name = Path(member.name).name
            if not member.isfile() or not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
                continue
            data = tar.extractfile(member)
            if data is None:
                continue
            if not dry:
                target.mkdir(parents=True, exist_ok=True)
                (target / name).write_bytes(data.read())
            written.append(str(target / name))
    return written


def import_occupancy(src: Path, data: Path, gpu: str, date: str, dry: bool) -> tuple[str, list[str]]:
    doc = json.loads(src.read_text())
    cases = []
    differ = []
    for c in doc["cases"]:
        drv = c.get("driver") or {}
        if "error" in c or "blocks_per_sm" not in drv:
            continue
        cases.append(
            {
                "id": c["id"],
                "what": c["what"],
                "path": c["path"],
                "calculator_input": c["calculator_input"],
                "ptx_declared_shared_bytes": c.get("ptx_declared_shared_bytes"),
                "ours": c["ours"],
                "driver": drv,
            }
        )
        if drv["blocks_per_sm"] != c["ours"]["blocks_per_sm"]:
            differ.append(f"{c['id']}: ours {c['ours']['blocks_per_sm']}, driver {drv['blocks_per_sm']} blocks/SM")
    if not cases:
        raise ValueError("no case has a driver answer (was it a rehearsal?)")
    out = {
        "format": "gpudojo-occupancy-check/1",
        "gpu": gpu,
        "date": date,
        "arch": doc["arch"],
        "device": doc.get("device"),
        "sm90_numba_question": doc.get("sm90_numba_question"),
        "cases": cases,
    }
    target = data / f"occupancy-{gpu_slug(gpu)}.json"
    if not dry:
        target.write_text(json.dumps(out, indent=1) + "\n")
    return str(target), differ


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="File the results of make gpu-check where they belong.")
    ap.add_argument("folder", type=Path, help="what make gpu-check wrote (the device tool's files)")
    ap.add_argument("--repo", type=Path, default=REPO, help="the repository to file into (default: this one)")
    ap.add_argument("--lessons", type=Path, help="lessons folder (default: <repo>/content/lessons)")
    ap.add_argument("--dry-run", action="store_true", help="say what would change, change nothing")
    args = ap.parse_args(argv)
    src: Path = args.folder
    summary_file = src / "summary.json"
    if not summary_file.is_file():
        print(f"gpu-check-import: {summary_file} not found", file=sys.stderr)
        return 2
    summary = json.loads(summary_file.read_text())
    gpu = summary.get("gpu")
    if not gpu:
        print("gpu-check-import: this result was made without a GPU (a rehearsal): nothing to import", file=sys.stderr)
        return 2
    date = summary.get("date") or "an unknown date"
    data = args.repo / "tests" / "data" / "gpu"
    memory = args.repo / "tests" / "data" / "memory"
    lessons = args.lessons or args.repo / "content" / "lessons"
    problems = 0
    print(f"Importing make gpu-check from {gpu} ({date}){' (dry run)' if args.dry_run else ''}:")
    for s in summary.get("steps", []):
        print(f"  step {s['step']:<10} {s['status']:<8} {s.get('note', '')[:150]}")

    def attempt(label: str, fn, *a):
        nonlocal problems
        try:
            return fn(*a)
        except Exception as err:
            problems += 1
            print(f"  {label}: refused: {type(err).__name__}: {err}")
            return None

    if (src / "recording.jsonl.gz").is_file():
        where = attempt("recording", import_recording, src / "recording.jsonl.gz", data, gpu, args.dry_run)
        if where:
            print(f"  recording -> {where}")
    if (src / "snapshots.tar.gz").is_file():
        files = attempt("snapshots", import_snapshots, src / "snapshots.tar.gz", memory, gpu, args.dry_run) or []
        for f in files:
            print(f"  snapshot  -> {f}")
    if (src / "occupancy.json").is_file():
        got = attempt("occupancy", import_occupancy, src / "occupancy.json", data, gpu, date, args.dry_run)
        if got:
            where, differ = got
            print(f"  occupancy -> {where}")
            for line in differ:
                print(f"    DIFFERS from the driver: {line}")
    if (src / "trace.json.gz").is_file():
        target = data / f"trace-{gpu_slug(gpu)}-lab02-step.json.gz"
        if not args.dry_run:
            shutil.copy(src / "trace.json.gz", target)
        print(f"  trace     -> {target}")
    if (src / "cells.json").is_file():
        report = attempt(
            "cells",
            import_cells,
            json.loads((src / "cells.json").read_text()),
            lessons,
            gpu,
            date,
            args.dry_run,
        )
        if report:
            for where in report["written"]:
                print(f"  cell      -> {where}: expected output captured on {gpu}")
            for where in report["left"]:
                print(f"  cell left as it was: {where}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
