"""STAND-INS for a class on JupyterHub, for the class service's tests and bench/bench_class.py.

Not gpudojo and not JupyterHub: each stand-in learner server is a tiny tornado server on a port of
its own that answers GET .../gpudojo/api/course/summary with a recorded summary, and a stand-in
hub answers GET /hub/api/users (paginated, as JupyterHub's API does). The recorded summaries are
real ones: gpudojo's own ProgressStore and summarise() over the repository's course, with progress
written the way the course and check services write it. tests/python/test_classview_hub.py covers
the same service against a real JupyterHub.

Run as a script it serves a class of stand-ins until stopped and prints where the hub is:
    python tests/python/class_standins.py --learners 100 --latency-ms 20
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from tornado import httpserver, web
from tornado.netutil import bind_sockets

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "server"))

from gpudojo.course.catalog import CourseCatalog  # noqa: E402
from gpudojo.course.models import CheckAttempt, ModuleTest, QuizResult, RequirementResult  # noqa: E402
from gpudojo.course.moduletest import MODULE_TEST_FILE, MODULE_TEST_KEY, load_cached, scores  # noqa: E402
from gpudojo.course.progress import ProgressStore  # noqa: E402
from gpudojo.course.summary import summarise  # noqa: E402

TOKEN = "stand-in-service-token"


@dataclass
class Plan:
    """What one stand-in learner did: items completed, last check outcomes, module test scores."""

    lessons: list[str] = field(default_factory=list)
    labs: list[str] = field(default_factory=list)
    checks: dict[str, dict[str, str]] = field(default_factory=dict)  # exercise -> requirement -> outcome
    tests: list[tuple[int, int]] = field(default_factory=list)  # module test attempts (score, total)


def record(folder: Path, plans: dict[str, Plan]) -> dict[str, bytes]:
    """Each plan written to a real progress store, and each learner's summary as gpudojo serves it."""
    catalog = CourseCatalog(REPO / "content", REPO / "labs")
    data = catalog.data()
    test, _ = load_cached(REPO / "content" / MODULE_TEST_FILE, ModuleTest)
    store = ProgressStore(folder / "stand-in-class.sqlite3")
    try:
        out = {}
        for name, plan in plans.items():
            for kind, ids in (("lesson", plan.lessons), ("lab", plan.labs)):
                for item in ids:
                    store.set_status(name, kind, item, "completed")
            for i, (exercise, outcomes) in enumerate(plan.checks.items()):
                store.record_check(name, check_attempt(exercise, outcomes, i))
            for score, total in plan.tests:
                store.record_attempt(name, MODULE_TEST_KEY, QuizResult(score=score, total=total, results=[]))
            summary = summarise(data, store, name, scores(store, name, test) if test else None)
            out[name] = summary.model_dump_json().encode()
        return out
    finally:
        store.close()


def check_attempt(exercise: str, outcomes: dict[str, str], n: int) -> CheckAttempt:
    results = [RequirementResult(id=r, statement=r, gpu=o == "skipped", outcome=o) for r, o in outcomes.items()]
    passed = sum(o == "passed" for o in outcomes.values())
    applicable = sum(o != "skipped" for o in outcomes.values())
    return CheckAttempt(
        id=f"stand-in-{exercise}-{n}",
        exercise=exercise,
        status="done",
        mode="cpu",
        started_at=1.0e9 + n,
        finished_at=1.0e9 + n + 1,
        passed=passed,
        applicable=applicable,
        completed=passed == applicable,
        results=results,
    )


def random_plans(n: int, seed: int = 26) -> dict[str, Plan]:
    """``n`` learners at different points of the repository's course (same seed, same class)."""
    data = CourseCatalog(REPO / "content", REPO / "labs").data()
    rng = random.Random(seed)
    lessons = [x.meta.id for x in sorted(data.lessons, key=lambda x: x.meta.order)]
    labs = [x.meta.id for x in data.labs]
    plans = {}
    for i in range(n):
        checks = {}
        for ex in data.exercises:
            if rng.random() < 0.5:
                reqs = ex.meta.requirements  # type: ignore[attr-defined]
                checks[ex.meta.id] = {
                    r.id: "skipped" if r.gpu else ("passed" if rng.random() < 0.7 else "failed") for r in reqs
                }
        plans[f"learner{i:03d}"] = Plan(
            lessons=lessons[: rng.randint(0, len(lessons))],
            labs=rng.sample(labs, rng.randint(0, len(labs))),
            checks=checks,
            tests=[(rng.randint(0, 20), 20) for _ in range(rng.randint(0, 2))],
        )
    return plans


