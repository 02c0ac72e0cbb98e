"""The gpudojo-class service: a small tornado app behind JupyterHub's OAuth.

Run by the hub as a managed service (`python -m gpudojo.classview`, docs/class-service.md); the
hub gives it JUPYTERHUB_API_TOKEN, JUPYTERHUB_API_URL, JUPYTERHUB_SERVICE_URL and
JUPYTERHUB_SERVICE_PREFIX. Every page gathers the class anew.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import secrets
import time
from pathlib import Path
from urllib.parse import urlparse

from jupyterhub.services.auth import HubOAuthCallbackHandler, HubOAuthenticated
from jupyterhub.utils import url_path_join
from tornado import web

from .gather import HubError, gather_class, http_client, list_learners
from .models import ClassReport
from .report import class_report, iso, to_csv

log = logging.getLogger("gpudojo.classview")
SERVICE_NAME = "gpudojo-class"


class ClassSettings:
    """Where the hub and the learners' servers are, and how patient to be with them."""

    def __init__(
        self,
        *,
        api_url: str,
        token: str,
        proxy_url: str,
        concurrency: int = 20,
        timeout_s: float = 5.0,
        learners_group: str | None = None,
    ) -> None:
        self.api_url = api_url
        self.token = token
        self.proxy_url = proxy_url
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.learners_group = learners_group or None


async def gather_report(settings: ClassSettings) -> ClassReport:
    """The class as it is now: the hub's users, each running server's summary."""
    started = time.monotonic()
    client = http_client(settings.concurrency)
    try:
        learners = await list_learners(
            client, settings.api_url, settings.token, settings.proxy_url, settings.learners_group
        )
        answers = await gather_class(
            client, learners, settings.token, concurrency=settings.concurrency, timeout_s=settings.timeout_s
        )
    finally:
        client.close()
    return class_report(answers, (time.monotonic() - started) * 1000)


class ClassHandler(HubOAuthenticated, web.RequestHandler):
    """Only hub users (or services) holding access:services!service=<this service> get in: the
    role docs/class-service.md grants to the instructors' group. Everyone else gets 403."""

    @property
    def hub_scopes(self) -> set[str]:
        # Never empty: an empty set would let every hub user in (HubAuthenticated.allow_all).
        name = os.environ.get("JUPYTERHUB_SERVICE_NAME", SERVICE_NAME)
        return {f"access:services!service={name}"}

    @property
    def class_settings(self) -> ClassSettings:
        return self.settings["class_settings"]

    async def report(self) -> ClassReport:
        try:
            return await gather_report(self.class_settings)
        except HubError as err:
            log.error("gpudojo-class: %s", err)
            raise web.HTTPError(502, reason="The hub's API refused the class service") from err

    def set_default_headers(self) -> None:
        # Learners' progress: no caching anywhere, no framing by other sites.
        self.set_header("Cache-Control", "no-store")
        self.set_header("X-Frame-Options", "DENY")


class PageHandler(ClassHandler):
    @web.authenticated
    async def get(self) -> None:
        report = await self.report()
        self.render(
            "class.html",
            report=report,
            iso=iso,
            gathered=iso(report.generated_at),
            prefix=self.settings["service_prefix"],
        )


class JSONHandler(ClassHandler):
    @web.authenticated
    async def get(self) -> None:
        report = await self.report()
        self.set_header("Content-Type", "application/json")
        self.finish(report.model_dump_json())


class CSVHandler(ClassHandler):
    @web.authenticated
    async def get(self) -> None:
        report = await self.report()
        stamp = iso(report.generated_at).replace(":", "")
        self.set_header("Content-Type", "text/csv; charset=utf-8")
        self.set_header("Content-Disposition", f'attachment; filename="gpudojo-class-{stamp}.csv"')
        self.finish(to_csv(report))


def make_app(settings: ClassSettings, prefix: str) -> web.Application:
    """The service's tornado app, its routes under ``prefix`` (JUPYTERHUB_SERVICE_PREFIX)."""
    prefix = prefix if prefix.endswith("/") else prefix + "/"
    return web.Application(
        [
            (prefix, PageHandler),
            (url_path_join(prefix, "class.json"), JSONHandler),
            (url_path_join(prefix, "class.csv"), CSVHandler),
            (url_path_join(prefix, "oauth_callback"), HubOAuthCallbackHandler),
        ],
        template_path=str(Path(__file__).with_name("templates")),
        cookie_secret=secrets.token_bytes(32),
        class_settings=settings,
        service_prefix=prefix,
    )


def default_proxy_url() -> str:
    """Where learner servers are reached: GPUDOJO_CLASS_PROXY_URL, else the hub's public origin,
    else JupyterHub's default bind URL."""
    explicit = os.environ.get("GPUDOJO_CLASS_PROXY_URL")
    if explicit:
        return explicit
    public = os.environ.get("JUPYTERHUB_PUBLIC_HUB_URL") or os.environ.get("JUPYTERHUB_PUBLIC_URL")
    if public:
        p = urlparse(public)
        return f"{p.scheme}://{p.netloc}"
    return "http://127.0.0.1:8000"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="gpudojo-class", description=__doc__.split("\n")[0])
    parser.add_argument("--proxy-url", default=default_proxy_url(), help="Where learners' servers are reached")
    parser.add_argument("--concurrency", type=int, default=20, help="Learner servers asked at once")
    parser.add_argument("--timeout", type=float, default=5.0, help="Seconds each learner server has to answer")
    parser.add_argument("--learners-group", default=os.environ.get("GPUDOJO_CLASS_LEARNERS_GROUP", ""))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="[%(levelname)s %(asctime)s %(name)s] %(message)s")

    service_url = urlparse(os.environ.get("JUPYTERHUB_SERVICE_URL", "http://127.0.0.1:10101"))
    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", f"/services/{SERVICE_NAME}/")
    settings = ClassSettings(
        api_url=os.environ["JUPYTERHUB_API_URL"],
        token=os.environ["JUPYTERHUB_API_TOKEN"],
        proxy_url=args.proxy_url,
        concurrency=args.concurrency,
        timeout_s=args.timeout,
        learners_group=args.learners_group,
    )
    app = make_app(settings, prefix)

    async def serve() -> None:
        app.listen(service_url.port or 80, service_url.hostname or "127.0.0.1")
        log.info("gpudojo-class on %s%s, learners' servers via %s", service_url.netloc, prefix, settings.proxy_url)
        await asyncio.Event().wait()

    asyncio.run(serve())
