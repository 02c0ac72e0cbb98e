"""Checks for the distributed-gpu-training exercise.

Every check launches the learner's ddp_train.py with torchrun (two workers; gloo on the CPU),
through ddp_hook.py: the hook runs the learner's script in the worker process and records what
each rank did (torch.save and os.replace calls, set_epoch, the process group's backend, DDP's
devices, a hash of the final parameters), so the checks look at behaviour, not at text. The
seed, dataset size and batch size are chosen here, anew for every check run.

- the uninterrupted run (once, shared): steps per epoch, set_epoch, loss, equal parameters,
  who saved and how, the checkpoint's contents, the metrics lines;
- the resume: a run stopped by --max-steps, then the same command again; every rank must
  call torch.load and make exactly the optimizer steps left (the hook counts them), so a run
  that trains again from step 0 and prints only the later steps fails though its losses match;
- the elastic restart: the hook holds one rank after a few steps, this check SIGKILLs it
  from outside, and torchrun (--max-restarts 2) restarts the workers; the same proof of a load;
- the scaling report: python scaling.py --json beside a stand-in ddp_train.py that prints
  throughputs chosen here, which the report must carry (made-up figures do not match);
- on two or more GPUs: NCCL, one GPU per rank.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import re
import signal
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gpudojo.worker.checkkit import fail, requirement

HERE = Path(__file__).resolve().parent
HOOK = HERE / "ddp_hook.py"

# The job every check trains: chosen here, the same for the uninterrupted run and the runs
# compared with it.
_rng = random.Random()
SEED = _rng.randint(1, 10**6)
SAMPLES = _rng.randint(180, 260)
BATCH = _rng.choice([12, 16])
EPOCHS = 4
EVERY = 3  # --ckpt-every
WORLD = 2
PER_RANK = -(-SAMPLES // WORLD)  # DistributedSampler pads the epoch to a multiple of the world size
STEPS_PER_EPOCH = -(-PER_RANK // BATCH)
TOTAL_STEPS = EPOCHS * STEPS_PER_EPOCH
# The first checkpoint strictly inside epoch 1 (an epoch is at least 6 steps here), and the
# point where the resume check stops a run and the elastic check kills a rank: two steps on,
# so the last checkpoint before it is mid-epoch and two steps must be redone.
MID_CKPT = (STEPS_PER_EPOCH // EVERY + 1) * EVERY
INTERRUPT = MID_CKPT + 2
JOB_ARGS = ["--epochs", EPOCHS, "--samples", SAMPLES, "--batch-size", BATCH, "--seed", SEED]
JOB_ARGS += ["--ckpt-every", EVERY, "--json"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tolerance(gpus: int) -> float:
    return 1e-6 if gpus < 2 else 1e-4


# --- running the learner's script under torchrun ----------------------------------------------


@dataclass
class Run:
    """One torchrun launch: its result, rank 0's metrics lines per attempt, the hook's events."""

    command: str
    result: object
    attempts: dict[int, list[dict]] = field(default_factory=dict)
    bad_lines: list[str] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)

    def of(self, kind: str, **match) -> list[dict]:
        return [e for e in self.events if e["event"] == kind and all(e.get(k) == v for k, v in match.items())]

    @property
    def last_attempt(self) -> int:
        return max(self.attempts) if self.attempts else 0

    def ended_ok(self) -> None:
        res = self.result
        if res.returncode != 0:
            fail(f"`{self.command}` exited with {res.returncode}.{self.diagnosis()} {error_lines(res)}")

    def diagnosis(self) -> str:
        """A sentence on why the ranks of the last attempt fell out of step, if the records show it."""
        attempt = max((e["attempt"] for e in self.events), default=0)
        loaders = {r for r in range(WORLD) if self.of("load", rank=r, attempt=attempt)}
        if loaders and len(loaders) < WORLD:
            did = ", ".join(f"rank {r}" for r in sorted(loaders))
            did_not = ", ".join(f"rank {r}" for r in range(WORLD) if r not in loaders)
            return (
                f" {did} loaded a checkpoint and {did_not} did not, so the ranks started from different steps "
                "and their collectives stopped matching: every rank must load the same checkpoint."
            )
        counts = {r: len(self.of("step", rank=r, attempt=attempt)) for r in range(WORLD)}
        if len(set(counts.values())) > 1:
            made = " and ".join(f"rank {r} {n}" for r, n in counts.items())
            return (
                f" The ranks made different numbers of optimizer steps ({made}), so one waited in a collective "
                "for a partner that had stopped: they did not agree where the run starts or how long it is."
            )
        return ""

    def metrics(self, attempt: int | None = None) -> list[dict]:
        """Rank 0's metrics lines of one attempt (the last by default), checked for order."""
        attempt = self.last_attempt if attempt is None else attempt
        lines = self.attempts.get(attempt, [])
        if self.bad_lines:
            fail(
                f"`{self.command}` printed a line that starts like JSON but does not parse: {self.bad_lines[0][:120]!r}"
            )
        for i, rec in enumerate(lines):
            if not isinstance(rec.get("step"), int):
                fail(f"a metrics line has no integer 'step': {json.dumps(rec)[:160]}")
            if i and rec["step"] != lines[i - 1]["step"] + 1:
                steps = [r["step"] for r in lines]
                fail(
                    f"`{self.command}` printed steps {_clip_list(steps)}: each step once, in order, from rank 0 only "
                    "(a line from every rank repeats each step)."
                )
        return lines

    def final_digests(self) -> dict[int, dict]:
        """The last attempt's parameter digest per rank."""
        ends = [e for e in self.of("end") if e["attempt"] == self.last_attempt]
        return {e["rank"]: e for e in ends}


