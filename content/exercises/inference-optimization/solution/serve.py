"""Serve a small classifier, one optimisation step at a time, and measure each step.

    python serve.py                      # a table of every step
    python serve.py --json               # the same as one JSON line
    python serve.py --steps eager,int8   # only some steps

Steps (STEPS below):
    eager    the float32 model as built, called once per request
    compile  the model compiled with torch.compile (mode "default")
    half     16-bit weights and activations: bfloat16 on the CPU, float16 on a GPU
    int8     dynamic int8 quantisation of every nn.Linear (CPU only)
    batch    a micro-batcher: requests are grouped into batches of up to max_batch,
             and no request waits more than max_wait_ms for its batch to start

The checks drive this module directly, so keep these names and signatures:
    build_model(seed) -> nn.Module                (from model.py)
    apply(step, model, device) -> fn              fn(x): (n, 32) on device -> (n, 10) logits
    measure(fn, requests, device) -> dict         one request at a time
    serve(fn, requests, arrivals_s, max_batch, max_wait_ms) -> (outputs, latencies_ms, batch_sizes)
    StepSkipped                                   raised by apply() for a step this device cannot run
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import random
import sys
import time
import warnings
from collections.abc import Callable, Sequence

import torch
import torch.nn as nn
from model import build_model, make_data

STEPS = ("eager", "compile", "half", "int8", "batch")

# torch.ao.quantization works but warns that it is moving to torchao; keep the output readable.
warnings.filterwarnings("ignore", message=r".*torch\.ao\.quantization is deprecated.*")
warnings.filterwarnings("ignore", message=r".*quantize_per_tensor.*deprecated.*")

Predictor = Callable[[torch.Tensor], torch.Tensor]


class StepSkipped(Exception):
    """apply() raises this for a step that cannot run on the device; the message says why."""


def pick_device(name: str | None = None) -> torch.device:
    if name:
        return torch.device(name)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


# --- the optimisation steps ------------------------------------------------------------------


def apply(step: str, model: nn.Module, device: str | torch.device = "cpu") -> Predictor:
    """The predictor that `step` serves. It is called under torch.inference_mode() with a batch
    of requests on `device`, shape (n, 32) float32, and returns float logits, shape (n, 10).

    Every step starts from its own copy of the float32 eager model, so one step cannot change
    what another one serves."""
    device = torch.device(device)
    model = copy.deepcopy(model).to(device).eval()

    if step in ("eager", "batch"):
        # The batch step serves the eager model: what changes is how requests reach it (serve()).
        return model

    if step == "compile":
        # mode="default": Inductor fuses the bias adds and ReLUs around the matrix multiplies
        # and, on the CPU, compiles the generated C++ with the system compiler. The first call
        # compiles (seconds); later calls with the same input shape reuse the compiled code.
        # "max-autotune" would benchmark many kernel variants and take minutes on a CPU.
        return torch.compile(model, mode="default")

    if step == "half":
        # Convert the weights once. Autocast would also work, but it converts every weight
        # again on every call, which for one request at a time costs more than it saves.
        # CPUs compute in bfloat16 (float32's exponent range, so no overflow); GPUs have fast
        # float16 tensor cores, and float16's extra mantissa bits cost nothing in inference.
        dtype = torch.float16 if device.type == "cuda" else torch.bfloat16
        low = model.to(dtype)

        def predict_half(x: torch.Tensor) -> torch.Tensor:
            return low(x.to(dtype)).float()

        predict_half.model = low  # type: ignore[attr-defined]  (lets tools find the module)
        return predict_half

    if step == "int8":
        if device.type != "cpu":
            raise StepSkipped(
                "dynamic int8 quantisation (torch.ao.quantization.quantize_dynamic) has CPU kernels only "
                "(fbgemm/x86, onednn, qnnpack); on a GPU the half step is the low-precision option"
            )
        # Weights are stored as int8 with one scale per tensor; each call quantises the
        # activations on the fly (hence "dynamic"), multiplies in int8 and returns float32.
        return torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)

    raise ValueError(f"unknown step {step!r}; the steps are {', '.join(STEPS)}")


# --- measuring ---------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation between the closest ranks."""
    xs = sorted(values)
    if not xs:
        return float("nan")
    pos = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def summarise(latencies_ms: Sequence[float], wall_s: float) -> dict:
    n = len(latencies_ms)
    return {
        "n": n,
        "p50_ms": percentile(latencies_ms, 50),
        "p95_ms": percentile(latencies_ms, 95),
        "mean_ms": sum(latencies_ms) / n,
        "throughput_rps": n / wall_s,
    }


