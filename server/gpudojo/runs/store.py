"""Runs in SQLite (WAL): what ran, with which parameters, how it ended, and the PIDs it had.

Logs, metrics and events are files in the run's folder; this table is the index. The
server, the CLI and tests open the same file; every call takes its own short transaction.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from .models import FINAL_STATUSES, Run

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


class RunStore:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, timeout=10, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def save(self, run: Run, owner: tuple[int, float] | None = None) -> None:
        """Insert or update ``run``; ``owner`` (pid, start time) is the process supervising it."""
        with self._lock:
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
        with self._lock:
            row = self._db.execute("SELECT owner FROM runs WHERE id = ?", (run_id,)).fetchone()
        value = json.loads(row[0]) if row else []
        return (int(value[0]), float(value[1])) if value else None

    def set_pids(self, run_id: str, pids: list[tuple[int, float]]) -> None:
        """The run's processes as (pid, create_time) pairs, so a restarted server can find them."""
        with self._lock:
            self._db.execute("UPDATE runs SET pids = ? WHERE id = ?", (json.dumps(pids), run_id))

    def pids(self, run_id: str) -> list[tuple[int, float]]:
        with self._lock:
            row = self._db.execute("SELECT pids FROM runs WHERE id = ?", (run_id,)).fetchone()
        return [tuple(p) for p in json.loads(row[0])] if row else []

    def get(self, run_id: str) -> Run | None:
        with self._lock:
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
        with self._lock:
            rows = self._db.execute(query, args).fetchall()
        return [Run.model_validate_json(r[0]) for r in rows]

    def unfinished(self) -> list[Run]:
        marks = ",".join("?" * len(FINAL_STATUSES))
        with self._lock:
            rows = self._db.execute(
                f"SELECT doc FROM runs WHERE status NOT IN ({marks})", tuple(FINAL_STATUSES)
            ).fetchall()
        return [Run.model_validate_json(r[0]) for r in rows]
