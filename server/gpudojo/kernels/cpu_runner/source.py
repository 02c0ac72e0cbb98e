"""The learner's CUDA C made ready for g++: features the CPU emulator cannot run are refused
by name and line, ``extern __shared__`` arrays become pointers into the launch's dynamic
shared memory, and an entry function binds the request's arguments to the kernel.

Line numbers survive every step: the source is compiled after ``#line 1 "kernel.cu"``, and a
rewrite never adds or removes a newline.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

SOURCE_NAME = "kernel.cu"

# (feature as a learner would name it, pattern over the source with comments and strings blanked)
UNSUPPORTED: list[tuple[str, re.Pattern[str]]] = [
    ("tensor cores (wmma)", re.compile(r"\bwmma\s*::|#\s*include\s*<mma\.h>|\bnvcuda\s*::")),
    ("inline PTX (asm)", re.compile(r"\b(?:asm|__asm__|__asm)\b(?:\s+(?:volatile|__volatile__))?\s*\(")),
    (
        "cooperative grid sync",
        re.compile(r"\bthis_grid\s*\(|\bgrid_group\b|\bthis_multi_grid\s*\(|\bcudaLaunchCooperativeKernel\b"),
    ),
    (
        "textures and surfaces",
        re.compile(
            r"\b(?:tex[123]D(?:Layered|Lod|Grad)?|tex1Dfetch|texCubemap|surf[123]D(?:read|write)|"
            r"surf[123]DLayered(?:read|write))\b|\btexture\s*<|\bcuda(?:Texture|Surface)Object_t\b"
        ),
    ),
    ("kernel launches in the source (host code or dynamic parallelism)", re.compile(r"<<<")),
]

_EXTERN_SHARED = re.compile(
    r"\bextern\s+__shared__\s+([^;{}()\[\]]*(?:\([^;{}()]*\)[^;{}()\[\]]*)*?)\s*\b([A-Za-z_]\w*)\s*\[\s*\]\s*;"
)
# `[static] [volatile] __shared__ TYPE name[d1][d2]...;` with one declarator (a scalar is left as
# it is: it runs, only without red zones). A list, `__shared__ TYPE a[n], b[m], c;`, is first split
# into one declaration per name (_SHARED_LIST), on the same line.
_STATIC_SHARED = re.compile(
    r"(?<![\w])((?:(?:static|volatile|const)\s+)*)__shared__\s+([^;{}=\[\],]*?)\s*\b([A-Za-z_]\w*)\s*"
    r"((?:\[[^\[\];{}]+\]\s*)+);"
)
_DECLARATOR = r"[A-Za-z_]\w*\s*(?:\[[^\[\];{}]+\]\s*)*"
_SHARED_LIST = re.compile(
    r"(?<![\w])((?:(?:static|volatile|const)\s+)*__shared__\s+)([^;{}=\[\],]*?[\w>])\s+"
    rf"({_DECLARATOR}(?:,\s*{_DECLARATOR})+);"
)
SHARED_BOX_PREFIX = "gpudojo_shared_"
RED_ZONE = 128  # bytes each side of a boxed array; memory_access.h reads the same layout
_ALIGN = re.compile(r"\b(?:__align__|alignas)\s*\(\s*\d+\s*\)")
_KERNEL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_:]*(?:<[A-Za-z0-9_:, *&<>()+\-]*>)?$")


@dataclass(frozen=True)
class Unsupported:
    feature: str
    line: int


def blank_comments_and_strings(source: str) -> str:
    """The source with comments, string and character literals replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if source.startswith("//", i):
            j = source.find("\n", i)
            j = n if j < 0 else j
        elif source.startswith("/*", i):
            j = source.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif c in "\"'":
            j = i + 1
            while j < n and source[j] != c and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            j = min(j + 1, n)
        else:
            out.append(c)
            i += 1
            continue
        out.append("".join(ch if ch == "\n" else " " for ch in source[i:j]))
        i = j
    return "".join(out)


