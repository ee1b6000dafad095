"""/healthz while another session holds a lock on the inbox table (a migration's ALTER TABLE,
a `LOCK TABLE` in a psql left open): the database answers, only writes wait. It said 503
"unreachable" after its 5-second timeout (longer than the Docker HEALTHCHECK waits), so a
load balancer took every replica out, and an orchestrator restarted them, for the length of a
migration, though no replica could do better. Now it answers 200 at once, "degraded", with
`"database": "busy"`. On PostgreSQL, with a real lock held by another connection; the test
waits, through pg_locks, for /healthz's own session to queue behind it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest
from aiohttp.test_utils import TestClient, TestServer

from bot.app import create_app
from bot.config import Settings
from bot.context import AppContext
from bot.webhooks.replay import delivery_headers

pytestmark = pytest.mark.postgres
SECRET = "test-secret"
POLLS = 1000  # bounded wait for the lock wait to show in pg_locks


def _plain(db_url: str) -> str:
    return db_url.replace("postgresql+asyncpg://", "postgresql://")


@pytest.fixture
def pg_url(db_url: str) -> str:
    if not db_url.startswith("postgresql"):
        pytest.skip("a lock another session holds on a table: PostgreSQL")
    return db_url


@pytest.fixture
async def holder(pg_url: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(_plain(pg_url))
    yield conn
    await conn.close()


@pytest.fixture
async def observer(pg_url: str) -> AsyncIterator[asyncpg.Connection]:
    """pg_locks read outside the holder's transaction (pg_stat_activity is a snapshot taken
    once per transaction)."""
    conn = await asyncpg.connect(_plain(pg_url))
    yield conn
    await conn.close()


async def _hold_table_lock(holder: asyncpg.Connection) -> asyncpg.transaction.Transaction:
    """What `ALTER TABLE deliveries ...` in a migration holds until it commits."""
    tx = holder.transaction()
    await tx.start()
    await holder.execute("LOCK TABLE deliveries IN ACCESS EXCLUSIVE MODE")
    return tx


async def _wait_for_a_waiter(observer: asyncpg.Connection, task: asyncio.Task[object]) -> None:
    """Until another session waits for the lock on `deliveries` (pg_locks, not granted)."""
    for _ in range(POLLS):
        if task.done():
            raise AssertionError(f"/healthz answered before it waited for the lock: {task}")
        waiting = await observer.fetchval(
            "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE NOT l.granted AND l.relation = 'deliveries'::regclass "
            "AND a.datname = current_database()")
        if waiting:
            return
        await asyncio.sleep(0.01)  # a poll of pg_locks, not a guess at a duration
    raise AssertionError("/healthz never queued behind the lock")


async def _healthz_while_locked(client: TestClient, holder: asyncpg.Connection,
                                observer: asyncpg.Connection) -> tuple[int, dict[str, object]]:
    tx = await _hold_table_lock(holder)
    try:
        task = asyncio.ensure_future(client.get("/healthz"))
        await _wait_for_a_waiter(observer, task)
        resp = await task
        return resp.status, await resp.json()
    finally:
        await tx.rollback()


async def test_healthz_says_busy_not_down_while_a_migration_holds_the_inbox_table(
        ctx: AppContext, holder: asyncpg.Connection, observer: asyncpg.Connection,
        pg_url: str) -> None:
    async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
        status, answer = await _healthz_while_locked(client, holder, observer)
        assert status == 200, answer
        assert answer["status"] == "degraded" and answer["database"] == "busy", answer
        assert "lock" in str(answer.get("detail")), answer
        resp = await client.get("/healthz")  # the lock released: ok again
        assert resp.status == 200
        assert await resp.json() == {"status": "ok", "database": "ok", "deliveries_failed": 0}


async def test_the_committed_recheck_under_a_lock_says_busy_not_read_only(
        pg_url: str, holder: asyncpg.Connection, observer: asyncpg.Connection) -> None:
    """After a delivery a read-only database refused, /healthz re-checks with a committed
    write; that write waiting on a migration's lock is no refusal ("read-only") either."""
    name = _plain(pg_url).rsplit("/", 1)[1]
    await holder.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
    ctx = AppContext.create(Settings.from_env({"DATABASE_URL": pg_url,
                                               "GITHUB_WEBHOOK_SECRET": SECRET}))
    try:
        async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
            body = b'{"zen": "read-only"}'
            resp = await client.post("/webhook", data=body,
                                     headers=delivery_headers("ping", body, SECRET))
            assert resp.status == 503  # refused: the inbox writer remembers it
            await holder.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = off')
            await ctx.engine.dispose()  # the pool's sessions took the old default
            status, answer = await _healthz_while_locked(client, holder, observer)
            assert status == 200, answer
            assert answer["database"] == "busy", answer
            resp = await client.get("/healthz")  # the committed write goes through now
            assert resp.status == 200, await resp.text()
            assert (await resp.json())["database"] == "ok"
    finally:
        await ctx.close()
