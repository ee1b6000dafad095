"""`rltracker serve`: the web app, the inbox worker and the scheduler in one process."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import secrets
import signal
import sys
from typing import Any

from aiohttp import web

from bot.config import Settings
from bot.logs import configure_logging, register_secret

log = logging.getLogger(__name__)
SHUTDOWN_GRACE = 10.0  # seconds background tasks get to finish before they are cancelled


def _fail(message: str) -> int:
    print(f"rltracker serve: {message}", file=sys.stderr, flush=True)
    return 2


def settings_for_serve(dev: bool, env: dict[str, str] | None = None) -> tuple[Settings, str | None]:
    """Settings from the environment; in dev mode a random secret (returned to be printed) and
    dry-run. Raises SystemExit-worthy ValueError when a secret is required but missing."""
    settings = Settings.from_env(env)
    generated = None
    if dev:
        if not settings.webhook_secret:
            generated = secrets.token_hex(20)
            settings = dataclasses.replace(settings, webhook_secret=generated)
        settings = dataclasses.replace(settings, dry_run=True)
    elif not settings.webhook_secret:
        raise ValueError(
            "GITHUB_WEBHOOK_SECRET is not set; set it to the app's webhook secret "
            "(or run `rltracker serve --dev` for a local, dry-run service)"
        )
    return settings, generated


def _github_client(settings: Settings) -> Any:
    try:
        from bot.github.client import GitHubClient
    except ImportError:  # the client module is not there yet: run without GitHub access
        return None
    return GitHubClient(settings)


async def serve(settings: Settings, host: str, port: int, *, worker: bool = True,
                scheduler: bool = True, backfill: bool = True,
                ready: asyncio.Event | None = None) -> int:
    from bot.app import create_app
    from bot.context import AppContext
    from bot.store.migrate import current_revision, head_revision

    ctx = AppContext.create(settings)
    try:
        try:
            current = await current_revision(ctx.engine)
        except Exception as exc:  # noqa: BLE001 - unreachable or unreadable database
            return _fail(f"cannot read the database ({type(exc).__name__})")
        head = head_revision()
        if current != head:
            return _fail(
                f"the database is behind the migrations (it is at {current or 'no revision'}, "
                f"this code needs {head}); run `rltracker migrate` first"
            )
        ctx.github = _github_client(settings)
        app = create_app(ctx, worker=worker)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, host, port, backlog=1024)
        await site.start()
        print(f"rltracker serving on http://{host}:{port}", flush=True)
        sched = None
        if scheduler:
            from bot.scheduler import create_scheduler

            sched = create_scheduler(ctx)
            if sched is not None:
                sched.start()
        from bot.scheduler import start_first_backfill  # first start with a token: sync now

        first_backfill = await start_first_backfill(ctx) if backfill else None
        log.info("serving", extra={"host": host, "port": port, "dry_run": settings.dry_run,
                                   "worker": worker, "scheduler": sched is not None})
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, stop.set)
            except RuntimeError:  # not the main thread: whoever runs us there stops us
                pass
        if ready is not None:
            ready.set()
        await stop.wait()
        log.info("stopping")
        if sched is not None:
            sched.shutdown(wait=False)
        if first_backfill is not None:  # the stored cursors resume it at the next start
            first_backfill.cancel()
            await asyncio.gather(first_backfill, return_exceptions=True)
        await runner.cleanup()
        from bot.speaking.preview import wait_background

        await wait_background(ctx, grace=SHUTDOWN_GRACE)  # e.g. an installation preview
        return 0
    finally:
        await ctx.close()


def serve_command(args: Any) -> int:
    configure_logging(os.environ.get("RLTRACKER_LOG_LEVEL", "INFO"))
    try:
        settings, generated = settings_for_serve(bool(getattr(args, "dev", False)))
    except ValueError as exc:
        return _fail(str(exc))
    register_secret(settings.webhook_secret)
    register_secret(settings.token)
    register_secret(settings.private_key)
    port = args.port if getattr(args, "port", None) else int(os.environ.get("PORT", "8000"))
    host = getattr(args, "host", None) or "0.0.0.0"
    if generated is not None:
        # Printed on purpose (stdout, not the logs): the developer needs it to sign deliveries.
        print(f"dev mode: dry-run on; webhook secret for this run: {generated}", flush=True)
    return asyncio.run(
        serve(
            settings,
            host,
            port,
            worker=not getattr(args, "no_worker", False),
            scheduler=not getattr(args, "no_scheduler", False),
            backfill=not getattr(args, "no_backfill", False),
        )
    )
