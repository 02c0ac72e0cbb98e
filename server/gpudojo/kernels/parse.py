"""Reading what the CUDA tools print: NVRTC diagnostics, ptxas resource usage, PTX line
info and nvdisasm's JSON. Plain text in, plain data out: no CUDA library is needed here."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

# kernel.cu(12): error: identifier "y" is undefined
# kernel.cu(4): warning #177-D: variable "unused" was declared but never referenced
_NVRTC_DIAG = re.compile(
    r"^(?P<file>[^\s()]+)\((?P<line>\d+)\): (?P<sev>error|warning|remark|note|catastrophic error)"
    r"(?: #[\w-]+)?: (?P<msg>.*)$"
)
# ptxas error   : Entry function 'k' uses too much shared data (0x10000 bytes, 0xc000 max)
_PTXAS_DIAG = re.compile(r"^(?:ptxas|nvlink|error|info)?\s*(?P<sev>error|warning|fatal)\s*: (?P<msg>.*)$")


def nvrtc_diagnostics(log: str, file_name: str) -> list[dict[str, Any]]:
    """NVRTC's log as diagnostics {line, column, severity, message}.

    NVRTC prints each diagnostic as ``file(line): severity: message``, then the source line
    indented by two spaces and a caret under the column.
    """
    lines = log.replace("\x00", "").splitlines()
    out: list[dict[str, Any]] = []
    for i, text in enumerate(lines):
        m = _NVRTC_DIAG.match(text)
        if m:
            severity = m["sev"]
            if severity == "catastrophic error":
                severity = "error"
            elif severity == "remark":
                severity = "note"
            line = int(m["line"]) if m["file"] == file_name else None
            column = None
            if i + 2 < len(lines) and lines[i + 2].strip() == "^":
                column = max(lines[i + 2].index("^") - 2 + 1, 1)
            out.append({"line": line, "column": column, "severity": severity, "message": m["msg"].strip()})
            continue
        p = _PTXAS_DIAG.match(text)
        if p and text.startswith(("ptxas", "nvlink", "error", "warning")):
            sev = "error" if p["sev"] in ("error", "fatal") else "warning"
            out.append({"line": None, "column": None, "severity": sev, "message": text.strip()})
    return out


@dataclass
class Resources:
    """One entry function's resource usage as ptxas reported it."""

    symbol: str
    registers: int = 0
    barriers: int = 0
    shared_bytes: int = 0
    constant_bytes: int = 0
    stack_bytes: int = 0
    spill_stores_bytes: int = 0
    spill_loads_bytes: int = 0
    local_bytes: int = 0
    extra: dict[str, int] = field(default_factory=dict)


_ENTRY = re.compile(r"Compiling entry function '(?P<name>[^']+)' for '(?P<arch>[^']+)'")
# nvJitLink, after linking: "info    : Function properties for 'NAME':" then
# "info    : used 16 registers, used 1 barriers, 0 stack, 256 bytes smem, ..., 0 bytes lmem".
# Shared arrays numba declares at module scope are only counted here.
_LINKED = re.compile(r"^info\s*: Function properties for '(?P<name>[^']+)':")
_LINKED_USED = re.compile(r"^info\s*: used \d+ registers")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_BARRIERS = re.compile(r"used (\d+) barriers")
_SMEM = re.compile(r"(\d+) bytes smem")
_CMEM0 = re.compile(r"(\d+) bytes cmem\[0\]")
_LMEM = re.compile(r"(\d+) bytes lmem")


