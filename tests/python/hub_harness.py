"""The real JupyterHubs of the class tests, one harness for both:

- DEPLOY_HUB: docs/deploy/jupyterhub_config.py (docs/deploy.md), learners alice and bob; used by
  tests/python/test_jupyterhub.py and the browser's tests/ui/hub.spec.ts;
- CLASS_HUB: docs/jupyterhub_class_service.py (docs/class-service.md), learners alice and bob (the
  `learners` group), instructor ines (the `instructors` group) and the gpudojo-class service; used
  by tests/python/test_classview_hub.py and the browser's tests/ui/class-view.spec.ts.

Each loads its docs file(s) as they are (load_subconfig) and adds only what a test machine needs:
ports, a temporary folder, DummyAuthenticator with one password, SimpleLocalProcessSpawner, and a
service token of the test's own (create users, tokens and servers).

Ports: PORT is the proxy's public port, PORT+1 the hub's own API, PORT+2 the proxy's API, PORT+3
on the learners' servers in order (alice, bob), then the class service (CLASS_HUB: PORT+5).

    python tests/python/hub_harness.py deploy|class FOLDER PORT PASSWORD [SETUP_TOKEN]

writes FOLDER/jupyterhub_config.py, prepares the learners' homes for a browser (no news pop-up in
their Lab; CLASS_HUB: alice's and bob's progress written into their own gpudojo data dirs) and
prints shell lines for tests/ui/start-hub.sh: `config=PATH` and an `export` per variable the hub
needs.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import requests

REPO = Path(__file__).resolve().parents[2]
DEPLOY_CONFIG = REPO / "docs" / "deploy" / "jupyterhub_config.py"
CLASS_FRAGMENT = REPO / "docs" / "jupyterhub_class_service.py"
PROXY = REPO / "node_modules" / ".bin" / "configurable-http-proxy"
LEARNERS = ("alice", "bob")


@dataclass(frozen=True)
class HubKind:
    """What differs between the test hubs."""

    name: str
    fragments: tuple[Path, ...]  # docs files the test config loads, in order
    learners: tuple[str, ...] = LEARNERS  # users with a server each (PORT+3 on)
    more_users: tuple[str, ...] = ()  # users who may log in and get no server from the test
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    extra: str = ""  # config lines after the test's own
    # Variables the hub's process needs; values may name {public} and {after} (the port after
    # the learners' servers).
    environment: Mapping[str, str] = field(default_factory=dict)
    # What the CLI writes into the learners' progress before the hub starts: user -> (kind, id).
    seed: Mapping[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)

    def ports(self, public: int) -> dict[str, int]:
        return {user: public + 3 + i for i, user in enumerate(self.learners)}

    def env(self, public: int) -> dict[str, str]:
        after = public + 3 + len(self.learners)
        return {key: value.format(public=public, after=after) for key, value in self.environment.items()}


DEPLOY_HUB = HubKind("deploy", (DEPLOY_CONFIG,))
CLASS_HUB = HubKind(
    "class",
    (CLASS_FRAGMENT,),
    more_users=("ines",),
    groups={"learners": LEARNERS},
    extra='c.JupyterHub.default_url = "/hub/home"  # logging in starts no server (ines has none)\n',
    environment={
        "GPUDOJO_INSTRUCTORS": "ines",
        "GPUDOJO_CLASS_LEARNERS": "learners",
        "GPUDOJO_CLASS_PROXY_URL": "http://127.0.0.1:{public}",
        "GPUDOJO_CLASS_URL": "http://127.0.0.1:{after}",
    },
    seed={
        "alice": (("lesson", "gpu-intro"), ("lesson", "cuda-basics"), ("lab", "lab-01-cuda-hello")),
        "bob": (("lesson", "gpu-intro"),),
    },
)
KINDS = {kind.name: kind for kind in (DEPLOY_HUB, CLASS_HUB)}

TEST_CONFIG = """
c = get_config()  # noqa: F821
{loads}
from jupyterhub.spawner import SimpleLocalProcessSpawner