ERROR_LINE = re.compile(r"^(\[rank\d+\]: )?[A-Za-z_.]*(Error|Exception|Interrupt)\b.*")


def error_lines(res) -> str:
    """The workers' exception lines (torchrun's output is long: the first two distinct ones),
    or the end of the output when there is none."""
    found: list[str] = []
    for line in (res.stderr + "\n" + res.stdout).splitlines():
        line = line.strip()
        if ERROR_LINE.match(line) and "ChildFailedError" not in line and line not in found:
            found.append(line[:300])
    if found:
        return "Errors: " + " | ".join(found[:2])
    return "Its output ends: " + res.tail(400)


def _clip_list(values: list, n: int = 12) -> str:
    shown = ", ".join(map(str, values[:n]))
    return f"[{shown}{', ...' if len(values) > n else ''}] ({len(values)} lines)"


def read_events(folder: Path) -> list[dict]:
    events = []
    for path in sorted(folder.glob("events.*.jsonl")):
        for line in path.read_text(errors="replace").splitlines():
            with contextlib.suppress(json.JSONDecodeError):  # the last line of a killed process
                events.append(json.loads(line))
    return sorted(events, key=lambda e: e["t"])


def parse_output(stdout: str, lenient: bool) -> tuple[dict[int, list[dict]], list[str]]:
    attempts: dict[int, list[dict]] = {0: []}
    current, bad = 0, []
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            if not lenient:  # a worker killed mid-print may leave half a line
                bad.append(line)
            continue
        if isinstance(rec, dict) and "__check_attempt__" in rec:
            current = int(rec["__check_attempt__"])
            attempts.setdefault(current, [])
        elif isinstance(rec, dict):
            attempts[current].append(rec)
    return attempts, bad


def torchrun(learner, gpus, folder: Path, args, *, restarts=0, hold=None, timeout_s=90, on_start=None) -> Run:
    """Launch ddp_train.py with 2 workers under the hook; `folder` gets the hook's records."""
    script = learner.require("ddp_train.py")
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    argv = [
        "python", "-m", "torch.distributed.run",
        "--nproc-per-node", str(WORLD),
        "--max-restarts", str(restarts),
        "--rdzv-backend", "c10d",
        "--rdzv-endpoint", f"127.0.0.1:{port}",
        str(HOOK), str(script), *map(str, args),
    ]  # fmt: skip
    env = {
        "OMP_NUM_THREADS": "1",
        "GPUDOJO_DDP_CHECK_DIR": str(folder),
        # torchrun's workers otherwise reuse the rendezvous store across restarts, and the
        # restarted process group can find the dead workers' addresses there (PyTorch issue
        # 135712): a fresh store per attempt.
        "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1",
    }
    if gpus < WORLD:
        env["CUDA_VISIBLE_DEVICES"] = ""  # not one GPU per rank: the CPU variant, gloo
    if hold:
        env["GPUDOJO_DDP_CHECK_HOLD"] = f"{hold[0]}:{hold[1]}"
    shown = "torchrun --nproc-per-node 2" + (f" --max-restarts {restarts}" if restarts else "")
    shown += " ddp_train.py " + " ".join("DIR" if isinstance(a, Path) else str(a) for a in args)
    if on_start:
        on_start()
    res = learner.run(argv, env=env, timeout_s=timeout_s)
    attempts, bad = parse_output(res.stdout, lenient=bool(hold))
    return Run(command=shown.strip(), result=res, attempts=attempts, bad_lines=bad, events=read_events(folder))


_REFERENCE: dict[str, Run] = {}


