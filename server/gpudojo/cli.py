"""The `gpudojo` command: the same services as the server, no server needed."""

from __future__ import annotations

import argparse
import getpass
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import __version__
from .gpu.models import DevicesResponse
from .gpu.replay import record
from .services import Services, Settings, local_services

GIB = 1024**3


def _fmt(value: object, unit: str = "", scale: float = 1.0, digits: int = 0) -> str:
    if value is None:
        return "n/a"
    return f"{float(value) / scale:.{digits}f}{unit}"  # type: ignore[arg-type]


def format_devices(d: DevicesResponse) -> str:
    """The probe as a readable table (what `gpudojo probe` prints)."""
    lines: list[str] = []
    h, hs = d.host, d.host_sample
    if not d.available:
        lines.append(f"No usable GPU: {d.reason}")
    else:
        source = "replayed recording" if d.source == "replay" else "live NVML"
        lines.append(
            f"{len(d.gpus)} GPU(s), driver {d.driver_version or 'n/a'}, "
            f"CUDA {d.cuda_driver_version or 'n/a'} ({source})"
        )
        header = f"{'#':>2}  {'name':<28} {'CC':>4} {'memory used/total':>18} {'util':>5} {'temp':>5} "
        header += f"{'power/limit':>12} {'PCIe':>6} {'MIG':>9} {'NVLink':>7} {'procs':>5}"
        lines.append(header)
        for g in d.gpus:
            s = g.sample
            mem = f"{_fmt(s and s.memory_used_bytes, '', GIB, 1)}/{_fmt(g.memory_total_bytes, ' GiB', GIB, 1)}"
            power = f"{_fmt(s and s.power_w)}/{_fmt(g.power_limit_w, ' W')}"
            pcie = f"{s.pcie_generation}x{s.pcie_width}" if s and s.pcie_generation and s.pcie_width else "n/a"
            mig = g.mig.current if not g.mig.instances else f"{len(g.mig.instances)} inst"
            links = f"{sum(link.active for link in g.nvlinks)}/{len(g.nvlinks)}" if g.nvlinks else "none"
            lines.append(
                f"{g.index:>2}  {g.name[:28]:<28} {g.compute_capability or 'n/a':>4} {mem:>18} "
                f"{_fmt(s and s.utilization_gpu_pct, '%'):>5} {_fmt(s and s.temperature_c, 'C'):>5} "
                f"{power:>12} {pcie:>6} {mig:>9} {links:>7} {len(s.processes) if s else 0:>5}"
            )
            unsupported = sorted(set(g.unsupported) | set(s.unsupported if s else []))
            if unsupported:
                lines.append(f"    not supported on this GPU: {', '.join(unsupported)}")
        if d.topology and len(d.topology.gpus) > 1:
            lines.append("Topology (as nvidia-smi topo -m):")
            lines.append("      " + " ".join(f"{'GPU' + str(i):>5}" for i in d.topology.gpus))
            for i, row in zip(d.topology.gpus, d.topology.matrix, strict=False):
                lines.append(f"{'GPU' + str(i):<6}" + " ".join(f"{c:>5}" for c in row))
    lines.append(
        f"Host: {h.cpu_model}, {h.cores_logical} logical cores, {_fmt(h.memory_total_bytes, ' GiB', GIB, 1)} memory "
        f"({hs.cpu_pct:.0f}% CPU, {_fmt(hs.memory_used_bytes, ' GiB', GIB, 1)} used)"
    )
    return "\n".join(lines)


def _probe(args: argparse.Namespace) -> int:
    services = local_services(gpu_replay_file=args.replay)
    probe = services.probe
    try:
        if args.record:
            inv = probe.inventory()
            if not inv.available:
                print(f"gpudojo probe: nothing to record: {inv.reason}", file=sys.stderr)
                return 2
            with open(args.record, "w") as out:
                n = record(probe.inventory, probe.gpu_samples, out, rate_hz=args.rate, count=args.count)
            print(f"Recorded {len(inv.gpus)} GPU(s), {n} samples at {args.rate:g} Hz to {args.record}")
            return 0
        while True:
            d = probe.devices()
            if args.json:
                print(d.model_dump_json(indent=None if args.watch else 2), flush=True)
            else:
                if args.watch:
                    print("\033[2J\033[H", end="")
                print(format_devices(d), flush=True)
            if not args.watch:
                break
            time.sleep(args.interval)
        if not d.available:
            print(f"gpudojo probe: {d.reason}", file=sys.stderr)
            return 2
        return 0
    except KeyboardInterrupt:
        return 0
    finally:
        services.shutdown()


