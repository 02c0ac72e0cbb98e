"""Shapes every resource shares: the error body of a refused request and the error frame
a websocket sends before it closes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class ErrorInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: str = Field(description="Short and stable, for clients to switch on (e.g. not_found, invalid_request)")
    message: str = Field(description="For a person: what went wrong and what to do next")
    detail: Any = Field(None, description="e.g. the fields of a form that were wrong")


class ErrorBody(BaseModel):
    """What every 4xx/5xx answer of the API carries."""

    model_config = ConfigDict(extra="forbid")

    error: ErrorInfo


class SocketError(BaseModel):
    """A websocket's error frame (a refused control message, a run that does not exist)."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["error"] = "error"
    error: ErrorInfo


def socket_error(code: str, message: str, detail: Any = None) -> str:
    """A SocketError frame as text."""
    return SocketError(error=ErrorInfo(code=code, message=message, detail=detail)).model_dump_json()
