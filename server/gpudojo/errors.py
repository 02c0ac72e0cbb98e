"""What a service says when it refuses or cannot do something: plain exceptions, no HTTP.

Services raise these; the API base handler maps each kind to a status once
(gpudojo.api.base), the CLI prints the message. Every error carries a short ``code`` a
client can switch on, a message for a person (what to do next), and optional ``detail``
(e.g. the fields of a form that were wrong).
"""

from __future__ import annotations

from typing import Any


class ServiceError(Exception):
    """Base of every refusal a service makes on purpose."""

    default_code = "error"

    def __init__(self, message: str, code: str | None = None, detail: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.detail = detail


class Invalid(ServiceError, ValueError):
    """The request itself is wrong (bad values, a malformed id); ``detail`` says which part."""

    default_code = "invalid_request"


class Forbidden(ServiceError):
    """Not allowed, whatever the values (e.g. a path outside the server's root)."""

    default_code = "forbidden"


class NotFound(ServiceError, LookupError):
    """The thing named does not exist (a run, a lab, a capture, a lesson)."""

    default_code = "not_found"


class Conflict(ServiceError):
    """Valid, but not now: the state of things does not allow it."""

    default_code = "conflict"


class TooLarge(ServiceError):
    """Over a size cap (source, body, capture)."""

    default_code = "too_large"


class Unavailable(ServiceError):
    """Something the service needs is missing or shutting down (a compiler, the run service)."""

    default_code = "unavailable"


class TimedOut(ServiceError):
    """The work took longer than its limit and was stopped."""

    default_code = "timeout"


class Failed(ServiceError):
    """A worker the service relies on failed (crashed, answered nonsense)."""

    default_code = "failed"