@dataclass
class StandIn:
    """One stand-in learner: its recorded summary, how it behaves."""

    name: str
    summary: bytes = b""
    running: bool = True  # False: the hub lists no running server
    latency_s: float = 0.0  # how long it takes to answer (longer than the timeout: a hung server)
    gpudojo: bool = True  # False: a server without gpudojo (404)
    groups: list[str] = field(default_factory=list)
    url: str | None = None  # set when served


@dataclass
class Gauge:
    """Requests the stand-in learners are answering at once, and the most seen."""

    now: int = 0
    peak: int = 0
    served: int = 0


class SummaryStandIn(web.RequestHandler):
    def initialize(self, learner: StandIn, gauge: Gauge) -> None:
        self.learner = learner
        self.gauge = gauge

    async def get(self) -> None:
        if self.request.headers.get("Authorization") != f"token {TOKEN}":
            raise web.HTTPError(403)
        self.gauge.now += 1
        self.gauge.peak = max(self.gauge.peak, self.gauge.now)
        try:
            if self.learner.latency_s:
                await asyncio.sleep(self.learner.latency_s)
        finally:
            self.gauge.now -= 1
        if not self.learner.gpudojo:
            raise web.HTTPError(404)
        self.gauge.served += 1
        self.set_header("Content-Type", "application/json")
        self.finish(self.learner.summary)


class UsersStandIn(web.RequestHandler):
    """GET /hub/api/users as JupyterHub answers a token with list:users and read:users."""

    def initialize(self, learners: list[StandIn]) -> None:
        self.learners = learners

    def get(self) -> None:
        if self.request.headers.get("Authorization") != f"token {TOKEN}":
            raise web.HTTPError(403)
        query = parse_qs(urlparse(self.request.uri).query)
        offset, limit = int(query.get("offset", ["0"])[0]), int(query.get("limit", ["200"])[0])
        page = self.learners[offset : offset + limit]
        following = offset + limit if offset + limit < len(self.learners) else None
        self.finish(
            {
                "items": [
                    {"kind": "user", "name": x.name, "server": x.url if x.running else None, "groups": x.groups}
                    for x in page
                ],
                "_pagination": {
                    "offset": offset,
                    "limit": limit,
                    "total": len(self.learners),
                    "next": {"offset": following, "limit": limit} if following is not None else None,
                },
            }
        )


def _listen(app: web.Application) -> tuple[httpserver.HTTPServer, int]:
    sockets = bind_sockets(0, "127.0.0.1")
    server = httpserver.HTTPServer(app)
    server.add_sockets(sockets)
    return server, sockets[0].getsockname()[1]


def start(learners: list[StandIn], gauge: Gauge | None = None) -> tuple[str, list[httpserver.HTTPServer]]:
    """Serve every learner on a port of its own and the hub's users API on one more, on the
    running event loop; returns the stand-in hub's API URL. A server URL is a full URL, as the
    hub gives with subdomains, so no proxy stands between."""
    gauge = gauge or Gauge()
    servers = []
    for x in learners:
        path = f"/user/{x.name}/"
        server, port = _listen(
            web.Application([(path + "gpudojo/api/course/summary", SummaryStandIn, {"learner": x, "gauge": gauge})])
        )
        servers.append(server)
        x.url = f"http://127.0.0.1:{port}{path}"
    hub, port = _listen(web.Application([("/hub/api/users", UsersStandIn, {"learners": learners})]))
    servers.append(hub)
    return f"http://127.0.0.1:{port}/hub/api", servers


class StandInClassThread:
    """The stand-ins on an event loop of their own, in a thread: the code under test keeps its loop."""

    def __init__(self, learners: list[StandIn]) -> None:
        self.learners = learners
        self.gauge = Gauge()
        self.loop = asyncio.new_event_loop()
        self.api_url = ""
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)

        async def up() -> None:
            self.api_url, self.servers = start(self.learners, self.gauge)

        self.loop.run_until_complete(up())
        self._ready.set()
        self.loop.run_forever()

    def __enter__(self) -> StandInClassThread:
        self._thread.start()
        self._ready.wait(30)
        return self

    def __exit__(self, *exc: object) -> None:
        def stop() -> None:
            for s in self.servers:
                s.stop()
            self.loop.stop()

        self.loop.call_soon_threadsafe(stop)
        self._thread.join(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--learners", type=int, default=100)
    parser.add_argument("--latency-ms", type=float, default=0.0, help="Each stand-in's time to answer (ms)")
    parser.add_argument("--folder", type=Path, required=True, help="Where the recorded progress store goes")
    args = parser.parse_args()
    recorded = record(args.folder, random_plans(args.learners))
    learners = [StandIn(name=n, summary=s, latency_s=args.latency_ms / 1000) for n, s in recorded.items()]

    async def serve() -> None:
        api_url, _ = start(learners)
        print(json.dumps({"api_url": api_url, "token": TOKEN, "learners": len(learners)}), flush=True)
        await asyncio.Event().wait()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