def reference(learner, gpus, tmp_path_factory) -> Run:
    """The uninterrupted run, launched once and shared by the checks that read it."""
    if "run" not in _REFERENCE:
        base = tmp_path_factory.mktemp("uninterrupted")
        _REFERENCE["run"] = torchrun(learner, gpus, base / "hook", [*JOB_ARGS, "--ckpt-dir", base / "ckpt"])
    return _REFERENCE["run"]


def reference_losses(learner, gpus, tmp_path_factory) -> dict[int, float]:
    """The uninterrupted run's loss at every step."""
    ref = reference(learner, gpus, tmp_path_factory)
    ref.ended_ok()
    lines = ref.metrics()
    if not lines:
        fail(f"the uninterrupted run ({ref.command}) printed no metrics lines to compare with.")
    for r in lines:
        if not isinstance(r.get("loss"), (int, float)) or not math.isfinite(r["loss"]):
            fail(f"the uninterrupted run's loss at step {r['step']} is {r.get('loss')!r}, not a finite number.")
    return {r["step"]: r["loss"] for r in lines}


def compare_losses(figures, run_lines: list[dict], ref: dict[int, float], gpus: int, what: str) -> None:
    tol = tolerance(gpus)
    worst = 0.0
    for rec in run_lines:
        if rec["step"] not in ref:
            continue  # past the uninterrupted run's end: the caller says so
        want, got = ref[rec["step"]], rec.get("loss")
        if not isinstance(got, (int, float)) or not math.isfinite(got):
            fail(f"{what}: the loss at step {rec['step']} is {got!r}, not a finite number.")
        diff = abs(got - want)
        worst = max(worst, diff / max(1.0, abs(want)))
        if diff > tol * max(1.0, abs(want)):
            figures.add("largest loss difference", worst, note=f"allowed {tol:g}")
            fail(
                f"{what}: the loss at step {rec['step']} is {got:.7f}; the uninterrupted run had {want:.7f} "
                f"(difference {diff:.2g}, allowed {tol:g}). Something the next steps depend on was not restored "
                "on every rank: the model, the optimizer's state, the epoch or the position in it."
            )
    note = f"{len(run_lines)} steps compared, allowed {tol:g} x max(1, loss)"
    figures.add("largest loss difference", worst, note=note)


def check_in_sync(figures, run: Run, what: str) -> None:
    digests = run.final_digests()
    missing = [r for r in range(WORLD) if r not in digests or not digests[r].get("digest")]
    if missing:
        fail(
            f"{what}: rank {missing[0]} ended without a DistributedDataParallel model to compare "
            "(wrap the model in DDP on every rank)."
        )
    sums = [digests[r]["checksum"] for r in range(WORLD)]
    same = len({digests[r]["digest"] for r in range(WORLD)}) == 1
    figures.add("parameter checksums", ", ".join(f"rank {r}: {s:.9g}" for r, s in enumerate(sums)), note=what)
    if not same:
        fail(
            f"{what}: the ranks ended with different parameters (sums {', '.join(f'{s:.9g}' for s in sums)}). "
            "DDP keeps replicas identical only if they start identical and every rank has the same optimizer "
            "state: after a resume, every rank must load the model and the optimizer from the checkpoint."
        )


def check_real_resume(figures, run: Run, start: int, what: str) -> None:
    """Proof that the run continued from a checkpoint instead of replaying from step 0: in the
    run's last attempt every rank called torch.load, and each made exactly the optimizer steps
    left after `start` (the hook counts optimizer.step() calls; a replay that trains from step 0
    and prints only from `start` on makes all of them)."""
    attempt = run.last_attempt
    loaders = [r for r in range(WORLD) if run.of("load", rank=r, attempt=attempt)]
    figures.add("ranks that called torch.load", ", ".join(map(str, loaders)) or "none", note=what)
    if len(loaders) < WORLD:
        missing = " and ".join(f"rank {r}" for r in range(WORLD) if r not in loaders)
        fail(
            f"{what}, {missing} never called torch.load: the run printed losses from step {start} on without "
            "loading the checkpoint. Every rank must load the latest checkpoint (model, optimizer, position) "
            "and continue from it; training again from step 0 and printing only the later steps is not a resume."
        )
    left = TOTAL_STEPS - start
    made = {r: len(run.of("step", rank=r, attempt=attempt)) for r in range(WORLD)}
    figures.add("optimizer steps per rank", ", ".join(f"rank {r}: {n}" for r, n in made.items()), note=f"{left} left")
    for r, n in made.items():
        if n != left:
            fail(
                f"{what}, rank {r} made {n} optimizer steps; continuing from step {start} of {TOTAL_STEPS} leaves "
                f"{left}. A resumed run trains only the steps the checkpoint does not hold: load the model and "
                "the optimizer and start the loop at the checkpoint's epoch and position, instead of training "
                "the first steps again."
            )