def find_unsupported(source: str) -> list[Unsupported]:
    """Every feature the emulator cannot run, with the 1-based line of its first use."""
    code = blank_comments_and_strings(source)
    found = []
    for feature, pattern in UNSUPPORTED:
        m = pattern.search(code)
        if m:
            found.append(Unsupported(feature, code.count("\n", 0, m.start()) + 1))
    return sorted(found, key=lambda u: u.line)


def refusal(source: str) -> dict[str, Any] | None:
    """A RunError dict naming the first unsupported feature and its line, or None when the emulator can run it."""
    found = find_unsupported(source)
    if not found:
        return None
    first = found[0]
    others = "".join(f"; {u.feature} at line {u.line}" for u in found[1:])
    return {
        "kind": "unsupported",
        "message": f"The CPU emulator cannot run {first.feature} (line {first.line}{others}). "
        "Run this kernel on a GPU, or write it without that feature.",
        "line": first.line,
    }


def _pointer_for(m: re.Match[str]) -> str:
    type_text = " ".join(_ALIGN.sub(" ", m.group(1)).split())
    name = m.group(2)
    text = f"{type_text}* const {name} = reinterpret_cast<{type_text}*>(gpudojo_dynamic_shared);"
    return text + "\n" * m.group(0).count("\n")


def rewrite_extern_shared(source: str) -> str:
    """``extern __shared__ T name[];`` as a pointer to the dynamic shared block, on the same lines."""
    return _EXTERN_SHARED.sub(_pointer_for, source)


def _box_for(m: re.Match[str]) -> str:
    qualifiers = " ".join(q for q in m.group(1).split() if q != "static")
    type_text, name, dims = " ".join(m.group(2).split()), m.group(3), " ".join(m.group(4).split())
    box = SHARED_BOX_PREFIX + name
    # The box: sizeof(element) and sizeof(array) first (the launcher reads them), the array on a
    # 128-byte boundary (bank 0, as on a GPU) between two red zones; `name` is a reference to it,
    # so sizeof, indexing and decay behave as the array's own.
    text = (
        f"static struct __attribute__((aligned({RED_ZONE}))) {{ unsigned long long gpudojo_sizes[2]; "
        f"unsigned char gpudojo_lo[{RED_ZONE - 16}]; {qualifiers} {type_text} v{dims}; "
        f"unsigned char gpudojo_hi[{RED_ZONE}]; }} {box} = {{{{sizeof(std::remove_all_extents_t<decltype({box}.v)>), "
        f"sizeof({box}.v)}}}}; auto& {name} = {box}.v;"
    )
    return text + "\n" * m.group(0).count("\n")


def _split_list(m: re.Match[str]) -> str:
    # `__shared__ float a[32], b[32];` -> `__shared__ float a[32]; __shared__ float b[32];` (the
    # type ends in a word or `>`, so a pointer declarator such as `float *p, q[4]` is never split).
    head, type_text = m.group(1), m.group(2)
    parts = [" ".join(d.split()) for d in m.group(3).split(",")]
    return " ".join(f"{head}{type_text} {d};" for d in parts) + "\n" * m.group(0).count("\n")


def box_static_shared(source: str) -> str:
    """Each static ``__shared__`` array boxed between red zones (out-of-bounds checks), on the same lines."""
    return _STATIC_SHARED.sub(_box_for, _SHARED_LIST.sub(_split_list, source))


def check_kernel_name(kernel: str) -> bool:
    return bool(_KERNEL_NAME.match(kernel))


def entry_source(source: str, kernel: str, box_shared: bool = False) -> str:
    """The translation unit g++ compiles: the learner's source, then the generated binding."""
    code = rewrite_extern_shared(source)
    if box_shared:
        code = box_static_shared(code)
    return (
        f'#line 1 "{SOURCE_NAME}"\n'
        + code
        + '\n#line 1 "gpudojo_entry"\n'
        + 'extern "C" void gpudojo_bind(const gpudojo::Arg* args, int n) {\n'
        + f"    gpudojo::bind(&{kernel}, args, n);\n"
        + "}\n"
    )
