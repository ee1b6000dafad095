"""/healthz tells whether deliveries can be stored, not only whether the database answers a
read: on a read-only database (a SQLite file mounted or opened read-only; a PostgreSQL that
is a standby or set read-only) reads work, so /healthz said "ok" while every webhook was
answered 503 and nothing reached the inbox."""

from __future__ import annotations

import asyncpg
import pytest
from aiohttp.test_utils import TestClient, TestServer

from bot.app import create_app
from bot.config import Settings
from bot.context import AppContext
from bot.webhooks.replay import delivery_headers

SECRET = "test-secret"


async def _read_only_url(db_url: str) -> str:
    if db_url.startswith("sqlite"):
        path = db_url.removeprefix("sqlite+aiosqlite:///")
        # what a file the process may not write gives (chmod 444 is no bar to root, which
        # runs the tests): SQLite opens it read-only
        return f"sqlite+aiosqlite:///file:{path}?mode=ro&uri=true"
    plain = db_url.replace("postgresql+asyncpg://", "postgresql://")
    name = plain.rsplit("/", 1)[1]
    conn = await asyncpg.connect(plain)
    try:
        await conn.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
    finally:
        await conn.close()
    return db_url


async def test_healthz_says_503_when_deliveries_cannot_be_stored(db_url: str) -> None:
    url = await _read_only_url(db_url)
    # (database_url given as is: `serve`'s check of DATABASE_URL takes no file: URI)
    ctx = AppContext.create(Settings.from_env({}, database_url=url, webhook_secret=SECRET))
    try:
        async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
            assert (await client.get("/api/stats")).status == 200  # reads work
            body = b'{"zen": "read-only"}'
            resp = await client.post("/webhook", data=body,
                                     headers=delivery_headers("ping", body, SECRET))
            assert resp.status == 503, await resp.text()
            resp = await client.get("/healthz")
            answer = await resp.json()
            assert resp.status == 503, answer
            assert answer["status"] == "error" and answer["database"] == "read-only", answer
    finally:
        await ctx.close()


async def test_healthz_stays_ok_and_writes_nothing_on_a_writable_database(
        ctx: AppContext) -> None:
    async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
        for _ in range(2):
            resp = await client.get("/healthz")
            assert resp.status == 200
            assert await resp.json() == {"status": "ok", "database": "ok",
                                         "deliveries_failed": 0}


async def test_healthz_is_ok_again_once_the_database_takes_writes(db_url: str) -> None:
    """A delivery refused by a read-only database makes /healthz say "read-only" (the inbox
    writer's last outcome: what a full disk is seen by). Once the database takes writes again,
    /healthz says so at once, not only after the next delivery: a load balancer steering by
    /healthz would send none."""
    if not db_url.startswith("postgresql"):
        pytest.skip("a SQLite file opened read-only stays so for the process")
    await _read_only_url(db_url)
    ctx = AppContext.create(Settings.from_env({"DATABASE_URL": db_url,
                                               "GITHUB_WEBHOOK_SECRET": SECRET}))
    try:
        async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
            body = b'{"zen": "read-only"}'
            resp = await client.post("/webhook", data=body,
                                     headers=delivery_headers("ping", body, SECRET))
            assert resp.status == 503
            plain = db_url.replace("postgresql+asyncpg://", "postgresql://")
            conn = await asyncpg.connect(plain)
            try:
                await conn.execute("SET default_transaction_read_only = off")
                await conn.execute(f'ALTER DATABASE "{plain.rsplit("/", 1)[1]}" '
                                   "SET default_transaction_read_only = off")
            finally:
                await conn.close()
            await ctx.engine.dispose()  # the pool's sessions took the old default
            resp = await client.get("/healthz")
            assert resp.status == 200, await resp.text()
    finally:
        await ctx.close()