# --- sharding, loss, replicas -----------------------------------------------------------------


@requirement("sharded-in-sync")
def test_each_rank_trains_on_its_shard_and_replicas_stay_equal(learner, figures, gpus, tmp_path_factory):
    ref = reference(learner, gpus, tmp_path_factory)
    ref.ended_ok()
    lines = ref.metrics()
    figures.add("job", f"{SAMPLES} samples, --batch-size {BATCH} per rank, 2 ranks, {EPOCHS} epochs")
    per_epoch: dict[int, list[float]] = {}
    for rec in lines:
        per_epoch.setdefault(rec.get("epoch"), []).append(rec.get("loss"))
    counts = {e: len(v) for e, v in per_epoch.items()}
    figures.add("steps per epoch", ", ".join(map(str, counts.values())), note=f"expected {STEPS_PER_EPOCH}")
    if sorted(counts) != list(range(EPOCHS)) or any(c != STEPS_PER_EPOCH for c in counts.values()):
        if counts and all(c >= 2 * STEPS_PER_EPOCH - 1 for c in counts.values()):
            why = (
                " That is every rank reading the whole dataset: give the DataLoader a DistributedSampler so each "
                "rank takes its own share of every epoch."
            )
        else:
            why = ""
        fail(
            f"the run made {', '.join(f'{c} steps in epoch {e}' for e, c in counts.items()) or 'no steps'}; with "
            f"{SAMPLES} samples on 2 ranks and --batch-size {BATCH}, each rank's share is {PER_RANK} samples, so "
            f"every epoch is {STEPS_PER_EPOCH} steps ({EPOCHS} epochs).{why}"
        )
    for rank in range(WORLD):
        epochs = [e["epoch"] for e in ref.of("set_epoch", rank=rank)]
        if sorted(set(epochs)) != list(range(EPOCHS)):
            fail(
                f"rank {rank} called DistributedSampler.set_epoch with {epochs or 'nothing'}; call it with every "
                f"epoch (0 to {EPOCHS - 1}) before iterating, or every epoch repeats the first one's order."
            )
    first, last = per_epoch[0], per_epoch[EPOCHS - 1]
    if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in first + last):
        fail(f"the losses are not all finite numbers: first epoch {first}, last epoch {last}")
    first_mean, last_mean = sum(first) / len(first), sum(last) / len(last)
    figures.add("mean loss, first epoch", first_mean)
    figures.add("mean loss, last epoch", last_mean, note=f"{last_mean / first_mean:.0%} of the first")
    if last_mean > 0.8 * first_mean:
        fail(
            f"the loss does not fall: mean {first_mean:.4f} in the first epoch, {last_mean:.4f} in the last "
            f"({last_mean / first_mean:.0%}); needs at most 80%."
        )
    check_in_sync(figures, ref, "at the end of the run")


# --- checkpoints ------------------------------------------------------------------------------