def measure(
    fn: Predictor, requests: Sequence[torch.Tensor], device: str | torch.device = "cpu", warmup: int = 20
) -> dict:
    """One client sends the requests one after another and waits for each answer.

    Latency of a request: from the call to its logits being ready (on a GPU, between two CUDA
    events on the stream, so the time the GPU needs is counted, not only the launch).
    Throughput: requests answered per second of the whole run."""
    device = torch.device(device)
    cuda = device.type == "cuda"
    with torch.inference_mode():
        for x in requests[:warmup]:
            fn(x)
        if cuda:
            torch.cuda.synchronize(device)
        latencies = []
        start = time.perf_counter()
        for x in requests:
            if cuda:
                begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                begin.record()
                fn(x)
                end.record()
                end.synchronize()
                latencies.append(begin.elapsed_time(end))
            else:
                t0 = time.perf_counter()
                fn(x)
                latencies.append((time.perf_counter() - t0) * 1e3)
        wall = time.perf_counter() - start
    return summarise(latencies, wall)


# --- serving with a micro-batcher ---------------------------------------------------------------


def serve(
    fn: Predictor,
    requests: Sequence[torch.Tensor],
    arrivals_s: Sequence[float],
    max_batch: int = 32,
    max_wait_ms: float = 2.0,
) -> tuple[list[torch.Tensor], list[float], list[int]]:
    """Serve requests that arrive over time, with one server loop in this thread.

    requests[k] is a (1, 32) tensor that arrives arrivals_s[k] seconds after the call (sorted).
    The server groups waiting requests into one batch of up to max_batch, and starts a batch
    at the latest max_wait_ms after its oldest request arrived (or as soon as the server is
    free, if it was busy then). Returns, per request, its (1, 10) logits and its latency in ms
    (arrival to answer ready), and the size of every batch in order."""
    n = len(requests)
    outputs: list[torch.Tensor | None] = [None] * n
    latencies = [0.0] * n
    sizes: list[int] = []
    max_wait = max_wait_ms / 1e3
    on_cuda = n > 0 and requests[0].is_cuda
    t0 = time.perf_counter()

    def clock() -> float:
        return time.perf_counter() - t0

    def sleep_until(t: float) -> None:
        dt = t - clock()
        if dt > 0:
            time.sleep(dt)

    with torch.inference_mode():
        i = 0  # the oldest request not yet served
        while i < n:
            sleep_until(arrivals_s[i])  # an idle server waits for the next request
            deadline = arrivals_s[i] + max_wait
            j = i  # requests[i:j] have arrived and join this batch
            while True:
                now = clock()
                while j < n and j - i < max_batch and arrivals_s[j] <= now:
                    j += 1
                if j - i >= max_batch or j == n or now >= deadline:
                    break  # full, nothing more will come, or the oldest has waited long enough
                sleep_until(min(arrivals_s[j], deadline))  # the next arrival or the deadline
            out = fn(torch.cat(list(requests[i:j])))
            if on_cuda:
                torch.cuda.synchronize()  # the answers are ready only when the GPU is done
            done = clock()
            for k in range(i, j):
                outputs[k] = out[k - i : k - i + 1]
                latencies[k] = (done - arrivals_s[k]) * 1e3
            sizes.append(j - i)
            i = j
    return outputs, latencies, sizes  # type: ignore[return-value]


def poisson_arrivals(n: int, rate_rps: float, seed: int = 0) -> list[float]:
    """Arrival times (s) of n requests from independent clients at rate_rps on average."""
    rng = random.Random(seed)
    t, out = 0.0, []
    for _ in range(n):
        t += rng.expovariate(rate_rps)
        out.append(t)
    return out


# --- the command line ------------------------------------------------------------------------------


def accuracy(fn: Predictor, x: torch.Tensor, y: torch.Tensor) -> float:
    """Share of right answers, one request at a time (the shape the step is served with)."""
    with torch.inference_mode():
        right = sum(int(fn(x[k : k + 1]).argmax(1).item() == y[k].item()) for k in range(len(x)))
    return right / len(x)


