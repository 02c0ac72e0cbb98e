"""Progress events on Jupyter Server's event bus: one per progress write, so that every open
JupyterLab follows runs finishing, checks passing, quizzes and lessons marked complete at once.

The schema is registered with the server's EventLogger; the browser hears the events on the
server's own events socket (/api/events/subscribe), which JupyterLab keeps open already.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the server imports this module at start: no pydantic here
    from .progress import ProgressChange

PROGRESS_EVENT_SCHEMA_ID = "https://gpudojo.dev/events/course/progress/v1"

PROGRESS_EVENT_SCHEMA: dict[str, Any] = {
    "$id": PROGRESS_EVENT_SCHEMA_ID,
    "version": "1",
    "title": "gpudojo course progress",
    "personal-data": False,
    "description": (
        "A learner's progress changed: an item's status was written (a lesson marked, a lab run "
        "that ended, an exercise check that finished) or a quiz attempt was graded. Clients "
        "reload the catalog; the event names the item so they can say what changed."
    ),
    "type": "object",
    "required": ["kind", "id"],
    "properties": {
        "kind": {
            "enum": ["lesson", "lab", "exercise", "module-test"],
            "description": "What kind of item changed.",
        },
        "id": {"type": "string", "description": "The item's id (module-test for the module test)."},
        "status": {
            "enum": ["not_started", "in_progress", "completed", None],
            "description": "The item's status after the write; null for a graded quiz attempt.",
        },
        "score": {"type": ["integer", "null"], "description": "Right answers of a graded attempt."},
        "total": {"type": ["integer", "null"], "description": "Questions of a graded attempt."},
    },
}


def progress_event(change: ProgressChange) -> dict[str, Any]:
    """The event's data for one progress write (the user is left out: a server is one user's)."""
    return {
        "kind": change.kind,
        "id": change.item_id,
        "status": change.status,
        "score": change.score,
        "total": change.total,
    }


def progress_emitter(event_logger: Any, call_soon: Callable[..., Any]) -> Callable[[ProgressChange], None]:
    """A ProgressStore listener that emits each change on ``event_logger``.

    Writes happen on worker threads, and the EventLogger starts its listeners as asyncio
    tasks: ``call_soon`` (the IOLoop's thread-safe add_callback) moves the emit onto the loop.
    """

    def emit(change: ProgressChange) -> None:
        call_soon(lambda: event_logger.emit(schema_id=PROGRESS_EVENT_SCHEMA_ID, data=progress_event(change)))

    return emit