c.JupyterHub.bind_url = "http://127.0.0.1:{public}/"
c.JupyterHub.hub_bind_url = "http://127.0.0.1:{hub_api}"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api}"
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.ConfigurableHTTPProxy.should_start = True
c.JupyterHub.db_url = "sqlite:///" + {folder!r} + "/hub.sqlite"
c.JupyterHub.cookie_secret_file = {folder!r} + "/cookie_secret"
c.JupyterHub.pid_file = {folder!r} + "/hub.pid"
c.JupyterHub.cleanup_servers = True

c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = {password!r}
c.Authenticator.allowed_users = set({users!r})
c.JupyterHub.load_groups.update({groups!r})

c.JupyterHub.spawner_class = SimpleLocalProcessSpawner
c.SimpleLocalProcessSpawner.home_dir_template = {folder!r} + "/home/{{username}}"
c.Spawner.cmd = [{singleuser!r}]
c.Spawner.default_url = "/lab"
c.Spawner.http_timeout = c.Spawner.start_timeout = 120  # two servers starting on two cores
if {as_root!r}:  # a container's root user (CI): Jupyter refuses root without this
    c.Spawner.args = [*c.Spawner.get("args", []), "--allow-root"]

# The test's own hands: create users, tokens and servers, read a server's state (its pid).
c.JupyterHub.services.append({{"name": "hub-test", "api_token": {setup_token!r}}})
c.JupyterHub.load_roles.append(
    {{
        "name": "hub-test",
        "scopes": ["admin:users", "admin:servers", "admin:server_state", "tokens", "list:users", "read:users"],
        "services": ["hub-test"],
    }}
)

# Each learner's server on a port of its own, after the docs' pre-spawn hook (if any).
ports = {ports!r}
docs_hook = c.Spawner.get("pre_spawn_hook")


def hook(spawner):
    if docs_hook is not None:
        docs_hook(spawner)
    spawner.port = ports[spawner.user.name]


c.Spawner.pre_spawn_hook = hook
{extra}"""


def write_hub_config(folder: Path, hub: HubKind, *, public: int, password: str, setup_token: str) -> Path:
    """Write the test hub's jupyterhub_config.py into ``folder`` (also its state folder)."""
    singleuser = shutil.which("jupyterhub-singleuser", path=str(Path(sys.executable).parent))
    config = folder / "jupyterhub_config.py"
    config.write_text(
        TEST_CONFIG.format(
            loads="".join(f"load_subconfig({str(f)!r})  # noqa: F821\n" for f in hub.fragments),
            public=public,
            hub_api=public + 1,
            proxy_api=public + 2,
            proxy=str(PROXY),
            folder=str(folder),
            password=password,
            users=sorted({*hub.learners, *hub.more_users}),
            groups={name: {"users": list(users)} for name, users in hub.groups.items()},
            singleuser=singleuser,
            as_root=os.getuid() == 0,
            setup_token=setup_token,
            ports=hub.ports(public),
            extra=hub.extra,
        ),
        encoding="utf-8",
    )
    return config