def run_steps(args) -> dict:
    device = pick_device(args.device)
    model = build_model(args.seed)
    x_req, _ = make_data(args.requests, seed=args.seed + 101)
    x_test, y_test = make_data(args.test, seed=args.seed + 202)
    requests = [x_req[k : k + 1].to(device) for k in range(len(x_req))]
    x_test = x_test.to(device)
    y_test = y_test.to(device)
    report = {"device": str(device), "torch": torch.__version__, "threads": torch.get_num_threads(), "steps": []}
    eager_rps = None
    for step in args.steps:
        entry: dict = {"step": step}
        try:
            t0 = time.perf_counter()
            fn = apply(step, model, device)
            with torch.inference_mode():
                fn(requests[0])  # the first call pays for compilation and lazy set-up
            entry["setup_s"] = time.perf_counter() - t0
        except StepSkipped as why:
            entry["skipped"] = str(why)
            report["steps"].append(entry)
            continue
        if step != "batch":
            entry.update(measure(fn, requests, device))
            entry["accuracy"] = accuracy(fn, x_test, y_test)
            if step == "eager":
                eager_rps = entry["throughput_rps"]
        else:
            if eager_rps is None:
                eager_rps = measure(apply("eager", model, device), requests, device)["throughput_rps"]
            # Capacity: every request is waiting at time 0 (a burst).
            serve(fn, requests[:64], [0.0] * 64, args.max_batch, args.max_wait_ms)  # warm-up
            t0 = time.perf_counter()
            serve(fn, requests, [0.0] * len(requests), args.max_batch, args.max_wait_ms)
            capacity = len(requests) / (time.perf_counter() - t0)
            # Latency: requests arrive at twice the rate the unbatched eager model can answer.
            offered = 2.0 * eager_rps
            arrivals = poisson_arrivals(len(requests), offered, seed=args.seed)
            _, lat, sizes = serve(fn, requests, arrivals, args.max_batch, args.max_wait_ms)
            test_reqs = [x_test[k : k + 1] for k in range(len(x_test))]
            outs, _, _ = serve(fn, test_reqs, [0.0] * len(test_reqs), args.max_batch, args.max_wait_ms)
            right = sum(int(o.argmax(1).item() == y_test[k].item()) for k, o in enumerate(outs))
            entry.update(summarise(lat, 1.0))
            entry.update(
                {
                    "throughput_rps": capacity,
                    "offered_rps": offered,
                    "mean_batch": sum(sizes) / len(sizes),
                    "max_batch": args.max_batch,
                    "max_wait_ms": args.max_wait_ms,
                    "accuracy": right / len(test_reqs),
                }
            )
        report["steps"].append(entry)
    return report


def print_table(report: dict) -> None:
    print(f"device {report['device']}, torch {report['torch']}, {report['threads']} thread(s)")
    print(f"{'step':<8} {'p50 ms':>8} {'p95 ms':>8} {'req/s':>9} {'accuracy':>9} {'setup s':>8}")
    for e in report["steps"]:
        if "skipped" in e:
            print(f"{e['step']:<8} skipped: {e['skipped']}")
            continue
        extra = ""
        if e["step"] == "batch":
            extra = f"  (mean batch {e['mean_batch']:.1f}; latency at {e['offered_rps']:.0f} req/s offered)"
        print(
            f"{e['step']:<8} {e['p50_ms']:8.3f} {e['p95_ms']:8.3f} {e['throughput_rps']:9.0f} "
            f"{e['accuracy']:9.4f} {e['setup_s']:8.2f}{extra}"
        )


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", action="store_true", help="print one JSON line instead of a table")
    p.add_argument("--steps", default=",".join(STEPS), help=f"comma-separated, from {','.join(STEPS)}")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    p.add_argument("--requests", type=int, default=400, help="requests per measurement")
    p.add_argument("--test", type=int, default=1000, help="test samples for the accuracy")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="CPU threads for PyTorch (1: stable timings)")
    p.add_argument("--max-batch", type=int, default=32)
    p.add_argument("--max-wait-ms", type=float, default=2.0)
    args = p.parse_args(argv)
    args.steps = [s.strip() for s in args.steps.split(",") if s.strip()]
    unknown = [s for s in args.steps if s not in STEPS]
    if unknown:
        p.error(f"unknown step(s) {unknown}; the steps are {','.join(STEPS)}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    report = run_steps(args)
    if args.json:
        print(json.dumps(report))
    else:
        print_table(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
