"""Runs in SQLite (WAL): what ran, with which parameters, how it ended, and the PIDs it had.

Logs, metrics and events are files in the run's folder; this table is the index. The
server, the CLI and tests open the same file; every call takes its own short transaction.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import Unavailable
from .models import FINAL_STATUSES, Run

log = logging.getLogger(__name__)
# How much of the end of a run's events.jsonl is read for its last status event (bytes).
_STATUS_TAIL_BYTES = 1 << 20

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    status TEXT NOT NULL,
    lab TEXT,
    grp TEXT,
    user TEXT NOT NULL DEFAULT '',
    doc TEXT NOT NULL,
    pids TEXT NOT NULL DEFAULT '[]',
    owner TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS runs_by_time ON runs (created_at);
CREATE INDEX IF NOT EXISTS runs_by_group ON runs (grp);
"""


class StoreUnavailable(Unavailable):
    """The run database cannot be used now: another process holds a lock on it past the wait,
    its disk is full or read-only. Nothing is lost; the same call works once that is over."""


class RunStore:
    def __init__(self, path: Path, *, timeout_s: float = 10.0) -> None:
        """Opens (or creates) the database. A file that is not a readable database (garbage,
        damaged pages) is moved aside to ``<name>.corrupt-<time>`` with a warning in the log, and
        the index rebuilt from the run folders beside it (each folder's last status event);
        ``moved_aside`` says where it went. A lock or a full disk is not damage: StoreUnavailable."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self.moved_aside: Path | None = None
        try:
            self._db = self._connect()
        except sqlite3.OperationalError as err:  # locked, disk full, unreadable file: not damage
            raise StoreUnavailable(self._why(err), "runs_store_unavailable") from err
        except sqlite3.DatabaseError as err:
            self.moved_aside = self._move_aside(err)
            self._db = self._connect()
            self._rebuild(path.parent / "runs")

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, check_same_thread=False, timeout=self.timeout_s, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)
            (verdict,) = db.execute("PRAGMA quick_check").fetchone()
            if verdict != "ok":
                raise sqlite3.DatabaseError(f"quick_check found damage: {verdict}")
        except BaseException:
            db.close()
            raise
        return db

    def _move_aside(self, err: sqlite3.DatabaseError) -> Path:
        aside = self.path.with_name(f"{self.path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
        self.path.replace(aside)
        for suffix in ("-wal", "-shm"):  # they belong to the damaged file, not to the new one
            wal = self.path.with_name(self.path.name + suffix)
            if wal.exists():
                wal.replace(aside.with_name(aside.name + suffix))
        log.warning(
            "gpudojo: the run database %s is not a readable SQLite database (%s); it was moved to %s and "
            "a new one started, its index rebuilt from the run folders.",
            self.path,
            err,
            aside,
        )
        return aside

    def _rebuild(self, runs_dir: Path) -> int:
        """Index again every run folder whose events.jsonl ends with a status event; the count."""
        done = 0
        for folder in sorted(runs_dir.iterdir()) if runs_dir.is_dir() else []:
            run = _last_status(folder / "events.jsonl")
            if run is not None:
                self.save(run)
                done += 1
        if done:
            log.warning("gpudojo: %d run(s) indexed again from %s", done, runs_dir)
        return done

    def _why(self, err: sqlite3.Error) -> str:
        text = str(err)
        hint = {
            "locked": "another process holds a lock on it; try again once it lets go",
            "full": "its disk is full; free some space there",
            "readonly": "it cannot be written (a read-only file or disk)",
        }
        advice = next((words for key, words in hint.items() if key in text), "try again in a moment")
        return f"The run database {self.path} cannot be used now ({text}): {advice}."

    @contextlib.contextmanager
    def _guarded(self) -> Iterator[None]:
        """The store's lock, with sqlite3's errors turned into StoreUnavailable (a 503), so a
        locked or full database is an answer the API and the CLI can show, never a crash."""
        with self._lock:
            try:
                yield
            except sqlite3.Error as err:
                raise StoreUnavailable(self._why(err), "runs_store_unavailable") from err

    def close(self) -> None:
        with self._guarded():
            self._db.close()

    def save(self, run: Run, owner: tuple[int, float] | None = None) -> None:
        """Insert or update ``run``; ``owner`` (pid, start time) is the process supervising it."""
        with self._guarded():
            self._db.execute(
                "INSERT INTO runs (id, created_at, status, lab, grp, user, doc, owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET status = excluded.status, doc = excluded.doc",
                (
                    run.id,
                    run.created_at,
                    run.status,
                    run.lab,
                    run.group,
                    run.user,
                    run.model_dump_json(),
                    json.dumps(list(owner) if owner else []),
                ),
            )

    def owner(self, run_id: str) -> tuple[int, float] | None:
        with self._guarded():
            row = self._db.execute("SELECT owner FROM runs WHERE id = ?", (run_id,)).fetchone()
        value = json.loads(row[0]) if row else []
        return (int(value[0]), float(value[1])) if value else None

    def set_pids(self, run_id: str, pids: list[tuple[int, float]]) -> None:
        """The run's processes as (pid, create_time) pairs, so a restarted server can find them."""
        with self._guarded():
            self._db.execute("UPDATE runs SET pids = ? WHERE id = ?", (json.dumps(pids), run_id))

    def pids(self, run_id: str) -> list[tuple[int, float]]:
        with self._guarded():
            row = self._db.execute("SELECT pids FROM runs WHERE id = ?", (run_id,)).fetchone()
        return [tuple(p) for p in json.loads(row[0])] if row else []

    def get(self, run_id: str) -> Run | None:
        with self._guarded():
            row = self._db.execute("SELECT doc FROM runs WHERE id = ?", (run_id,)).fetchone()
        return Run.model_validate_json(row[0]) if row else None

    def list(
        self, *, lab: str | None = None, status: str | None = None, group: str | None = None, limit: int = 100
    ) -> list[Run]:
        query = "SELECT doc FROM runs"
        where: list[str] = []
        args: list[Any] = []
        for column, value in (("lab", lab), ("status", status), ("grp", group)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        if where:
            query += " WHERE " + " AND ".join(where)
        query += " ORDER BY created_at DESC LIMIT ?"
        args.append(limit)
        with self._guarded():
            rows = self._db.execute(query, args).fetchall()
        return [Run.model_validate_json(r[0]) for r in rows]

    def unfinished(self) -> list[Run]:
        marks = ",".join("?" * len(FINAL_STATUSES))
        with self._guarded():
            rows = self._db.execute(
                f"SELECT doc FROM runs WHERE status NOT IN ({marks})", tuple(FINAL_STATUSES)
            ).fetchall()
        return [Run.model_validate_json(r[0]) for r in rows]


def _last_status(events: Path) -> Run | None:
    """The run as its last status event in ``events`` (a run folder's events.jsonl) has it."""
    try:
        with open(events, "rb") as f:
            f.seek(max(f.seek(0, 2) - _STATUS_TAIL_BYTES, 0))
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if line.startswith(b'{"type":"status"'):
            with contextlib.suppress(ValueError, KeyError, TypeError):
                return Run.model_validate(json.loads(line)["run"])
    return None
