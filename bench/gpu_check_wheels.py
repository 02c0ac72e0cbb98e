"""`make gpu-wheels`: the wheels gpudojo needs on the GPU machine and that machine lacks, for
CPython 3.12 on x86-64 manylinux, in .whl/ (git-ignored), to travel with the working tree.

The GPU machine has Python 3.12 with torch (CUDA 13), cupy-cuda13x, numba-cuda, cuda-bindings,
nvidia-ml-py, pytest and many more (the device tool's KINDS.md lists them), but not
jupyter_server, pydantic, jupytext, nbclient, ipykernel and what they pull in. pip resolves those
for the target platform here (it can reach PyPI; that machine cannot), the packages the machine
already has are dropped, and the size is checked against the 64 MiB the working tree may have in
all. The top-level versions are the ones this checkout's venv runs, so the GPU machine runs what
`make test` tests.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TREE_LIMIT = 64 * 1024 * 1024

# What gpudojo imports at run time, its tests, and the lessons' runner need, that the GPU
# machine does not have.
NEEDED = (
    "jupyter_server",
    "pydantic",
    "jupytext",
    "nbformat",
    "nbclient",
    "ipykernel",
    "pytest-jupyter",
    "websockets",
)
PLATFORMS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
    "manylinux_2_34_x86_64",
    "manylinux_2_35_x86_64",
)

# The GPU machine's own packages (the device tool's KINDS.md, "Python packages already there",
# read 2026-11-17): a wheel for one of these would only shadow it.
_ON_DEVICE = """
absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build
certifi charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core
cuda-pathfinder cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock
flatbuffers flax fonttools formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx humanize
hypothesis idna imageio iniconfig interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin jaxlib jaxtyping jinja2
joblib kiwisolver lazy-loader lightning lightning-utilities linear-operator lineax llvmlite lxml markdown
markdown-it-py markupsafe matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack multidict multipledispatch
mypy-extensions nanobind narwhals networkx ninja numba numba-cuda numpy numpyro nvidia-cublas
nvidia-cuda-cupti nvidia-cuda-nvrtc nvidia-cuda-runtime nvidia-cudnn-cu13 nvidia-cufft nvidia-cufile
nvidia-curand nvidia-cusolver nvidia-cusparse nvidia-cusparselt-cu13 nvidia-ml-py nvidia-nccl-cu13
nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx onnx-ir onnxruntime onnxscript opencv-python-headless
optax opt-einsum opt-einsum-fx optimistix orbax-checkpoint packaging pandas pathspec patsy peft pillow pip
pluggy portalocker prometheus-client propcache protobuf psutil pyarrow pybind11 py-cpuinfo pygments
pyparsing pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock pytest-timeout
pytest-xdist python-dateutil pytorch-lightning pyyaml regex requests rich sacrebleu safetensors
scikit-build-core scikit-image scikit-learn scipy seaborn sentencepiece sentence-transformers setuptools
shellingham simplejson six sortedcontainers statsmodels sympy tabulate tensorboard tensorboard-data-server
tensorstore threadpoolctl tifffile tiktoken timm tokenizers toolz torch torchaudio torchdiffeq torch-geometric
torchmetrics torchvision tqdm transformers treescope triton typer typing-extensions typing-inspect urllib3
uvloop wadler-lindig werkzeug wheel wrapt xarray xxhash yarl zipp
"""
ON_DEVICE = frozenset(re.findall(r"\S+", _ON_DEVICE))


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_project(path: Path) -> str:
    return canonical(path.name.split("-")[0])


def pinned(name: str) -> str:
    """``name==version`` as this venv has it (what make test ran), else the bare name."""
    try:
        return f"{name}=={md.version(name)}"
    except md.PackageNotFoundError:
        return name


def missing_requirements(wheels: list[Path]) -> list[str]:
    """Requirements of the carried wheels (for Python 3.12 on Linux, extras left out) that
    neither another carried wheel nor the GPU machine provides."""
    import zipfile

    from packaging.requirements import Requirement

    env = {
        "python_version": "3.12",
        "python_full_version": "3.12.3",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "platform_machine": "x86_64",
        "os_name": "posix",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "extra": "",
    }
    have = {wheel_project(w) for w in wheels} | {canonical(n) for n in ON_DEVICE}
    missing = []
    for whl in wheels:
        with zipfile.ZipFile(whl) as z:
            meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
            lines = z.read(meta).decode(errors="replace").splitlines()
        for line in lines:
            if not line.startswith("Requires-Dist:"):
                continue
            req = Requirement(line.split(":", 1)[1].strip())
            if req.marker is not None and not req.marker.evaluate(env):
                continue
            if canonical(req.name) not in have:
                missing.append(f"{req.name} (needed by {whl.name})")
    return sorted(set(missing))


def travelling_bytes() -> int:
    """Tracked files plus untracked files git does not ignore: what the device tool sends."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    total = 0
    for rel in filter(None, listed):
        path = REPO / rel.decode()
        if path.is_file() and not path.is_symlink():
            total += path.stat().st_size
    return total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dest", type=Path, default=REPO / ".whl")
    ap.add_argument("--check", action="store_true", help="only measure what is in --dest")
    args = ap.parse_args(argv)
    dest: Path = args.dest
    if not args.check:
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--only-binary=:all:",
                "--python-version",
                "3.12",
                "--implementation",
                "cp",
                "--abi",
                "cp312",
                "--abi",
                "abi3",
                "--abi",
                "none",
                "-d",
                tmp,
            ]
            for plat in PLATFORMS:
                cmd += ["--platform", plat]
            cmd += [pinned(n) for n in NEEDED]
            print("$ " + " ".join(cmd[3:]), flush=True)
            subprocess.run(cmd, check=True)
            shutil.rmtree(dest, ignore_errors=True)
            dest.mkdir(parents=True)
            skip = {canonical(n) for n in ON_DEVICE}
            for whl in sorted(Path(tmp).glob("*.whl")):
                if wheel_project(whl) in skip:
                    print(f"  left out (on the GPU machine): {whl.name}")
                else:
                    shutil.copy(whl, dest / whl.name)
    wheels = sorted(dest.glob("*.whl"))
    names = [wheel_project(w) for w in wheels]
    dupes = sorted({n for n in names if names.count(n) > 1})
    size = sum(w.stat().st_size for w in wheels)
    tree = travelling_bytes()
    for w in wheels:
        print(f"  {w.stat().st_size / 1024:8.0f} KiB  {w.name}")
    print(
        f"{len(wheels)} wheels, {size / 2**20:.1f} MiB in {dest}; the tree without them {tree / 2**20:.1f} MiB; "
        f"together {(size + tree) / 2**20:.1f} MiB of the 64 MiB the device tool carries"
    )
    missing = missing_requirements(wheels)
    if missing:
        print("not carried and not on the GPU machine: " + ", ".join(missing), file=sys.stderr)
        return 1
    if dupes:
        print(f"two versions of {', '.join(dupes)}: pip would refuse the install", file=sys.stderr)
        return 1
    if size + tree > TREE_LIMIT:
        print("too big for the device tool", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
