"""The aiohttp application, assembled: POST /webhook (bot.webhooks), the operational and JSON
routes and the tracker pages (bot.site), and the inbox writer and worker started with it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from bot.config import WEBHOOK_BODY_LIMIT
from bot.context import CTX, INBOX, METRICS, WORKER
from bot.metrics import Metrics
from bot.site import (
    api,
    conditional,
    feeds,
    pages,
    preview_pages,
    report_pages,
    study,
    threads,
    verdicts,
)
from bot.store import db as store_db
from bot.webhooks.inbox import Inbox
from bot.webhooks.receive import webhook, webhook_expect
from bot.webhooks.worker import Worker

log = logging.getLogger(__name__)


# The tasks of the requests in flight: a stop asked twice (bot.server) cancels them.
REQUESTS = web.AppKey("requests", set[asyncio.Task[Any]])


@web.middleware
async def track_requests(request: web.Request,
                         handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                         ) -> web.StreamResponse:
    task = asyncio.current_task()
    tasks = request.app[REQUESTS]
    if task is not None:
        tasks.add(task)
    try:
        return await handler(request)
    finally:
        if task is not None:
            tasks.discard(task)


@web.middleware
async def refuse_nul(request: web.Request,
                     handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                     ) -> web.StreamResponse:
    """A NUL character in the path or the query (%00) answers 400 before any route sees it:
    PostgreSQL text cannot hold one, so a lookup with it would fail as a 500."""
    if "\x00" in request.path or any("\x00" in k or "\x00" in v for k, v in request.query.items()):
        return web.json_response({"error": "the URL contains a NUL character (%00)"}, status=400)
    return await handler(request)


# A path no route has whose form without its trailing slash is one (/proposals/, /study/,
# /threads/o/r/N/) leads there: 308, the query kept. aiohttp's own middleware redirects only
# to a path a route resolves, and folds a leading "//" to "/" (its fix of GHSA-v6wp-4m6f-gcjg),
# so the Location is always a path on this site, never another host. /repos/ and /reports/
# are routes of their own (the slash-less /repos leads to /repos/: pages.repos_without_slash).
# The JSON API keeps its own answer, a JSON 404 naming the route meant ("did you mean
# /api/frameworks?"): a script reads an error it can parse rather than follow a redirect.
_remove_trailing_slash = web.normalize_path_middleware(
    append_slash=False, remove_slash=True, merge_slashes=False)


@web.middleware
async def _without_trailing_slash(request: web.Request,
                                  handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                                  ) -> web.StreamResponse:
    if request.path.startswith(api.API_PREFIX):
        return await handler(request)
    return await _remove_trailing_slash(request, handler)


_NO_ANSWER = "the database did not answer; try again later"


def _unavailable(request: web.Request, message: str) -> web.Response:
    if request.path.startswith(api.API_PREFIX):
        return web.json_response({"error": message}, status=503)
    return web.Response(text=f"503 Service Unavailable: {message}\n", status=503,
                        headers={"Retry-After": "30"})


# The export gathers every thread and finding: long on a large tracker, and read by scripts
# that wait for it. Its statements are not bounded (the other requests' are).
UNBOUNDED_PATHS = frozenset({"/api/export.json", "/api/export.csv"})
_TOO_LONG = "the database took too long to answer; try again later"


@web.middleware
async def bounded_statements(request: web.Request,
                             handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                             ) -> web.StreamResponse:
    """A request's statements are cut by PostgreSQL after RLTRACKER_STATEMENT_TIMEOUT: a
    runaway query no longer holds its pooled connection and a server backend for as long as it
    runs. The cut is answered 503 (JSON on /api/, text on a page) with one log line, and so
    is a page whose database does not answer (down, restarting): it was aiohttp's 500 and a
    traceback per request."""
    seconds = (None if request.path in UNBOUNDED_PATHS
               else getattr(request.app[CTX].settings, "statement_timeout", None))
    with store_db.bounded_statements(seconds):
        try:
            return await handler(request)
        except Exception as exc:
            if store_db.is_statement_timeout(exc):
                log.warning("%s %s: %s (statement cut at %ss)", request.method,
                            request.path[:200], _TOO_LONG.partition(";")[0], seconds)
                return _unavailable(request, _TOO_LONG)
            if request.path.startswith(api.API_PREFIX) or not store_db.database_unreachable(exc):
                raise  # the API's own answers (api.json_errors); anything else is a bug
            log.warning("%s %s: the database did not answer (%s)", request.method,
                        request.path[:200], type(exc).__name__)
            return _unavailable(request, _NO_ANSWER)


def create_app(ctx: Any, *, worker: bool = True, worker_options: dict[str, Any] | None = None
               ) -> web.Application:
    """The whole web app. With `worker=True` the inbox worker runs inside it (started and
    stopped with the app); the inbox writer always does, since /webhook needs it."""
    app = web.Application(client_max_size=WEBHOOK_BODY_LIMIT,
                          middlewares=[track_requests, refuse_nul, _without_trailing_slash,
                                       conditional.conditional_get, api.json_errors,
                                       bounded_statements])
    app[CTX] = ctx
    app[REQUESTS] = set()
    app[METRICS] = Metrics()
    inbox = Inbox(ctx.engine)
    app[INBOX] = inbox
    ctx.extras["inbox"] = inbox
    if worker:
        w = Worker(ctx, intake=inbox, **(worker_options or {}))
        app[WORKER] = w
        ctx.extras["worker"] = w
        inbox.add_listener(w.wake)

    async def start_background(app: web.Application) -> None:
        with store_db.bounded_statements(getattr(ctx.settings, "statement_timeout", None)):
            inbox.start()  # its writer task keeps the bound: the webhook's answer waits on it
        if WORKER in app:
            app[WORKER].start()

    async def stop_background(app: web.Application) -> None:
        await inbox.close()  # store what was accepted before stopping the worker
        if WORKER in app:
            try:
                await app[WORKER].stop()
            except Exception:  # noqa: BLE001 - it had stopped on that error already (`serve` said so)
                log.warning("the inbox worker had stopped on an error", exc_info=True)

    app.on_startup.append(start_background)
    app.on_cleanup.append(stop_background)

    app.router.add_post("/webhook", webhook, expect_handler=webhook_expect)
    api.setup(app)
    feeds.setup(app)  # before the pages: /failures/{key} would take /failures/{key}.atom
    pages.setup(app)
    report_pages.setup(app)
    preview_pages.setup(app)
    study.setup(app)
    threads.setup(app)
    verdicts.setup(app)
    return app
