"""Traces for the profile tests and the bench: real ones recorded here with torch.profiler on
the CPU, a synthetic stand-in for a GPU trace (no GPU on this machine), and a scaler that
makes a 100k- or 1M-event trace out of a real one.

Every real trace uses the same profiler settings (schedule wait=1, warmup=1, active=3,
record_shapes, with_stack, export_chrome_trace), so the analysed steps are the three active
ones. ``python profile_traces.py KIND OUT`` records one trace (KIND: loader, item, fast, ddp)
in a fresh process; the DDP one has to run that way (it spawns its ranks).
"""

from __future__ import annotations

import gzip
import os
import socket
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve()
ACTIVE_STEPS = 3
# The step functions below call .item() at lines the tests look up by these markers.
ITEM_MARKER = "# profile-traces: sync site"


def line_of(marker: str) -> int:
    """The line of this file's ``def`` that holds ``marker`` (Kineto records a Python call by
    the line its function starts at, not the line of the call)."""
    lines = HERE.read_text(encoding="utf-8").splitlines()
    at = next(i for i, text in enumerate(lines) if marker in text and "ITEM_MARKER" not in text)
    while not lines[at].lstrip().startswith("def "):
        at -= 1
    return at + 1


# ---------------------------------------------------------------- real CPU traces (torch)


def _profile(out: Path, steps: int, step_fn) -> Path:
    """Run ``step_fn(i)`` under torch.profiler with the shared schedule; one trace to ``out``."""
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    torch.manual_seed(0)
    torch.set_num_threads(1)  # steadier timings on a shared machine
    out.parent.mkdir(parents=True, exist_ok=True)
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=1, warmup=1, active=ACTIVE_STEPS, repeat=1),
        record_shapes=True,
        with_stack=True,
        on_trace_ready=lambda prof: prof.export_chrome_trace(str(out)),
    ) as prof:
        for i in range(steps):
            step_fn(i)
            prof.step()
    return out


def _model_and_optimizer():
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))
    return model, torch.optim.SGD(model.parameters(), lr=0.01)


class SlowSamples:
    """A dataset whose __getitem__ builds each sample in Python and sleeps about 1 ms, as a
    decoder or an augmentation pipeline would."""

    def __len__(self) -> int:
        return 10_000

    def __getitem__(self, index: int):
        import torch

        time.sleep(0.001)
        values = [((index * 31 + j) % 97) / 97.0 for j in range(64)]
        return torch.tensor(values), index % 8


def make_loader_trace(out: Path) -> Path:
    """(1) A training step fed by a DataLoader with num_workers=0 over a slow dataset."""
    import torch
    from torch.utils.data import DataLoader

    model, opt = _model_and_optimizer()
    batches = iter(DataLoader(SlowSamples(), batch_size=16, num_workers=0))

    def step(_: int) -> None:
        x, y = next(batches)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return _profile(out, 2 + ACTIVE_STEPS + 1, step)


def make_item_trace(out: Path) -> Path:
    """(2) A step that reads the loss back twice with .item() (a host sync each, on a GPU)."""
    import torch

    model, opt = _model_and_optimizer()
    x, y = torch.randn(32, 64), torch.randint(0, 8, (32,))
    seen: list[float] = []

    def train_step(_: int) -> None:  # profile-traces: sync site
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        seen.append(loss.item())
        seen.append(loss.detach().mul(2).item())

    return _profile(out, 2 + ACTIVE_STEPS + 1, train_step)


def make_fast_trace(out: Path) -> Path:
    """(3) The fast version of (1) and (2): preloaded batches, no .item() in the step."""
    import torch

    model, opt = _model_and_optimizer()
    batches = [(torch.randn(16, 64), torch.randint(0, 8, (16,))) for _ in range(8)]

    def step(i: int) -> None:
        x, y = batches[i % len(batches)]
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return _profile(out, 2 + ACTIVE_STEPS + 1, step)