@requirement("rank0-atomic-checkpoints")
def test_only_rank_0_saves_atomically_and_completely(learner, figures, gpus, tmp_path_factory):
    import torch

    ref = reference(learner, gpus, tmp_path_factory)
    ref.ended_ok()
    saves = ref.of("save")
    by_rank = {r: [e for e in saves if e["rank"] == r] for r in range(WORLD)}
    figures.add("torch.save calls", ", ".join(f"rank {r}: {len(v)}" for r, v in by_rank.items()))
    if not saves:
        fail("no rank called torch.save: rank 0 should write a checkpoint every --ckpt-every steps.")
    others = {r: v for r, v in by_rank.items() if r != 0 and v}
    if others:
        r, v = next(iter(others.items()))
        fail(
            f"rank {r} also called torch.save ({len(v)} times, e.g. {Path(v[0]['path'] or '?').name}). The replicas "
            "are identical, so only rank 0 should write; other ranks writing the same file race each other."
        )
    steps = len(ref.metrics()) or TOTAL_STEPS
    wanted = steps // EVERY
    if len(by_rank[0]) < wanted:
        fail(
            f"rank 0 called torch.save {len(by_rank[0])} times in {steps} steps with --ckpt-every {EVERY}; "
            f"expected at least {wanted}."
        )
    renames = {e["src"]: e["dst"] for e in ref.of("rename", rank=0)}
    for e in by_rank[0]:
        path = e["path"]
        if path is None:
            fail("torch.save was given an open file; give it the path of a temporary file, then rename that.")
        if path not in renames:
            left = " It is still there under that name." if Path(path).exists() else ""
            fail(
                f"torch.save wrote straight to {Path(path).name} and nothing renamed it afterwards.{left} A rank "
                "killed during the write leaves half a file; write to a temporary file in the same folder and "
                "os.replace() it onto the checkpoint's name."
            )
    finals = [Path(renames[e["path"]]) for e in by_rank[0]]
    existing = [p for p in finals if p.exists()]
    if not existing:
        fail(f"none of the renamed checkpoints ({', '.join(p.name for p in finals[-3:])}) exists after the run.")
    latest = max(existing, key=lambda p: p.stat().st_mtime_ns)
    figures.add("latest checkpoint", latest.name)
    try:
        state = torch.load(latest, map_location="cpu", weights_only=True)
    except Exception as err:
        fail(
            f"{latest.name} does not load with torch.load(weights_only=True): {type(err).__name__}: "
            f"{str(err)[:200]}. Store tensors, numbers, strings, lists and dicts only."
        )
    if not isinstance(state, dict):
        fail(f"{latest.name} holds a {type(state).__name__}; expected a dict.")
    missing = [k for k in ("model", "optimizer", "epoch", "step", "sampler_position") if k not in state]
    if missing:
        fail(
            f"{latest.name} lacks {', '.join(missing)} (it has {', '.join(map(str, state)) or 'nothing'}). A "
            "resume needs the model, the optimizer's state, the epoch, the step count and the position in the epoch."
        )
    if not isinstance(state["optimizer"], dict) or not state["optimizer"].get("state"):
        fail(f"{latest.name}'s optimizer entry has no state: save optimizer.state_dict() after training steps.")
    epoch, step, pos = state["epoch"], state["step"], state["sampler_position"]
    figures.add(
        "its epoch, step, sampler_position", f"{epoch}, {step}, {pos}", note=f"{STEPS_PER_EPOCH} steps per epoch"
    )
    if not all(isinstance(v, int) for v in (epoch, step, pos)):
        fail(f"epoch, step and sampler_position should be integers; {latest.name} has {epoch!r}, {step!r}, {pos!r}.")
    if epoch * STEPS_PER_EPOCH + pos != step:
        fail(
            f"{latest.name} says epoch {epoch}, sampler_position {pos}, step {step}; with {STEPS_PER_EPOCH} steps "
            f"per epoch, step should be epoch * {STEPS_PER_EPOCH} + sampler_position = "
            f"{epoch * STEPS_PER_EPOCH + pos} (sampler_position: batches of that epoch already trained)."
        )


# --- resume -----------------------------------------------------------------------------------


@requirement("resume-exact")
def test_rerun_resumes_from_the_latest_checkpoint(learner, figures, gpus, tmp_path_factory, tmp_path):
    stop = INTERRUPT
    ckpt = tmp_path / "ckpt"
    first = torchrun(learner, gpus, tmp_path / "hook1", [*JOB_ARGS, "--ckpt-dir", ckpt, "--max-steps", stop])
    first.ended_ok()
    figures.add("interrupted", f"after {stop} steps (--max-steps), checkpoints every {EVERY}")
    again = torchrun(learner, gpus, tmp_path / "hook2", [*JOB_ARGS, "--ckpt-dir", ckpt])
    again.ended_ok()
    lines = again.metrics()
    if not lines:
        fail(f"`{again.command}` printed no metrics lines after the interrupted run.")
    start = lines[0]["step"]
    figures.add("resumed at step", start)
    saved_at = stop - stop % EVERY
    if start == 0:
        fail(
            f"the second run began at step 0: it should find the checkpoint the first run left in --ckpt-dir "
            f"(step {saved_at}, or {stop} if you also save when the run stops) and continue from there."
        )
    if not saved_at <= start <= stop:
        fail(
            f"the second run began at step {start}; the first stopped after {stop} steps "
            f"with checkpoints every {EVERY}."
        )
    check_real_resume(figures, again, start, "in the second run")
    ref = reference_losses(learner, gpus, tmp_path_factory)
    compare_losses(figures, lines, ref, gpus, f"after resuming at step {start}")
    if lines[-1]["step"] != max(ref):
        fail(f"the resumed run ended at step {lines[-1]['step']}; the uninterrupted run ended at step {max(ref)}.")
    check_in_sync(figures, again, "at the end of the resumed run")


# --- the elastic restart ----------------------------------------------------------------------


