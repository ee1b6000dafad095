"""The aiohttp application, assembled: POST /webhook (bot.webhooks), the operational and JSON
routes and the tracker pages (bot.site), and the inbox writer and worker started with it."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from bot.config import WEBHOOK_BODY_LIMIT
from bot.context import CTX, INBOX, METRICS, WORKER
from bot.metrics import Metrics
from bot.site import api, pages, preview_pages, report_pages, study, threads, verdicts
from bot.webhooks.inbox import Inbox
from bot.webhooks.receive import webhook
from bot.webhooks.worker import Worker

log = logging.getLogger(__name__)


@web.middleware
async def refuse_nul(request: web.Request,
                     handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                     ) -> web.StreamResponse:
    """A NUL character in the path or the query (%00) answers 400 before any route sees it:
    PostgreSQL text cannot hold one, so a lookup with it would fail as a 500."""
    if "\x00" in request.path or any("\x00" in k or "\x00" in v for k, v in request.query.items()):
        return web.json_response({"error": "the URL contains a NUL character (%00)"}, status=400)
    return await handler(request)


def create_app(ctx: Any, *, worker: bool = True, worker_options: dict[str, Any] | None = None
               ) -> web.Application:
    """The whole web app. With `worker=True` the inbox worker runs inside it (started and
    stopped with the app); the inbox writer always does, since /webhook needs it."""
    app = web.Application(client_max_size=WEBHOOK_BODY_LIMIT, middlewares=[refuse_nul, api.json_errors])
    app[CTX] = ctx
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
        inbox.start()
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

    app.router.add_post("/webhook", webhook)
    api.setup(app)
    pages.setup(app)
    report_pages.setup(app)
    preview_pages.setup(app)
    study.setup(app)
    threads.setup(app)
    verdicts.setup(app)
    return app