def _ddp_rank(rank: int, world: int, port: int, folder: str) -> None:
    import torch
    import torch.distributed as dist

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 256))
    # Small buckets: several allreduces per step, overlapping the rest of backward.
    model = torch.nn.parallel.DistributedDataParallel(net, bucket_cap_mb=1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 256)

    def step(_: int) -> None:
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

    _profile(Path(folder) / f"ddp_rank{rank}.json", 2 + ACTIVE_STEPS + 1, step)
    dist.barrier()  # both traces written before either rank tears gloo down
    dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_ddp_traces(folder: Path, world: int = 2) -> list[Path]:
    """(4) A 2-rank gloo DDP step, one trace per rank (spawns its ranks: call it in a process
    of its own, e.g. ``python profile_traces.py ddp FOLDER``)."""
    import torch.multiprocessing as mp

    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"ddp_rank{r}.json" for r in range(world)]
    try:
        mp.spawn(_ddp_rank, args=(world, _free_port(), str(folder)), nprocs=world, join=True)
    except mp.ProcessExitedException:
        # gloo's teardown at exit aborts now and then ("terminate called without an active
        # exception"), after the traces are written: those are what this is for.
        for path in paths:
            orjson.loads(path.read_bytes())
    return paths


# ---------------------------------------------------------------- a GPU trace stand-in


GEMM = "ampere_sgemm_128x64_tn"
SYNC_FRAME = ("train.py", 57)  # where the stand-in's step calls .item() and .cpu()
ELEMENTWISE = "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, at::detail::Array<char*, 3> >(int, at::native::AddFunctor<float>, at::detail::Array<char*, 3>)"  # noqa: E501
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"


class _GpuTraceWriter:
    """Builds one rank's events in Kineto's layout: ops and runtime calls on the host thread,
    kernels and copies on streams, tied by correlation ids and ac2g flows."""

    def __init__(self, rank: int, t0: float) -> None:
        self.rank = rank
        self.pid = 4000 + rank
        self.tid = 4000 + rank
        self.events: list[dict[str, Any]] = []
        self.correlation = 1000 * (rank + 1)
        self.external = 1
        self.t = t0  # host clock, us
        self.stream_free = {7: t0, 20: t0}  # when each stream finishes its queued work

    def host(self, name: str, cat: str, ts: float, dur: float, **args: Any) -> dict[str, Any]:
        event = {"ph": "X", "cat": cat, "name": name, "pid": self.pid, "tid": self.tid, "ts": round(ts, 3)}
        event["dur"] = round(dur, 3)
        event["args"] = {"External id": self.external, **args}
        self.external += 1
        self.events.append(event)
        return event

    def launch(
        self,
        op: str,
        kernel: str,
        cat: str,
        dur_us: float,
        stream: int = 7,
        runtime: str = "cudaLaunchKernel",
        dims: list | None = None,
        **device_args: Any,
    ) -> None:
        """An op that launches one device activity: op span, runtime span inside it, the
        activity on ``stream`` once both the launch and the stream's previous work are done."""
        op_start = self.t
        launch_start = op_start + 2.0
        launch_dur = 4.0
        self.correlation += 1
        corr = self.correlation
        self.host(op, "cpu_op", op_start, 8.0, **({"Input Dims": dims} if dims else {}))
        self.host(runtime, "cuda_runtime", launch_start, launch_dur, correlation=corr, cbid=211)
        start = max(launch_start + 5.0, self.stream_free[stream])
        args = {"External id": self.external - 2, "device": 0, "stream": stream, "correlation": corr, **device_args}
        self.events.append(
            {
                "ph": "X",
                "cat": cat,
                "name": kernel,
                "pid": 0,
                "tid": stream,
                "ts": round(start, 3),
                "dur": dur_us,
                "args": args,
            }
        )
        self.events.append(
            {
                "ph": "s",
                "id": corr,
                "pid": self.pid,
                "tid": self.tid,
                "ts": round(launch_start, 3),
                "cat": "ac2g",
                "name": "ac2g",
            }
        )
        self.events.append(
            {
                "ph": "f",
                "id": corr,
                "pid": 0,
                "tid": stream,
                "ts": round(start, 3),
                "cat": "ac2g",
                "name": "ac2g",
                "bp": "e",
            }
        )
        self.stream_free[stream] = start + dur_us
        self.t = op_start + 10.0

    def step(self, number: int, short_kernels: int) -> None:
        step_start = self.t
        marker = len(self.events)
        self.t += 5.0
        self.host("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", "user_annotation", self.t, 40.0)
        self.t += 45.0
        self.launch(
            "aten::copy_",
            "Memcpy HtoD (Pinned -> Device)",
            "gpu_memcpy",
            60.0,
            runtime="cudaMemcpyAsync",
            dims=[[256, 1024], [256, 1024], []],
            bytes=1 << 20,
        )
        for _ in range(4):
            self.launch(
                "aten::mm", GEMM, "kernel", 300.0, dims=[[256, 1024], [1024, 1024]], grid=[8, 16, 1], block=[256, 1, 1]
            )
        for i in range(short_kernels):
            self.launch(
                "aten::add_",
                ELEMENTWISE,
                "kernel",
                3.0 + (i % 4),
                dims=[[1024], [1024], []],
                grid=[4, 1, 1],
                block=[128, 1, 1],
            )
        self.launch("nccl:all_reduce", NCCL, "kernel", 400.0, stream=20, dims=[[1048576]])
        for _ in range(2):
            self.launch(
                "aten::mm", GEMM, "kernel", 300.0, dims=[[256, 1024], [1024, 1024]], grid=[8, 16, 1], block=[256, 1, 1]
            )
        # train.py's train_step reads the loss (.item()) and a tensor (.cpu()): each copies to
        # the host and waits for the streams
        python_start = self.t
        self.t += 1.0
        item_start = self.t
        self.launch(
            "aten::_local_scalar_dense",
            "Memcpy DtoH (Device -> Pageable)",
            "gpu_memcpy",
            2.0,
            runtime="cudaMemcpyAsync",
            bytes=4,
        )
        wait = max(self.stream_free[7], self.stream_free[20]) - self.t
        self.host("cudaStreamSynchronize", "cuda_runtime", self.t, max(wait, 1.0), correlation=0)
        self.t += max(wait, 1.0) + 2.0
        self.host("aten::item", "cpu_op", item_start - 0.5, self.t - item_start + 1.0, **{"Input Dims": [[]]})
        self.t += 1.0
        to_start = self.t
        self.t += 1.0
        self.launch("aten::copy_", "Memcpy DtoH (Device -> Pageable)", "gpu_memcpy", 20.0, runtime="cudaMemcpyAsync")
        wait = self.stream_free[7] - self.t
        self.host("cudaStreamSynchronize", "cuda_runtime", self.t, max(wait, 1.0), correlation=0)
        self.t += max(wait, 1.0) + 1.0
        self.host("aten::to", "cpu_op", to_start, self.t - to_start, **{"Input Dims": [[128, 128], [], [], [], []]})
        self.t += 1.0
        frame = f"{SYNC_FRAME[0]}({SYNC_FRAME[1]}): train_step"
        self.host(frame, "python_function", python_start, self.t - python_start)
        self.t += 20.0
        step_event = {
            "ph": "X",
            "cat": "user_annotation",
            "name": f"ProfilerStep#{number}",
            "pid": self.pid,
            "tid": self.tid,
            "ts": round(step_start, 3),
            "dur": round(self.t - step_start, 3),
            "args": {"External id": 0},
        }
        self.events.insert(marker, step_event)
        self.t += 1.0