class Killer(threading.Thread):
    """Waits for the hook to say the victim rank is holding, then SIGKILLs that process. If
    the restarted workers fail too (a second restart begins), it stops the whole job: one
    restart is what the check asks for, and a job that fails again would only fail again."""

    def __init__(self, folder: Path, rank: int, host_pid) -> None:
        super().__init__(daemon=True)
        self.folder = folder
        self.host_pid = host_pid  # the hook records pids inside the learner's sandbox
        self.path = folder / f"hold.r{rank}.json"
        self.stop = threading.Event()
        self.killed: dict | None = None
        self.stopped_job = False

    def run(self) -> None:
        import psutil

        def ours(pid: int | None) -> bool:  # one of this run's workers, started through the hook
            try:
                return pid is not None and any(HOOK.name in part for part in psutil.Process(pid).cmdline())
            except psutil.Error:
                return False

        while not self.stop.is_set():
            if self.killed is None and self.path.exists():
                info = json.loads(self.path.read_text())
                pid = self.host_pid(info["pid"])
                if ours(pid):
                    os.kill(pid, signal.SIGKILL)
                    self.killed = info
            if self.killed is not None:
                second = [e for e in read_events(self.folder) if e["event"] == "start" and e["attempt"] >= 2]
                if second:
                    self.stopped_job = True
                    agent = self.host_pid(second[0]["agent"])
                    with contextlib.suppress(ProcessLookupError, PermissionError, TypeError):
                        os.kill(agent, signal.SIGKILL)  # torchrun; its workers go with it
                    return
            self.stop.wait(0.05)


@requirement("elastic-restart")
def test_killed_rank_restarts_from_the_last_checkpoint(learner, figures, gpus, tmp_path_factory, tmp_path):
    victim = random.randrange(WORLD)
    steps = INTERRUPT
    folder = tmp_path / "hook"
    killer = Killer(folder, victim, learner.host_pid)
    run = torchrun(
        learner,
        gpus,
        folder,
        [*JOB_ARGS, "--ckpt-dir", tmp_path / "ckpt"],
        restarts=2,
        hold=(victim, steps),
        timeout_s=120,
        on_start=killer.start,
    )
    killer.stop.set()
    killer.join(timeout=5)
    figures.add("killed", f"rank {victim} (SIGKILL) after {steps} optimizer steps", note=f"checkpoints every {EVERY}")
    if killer.killed is None:
        run.ended_ok()
        fail(
            f"rank {victim} never reached {steps} optimizer steps, so the check could not kill it mid-run "
            f"(the job should run {TOTAL_STEPS} steps)."
        )
    figures.add("attempts", run.last_attempt + 1, note="TORCHELASTIC_RESTART_COUNT 0 to " + str(run.last_attempt))
    if killer.stopped_job:
        restarted = Run(run.command, run.result, events=[e for e in run.events if e["attempt"] == 1])
        fail(
            "the workers torchrun restarted after the kill failed too (a second restart began, and the check "
            f"stopped the job).{restarted.diagnosis()} {error_lines(run.result)}"
        )
    run.ended_ok()
    if run.last_attempt == 0:
        fail("torchrun did not restart the workers after the kill (no second attempt started).")
    lines = run.metrics()
    if not lines:
        fail("after the restart, rank 0 printed no metrics lines.")
    start = lines[0]["step"]
    figures.add("restarted at step", start, note=f"{steps - start} step(s) redone")
    if start == 0:
        fail(
            f"after the restart the run began again at step 0: on start, every rank should load the latest "
            f"checkpoint in --ckpt-dir (the one from step {steps - steps % EVERY}) and continue from it."
        )
    if not 1 <= start <= steps:
        fail(f"after the restart the run began at step {start}; the killed rank had done {steps} steps.")
    check_real_resume(figures, run, start, "after the restart")
    ref = reference_losses(learner, gpus, tmp_path_factory)
    compare_losses(figures, lines, ref, gpus, f"after the restart at step {start}")
    if lines[-1]["step"] != max(ref):
        fail(
            f"after the restart the run ended at step {lines[-1]['step']}; "
            f"the uninterrupted run ended at step {max(ref)}."
        )
    check_in_sync(figures, run, "at the end of the restarted run")


# --- metrics ----------------------------------------------------------------------------------


