"""Lab manifests for the run service: load and validate them, and check parameter values.

A malformed manifest is reported and skipped, never fatal. Parameter values from a client
are checked against the manifest: an unknown name, a wrong type or an out-of-range value is
a ParamError naming the parameter and saying why.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from .models import LabManifest, LabProblem, ParamSpec, ParamValue


class ParamError(ValueError):
    """Parameter values the manifest does not allow; ``errors`` is [{param, message}]."""

    def __init__(self, errors: list[dict[str, str]]) -> None:
        super().__init__("; ".join(f"{e['param']}: {e['message']}" for e in errors))
        self.errors = errors


@dataclass(frozen=True)
class Lab:
    manifest: LabManifest
    folder: Path

    @property
    def entry(self) -> Path:
        return self.folder / self.manifest.entry


def load_labs(labs_root: Path) -> tuple[dict[str, Lab], list[LabProblem]]:
    labs: dict[str, Lab] = {}
    problems: list[LabProblem] = []
    for path in sorted(labs_root.glob("*/lab.toml")):
        folder = path.parent.resolve()
        try:
            manifest = LabManifest.model_validate(tomllib.loads(path.read_text(encoding="utf-8")))
        except (OSError, tomllib.TOMLDecodeError) as err:
            problems.append(LabProblem(lab=folder.name, message=f"lab.toml: {err}"))
            continue
        except ValidationError as err:
            first = err.errors(include_url=False)[0]
            where = ".".join(str(p) for p in first["loc"])
            problems.append(LabProblem(lab=folder.name, message=f"lab.toml: {where}: {first['msg']}"))
            continue
        entry = (folder / manifest.entry).resolve()
        if entry.parent != folder or not entry.is_file():
            problems.append(LabProblem(lab=manifest.id, message=f"entry {manifest.entry} is not a file of the lab"))
            continue
        bad = [p.name for p in manifest.parameters if _default_problem(p)]
        if bad:
            problems.append(LabProblem(lab=manifest.id, message=f"parameters with bad defaults: {', '.join(bad)}"))
            continue
        labs[manifest.id] = Lab(manifest, folder)
    return labs, problems


def _default_problem(spec: ParamSpec) -> str | None:
    try:
        _coerce(spec, spec.default)
    except ValueError as err:
        return str(err)
    return None


def _coerce(spec: ParamSpec, value: ParamValue) -> ParamValue:
    if spec.type == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"expected true or false, got {value!r}")
        return value
    if spec.type in ("int", "float") and isinstance(value, float) and not math.isfinite(value):
        # NaN compares false with both bounds, so it would pass them; JSON's NaN and Infinity and
        # the CLI's "nan" and "inf" all arrive here as floats.
        raise ValueError(f"expected a finite number, got {value!r}")
    if spec.type == "int":
        if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
            raise ValueError(f"expected a whole number, got {value!r}")
        value = int(value)
    elif spec.type == "float":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"expected a number, got {value!r}")
        try:
            value = float(value)
        except OverflowError:  # a JSON integer of hundreds of digits
            raise ValueError("expected a finite number, got one too large for a float") from None
    elif spec.type == "choice":
        choices = spec.choices or []
        if value not in choices or isinstance(value, bool) != any(isinstance(c, bool) for c in choices if c == value):
            raise ValueError(f"expected one of {', '.join(map(str, choices))}; got {value!r}")
        return value
    if spec.min is not None and value < spec.min:
        raise ValueError(f"{value} is below the minimum, {spec.min:g}")
    if spec.max is not None and value > spec.max:
        raise ValueError(f"{value} is above the maximum, {spec.max:g}")
    return value


def validate_params(manifest: LabManifest, values: dict[str, ParamValue]) -> dict[str, ParamValue]:
    """Every parameter's value: the client's where given (checked), the default otherwise."""
    specs = {p.name: p for p in manifest.parameters}
    errors = [
        {"param": name, "message": f"{manifest.id} has no parameter {name!r} (it has: {', '.join(specs) or 'none'})"}
        for name in values
        if name not in specs
    ]
    out: dict[str, ParamValue] = {}
    for name, spec in specs.items():
        try:
            out[name] = _coerce(spec, values[name]) if name in values else spec.default
        except ValueError as err:
            errors.append({"param": name, "message": str(err)})
    if errors:
        raise ParamError(errors)
    return out


def script_args(manifest: LabManifest, params: dict[str, ParamValue]) -> list[str]:
    """The entry script's arguments: ``--name value`` each, the name as the manifest spells
    it (bools as ``--name``/``--no-name``, what argparse.BooleanOptionalAction reads), except
    ``nproc``, which goes to torchrun."""
    args: list[str] = []
    for spec in manifest.parameters:
        if spec.name == "nproc" and manifest.launcher == "torchrun":
            continue
        value = params[spec.name]
        if isinstance(value, bool):
            args.append(f"--{spec.name}" if value else f"--no-{spec.name}")
        else:
            args += [f"--{spec.name}", str(value)]
    return args