def _paths(_: argparse.Namespace) -> int:
    settings = Settings()
    print(f"content: {settings.content_path}")
    print(f"labs: {settings.labs_path}")
    return 0


def _services(args: argparse.Namespace) -> Services:
    """The server's services, built for this command (--data-dir, --labs-dir as given)."""
    return local_services(data_dir=getattr(args, "data_dir", None), labs_dir=getattr(args, "labs_dir", None))


def _progress(args: argparse.Namespace) -> int:
    services = _services(args)
    data_dir = services.settings.data_path
    try:
        catalog = services.course.catalog(args.user)
    finally:
        services.shutdown()
    if args.json:
        print(catalog.model_dump_json(indent=2))
        return 0
    marks = {"not_started": " ", "in_progress": "~", "completed": "x"}
    items = catalog.lessons + catalog.labs + catalog.exercises
    done = sum(i.progress.status == "completed" for i in items)
    print(f"Progress of {args.user}: {done} of {len(items)} completed ({data_dir})")
    for item in items:
        p = item.progress
        quiz = f"  quiz {p.quiz_score}/{p.quiz_total}" if p.quiz_total else ""
        print(f"[{marks[p.status]}] {item.kind:<8} {item.order:>2}. {item.title} ({item.minutes} min){quiz}")
    for problem in catalog.problems:
        print(f"problem: {problem.file}: {problem.field or ''} {problem.message}", file=sys.stderr)
    return 0


def _kernel_source(path: str) -> tuple[str, str]:
    from pathlib import Path

    return Path(path).read_text(encoding="utf-8"), ("numba" if path.endswith(".py") else "cuda")