def make_gpu_standin(out: Path, rank: int = 0, world: int = 1, steps: int = 4, short_kernels: int = 150) -> Path:
    """A SYNTHETIC STAND-IN for a Kineto GPU trace (this machine has no GPU to record one):
    per step a data-loader span, a host-to-device copy, 6 GEMMs and ``short_kernels``
    elementwise kernels on stream 7, an NCCL allreduce on stream 20 overlapping the GEMMs, a
    loss.item() and a .cpu() in train.py's train_step (device-to-host copies, each followed by
    a cudaStreamSynchronize); cudaLaunchKernel runtime
    events tied to their kernels by correlation ids and ac2g flows; deviceProperties and
    distributedInfo as Kineto writes them. Its figures are made up: it tests the GPU code
    path, not what a GPU does."""
    writer = _GpuTraceWriter(rank, t0=6_000_000_000.0 + rank * 123.0)
    for n in range(steps):
        writer.step(n + 10, short_kernels)
    trace = {
        "schemaVersion": 1,
        "deviceProperties": [
            {
                "id": 0,
                "name": "NVIDIA H100 80GB HBM3 (stand-in)",
                "totalGlobalMem": 85_000_000_000,
                "computeMajor": 9,
                "computeMinor": 0,
                "maxThreadsPerBlock": 1024,
                "numSms": 132,
                "regsPerBlock": 65536,
                "warpSize": 32,
                "sharedMemPerBlock": 49152,
            }
        ],
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world},
        "traceEvents": [
            {
                "name": "process_name",
                "ph": "M",
                "ts": writer.events[0]["ts"],
                "pid": writer.pid,
                "tid": 0,
                "args": {"name": "python"},
            },
            {
                "name": "process_name",
                "ph": "M",
                "ts": writer.events[0]["ts"],
                "pid": 0,
                "tid": 0,
                "args": {"name": "python"},
            },
            {
                "name": "process_labels",
                "ph": "M",
                "ts": writer.events[0]["ts"],
                "pid": 0,
                "tid": 0,
                "args": {"labels": "GPU 0"},
            },
            *writer.events,
        ],
        "traceName": out.name,
    }
    _write_json(out, trace)
    return out