@requirement("metrics-json")
def test_rank_0_prints_one_json_line_per_step(learner, figures, gpus, tmp_path_factory):
    ref = reference(learner, gpus, tmp_path_factory)
    ref.ended_ok()
    lines = ref.metrics()
    figures.add("JSON lines", len(lines), note=f"{EPOCHS} epochs")
    if not lines:
        fail(f"`{ref.command}` printed no JSON metrics lines on stdout.")
    if lines[0]["step"] != 0:
        fail(f"the first metrics line is step {lines[0]['step']}; a fresh run starts at step 0.")
    for rec in lines:
        missing = [k for k in ("step", "epoch", "loss", "world_size", "samples_per_s") if k not in rec]
        if missing:
            fail(f"the metrics line for step {rec['step']} lacks {', '.join(missing)}: {json.dumps(rec)[:160]}")
        for key in ("loss", "samples_per_s"):
            v = rec[key]
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
                fail(f"step {rec['step']}: {key} is {v!r}; expected a finite number.")
        if rec["samples_per_s"] <= 0:
            fail(f"step {rec['step']}: samples_per_s is {rec['samples_per_s']}; it must be positive.")
        if rec["world_size"] != WORLD:
            fail(f"step {rec['step']}: world_size is {rec['world_size']!r}; torchrun started {WORLD} workers.")
    epochs = [rec["epoch"] for rec in lines]
    if epochs != sorted(epochs) or sorted(set(epochs)) != list(range(EPOCHS)):
        fail(f"the epochs of the metrics lines are {_clip_list(epochs)}; expected 0 to {EPOCHS - 1}, in order.")
    figures.add(
        "samples/s (median)",
        sorted(r["samples_per_s"] for r in lines)[len(lines) // 2],
        note="rank 0, 2 ranks, as ddp_train.py printed it: shown for information, not counted",
    )


# --- the scaling report -----------------------------------------------------------------------


# The report's figures are the check's, not the machine's: scaling.py runs in a copy of the
# learner's folder whose ddp_train.py is this stand-in. It prints, on rank 0 of each launch,
# metrics lines whose samples_per_s is a throughput chosen here for that world size (the same on
# every line, so any fair statistic of the lines gives it), and records each launch. The report
# must carry those throughputs: a figure scaling.py made up, or one it did not read from the
# lines of a launch with that many processes, does not match.
STAND_IN = r"""
import json, os, sys, time
THROUGHPUT = {throughput!r}
RECORD = {record!r}
world = int(os.environ.get("WORLD_SIZE", "1"))
rank = int(os.environ.get("RANK", "0"))
epochs = 3
if "--epochs" in sys.argv:
    epochs = int(sys.argv[sys.argv.index("--epochs") + 1])
with open(RECORD, "a") as f:
    f.write(json.dumps({{"world_size": world, "rank": rank, "argv": sys.argv[1:]}}) + "\n")
if rank == 0:
    rate = THROUGHPUT.get(str(world), 1000.0 * world)
    step = 0
    for epoch in range(max(epochs, 1)):
        for _ in range(5):
            loss = 2.0 / (1 + step)
            print(json.dumps({{"step": step, "epoch": epoch, "loss": loss, "world_size": world,
                              "samples_per_s": rate}}), flush=True)
            step += 1
"""


@requirement("scaling-report")
def test_scaling_report_is_consistent(learner, figures, tmp_path):
    import shutil

    learner.require("scaling.py")
    learner.require("ddp_train.py")
    rng = random.Random()
    one = round(rng.uniform(600.0, 1400.0), 1)
    two = round(one * rng.uniform(1.15, 1.9), 1)
    chosen = {1: one, 2: two}
    folder = tmp_path / "scaling"
    shutil.copytree(learner.dir, folder, ignore=shutil.ignore_patterns("__pycache__"))
    record = tmp_path / "launches.jsonl"
    (folder / "ddp_train.py").write_text(
        STAND_IN.format(throughput={str(k): v for k, v in chosen.items()}, record=str(record))
    )
    env = {"OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    res = learner.run(["python", str(folder / "scaling.py"), "--json"], env=env, timeout_s=120, cwd=folder)
    if res.returncode != 0:
        fail(f"python scaling.py --json exited with {res.returncode}: {res.tail()}")
    report = res.json()
    if not isinstance(report, dict) or not isinstance(report.get("runs"), list):
        fail(f"the report should be a JSON object with a 'runs' list; got {json.dumps(report)[:200]}")
    runs = {}
    for entry in report["runs"]:
        if not isinstance(entry, dict) or "nproc" not in entry:
            fail(f"each entry of 'runs' needs nproc, world_size and samples_per_s; got {json.dumps(entry)[:160]}")
        runs[entry["nproc"]] = entry
    if sorted(runs) != [1, 2]:
        fail(f"the report has runs for {sorted(runs) or 'no'} process(es); it needs one with 1 and one with 2.")
    launched = set()
    with contextlib.suppress(OSError):
        for line in record.read_text().splitlines():
            with contextlib.suppress(json.JSONDecodeError):
                launched.add(json.loads(line)["world_size"])
    figures.add(
        "launches of ddp_train.py seen", ", ".join(f"{n} process(es)" for n in sorted(launched)) or "none",
        note="the check swaps ddp_train.py for a stand-in that prints throughputs chosen by the check",
    )  # fmt: skip
    thr = {}
    for n, entry in runs.items():
        v = entry.get("samples_per_s")
        figures.add(
            f"{n} process{'es' if n > 1 else ''}, reported",
            v if isinstance(v, (int, float)) else str(v),
            "samples/s",
            note=f"the stand-in's metrics lines said {chosen[n]}",
        )
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v <= 0:
            fail(f"the {n}-process run's samples_per_s is {v!r}; expected a positive number.")
        if entry.get("world_size") != n:
            fail(
                f"the {n}-process run reports world_size {entry.get('world_size')!r}: take it from that run's "
                "metrics lines, to show the run really had that many workers."
            )
        if n not in launched:
            fail(
                f"the report has a {n}-process run, but scaling.py never launched ddp_train.py with {n} "
                "process(es): every figure of the report must come from a run it made."
            )
        if not math.isclose(v, chosen[n], rel_tol=0.01):
            fail(
                f"the report gives the {n}-process run {v:.6g} samples/s, but every metrics line that run printed "
                f"said {chosen[n]:.6g} (the check ran scaling.py with a ddp_train.py that prints throughputs it "
                "chose). Compute each throughput from the samples_per_s of that run's metrics lines; a figure "
                "written into the report any other way does not count."
            )
        thr[n] = float(v)
    speedup, efficiency = report.get("speedup"), report.get("efficiency")
    want_s = thr[2] / thr[1]
    want_e = want_s / 2
    figures.add(
        "speedup",
        speedup if isinstance(speedup, (int, float)) else str(speedup),
        note=f"from the throughputs: {want_s:.3f}",
    )
    figures.add(
        "efficiency",
        efficiency if isinstance(efficiency, (int, float)) else str(efficiency),
        note=f"from the throughputs: {want_e:.3f}",
    )
    for name, got, want, formula in (
        ("speedup", speedup, want_s, "samples_per_s(2) / samples_per_s(1)"),
        ("efficiency", efficiency, want_e, "speedup / 2"),
    ):
        if not isinstance(got, (int, float)) or isinstance(got, bool):
            fail(f"the report's {name} is {got!r}; expected {formula} = {want:.3f}.")
        if not math.isclose(got, want, rel_tol=0.02):
            fail(f"the report's {name} is {got:.4g}, but its throughputs give {formula} = {want:.4g}.")


# --- on GPUs ----------------------------------------------------------------------------------


@requirement("nccl-on-gpus")
def test_nccl_with_one_gpu_per_rank(learner, figures, gpus, tmp_path):
    if gpus < WORLD:
        pytest.skip(f"needs {WORLD} GPUs; this machine has {gpus}")
    run = torchrun(learner, gpus, tmp_path / "hook", [*JOB_ARGS, "--ckpt-dir", tmp_path / "ckpt"], timeout_s=180)
    run.ended_ok()
    inits = {e["rank"]: e for e in run.of("init")}
    ddps = {e["rank"]: e for e in run.of("ddp")}
    figures.add("backends", ", ".join(f"rank {r}: {e['backend']}" for r, e in sorted(inits.items())) or "none")
    figures.add("DDP devices", ", ".join(f"rank {r}: {e['device']}" for r, e in sorted(ddps.items())) or "none")
    for rank in range(WORLD):
        if rank not in inits:
            fail(f"rank {rank} never called init_process_group.")
        if inits[rank]["backend"] != "nccl":
            fail(
                f"rank {rank}'s process group uses {inits[rank]['backend']} on a machine with {gpus} GPUs; "
                "with one GPU per rank use nccl."
            )
        if rank not in ddps or ddps[rank]["device"] != f"cuda:{rank}":
            where = ddps[rank]["device"] if rank in ddps else "nowhere (no DDP)"
            fail(
                f"rank {rank}'s model is on {where}; each rank should train on its own GPU, "
                f"cuda:LOCAL_RANK (cuda:{rank})."
            )
    lines = run.metrics()
    if not lines or not all(isinstance(r.get("loss"), (int, float)) and math.isfinite(r["loss"]) for r in lines):
        fail("the run on GPUs printed no metrics or losses that are not finite numbers.")
    figures.add("samples/s (median)", sorted(r["samples_per_s"] for r in lines)[len(lines) // 2], note="2 GPUs, NCCL")
    check_in_sync(figures, run, "at the end of the run on GPUs")