def _kernel(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from .kernels import notebook
    from .kernels.report import compile_text, run_text
    from .kernels.service import CompileFailure, KernelRequestError
    from .kernels.spec import SpecError

    try:
        source, language = _kernel_source(args.file)
    except OSError as err:
        print(f"gpudojo kernel: {err}", file=sys.stderr)
        return 2
    try:
        if args.kernel_command == "compile":
            report = notebook.compile_from_flags(source, language, args)
            print(
                report.result.model_dump_json(indent=2)
                if args.json
                else compile_text(report.result, sass=args.sass, ptx=args.ptx)
            )
            return 0 if report.result.ok else 1
        run = notebook.run_from_flags(source, language, args, mode=args.mode)
        print(run.result.model_dump_json(indent=2) if args.json else run_text(run.result))
        return {"passed": 0, "ran": 0, "not_run": 3}.get(run.result.status, 1)
    except (KernelRequestError, SpecError, ValidationError) as err:
        print(f"gpudojo kernel: {err}", file=sys.stderr)
        return 2
    except CompileFailure as err:
        print(f"gpudojo kernel: {err}", file=sys.stderr)
        return 1
    finally:
        notebook.services().shutdown()


def _add_kernel_parsers(sub: argparse._SubParsersAction) -> None:
    from .kernels.notebook import add_compiler_flags, add_memory_report_flag

    k = sub.add_parser("kernel", help="Compile a CUDA C (.cu) or numba (.py) kernel, or run it.")
    ksub = k.add_subparsers(dest="kernel_command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("file", help="kernel source: .cu for CUDA C, .py for numba")
    add_compiler_flags(common)
    common.add_argument("--json", action="store_true", help="print the full result as JSON")
    c = ksub.add_parser("compile", parents=[common], help="PTX, SASS, registers, shared memory, occupancy.")
    c.add_argument("--sass", action="store_true", help="print SASS with source lines")
    c.add_argument("--ptx", action="store_true", help="print the PTX")
    c.add_argument("--block-size", type=int, default=256, help="threads per block for the occupancy figure")
    c.set_defaults(func=_kernel)
    r = ksub.add_parser(
        "run",
        parents=[common],
        help="Launch once (checked), then time: GPU, numba simulator, or CUDA C in the CPU emulator.",
    )
    r.add_argument("--kernel", required=True, help="kernel name")
    r.add_argument("--grid", required=True, help="blocks, e.g. 16 or 4,4")
    r.add_argument("--block", required=True, help="threads per block, e.g. 256 or 16,16")
    r.add_argument(
        "--args",
        required=True,
        metavar="SPEC",
        help='e.g. "a:float32=2 x:float32[4096]=random y:float32[4096]=ones:out n:int32=4096"',
    )
    r.add_argument("--expect", help='NumPy expectations, e.g. "y=a*x+y"')
    r.add_argument("--mode", choices=["auto", "gpu", "simulator", "cpu-emulation"], default="auto")
    add_memory_report_flag(r)
    r.set_defaults(func=_kernel)


def _parse_value(text: str):
    """A --set value as the manifest will check it: true/false, numbers, else text."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _format_run(run) -> str:
    took = f"{(run.ended_at or time.time()) - run.started_at:.1f} s" if run.started_at else "-"
    params = " ".join(f"{k}={v}" for k, v in run.params.items())
    return f"{run.id}  {run.status:<10} {run.lab or run.title:<24} {run.backend:<5} {took:>8}  {params}"


def _print_event(event: dict) -> None:
    if event["type"] == "log":
        rank = "launcher" if event["rank"] is None else f"rank {event['rank']}"
        print(f"[{rank}] {event['text']}", file=sys.stderr if event["stream"] == "stderr" else sys.stdout, flush=True)
    elif event["type"] == "truncated":
        print(f"[gpudojo] {event['message']}", flush=True)


def _report_run(run) -> None:
    print(f"{run.id}: {run.status} ({run.backend}, {run.device_mode}) exit code {run.exit_code}")
    print(f"  {run.mode_note}")
    if run.root_cause:
        rc = run.root_cause
        print(f"  root cause: rank {rc.rank}: {rc.exception}")
        if rc.traceback:
            print("    " + rc.traceback.strip().replace("\n", "\n    "))
    for check in run.checks:
        mark = {True: "PASS", False: "FAIL", None: "n/a "}[check.ok]
        print(f"  [{mark}] {check.title}" + (f" ({check.detail})" if check.detail else ""))


ENGINE_OPTIONS = {
    # CLI flag -> the where field it sets, per engine (argparse leaves unset flags None).
    "torchrun-nodes": {
        "nodes": "nnodes",
        "min_nodes": "min_nodes",
        "host": "host",
        "same_machine": "same_machine",
        "max_restarts": "max_restarts",
        "join_timeout": "join_timeout_s",
    },
    "slurm": {
        "nodes": "nodes",
        "gpus_per_node": "gpus_per_node",
        "time_limit": "time_limit_min",
        "partition": "partition",
        "account": "account",
    },
    "kubernetes": {
        "nodes": "nodes",
        "gpus_per_node": "gpus_per_node",
        "flavor": "flavor",
        "namespace": "namespace",
        "image": "image",
        "max_restarts": "max_restarts",
    },
}


def _where(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """The run's `where` from --engine and its options; ValueError naming a flag that does not
    apply to the engine, or a bad value."""
    from pydantic import TypeAdapter, ValidationError

    from .runs.models import Where

    engine = args.engine or "local"
    options = ENGINE_OPTIONS.get(engine, {})
    given = {flag: getattr(args, flag) for flag in {f for o in ENGINE_OPTIONS.values() for f in o}}
    stray = [
        f"--{flag.replace('_', '-')}" for flag, value in given.items() if value is not None and flag not in options
    ]
    if stray:
        raise ValueError(f"{', '.join(stray)} does not apply to --engine {engine}")
    doc = {"engine": engine, **{options[f]: v for f, v in given.items() if v is not None}}
    try:
        return TypeAdapter(Where).validate_python(doc)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        msg = first["msg"].removeprefix("Value error, ")
        raise ValueError(f"{'.'.join(str(p) for p in first['loc'][1:])}: {msg}") from None


def _lab_params(args: argparse.Namespace) -> dict:
    params = {}
    for item in args.set:
        name, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--set {item!r}: expected NAME=VALUE")
        params[name] = _parse_value(value)
    return params


def _manifest(args: argparse.Namespace, svc) -> int:  # type: ignore[no-untyped-def]
    """Print (or write into --output-dir) what the engine would submit, without running it."""
    from .errors import ServiceError
    from .runs.models import LabRunRequest

    try:
        req = LabRunRequest(lab=args.lab, params=_lab_params(args), where=_where(args))
        files = svc.preview(req)
    except (ValueError, ServiceError) as err:
        print(f"gpudojo lab manifest: {err}", file=sys.stderr)
        return 2
    if args.output_dir:
        out = Path(args.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        for f in files:
            (out / f.name).write_text(f.content, encoding="utf-8")
            print(out / f.name)
        return 0
    yaml_docs = [f for f in files if f.name.endswith((".yaml", ".yml"))]
    for i, f in enumerate(yaml_docs or files):
        if yaml_docs:
            sys.stdout.write(("---\n" if i else "") + f.content)
        else:
            sys.stdout.write(f"# ===== {f.name}: {f.title}\n{f.content}")
    return 0


def _lab(args: argparse.Namespace) -> int:
    from .errors import ServiceError
    from .runs.models import LabRunRequest, SweepSpec

    services = _services(args)
    services.recover_runs()
    svc = services.runs
    try:
        if args.lab_command == "list":
            listing = svc.labs()
            for lab in listing.labs:
                params = ", ".join(f"{p.name}={p.default}" for p in lab.parameters)
                print(f"{lab.id:<26} {lab.launcher:<8} needs {lab.needs:<9} {lab.title}")
                print(f"{'':<26} {params}")
            for problem in listing.problems:
                print(f"problem: {problem.lab}: {problem.message}", file=sys.stderr)
            return 0
        if args.lab_command == "manifest":
            return _manifest(args, svc)
        try:
            params = _lab_params(args)
            where = _where(args)
        except ValueError as err:
            print(f"gpudojo lab run: {err}", file=sys.stderr)
            return 2
        sweep = None
        if args.sweep:
            name, _, values = args.sweep.partition("=")
            sweep = SweepSpec(param=name, values=[_parse_value(v) for v in values.split(",") if v])
        try:
            runs = svc.submit(
                LabRunRequest(lab=args.lab, params=params, sweep=sweep, where=where),
                user=getpass.getuser(),
                gpus=services.gpu_count_now(),
            )
        except ServiceError as err:
            print(f"gpudojo lab run: {err}", file=sys.stderr)
            return 2
        for run in runs:
            _print_engine_start(svc, run)
        try:
            for run in runs:
                if args.follow:
                    _, _, unsubscribe = svc.subscribe(run.id, -1, _print_event)
                final = svc.wait(run.id)
                if args.follow:
                    unsubscribe()
                _report_run(final)
        except KeyboardInterrupt:
            for run in runs:
                svc.cancel(run.id)
            print("cancelled", file=sys.stderr)
            return 130
        return 0 if all(svc.get(r.id).status == "succeeded" for r in runs) else 1
    finally:
        services.shutdown()


def _runs(args: argparse.Namespace) -> int:
    from .errors import ServiceError

    services = _services(args)
    services.recover_runs()
    svc = services.runs
    try:
        if args.runs_command in (None, "list"):
            for run in svc.list(lab=getattr(args, "lab", None), limit=getattr(args, "limit", 20)):
                print(_format_run(run))
            return 0
        try:
            run = svc.get(args.id) if args.runs_command == "show" else svc.cancel(args.id)
        except ServiceError as err:
            print(f"gpudojo runs: {err}", file=sys.stderr)
            return 2
        if args.runs_command == "show" and args.json:
            print(run.model_dump_json(indent=2))
        else:
            _report_run(run)
        return 0
    finally:
        services.shutdown()


_OUTCOME_MARK = {"passed": "PASS", "failed": "FAIL", "skipped": "SKIP", "pending": "...."}


def format_attempt(attempt) -> str:  # type: ignore[no-untyped-def]
    """A check attempt as a learner reads it: one line per requirement, reasons and figures."""
    mode = "GPU" if attempt.mode == "gpu" else "CPU variant (requirements that need a GPU are skipped)"
    lines = [f"{attempt.exercise}: {attempt.passed}/{attempt.applicable} applicable requirements passed ({mode})"]
    for r in attempt.results:
        lines.append(f"  [{_OUTCOME_MARK[r.outcome]}] {r.id}: {r.statement}")
        if r.message:
            lines.append(f"         {r.message}")
        for f in r.figures:
            unit = f" {f.unit}" if f.unit else ""
            note = f" ({f.note})" if f.note else ""
            lines.append(f"         {f.name}: {f.value}{unit}{note}")
    if attempt.error:
        lines.append(f"  {attempt.error}")
    if attempt.sandbox == "none":
        lines.append(f"  Not sandboxed: {attempt.sandbox_reason}. Your code ran with this account's rights.")
    if attempt.completed:
        lines.append("  Completed: every applicable requirement passed.")
    return "\n".join(lines)


def _exercise(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .errors import ServiceError

    services = local_services(data_dir=args.data_dir, content_dir=args.content_dir, root_dir=args.root_dir)
    svc = services.exercises
    try:
        if args.exercise_command == "list":
            progress = services.course.store.entries(args.user)
            marks = {"not_started": " ", "in_progress": "~", "completed": "x"}
            for meta in svc.list():
                status = progress.get(("exercise", meta.id))
                mark = marks[status.status] if status else " "
                gpu = sum(r.gpu for r in meta.requirements)
                print(
                    f"[{mark}] {meta.order:>2}. {meta.id:<30} {meta.title} "
                    f"({len(meta.requirements)} requirements, {gpu} need a GPU)"
                )
            return 0
        try:
            if args.exercise_command == "start":
                started = svc.start(args.user, args.id, reset=args.reset)
                ws = started.workspace
                if started.kept_as:
                    print(f"Your previous copy was moved to {started.kept_as}")
                verb = "Copied the starters into" if started.created else "Your copy is already in"
                print(f"{verb} {ws.path}/ (open {ws.main})")
                return 0
            gpus = services.gpu_count_now()
            folder = Path(args.dir).resolve() if args.dir else None
            svc.check(args.user, args.id, gpus, folder=folder)
            attempt = svc.wait(args.user, args.id)
        except ServiceError as err:
            print(f"gpudojo exercise {args.exercise_command}: {err}", file=sys.stderr)
            return 2
        assert attempt is not None
        print(attempt.model_dump_json(indent=2) if args.json else format_attempt(attempt))
        return 0 if attempt.completed else 1
    finally:
        services.shutdown()


def _add_exercise_parsers(sub: argparse._SubParsersAction) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--user", default=getpass.getuser(), help="Whose progress (default: this account).")
    common.add_argument("--data-dir", help="gpudojo's data dir (default: <jupyter data dir>/gpudojo, the server's)")
    common.add_argument("--content-dir", help="course content folder (default: the packaged one)")
    common.add_argument("--root-dir", help="the workspace the copies go in (default: this folder)")
    ex = sub.add_parser("exercise", help="List exercises, start one (copy the starters), check your copy.")
    esub = ex.add_subparsers(dest="exercise_command", required=True)
    esub.add_parser("list", parents=[common], help="Exercises with your progress.").set_defaults(func=_exercise)
    st = esub.add_parser("start", parents=[common], help="Copy the starters into gpudojo-exercises/<id>/.")
    st.add_argument("id")
    st.add_argument("--reset", action="store_true", help="copy them again; the old folder is kept beside it")
    st.set_defaults(func=_exercise)
    ck = esub.add_parser(
        "check", parents=[common], help="Run the hidden checks; exit 0 when every applicable requirement passed."
    )
    ck.add_argument("id")
    ck.add_argument("--json", action="store_true", help="print the attempt as JSON")
    ck.add_argument("--dir", help="check this folder instead of your copy (e.g. an exercise's solution)")
    ck.set_defaults(func=_exercise)


def _answer(command: str, service: Any, call: Callable[[], Any], render: Callable[[dict], str], as_json: bool) -> int:
    """Print a service's answer as the API's JSON or as text; a refusal is one line on stderr
    and exit 2 (the profile and memory commands)."""
    from pydantic import ValidationError

    from .errors import ServiceError

    try:
        result = call()
        print(result.model_dump_json(indent=2) if as_json else render(result.model_dump()))
        return 0
    except ServiceError as err:
        print(f"gpudojo {command}: {err}", file=sys.stderr)
        return 2
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'input'}: {e['msg']}" for e in err.errors())
        print(f"gpudojo {command}: {problems}", file=sys.stderr)
        return 2
    finally:
        service.close()


def _profile(args: argparse.Namespace) -> int:
    from .profile.report import render_diff_text, render_text
    from .profile.service import ProfileService, trace_id_for

    service = ProfileService(Settings(data_dir=args.data_dir or "").data_path, Path("/"))
    command = f"profile {args.profile_command}"
    if args.profile_command == "summary":
        return _answer(
            command, service, lambda: service.summary_alone(trace_id_for(args.trace)), render_text, args.json
        )
    return _answer(
        command,
        service,
        lambda: service.diff(trace_id_for(args.a), trace_id_for(args.b)),
        render_diff_text,
        args.json,
    )


def _add_profile_parsers(sub: argparse._SubParsersAction) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-dir", help="gpudojo's data dir, where analyses are cached (default: the server's)")
    common.add_argument("--json", action="store_true", help="print the analysis as JSON (the API's shape)")
    prof = sub.add_parser("profile", help="Analyse torch.profiler traces: a summary with findings, or two compared.")
    psub = prof.add_subparsers(dest="profile_command", required=True)
    sm = psub.add_parser(
        "summary", parents=[common], help="Steps, breakdown, findings and top operators of a trace (.json, .json.gz)."
    )
    sm.add_argument("trace", help="a trace file, or a run's trace id (run:<run id>:rank0.trace.json)")
    sm.set_defaults(func=_profile)
    df = psub.add_parser("diff", parents=[common], help="Compare two traces: before (A) and after (B).")
    df.add_argument("a")
    df.add_argument("b")
    df.set_defaults(func=_profile)


def _memory(args: argparse.Namespace) -> int:
    from .memory.models import EstimateRequest
    from .memory.report import render_diff_text, render_estimate_text, render_text
    from .memory.service import MemoryService
    from .profile.service import trace_id_for as capture_id_for  # the same id scheme: run:... or file:<path>

    # Root "/" as for profiles: any file the user names is theirs to read.
    service = MemoryService(Settings(data_dir=args.data_dir or "").data_path, Path("/"))
    command = f"memory {args.memory_command}"
    if args.memory_command == "summary":
        return _answer(
            command, service, lambda: service.analysis(capture_id_for(args.snapshot)), render_text, args.json
        )
    if args.memory_command == "diff":
        return _answer(
            command,
            service,
            lambda: service.diff(capture_id_for(args.a), capture_id_for(args.b)),
            render_diff_text,
            args.json,
        )
    if args.memory_command == "transformer":
        from .memory.models import TransformerEstimateRequest
        from .memory.report import render_transformer_text

        shape = {
            k: getattr(args, k) for k in TransformerEstimateRequest.model_fields if getattr(args, k, None) is not None
        }
        return _answer(
            command,
            service,
            lambda: service.estimate_transformer(TransformerEstimateRequest(**shape)),
            render_transformer_text,
            args.json,
        )
    fields = {k: getattr(args, k) for k in EstimateRequest.model_fields if getattr(args, k, None) is not None}
    return _answer(
        command,
        service,
        lambda: service.estimate(EstimateRequest(**fields)),
        render_estimate_text,
        args.json,
    )


def _count(text: str) -> int:
    """A count as people write big ones: 7000000, 7e9 or 1.3e9."""
    try:
        return int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not value.is_integer():
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        return int(value)


def _add_memory_parsers(sub: argparse._SubParsersAction) -> None:
    from typing import get_args

    from .memory.models import EstimateRequest

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-dir", help="gpudojo's data dir, where analyses are cached (default: the server's)")
    common.add_argument("--json", action="store_true", help="print the result as JSON (the API's shape)")
    mem = sub.add_parser("memory", help="Read memory snapshots: peak and OOMs, two compared, or an estimate.")
    msub = mem.add_subparsers(dest="memory_command", required=True)
    sm = msub.add_parser(
        "summary",
        parents=[common],
        help="Peak with its categories and top frames, OOMs and notes of a snapshot (.pickle) or CPU capture.",
    )
    sm.add_argument("snapshot", help="a snapshot file, or a run's capture id (run:<run id>:<file name>)")
    sm.set_defaults(func=_memory)
    df = msub.add_parser("diff", parents=[common], help="Compare two snapshots' peaks: before (A) and after (B).")
    df.add_argument("a")
    df.add_argument("b")
    df.set_defaults(func=_memory)
    # The same fields, bounds and choices as POST memory/estimate: its model checks them.
    f = EstimateRequest.model_fields
    es = msub.add_parser("estimate", parents=[common], help="What training a model should take, by component.")
    es.add_argument("--parameters", type=_count, required=True, help=f.get("parameters").description)
    for name in ("optimizer", "precision"):
        es.add_argument(f"--{name}", choices=get_args(f[name].annotation), help=f"default {f[name].default}")
    es.add_argument("--zero-stage", dest="zero_stage", type=int, choices=get_args(f["zero_stage"].annotation))
    es.add_argument("--data-parallel", dest="data_parallel", type=int, help="ranks (default 1)")
    es.add_argument("--micro-batch", dest="micro_batch", type=int, help="samples per rank per step (default 1)")
    es.add_argument(
        "--activation-bytes-per-sample",
        dest="activation_bytes_per_sample",
        type=_count,
        help=f["activation_bytes_per_sample"].description,
    )
    es.add_argument("--checkpointing", action="store_true", default=None, help="activation checkpointing")
    es.add_argument("--layers", type=int, help=f["layers"].description)
    es.add_argument(
        "--measured-peak-bytes", dest="measured_peak_bytes", type=_count, help=f["measured_peak_bytes"].description
    )
    es.set_defaults(func=_memory)
    _add_transformer_parser(msub, common)


def _add_transformer_parser(msub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """`gpudojo memory transformer`: POST memory/estimate-transformer's fields as flags."""
    from typing import get_args

    from .memory.models import TransformerEstimateRequest

    f = TransformerEstimateRequest.model_fields
    tf = msub.add_parser(
        "transformer",
        parents=[common],
        help="A transformer's memory per GPU, parameters and FLOPs per token, from its shape and parallel layout.",
    )
    for name in ("layers", "hidden", "heads", "sequence", "vocab"):
        tf.add_argument(f"--{name}", type=_count, required=True, help=f[name].description)
    for name in ("micro_batch", "data_parallel", "tensor_parallel", "pipeline_parallel"):
        tf.add_argument(f"--{name.replace('_', '-')}", dest=name, type=_count, help=f[name].description)
    for name in ("precision", "optimizer", "recompute"):
        tf.add_argument(f"--{name}", choices=get_args(f[name].annotation), help=f"default {f[name].default}")
    tf.add_argument("--zero-stage", dest="zero_stage", type=int, choices=get_args(f["zero_stage"].annotation))
    for name in ("learned_positions", "sequence_parallel", "flash_attention"):
        tf.add_argument(f"--{name.replace('_', '-')}", dest=name, action="store_true", default=None)
    tf.add_argument("--no-dropout", dest="dropout", action="store_false", default=None, help="no dropout layers")
    tf.set_defaults(func=_memory)


def _print_engine_start(svc, run) -> None:  # type: ignore[no-untyped-def]
    """What a learner must do or know once a run beyond this machine is submitted."""
    if run.engine == "local":
        return
    print(f"{run.id}: {run.mode_note}", file=sys.stderr)
    for artifact in run.artifacts:
        if artifact.name == "join-command.txt":
            sys.stderr.write(svc.artifact(run.id, artifact.name).content or "")
    names = ", ".join(a.name for a in run.artifacts)
    print(f"generated files: {svc.folder(run.id).artifacts_dir} ({names})", file=sys.stderr)


def _add_engine_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engine", choices=["local", "torchrun-nodes", "slurm", "kubernetes"], help="where to run it")
    p.add_argument("--nodes", type=int, help="nodes (torchrun-nodes: the most, when elastic)")
    p.add_argument("--min-nodes", type=int, help="torchrun-nodes, elastic: start with at least this many")
    p.add_argument("--host", help="torchrun-nodes: this machine's address as the other nodes reach it")
    p.add_argument(
        "--same-machine",
        action="store_const",
        const=True,
        help="torchrun-nodes: every node on this machine (practice); --host may then be loopback",
    )
    p.add_argument("--max-restarts", type=int, help="torchrun-nodes, kubernetes: restarts after a failure")
    p.add_argument("--join-timeout", type=int, help="torchrun-nodes: seconds the rendezvous waits for the nodes")
    p.add_argument("--gpus-per-node", type=int, help="slurm, kubernetes: GPUs each node asks for (0: CPUs, gloo)")
    p.add_argument("--time-limit", type=int, help="slurm: minutes (#SBATCH --time)")
    p.add_argument("--partition", help="slurm: partition")
    p.add_argument("--account", help="slurm: account")
    p.add_argument("--flavor", choices=["trainjob", "pytorchjob", "job"], help="kubernetes: the job's kind")
    p.add_argument("--namespace", help="kubernetes: namespace")
    p.add_argument("--image", help="kubernetes: container image with torch")


def _node(args: argparse.Namespace) -> int:
    from .runs.node_join import WAIT_FOR_HOST_S, JoinError, join

    wait_s = WAIT_FOR_HOST_S if args.wait is None else args.wait
    try:
        return join(args.address, args.token, local_addr=args.local_addr, wait_s=wait_s)
    except JoinError as err:
        print(f"gpudojo node join: {err}", file=sys.stderr)
        return 2


def _add_run_parsers(sub: argparse._SubParsersAction) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-dir", help="gpudojo's data dir (default: <jupyter data dir>/gpudojo, the server's)")
    common.add_argument("--labs-dir", help="labs folder (default: the packaged one)")
    lab = sub.add_parser("lab", help="List the labs, or run one (torchrun or python) and wait for it.")
    lsub = lab.add_subparsers(dest="lab_command", required=True)
    ls = lsub.add_parser("list", parents=[common], help="Labs with their parameters.")
    ls.set_defaults(func=_lab)
    run = lsub.add_parser("run", parents=[common], help="Run a lab; exit 0 when it succeeds.")
    run.add_argument("lab", help="lab id, e.g. lab-03-ddp")
    run.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a parameter value")
    run.add_argument("--sweep", metavar="NAME=V1,V2,...", help="one run per value, e.g. nproc=1,2,4")
    run.add_argument("--follow", action="store_true", help="print every rank's log lines as they come")
    _add_engine_options(run)
    run.set_defaults(func=_lab)
    man = lsub.add_parser(
        "manifest",
        parents=[common],
        help="Print what an engine would submit for a lab (Kubernetes YAML, a Slurm batch script, commands).",
    )
    man.add_argument("lab", help="lab id, e.g. lab-03-ddp")
    man.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a parameter value")
    man.add_argument("--output-dir", help="write the files here instead of printing them")
    _add_engine_options(man)
    man.set_defaults(func=_lab)
    node = sub.add_parser("node", help="Be one node of a torchrun-nodes run another machine's gpudojo started.")
    nsub = node.add_subparsers(dest="node_command", required=True)
    nj = nsub.add_parser("join", help="Join the run: the command its run view gives, with the host and token.")
    nj.add_argument("address", help="HOST:PORT of the run's relay")
    nj.add_argument("--token", required=True, help="the run's token (in the join command)")
    nj.add_argument(
        "--local-addr", help="this node's address as the others reach it (default: the one facing the host)"
    )
    nj.add_argument(
        "--wait",
        type=float,
        metavar="SECONDS",
        help="how long to keep trying a host whose relay is not listening yet, as while its run is queued "
        "(default: 120, as long as a run waits for its nodes)",
    )
    nj.set_defaults(func=_node)
    runs = sub.add_parser("runs", help="Runs of labs and scripts (the server's too): list, show, cancel.")
    rsub = runs.add_subparsers(dest="runs_command")
    rl = rsub.add_parser("list", parents=[common], help="Newest first.")
    rl.add_argument("--lab")
    rl.add_argument("--limit", type=int, default=20)
    for name, text in (("show", "A run: status, root cause, checks."), ("cancel", "Stop a run and all its processes.")):
        p = rsub.add_parser(name, parents=[common], help=text)
        p.add_argument("id")
        if name == "show":
            p.add_argument("--json", action="store_true")
    runs.set_defaults(func=_runs, data_dir=None, labs_dir=None)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpudojo", description="GPU workbench and course tools.")
    parser.add_argument("--version", action="version", version=f"gpudojo {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("probe", help="Show GPUs and the host; exit 0 with GPUs, 2 without.")
    p.add_argument("--json", action="store_true", help="Print the devices document as JSON.")
    p.add_argument("--watch", action="store_true", help="Print again every --interval seconds.")
    p.add_argument("--interval", type=float, default=1.0, help="Seconds between prints with --watch.")
    p.add_argument("--record", metavar="FILE", help="Write an NVML recording (JSON lines) to FILE.")
    p.add_argument("--count", type=int, default=60, help="Samples to record (default 60).")
    p.add_argument("--rate", type=float, default=4.0, help="Recording rate in Hz (default 4).")
    p.add_argument("--replay", metavar="FILE", help="Read a recording instead of live NVML.")
    p.set_defaults(func=_probe)

    p = sub.add_parser("progress", help="Course progress: what is done, in progress, and quiz scores.")
    p.add_argument("--user", default=getpass.getuser(), help="Whose progress (default: this account).")
    p.add_argument("--data-dir", help="gpudojo's data dir (default: <jupyter data dir>/gpudojo).")
    p.add_argument("--labs-dir", help="labs folder (default: the packaged one)")
    p.add_argument("--json", action="store_true", help="Print the catalog with progress as JSON.")
    p.set_defaults(func=_progress)

    p = sub.add_parser("paths", help="Where the course content and labs are read from.")
    p.set_defaults(func=_paths)
    _add_kernel_parsers(sub)
    _add_run_parsers(sub)
    _add_exercise_parsers(sub)
    _add_profile_parsers(sub)
    _add_memory_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "rate", 1.0) <= 0 or getattr(args, "count", 1) <= 0:
        print("gpudojo: --rate and --count must be positive", file=sys.stderr)
        return 2
    return int(args.func(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
