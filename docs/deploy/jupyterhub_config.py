"""JupyterHub for a gpudojo class on one GPU server (docs/deploy.md).

Start it with `jupyterhub -f jupyterhub_config.py`. Each learner gets a Jupyter server of their
own with gpudojo in it; gpudojo keeps that learner's progress and runs in the learner's own Jupyter
data dir (~/.local/share/jupyter/gpudojo), so nothing is shared between learners.

tests/python/test_jupyterhub.py loads this very file (load_subconfig) and only changes what a test
machine needs: ports, a temporary folder, DummyAuthenticator and SimpleLocalProcessSpawner.
"""

import os
import zlib

c = get_config()  # noqa: F821 (JupyterHub's config loader defines it)

# --- who may log in and what they start ---------------------------------------------------
# Learners are the server's OS users (PAM, the default authenticator); LocalProcessSpawner starts
# each one's server as that user, in their home folder. For accounts that are not OS users, see
# docs/deploy.md (OAuthenticator + SystemdSpawner or DockerSpawner).
c.Authenticator.allowed_users = set(filter(None, os.environ.get("GPUDOJO_LEARNERS", "").split(",")))
c.Authenticator.admin_users = set(filter(None, os.environ.get("GPUDOJO_INSTRUCTORS", "").split(",")))
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.default_url = "/lab"  # JupyterLab, where gpudojo's sidebar lives
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120

# gpudojo's own limits, per learner (traitlets of the GPUDojo extension app).
c.Spawner.args = [
    "--GPUDojo.max_concurrent_runs=1",  # one lab at a time per learner on a shared GPU
    "--GPUDojo.run_timeout_s=1800",
]
c.Spawner.cmd = ["jupyterhub-singleuser"]

# --- which GPU each learner sees -----------------------------------------------------------
# GPUDOJO_CLASS_GPUS lists what CUDA_VISIBLE_DEVICES may name: GPU indices ("0,1,2,3") or MIG
# instances ("MIG-<uuid>,..." from `nvidia-smi -L`). GPUDOJO_GPU_OF pins learners by name
# ("alice=0,bob=MIG-..."); anyone else gets one by a stable hash of their name, so a learner always
# lands on the same device. CUDA_VISIBLE_DEVICES is cooperative (NVML and a determined user still
# see every GPU); docs/deploy.md shows the enforced alternatives (DockerSpawner device requests,
# Kubernetes resource requests).
CLASS_GPUS = [g.strip() for g in os.environ.get("GPUDOJO_CLASS_GPUS", "0").split(",") if g.strip()]
GPU_OF = dict(pair.split("=", 1) for pair in os.environ.get("GPUDOJO_GPU_OF", "").split(",") if "=" in pair)


def gpu_for(username: str) -> str:
    """The CUDA_VISIBLE_DEVICES value of one learner."""
    if username in GPU_OF:
        return GPU_OF[username]
    return CLASS_GPUS[zlib.crc32(username.encode()) % len(CLASS_GPUS)]


def give_each_learner_their_gpu(spawner) -> None:
    spawner.environment["CUDA_VISIBLE_DEVICES"] = gpu_for(spawner.user.name)


c.Spawner.pre_spawn_hook = give_each_learner_their_gpu
