"""Gathering the class on demand: the hub's users, then each running server's summary.

Every call goes out with the service's own token. Learner servers are asked through the proxy
(GET <proxy><server path>gpudojo/api/course/summary), at most ``concurrency`` at a time and each
within ``timeout_s``: a stopped server, a slow one and one without gpudojo each get a row saying
so, and never hold up the rest.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from urllib.parse import urlencode

from pydantic import ValidationError
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

from ..course.models import ProgressSummary
from .models import LearnerAnswer

SUMMARY_PATH = "gpudojo/api/course/summary"
PAGE = 200  # users per page of the hub's API


@dataclass(frozen=True)
class Learner:
    name: str
    server_url: str | None  # the running default server's URL (ends with /); None: stopped


class HubError(Exception):
    """The hub's API refused or failed: the message says what the service's role lacks."""


def http_client(concurrency: int) -> AsyncHTTPClient:
    # Its own client, as many connections as the semaphore lets through (nothing queues inside).
    return AsyncHTTPClient(force_instance=True, max_clients=max(concurrency, 1))


async def list_learners(
    client: AsyncHTTPClient, api_url: str, token: str, proxy_url: str, group: str | None = None, timeout_s: float = 10
) -> list[Learner]:
    """The hub's users (members of ``group`` only, when given), with their default server's
    URL under ``proxy_url`` when it is running. Needs list:users and read:users."""
    learners: list[Learner] = []
    offset = 0
    while True:
        url = f"{api_url.rstrip('/')}/users?{urlencode({'offset': offset, 'limit': PAGE})}"
        request = HTTPRequest(
            url,
            headers={"Authorization": f"token {token}", "Accept": "application/jupyterhub-pagination+json"},
            request_timeout=timeout_s,
        )
        try:
            response = await client.fetch(request)
        except HTTPClientError as err:
            raise HubError(
                f"The hub's API answered {err.code} to GET /users: the gpudojo-class role needs list:users and "
                "read:users (docs/class-service.md)."
            ) from err
        except OSError as err:
            raise HubError(f"The hub's API at {api_url} is unreachable: {err}") from err
        doc = json.loads(response.body)
        for user in doc["items"]:
            if group and group not in (user.get("groups") or []):
                continue
            learners.append(Learner(name=user["name"], server_url=server_url(proxy_url, user.get("server"))))
        following = (doc.get("_pagination") or {}).get("next")
        if not following:
            return learners
        offset = following["offset"]


def server_url(proxy_url: str, server: str | None) -> str | None:
    """A server's URL from the user model's ``server`` (a path, or a full URL with subdomains)."""
    if not server:
        return None
    if server.startswith(("http://", "https://")):
        return server if server.endswith("/") else server + "/"
    return proxy_url.rstrip("/") + "/" + server.strip("/") + "/"


async def fetch_summary(client: AsyncHTTPClient, learner: Learner, token: str, timeout_s: float) -> LearnerAnswer:
    """One learner's summary, or a row saying why there is none; never raises."""
    if learner.server_url is None:
        return LearnerAnswer(name=learner.name, state="stopped", detail="No server running")
    started = time.monotonic()

    def answer(state: str, detail: str = "", summary: ProgressSummary | None = None) -> LearnerAnswer:
        ms = (time.monotonic() - started) * 1000
        return LearnerAnswer(name=learner.name, state=state, detail=detail, elapsed_ms=ms, summary=summary)  # type: ignore[arg-type]

    request = HTTPRequest(
        learner.server_url + SUMMARY_PATH,
        headers={"Authorization": f"token {token}", "Accept": "application/json"},
        connect_timeout=timeout_s,
        request_timeout=timeout_s,
        follow_redirects=False,
    )
    try:
        # The client's own timeout covers the exchange; wait_for bounds everything else as well.
        response = await asyncio.wait_for(client.fetch(request), timeout_s + 0.5)
    except TimeoutError:
        return answer("timeout", f"No answer within {timeout_s:g} s")
    except HTTPClientError as err:
        if err.code == 599:
            return answer("timeout", f"No answer within {timeout_s:g} s")
        if err.code in (401, 403) or 300 <= err.code < 400:
            why = "refused the class service (its role needs access:servers)"
        elif err.code == 404:
            why = "has no gpudojo course/summary route (gpudojo missing or older than the class view)"
        elif err.code in (502, 503):
            why = "is not answering through the proxy (starting or stopping?)"
        else:
            why = "failed"
        return answer("error", f"The server {why}: HTTP {err.code}")
    except OSError as err:
        return answer("error", f"The server is unreachable: {err.strerror or err}")
    try:
        summary = ProgressSummary.model_validate_json(response.body)
    except ValidationError:
        return answer("error", "The server's answer is not a gpudojo summary (a different gpudojo version?)")
    return answer("ok", summary=summary)


async def gather_class(
    client: AsyncHTTPClient, learners: list[Learner], token: str, *, concurrency: int = 20, timeout_s: float = 5.0
) -> list[LearnerAnswer]:
    """Every learner's answer, at most ``concurrency`` requests in flight, each within ``timeout_s``;
    the answers in the learners' order."""
    limit = asyncio.Semaphore(max(concurrency, 1))

    async def one(learner: Learner) -> LearnerAnswer:
        if learner.server_url is None:
            return await fetch_summary(client, learner, token, timeout_s)
        async with limit:
            return await fetch_summary(client, learner, token, timeout_s)

    return list(await asyncio.gather(*(one(x) for x in learners)))
