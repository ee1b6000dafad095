"""/metrics while another session holds a lock on a table the scrape counts (a migration's
ALTER TABLE on the inbox or the actions, a `LOCK TABLE` in a psql left open). /healthz says
"degraded", `"database": "busy"`, at once (tests/test_healthz_lock.py); the scrape waited its
5-second timeout, then said `rltracker_database_up 0`: an alert "database down" for the length
of a migration, while the database answered. It says `rltracker_database_up 1` and
`rltracker_database_busy 1` now, the counts it could not read left out (not zeros), after
HEALTH_LOCK_WAIT_MS. On PostgreSQL, with a real lock held by another connection; the test
waits, through pg_locks, for the scrape's own session to queue behind it."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from aiohttp.test_utils import TestClient, TestServer

from bot.app import create_app
from bot.context import AppContext
from tests.test_healthz_lock import POLLS, holder, observer, pg_url  # noqa: F401 - fixtures

pytestmark = pytest.mark.postgres


async def _wait_for_a_waiter(observer: asyncpg.Connection, table: str,  # noqa: F811
                             task: asyncio.Task[object]) -> None:
    for _ in range(POLLS):
        if task.done():
            raise AssertionError(f"/metrics answered before it waited for the lock: {task}")
        waiting = await observer.fetchval(
            "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE NOT l.granted AND l.relation = $1::regclass "
            "AND a.datname = current_database()", table)
        if waiting:
            return
        await asyncio.sleep(0.01)  # a poll of pg_locks, not a guess at a duration
    raise AssertionError("/metrics never queued behind the lock")


@pytest.mark.parametrize("table", ["deliveries", "actions"])
async def test_metrics_says_busy_not_down_while_a_migration_holds_a_table(
        ctx: AppContext, holder: asyncpg.Connection, observer: asyncpg.Connection,  # noqa: F811
        pg_url: str, table: str) -> None:  # noqa: F811
    async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
        tx = holder.transaction()
        await tx.start()
        try:
            await holder.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
            task = asyncio.ensure_future(client.get("/metrics"))
            await _wait_for_a_waiter(observer, table, task)
            resp = await task
            assert resp.status == 200
            text = await resp.text()
        finally:
            await tx.rollback()
        samples = text.splitlines()
        assert "rltracker_database_up 1" in samples, text
        assert "rltracker_database_busy 1" in samples, text
        assert "rltracker_inbox_deliveries{" not in text  # not read: left out, not zeros
        assert "rltracker_webhook_responses_total" in text  # what the process holds is there
        text = await (await client.get("/metrics")).text()  # the lock released: read again
        samples = text.splitlines()
        assert "rltracker_database_up 1" in samples and "rltracker_database_busy 0" in samples, text
        assert 'rltracker_inbox_deliveries{status="pending"} 0' in samples
