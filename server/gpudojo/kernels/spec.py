"""The short text form of kernel arguments and expectations, for the CLI and ``%%cuda``.

Arguments, separated by spaces::

    a:float32=2                 a scalar
    x:float32[4096]=random      an array: dtype, shape ([4,64] for 2-D), initialiser
    y:float32[4096]=ones:out    an output array (read back and checked)
    h:int32[256]=full(7)        init zeros | ones | arange | random | full(VALUE)

Expectations, separated by semicolons: ``y=a*x+y; out=values.sum()``.
Text starting with ``[`` is taken as the JSON list the REST API uses instead.
"""

from __future__ import annotations

import json
import re

from pydantic import TypeAdapter

from .models import ArrayArg, KernelArg, ScalarArg

_ARG = re.compile(r"^(?P<name>[A-Za-z_]\w*):(?P<dtype>\w+)(?:\[(?P<shape>[\d, ]+)\])?=(?P<init>[^:\s]+)(?P<out>:out)?$")
_FULL = re.compile(r"^full\((?P<value>[^)]+)\)$")
_ARGS = TypeAdapter(list[KernelArg])


class SpecError(ValueError):
    """Argument text that does not parse; the message says which item and why."""


def parse_args(text: str) -> list[ArrayArg | ScalarArg]:
    text = text.strip()
    if text.startswith("["):
        try:
            return _ARGS.validate_json(text)
        except ValueError as err:
            raise SpecError(f"argument JSON: {err}") from err
    args: list[ArrayArg | ScalarArg] = []
    for item in text.split():
        m = _ARG.match(item)
        if not m:
            raise SpecError(f"{item!r}: expected name:dtype=value or name:dtype[shape]=init[:out]")
        try:
            if m["shape"] is None:
                if m["out"]:
                    raise SpecError(f"{item!r}: a scalar cannot be an output")
                args.append(ScalarArg(name=m["name"], dtype=m["dtype"], value=float(m["init"])))
                continue
            shape = [int(n) for n in m["shape"].replace(" ", "").split(",") if n]
            init, value = m["init"], 0.0
            if full := _FULL.match(init):
                init, value = "full", float(full["value"])
            args.append(
                ArrayArg(name=m["name"], dtype=m["dtype"], shape=shape, init=init, value=value, output=bool(m["out"]))
            )
        except SpecError:
            raise
        except ValueError as err:
            first = err.errors()[0]["msg"] if hasattr(err, "errors") else str(err)
            raise SpecError(f"{item!r}: {first}") from err
    return args


def parse_expected(text: str | None) -> dict[str, str]:
    if not text:
        return {}
    out = {}
    for part in text.split(";"):
        if not part.strip():
            continue
        name, sep, expr = part.partition("=")
        if not sep or not name.strip().isidentifier() or not expr.strip():
            raise SpecError(f"{part.strip()!r}: expected output=expression")
        out[name.strip()] = expr.strip()
    return out


def compile_options(
    opt_level: int = 3, max_registers: int | None = None, fast_math: bool = False, defines: list[str] | None = None
) -> dict:
    """CompileOptions fields from command-line style flags (``-D NAME=VALUE`` as a list)."""
    return {
        "opt_level": opt_level,
        "max_registers": max_registers,
        "fast_math": fast_math,
        "defines": dict(d.partition("=")[::2] for d in defines or []),
    }


def dumps_args(args: list[ArrayArg | ScalarArg]) -> str:
    return json.dumps([a.model_dump() for a in args])
