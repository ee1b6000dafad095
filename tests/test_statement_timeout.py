"""A request's statements are bounded on PostgreSQL (RLTRACKER_STATEMENT_TIMEOUT): a runaway
query of a page, an API route or the webhook's inbox write is cut by the server and answered
503 with one log line, while the export, the worker, the nightly job and migrations run
unbounded. SQLite has no statement timeout: these tests run on PostgreSQL only."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import asyncpg
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import text

from bot.app import create_app
from bot.config import Settings
from bot.context import AppContext

BOUND = "0.5"  # seconds: the test's bound, far below any lock or hang guard


@pytest.fixture
async def bounded(db_url: str) -> AsyncIterator[AppContext]:
    if not db_url.startswith("postgresql"):
        pytest.skip("SQLite has no statement timeout")
    settings = Settings.from_env({"DATABASE_URL": db_url, "GITHUB_WEBHOOK_SECRET": "test-secret",
                                  "RLTRACKER_STATEMENT_TIMEOUT": BOUND})
    ctx = AppContext.create(settings)
    yield ctx
    await ctx.close()


def _runaway_app(ctx: AppContext) -> web.Application:
    """The app, plus a route of the test's own (an API path and a page path) whose statement
    runs away: pg_sleep(15) stands for a query the planner got wrong on a large table."""
    app = create_app(ctx, worker=False)

    async def runaway(request: web.Request) -> web.Response:
        async with ctx.sessionmaker() as session:
            await session.execute(text("SELECT pg_sleep(15)"))
        return web.Response(text="finished")

    app.router.add_get("/api/runaway", runaway)
    app.router.add_get("/runaway", runaway)
    return app


@pytest.mark.postgres
async def test_a_runaway_statement_of_a_request_is_cut_and_answered_503(
        bounded: AppContext, caplog: pytest.LogCaptureFixture) -> None:
    """No statement_timeout: a runaway query held its request, its pooled connection and a
    PostgreSQL backend for as long as it ran (minutes; the pool has 20 connections, so a few
    such pages stalled every page and the webhook). It is cut now, and answered 503 (JSON on
    /api/, text on a page) with one warning line and no traceback; the next request is served."""
    caplog.set_level(logging.INFO)
    async with TestClient(TestServer(_runaway_app(bounded))) as client:
        resp = await client.get("/api/runaway")
        assert resp.status == 503, await resp.text()
        assert "took too long" in (await resp.json())["error"]
        resp = await client.get("/runaway")
        assert resp.status == 503
        page = await resp.text()
        assert "took too long" in page and "Traceback" not in page
        resp = await client.get("/healthz")
        assert resp.status == 200 and (await resp.json())["database"] == "ok"
        resp = await client.get("/")
        assert resp.status == 200
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    cut = [r.getMessage() for r in caplog.records if "took too long" in r.getMessage()]
    assert len(cut) == 2 and "/api/runaway" in cut[0] and "/runaway" in cut[1], cut


@pytest.mark.postgres
async def test_the_export_is_not_bounded_but_a_page_waiting_as_long_is(bounded: AppContext,
                                                                       db_url: str) -> None:
    """The bound is the request paths': the export (every thread, every finding) may take
    longer. Another session locks the threads table; /api/stats waiting behind it is cut
    at the bound, while the export, started first and waiting as long, answers once the lock
    is gone."""
    locker = await asyncpg.connect(db_url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        async with TestClient(TestServer(create_app(bounded, worker=False))) as client:
            lock = locker.transaction()
            await lock.start()
            await locker.execute("LOCK TABLE threads IN ACCESS EXCLUSIVE MODE")
            export = asyncio.ensure_future(client.get("/api/export.json"))
            stats = await client.get("/api/stats")
            assert stats.status == 503, await stats.text()
            assert "took too long" in (await stats.json())["error"]
            assert not export.done()
            await lock.commit()
            resp = await export
            assert resp.status == 200, await resp.text()
            assert (await resp.json())["threads"] == []
    finally:
        await locker.close()


@pytest.mark.postgres
async def test_the_worker_and_jobs_are_not_bounded(bounded: AppContext) -> None:
    """Outside a request (the inbox worker, the nightly job, `rltracker` commands, migrations)
    nothing is bounded: a statement longer than the bound runs to its end."""
    async with bounded.sessionmaker() as session:
        shown = await session.scalar(text("SHOW statement_timeout"))
        await session.execute(text("SELECT pg_sleep(1)"))
    assert shown == "0"


async def test_tracker_pages_with_the_database_down_are_a_503_not_a_traceback(
        caplog: pytest.LogCaptureFixture) -> None:
    """The database down (PostgreSQL restarting, a network cut): /healthz said so (503) and the
    API answered 503, but every tracker page was aiohttp's "500 Internal Server Error: Server
    got itself in trouble" with a full traceback logged per request. A page now says 503, the
    database did not answer, in one warning line. No database server is needed: nothing
    listens on the port."""
    from tests.test_crash_recovery import free_port

    url = f"postgresql+asyncpg://rltracker:rltracker@127.0.0.1:{free_port()}/gone"
    ctx = AppContext.create(Settings.from_env({"DATABASE_URL": url,
                                               "GITHUB_WEBHOOK_SECRET": "test-secret"}))
    caplog.set_level(logging.INFO)
    try:
        async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
            for path in ("/", "/proposals", "/methods/grpo"):
                resp = await client.get(path)
                assert resp.status == 503, (path, resp.status)
                assert "the database did not answer" in await resp.text()
            assert (await client.get("/healthz")).status == 503
            assert (await client.get("/api/stats")).status == 503
    finally:
        await ctx.close()
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    said = [r.getMessage() for r in caplog.records if "did not answer" in r.getMessage()]
    assert len(said) == 4, said