def ptxas_resources(log: str) -> dict[str, Resources]:
    """Per entry function: registers, barriers, shared/constant/stack bytes and spills, from
    the ``ptxas info`` lines that ``-Xptxas=-v`` (NVRTC) or ``-verbose`` (nvJitLink) print."""
    found: dict[str, Resources] = {}
    current: Resources | None = None
    linked: Resources | None = None
    for text in log.replace("\x00", "").splitlines():
        if m := _LINKED.match(text):
            linked = found.get(m["name"])
            continue
        if linked is not None and _LINKED_USED.match(text):
            if s := _SMEM.search(text):
                linked.shared_bytes = max(linked.shared_bytes, int(s[1]))
            if lm := _LMEM.search(text):
                linked.local_bytes = max(linked.local_bytes, int(lm[1]))
            linked = None
            continue
        m = _ENTRY.search(text)
        if m:
            current = found.setdefault(m["name"], Resources(symbol=m["name"]))
            continue
        if current is None:
            continue
        if f := _FRAME.search(text):
            current.stack_bytes, current.spill_stores_bytes, current.spill_loads_bytes = map(int, f.groups())
        if u := _USED.search(text):
            current.registers = int(u[1])
            if b := _BARRIERS.search(text):
                current.barriers = int(b[1])
            if s := _SMEM.search(text):
                current.shared_bytes = int(s[1])
            if c := _CMEM0.search(text):
                current.constant_bytes = int(c[1])
            if lm := _LMEM.search(text):
                current.local_bytes = int(lm[1])
    return found


_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"(?P<name>[^"]*)"')
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)")


def ptx_source_lines(ptx: str, file_name: str) -> list[int | None]:
    """For each PTX line, the line of ``file_name`` it was generated from (or None).

    A ``.loc FILE LINE COL`` directive applies to the instructions after it, up to the next
    one; line 0 means "no source line" (compiler-generated code).
    """
    files: dict[str, str] = {}
    for text in ptx.splitlines():
        if m := _FILE.match(text):
            files[m.group(1)] = m["name"]
    wanted = {num for num, name in files.items() if name == file_name or name.endswith("/" + file_name)}
    out: list[int | None] = []
    current: int | None = None
    for text in ptx.splitlines():
        if m := _LOC.match(text):
            current = int(m.group(2)) if m.group(1) in wanted and int(m.group(2)) > 0 else None
            out.append(current)
            continue
        stripped = text.strip()
        if stripped == "}":
            current = None
        # Directives, comments, braces and blank lines belong to no source line.
        is_code = stripped and not stripped.startswith(("//", ".", "{", "}"))
        out.append(current if is_code else None)
    return out


def sass_from_nvdisasm_json(doc: Any, file_name: str) -> dict[str, list[dict[str, Any]]]:
    """Per function symbol, its instructions {offset, text, line} from ``nvdisasm -json -g``.

    nvdisasm names a source line only where it changes; the line carries forward until the
    next one (instructions are 16 bytes apart from Volta on)."""
    if not isinstance(doc, list) or len(doc) < 2:
        raise ValueError("nvdisasm JSON has no function list")
    header, functions = doc[0], doc[1]
    files = header.get("SourceFiles") or header.get("source-files") or []
    out: dict[str, list[dict[str, Any]]] = {}
    for fn in functions:
        name = fn.get("function-name", "")
        instructions = []
        line: int | None = None
        for index, ins in enumerate(fn.get("sass-instructions", [])):
            if "source-line" in ins:
                file_id = ins.get("source-file-id", 0)
                source = files[file_id] if isinstance(files, list) and file_id < len(files) else None
                ok = source is None or str(source).endswith(file_name)
                line = int(ins["source-line"]) if ok and int(ins["source-line"]) > 0 else None
            text = " ".join(p for p in (ins.get("predicate"), ins.get("opcode")) if p)
            if ins.get("operands"):
                text += " " + ins["operands"].replace(",", ", ")
            instructions.append({"offset": fn.get("start", 0) + 16 * index, "text": text, "line": line})
        out[name] = instructions
    return out


_TRACEBACK_LINE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')


def python_error_line(text: str, file_name: str) -> int | None:
    """The last line of ``file_name`` a Python/numba error message points at."""
    line = None
    for m in _TRACEBACK_LINE.finditer(text):
        if m["file"].endswith(file_name):
            line = int(m["line"])
    return line


_SIM_THREAD = re.compile(r"tid=\[(\d+), (\d+), (\d+)\] ctaid=\[(\d+), (\d+), (\d+)\]")


def simulator_thread(message: str) -> tuple[list[int], list[int]] | None:
    """threadIdx and blockIdx from the numba simulator's 'tid=[x, y, z] ctaid=[x, y, z]: ...'."""
    m = _SIM_THREAD.search(message)
    if not m:
        return None
    values = [int(v) for v in m.groups()]
    return values[:3], values[3:]
