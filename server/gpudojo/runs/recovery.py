"""Runs a stopped process left behind: a server (or a CLI following its run) that died
while runs were queued or running. Called once, explicitly, when a run service starts."""

from __future__ import annotations

import time
from collections.abc import Callable

from .engines.base import cleanup_job
from .models import RootCause, Run
from .procs import alive_of, kill_all, processes_of_run
from .store import RunStore


def recover_orphans(store: RunStore, owner: tuple[int, float], announce: Callable[[Run], None]) -> list[str]:
    """Kill what is left of every unfinished run whose supervising process is gone, mark it
    lost, and ``announce`` it (its final status event). Runs whose supervisor still lives
    (another server, a CLI following its run) are theirs, and left alone. Returns the ids
    of the runs marked lost."""
    lost: list[str] = []
    for run in store.unfinished():
        supervisor = store.owner(run.id)
        if supervisor and supervisor != owner and alive_of([supervisor]):
            continue
        # The recorded pids, and the processes the supervisor had not recorded yet when it died.
        kill_all(store.pids(run.id) + processes_of_run(run.id))
        try:
            cleaned = cleanup_job(run)
        except Exception as err:  # a scheduler that cannot be reached must not stop the server starting
            cleaned = f"could not stop the {run.engine} job: {err}"
        run.status, run.ended_at = "lost", time.time()
        run.root_cause = RootCause(
            exception="The server stopped while this run was queued or running."
            + (f" Its {run.engine} job was stopped ({cleaned})." if cleaned else "")
        )
        store.save(run)
        announce(run)
        lost.append(run.id)
    return lost
