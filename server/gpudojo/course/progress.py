"""Per-user progress in SQLite: item status, quiz attempts, timestamps.

The database lives in the data dir and survives restarts. One that cannot be opened or
read (corrupt, or not a database) is moved aside and recreated, with a log line saying
where the old file went; the server never fails to start because of it.
"""

from __future__ import annotations

import json
import logging
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from .models import AttemptSummary, CheckAttempt, ProgressEntry, QuizResult

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS progress (
    user TEXT NOT NULL,
    kind TEXT NOT NULL,
    item_id TEXT NOT NULL,
    status TEXT NOT NULL,
    updated_at REAL NOT NULL,
    completed_at REAL,
    PRIMARY KEY (user, kind, item_id)
);
CREATE TABLE IF NOT EXISTS quiz_attempts (
    user TEXT NOT NULL,
    lesson_id TEXT NOT NULL,
    at REAL NOT NULL,
    score INTEGER NOT NULL,
    total INTEGER NOT NULL,
    result TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS quiz_by_user ON quiz_attempts (user, lesson_id, at);
CREATE TABLE IF NOT EXISTS exercise_checks (
    user TEXT NOT NULL,
    exercise_id TEXT NOT NULL,
    attempt_id TEXT NOT NULL,
    at REAL NOT NULL,
    mode TEXT NOT NULL,
    status TEXT NOT NULL,
    passed INTEGER NOT NULL,
    applicable INTEGER NOT NULL,
    completed INTEGER NOT NULL,
    result TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS checks_by_user ON exercise_checks (user, exercise_id, at);
CREATE TABLE IF NOT EXISTS installation_secrets (
    name TEXT PRIMARY KEY,
    value BLOB NOT NULL
);
"""


@dataclass(frozen=True)
class ProgressChange:
    """One write to a user's progress: an item's status set, or a quiz attempt graded.

    ``kind`` is lesson, lab, exercise or module-test; ``status`` is the item's status after a
    status write (None for an attempt); ``score``/``total`` come with an attempt."""

    user: str
    kind: str
    item_id: str
    status: str | None = None
    score: int | None = None
    total: int | None = None


class ProgressStore:
    """Progress of every user of one server, in one SQLite file (WAL)."""

    def __init__(self, path: Path, *, timeout_s: float = 5.0) -> None:
        self.path = path
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._secrets: dict[str, bytes] = {}
        self._listeners: list[Callable[[ProgressChange], None]] = []
        self._db = self._open()

    def add_listener(self, listener: Callable[[ProgressChange], None]) -> None:
        """Call ``listener`` after every progress write, on the writing thread (a run's, a
        check's or the io executor's): it must hand work elsewhere, not block."""
        self._listeners.append(listener)

    def _changed(self, change: ProgressChange) -> None:
        for listener in list(self._listeners):
            try:
                listener(change)
            except Exception:  # a listener's failure must not fail the write it follows
                log.exception("gpudojo: a progress listener failed")

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return self._connect()
        except sqlite3.OperationalError:
            # Locked by another process, a full or read-only disk: the file is fine, and moving
            # it aside would lose everyone's progress. Say so, keep it.
            raise
        except sqlite3.DatabaseError as err:
            aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
            self.path.replace(aside)
            for suffix in ("-wal", "-shm"):
                self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)
            log.warning(
                "gpudojo: progress database %s was unreadable (%s); moved to %s and recreated", self.path, err, aside
            )
            return self._connect()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=self.timeout_s)
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(SCHEMA)
        db.execute("SELECT count(*) FROM progress").fetchone()
        return db

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def entries(self, user: str) -> dict[tuple[str, str], ProgressEntry]:
        """Every item this user touched, keyed by (kind, id), with the last quiz score."""
        with self._lock:
            rows = self._db.execute(
                "SELECT kind, item_id, status, updated_at, completed_at FROM progress WHERE user = ?", (user,)
            ).fetchall()
            quizzes = self._db.execute(
                "SELECT lesson_id, score, total FROM quiz_attempts WHERE user = ? ORDER BY at", (user,)
            ).fetchall()
        out = {
            (kind, item): ProgressEntry(kind=kind, id=item, status=status, updated_at=upd, completed_at=done)
            for kind, item, status, upd, done in rows
        }
        for lesson, score, total in quizzes:
            if lesson.startswith(":"):  # a test of its own (the module test), not a lesson's quiz
                continue
            entry = out.setdefault(("lesson", lesson), ProgressEntry(kind="lesson", id=lesson))
            entry.quiz_score, entry.quiz_total = score, total
        return out

    def entry(self, user: str, kind: str, item_id: str) -> ProgressEntry:
        return self.entries(user).get((kind, item_id), ProgressEntry(kind=kind, id=item_id))  # type: ignore[arg-type]

    def set_status(self, user: str, kind: str, item_id: str, status: str) -> ProgressEntry:
        now = time.time()
        with self._lock:
            self._db.execute(
                """INSERT INTO progress (user, kind, item_id, status, updated_at, completed_at)
                   VALUES (?, ?, ?, ?, ?, ?)
                   ON CONFLICT (user, kind, item_id) DO UPDATE SET
                     status = excluded.status, updated_at = excluded.updated_at,
                     completed_at = CASE WHEN excluded.status = 'completed'
                                         THEN coalesce(progress.completed_at, excluded.completed_at)
                                         ELSE NULL END""",
                (user, kind, item_id, status, now, now if status == "completed" else None),
            )
        entry = self.entry(user, kind, item_id)
        self._changed(ProgressChange(user=user, kind=kind, item_id=item_id, status=entry.status))
        return entry

    def record_attempt(self, user: str, key: str, result: QuizResult) -> float:
        """Store one graded attempt of quiz ``key`` (a lesson id, or ':module-test'); returns its time."""
        at = time.time()
        with self._lock:
            self._db.execute(
                "INSERT INTO quiz_attempts (user, lesson_id, at, score, total, result) VALUES (?, ?, ?, ?, ?, ?)",
                (user, key, at, result.score, result.total, result.model_dump_json()),
            )
        # A lesson's quiz under its id; a test of its own (':module-test') under its name.
        kind, item_id = ("module-test", key.lstrip(":")) if key.startswith(":") else ("lesson", key)
        self._changed(ProgressChange(user=user, kind=kind, item_id=item_id, score=result.score, total=result.total))
        return at

    def attempt_stats(
        self, user: str, key: str
    ) -> tuple[int, tuple[int, int, float] | None, tuple[int, int, float] | None]:
        """How many attempts of quiz ``key``, the last and the best (score, total, at); the
        best is the highest share right, the earliest of equals."""
        with self._lock:
            rows = self._db.execute(
                "SELECT score, total, at FROM quiz_attempts WHERE user = ? AND lesson_id = ? ORDER BY at",
                (user, key),
            ).fetchall()
        if not rows:
            return 0, None, None
        best = max(rows, key=lambda r: (r[0] / r[1] if r[1] else 0.0, -r[2]))
        return len(rows), tuple(rows[-1]), tuple(best)  # type: ignore[return-value]

    def attempt_count(self, user: str, key: str) -> int:
        """How many graded attempts of quiz ``key`` this user has made."""
        with self._lock:
            row = self._db.execute(
                "SELECT count(*) FROM quiz_attempts WHERE user = ? AND lesson_id = ?", (user, key)
            ).fetchone()
        return int(row[0])

    def secret(self, name: str) -> bytes:
        """A random secret of this installation (32 bytes), made on first use and kept with the
        progress it belongs to, so every process serving this data dir agrees on it."""
        with self._lock:
            if name in self._secrets:
                return self._secrets[name]
            self._db.execute(
                "INSERT OR IGNORE INTO installation_secrets (name, value) VALUES (?, ?)",
                (name, secrets.token_bytes(32)),
            )
            row = self._db.execute("SELECT value FROM installation_secrets WHERE name = ?", (name,)).fetchone()
            self._secrets[name] = bytes(row[0])
            return self._secrets[name]

    def record_quiz(self, user: str, lesson_id: str, result: QuizResult) -> None:
        self.record_attempt(user, lesson_id, result)
        if self.entry(user, "lesson", lesson_id).status == "not_started":
            self.set_status(user, "lesson", lesson_id, "in_progress")

    def last_quiz(self, user: str, lesson_id: str) -> QuizResult | None:
        with self._lock:
            row = self._db.execute(
                "SELECT result FROM quiz_attempts WHERE user = ? AND lesson_id = ? ORDER BY at DESC LIMIT 1",
                (user, lesson_id),
            ).fetchone()
        if row is None:
            return None
        try:
            return QuizResult.model_validate(json.loads(row[0]))
        except ValidationError:
            # Graded before choices had ids, by positions in files that have since been
            # reordered: the score stands (attempt_stats), the choice-by-choice view cannot.
            return None

    def record_check(self, user: str, attempt: CheckAttempt) -> None:
        """Store a finished check attempt; a completed one completes the exercise, any other
        marks it in progress (a completion is never undone by a later failing attempt)."""
        with self._lock:
            self._db.execute(
                """INSERT INTO exercise_checks
                   (user, exercise_id, attempt_id, at, mode, status, passed, applicable, completed, result)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                (
                    user,
                    attempt.exercise,
                    attempt.id,
                    attempt.finished_at or time.time(),
                    attempt.mode,
                    attempt.status,
                    attempt.passed,
                    attempt.applicable,
                    int(attempt.completed),
                    attempt.model_dump_json(),
                ),
            )
        if attempt.completed:
            self.set_status(user, "exercise", attempt.exercise, "completed")
        elif self.entry(user, "exercise", attempt.exercise).status == "not_started":
            self.set_status(user, "exercise", attempt.exercise, "in_progress")

    def check_history(self, user: str, exercise_id: str, limit: int = 50) -> list[AttemptSummary]:
        """This user's check attempts of an exercise, newest first."""
        with self._lock:
            rows = self._db.execute(
                """SELECT attempt_id, at, mode, status, passed, applicable, completed FROM exercise_checks
                   WHERE user = ? AND exercise_id = ? ORDER BY at DESC LIMIT ?""",
                (user, exercise_id, limit),
            ).fetchall()
        return [
            AttemptSummary(id=a, at=at, mode=m, status=st, passed=p, applicable=ap, completed=bool(c))
            for a, at, m, st, p, ap, c in rows
        ]

    def last_check(self, user: str, exercise_id: str) -> CheckAttempt | None:
        with self._lock:
            row = self._db.execute(
                "SELECT result FROM exercise_checks WHERE user = ? AND exercise_id = ? ORDER BY at DESC LIMIT 1",
                (user, exercise_id),
            ).fetchone()
        return CheckAttempt.model_validate_json(row[0]) if row else None

    def last_activity(self, user: str) -> float | None:
        """Unix time (s) of this user's latest write: a status set, a quiz or test graded, a check."""
        with self._lock:
            row = self._db.execute(
                "SELECT max(t) FROM (SELECT max(updated_at) AS t FROM progress WHERE user = ?"
                " UNION ALL SELECT max(at) FROM quiz_attempts WHERE user = ?"
                " UNION ALL SELECT max(at) FROM exercise_checks WHERE user = ?)",
                (user, user, user),
            ).fetchone()
        return row[0]

    def users(self) -> list[str]:
        with self._lock:
            rows = self._db.execute(
                "SELECT user FROM progress UNION SELECT user FROM quiz_attempts"
                " UNION SELECT user FROM exercise_checks ORDER BY 1"
            ).fetchall()
        return [r[0] for r in rows]
