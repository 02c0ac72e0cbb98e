"""A CUDA C kernel's parameter list read from its source, to check a run request's arguments
against it before anything is compiled or launched: a bfloat16 array given to a ``float*``
parameter is refused with both types named (on a GPU it would run and read the wrong bits).

Only what can be read with confidence is checked: a kernel defined once, not a template,
parameters whose types are plain C/CUDA scalar types or pointers to them. Anything else (a
typedef, a struct, a macro) is left to the run itself (the CPU emulator checks every pointer's
element type when it binds the arguments).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .cpu_runner.source import blank_comments_and_strings
from .models import ArrayArg, KernelArg

_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "__grid_constant__", "struct"}
# Element type (its words, sorted) -> the request dtype of the same bytes and meaning.
_DTYPES: dict[tuple[str, ...], str] = {}
for _words, _dtype in [
    (["float"], "float32"),
    (["double"], "float64"),
    (["__half"], "float16"),
    (["half"], "float16"),
    (["__nv_bfloat16"], "bfloat16"),
    (["nv_bfloat16"], "bfloat16"),
    (["char"], "int8"),
    (["signed", "char"], "int8"),
    (["int8_t"], "int8"),
    (["unsigned", "char"], "uint8"),
    (["uint8_t"], "uint8"),
    (["int"], "int32"),
    (["signed"], "int32"),
    (["signed", "int"], "int32"),
    (["int32_t"], "int32"),
    (["unsigned"], "uint32"),
    (["unsigned", "int"], "uint32"),
    (["uint32_t"], "uint32"),
    (["long"], "int64"),
    (["long", "int"], "int64"),
    (["long", "long"], "int64"),
    (["long", "long", "int"], "int64"),
    (["signed", "long", "long"], "int64"),
    (["int64_t"], "int64"),
    (["unsigned", "long"], "uint64"),
    (["unsigned", "long", "long"], "uint64"),
    (["unsigned", "long", "long", "int"], "uint64"),
    (["uint64_t"], "uint64"),
    (["size_t"], "uint64"),
]:
    _DTYPES[tuple(sorted(_words))] = _dtype

_IDENT = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class Param:
    text: str  # as written, spaces collapsed
    pointer: bool
    dtype: str | None  # the element (pointer) or value type as a request dtype; None: not known


def _split_top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "([<{":
            depth += 1
        elif c in ")]>}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def _param(text: str) -> Param | None:
    text = " ".join(text.split("=", 1)[0].split())
    if not text or any(c in text for c in "<>()&"):
        return None  # templates, function pointers, references: not checked
    pointer = text.count("*") + text.count("[")
    if pointer > 1:
        return None
    words = [w for w in _IDENT.findall(text.replace("*", " ").split("[", 1)[0]) if w not in _QUALIFIERS]
    if len(words) >= 2:
        words = words[:-1]  # the parameter's name
    return Param(text, pointer == 1, _DTYPES.get(tuple(sorted(words))))


def kernel_params(source: str, kernel: str) -> list[Param | None] | None:
    """The parameters of ``__global__ ... kernel(...)`` (None for one not understood), or None when
    the kernel is not defined exactly once in a form this reads (a template, a macro)."""
    if not re.fullmatch(r"[A-Za-z_]\w*", kernel):
        return None
    code = blank_comments_and_strings(source)
    head = re.compile(rf"\b__global__\b(?:[^;{{}}()]|\([^()]*\))*?\b{re.escape(kernel)}\s*\(")
    found = list(head.finditer(code))
    if len(found) != 1:
        return None
    start = found[0].end()
    if re.search(r"\btemplate\s*<[^;{}]*$", code[max(0, found[0].start() - 300) : found[0].start()]):
        return None
    depth, end = 1, start
    while end < len(code) and depth:
        depth += {"(": 1, ")": -1}.get(code[end], 0)
        end += 1
    if depth:
        return None
    inner = code[start : end - 1].strip()
    if not inner or inner == "void":
        return []
    return [_param(p) for p in _split_top_level(inner)]


def argument_mismatch(source: str, kernel: str, args: Sequence[KernelArg]) -> str | None:
    """Why the arguments cannot be the kernel's parameters (the first mismatch, in words), or None
    when they match or the source cannot be read with confidence."""
    params = kernel_params(source, kernel)
    if params is None or len(params) != len(args):
        return None  # a count mismatch is reported by the run, with the kernel's own count
    for index, (param, arg) in enumerate(zip(params, args, strict=True), 1):
        if param is None:
            continue
        where = f"parameter {index} of {kernel} ({param.text})"
        if isinstance(arg, ArrayArg):
            if not param.pointer:
                if param.dtype is not None:
                    return f"Argument {arg.name} is an array, but {where} is a scalar."
                continue
            if param.dtype is not None and param.dtype != arg.dtype:
                article = "an" if arg.dtype.startswith("int") else "a"
                return (
                    f"Argument {arg.name} is {article} {arg.dtype} array, but {where} points to {param.dtype}: "
                    f"give {arg.name} dtype {param.dtype}, or change the parameter's type."
                )
        elif param.pointer:
            return f"Argument {arg.name} is a scalar, but {where} is a pointer: give an array."
    return None