def wait_for(what: str, check: Callable[[], object], timeout: float, proc: subprocess.Popen, log: Path):
    """``check()``'s first true result within ``timeout`` s; fails with the hub's log if the hub
    exits first or time runs out. A refused connection counts as not yet."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(
                f"the hub exited ({proc.returncode}) while waiting for {what}:\n{log.read_text()[-4000:]}"
            )
        with contextlib.suppress(requests.ConnectionError):
            if result := check():
                return result
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}:\n{log.read_text()[-4000:]}")


@dataclass
class RunningHub:
    proc: subprocess.Popen
    admin: requests.Session  # with the test's service token
    log: Path
    folder: Path
    api: str  # the hub's REST API, through the proxy
    tokens: dict[str, str]  # an API token per user (learners and more_users)

    def wait_for(self, what: str, check: Callable[[], object], timeout: float):
        return wait_for(what, check, timeout, self.proc, self.log)

    def server(self, user: str) -> dict:
        """The user's default server as the hub's API describes it ({} where there is none)."""
        return self.admin.get(f"{self.api}/users/{user}").json()["servers"].get("", {})


@contextlib.contextmanager
def running_hub(
    folder: Path, hub: HubKind, *, public: int, password: str, env: Mapping[str, str] | None = None
) -> Iterator[RunningHub]:
    """Start ``hub`` in ``folder``, create its users with a token each, start the learners'
    servers and wait until they are ready; on the way out stop the servers, then the hub."""
    setup_token = secrets.token_hex(16)
    config = write_hub_config(folder, hub, public=public, password=password, setup_token=setup_token)
    environ = {**os.environ, **hub.env(public), **(env or {})}
    environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environ.get('PATH', '')}"
    log = folder / "hub.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(config)],
            cwd=folder,
            env=environ,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    admin = requests.Session()
    admin.headers["Authorization"] = f"token {setup_token}"
    running = RunningHub(proc, admin, log, folder, f"http://127.0.0.1:{public}/hub/api", {})
    api = running.api
    try:
        running.wait_for("the hub's API", lambda: admin.get(f"{api}/").ok, 60)
        users = [*hub.learners, *hub.more_users]
        r = admin.post(f"{api}/users", json={"usernames": users})  # users appear on first login otherwise
        assert r.status_code in (201, 409), r.text
        for user in users:
            r = admin.post(f"{api}/users/{user}/tokens", json={"note": "hub test", "expires_in": 3600})
            assert r.status_code == 201, r.text
            running.tokens[user] = r.json()["token"]
        for user in hub.learners:
            r = admin.post(f"{api}/users/{user}/server")
            assert r.status_code in (201, 202), r.text
        for user in hub.learners:
            running.wait_for(f"{user}'s server", lambda user=user: running.server(user).get("ready"), 90)
        yield running
    finally:
        for user in hub.learners:
            with contextlib.suppress(requests.RequestException):
                admin.delete(f"{api}/users/{user}/server", timeout=10)
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()


def data_dir(folder: Path, user: str) -> Path:
    """Where gpudojo keeps one learner's database and runs: their own Jupyter data dir."""
    return folder / "home" / user / ".local" / "share" / "jupyter" / "gpudojo"


def prepare_homes(folder: Path, hub: HubKind) -> None:
    """What a browser test wants in the learners' homes before their servers start: no news pop-up
    over what the tests look at (the learner's own Lab settings), and ``hub.seed``'s progress."""
    for user in hub.learners:
        settings = folder / "home" / user / ".jupyter" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
        settings.mkdir(parents=True, exist_ok=True)
        (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}\n', encoding="utf-8")
    if not hub.seed:
        return
    sys.path.insert(0, str(REPO / "server"))
    from gpudojo.course.progress import ProgressStore

    for user, items in hub.seed.items():
        store = ProgressStore(data_dir(folder, user) / "gpudojo.sqlite3")
        try:
            for kind, item in items:
                store.set_status(user, kind, item, "completed")
        finally:
            store.close()


def main(argv: list[str]) -> None:
    hub, folder, port, password = KINDS[argv[0]], Path(argv[1]), int(argv[2]), argv[3]
    setup_token = argv[4] if len(argv) > 4 else secrets.token_hex(16)
    prepare_homes(folder, hub)
    config = write_hub_config(folder, hub, public=port, password=password, setup_token=setup_token)
    print(f"config={shlex.quote(str(config))}")
    for key, value in hub.env(port).items():
        print(f"export {key}={shlex.quote(value)}")


if __name__ == "__main__":
    main(sys.argv[1:])