# ---------------------------------------------------------------- scaling a real trace


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    blob = orjson.dumps(data)
    if path.name.endswith(".gz"):
        blob = gzip.compress(blob, compresslevel=1)
    path.write_bytes(blob)


def scale_trace(src: Path, dst: Path, events: int) -> Path:
    """Repeat ``src``'s profiler steps, shifted in time and renumbered, until ``dst`` holds
    ``events`` trace events (the bench's 100k and 1M traces are made this way)."""
    trace = orjson.loads(Path(src).read_bytes())
    all_events = trace["traceEvents"] if isinstance(trace, dict) else trace
    steps = [e for e in all_events if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")]
    if not steps:
        raise ValueError(f"{src} has no ProfilerStep spans to repeat")
    t0 = min(e["ts"] for e in steps)
    t1 = max(e["ts"] + e["dur"] for e in steps)

    def in_steps(e: dict[str, Any]) -> bool:
        ts = e.get("ts")
        return e.get("ph") in ("X", "s", "f") and isinstance(ts, int | float) and t0 <= ts < t1

    block = [e for e in all_events if in_steps(e)]
    out = [e for e in all_events if not in_steps(e)]
    k = 0
    while len(out) < events:
        shift = k * (t1 - t0 + 10.0)
        for e in block:
            copy = dict(e)
            copy["ts"] = e["ts"] + shift
            name = copy.get("name", "")
            if isinstance(name, str) and name.startswith("ProfilerStep#"):
                copy["name"] = f"ProfilerStep#{int(name.split('#')[1]) + k * len(steps)}"
            if isinstance(copy.get("id"), int) and copy.get("ph") in ("s", "f"):
                copy["id"] += k * 1_000_000
            out.append(copy)
            if len(out) >= events:
                break
        k += 1
    if isinstance(trace, dict):
        trace["traceEvents"] = out
    else:
        trace = out
    _write_json(Path(dst), trace)
    return Path(dst)


MAKERS = {"loader": make_loader_trace, "item": make_item_trace, "fast": make_fast_trace}


if __name__ == "__main__":
    kind, target = sys.argv[1], Path(sys.argv[2])
    if kind == "ddp":
        print(*make_ddp_traces(target), sep="\n")
    else:
        print(MAKERS[kind](target))


# ---------------------------------------------------------------- hostile inputs


def write_gzip_of_zeros(path: Path, inflated_bytes: int) -> Path:
    """A gzip file that inflates to ``inflated_bytes`` zeros (a decompression bomb: about
    1 KB of file per MB inflated), compressed a piece at a time as a stream would be."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: a gzip member
    piece = bytes(1 << 22)
    with open(path, "wb") as f:
        left = inflated_bytes
        while left:
            n = min(left, len(piece))
            f.write(packer.compress(piece[:n]))
            left -= n
        f.write(packer.flush())
    return path


def write_trace_with_long_strings(path: Path, chars: int) -> Path:
    """A small valid Chrome trace whose one operator has a name and an args value of
    ``chars`` characters each (and a thread id as long), among ordinary spans."""
    long_name = "op_" + "n" * chars
    events: list[dict[str, Any]] = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
        {"ph": "X", "cat": "cpu_op", "name": long_name, "pid": 1, "tid": 1, "ts": 10, "dur": 500,
         "args": {"note": "a" * chars}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 600, "dur": 100},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 1, "tid": "t" * chars, "ts": 100, "dur": 50},
    ]  # fmt: skip
    _write_json(path, events)
    return path
