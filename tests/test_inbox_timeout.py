"""A batch of deliveries the database cannot take for a while (a lock held past the bound,
a statement cut at RLTRACKER_STATEMENT_TIMEOUT; on SQLite the write lock held past the
writer's wait) fails as a batch: the rows are not tried again one by one, each waiting the
whole bound again, while GitHub gave up after 10 s. Every request is answered 503 at once
and a redelivery stores them: nothing is lost."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator

import asyncpg
import pytest

from bot.config import Settings
from bot.context import AppContext
from bot.store import db as store_db
from bot.webhooks.inbox import STORED, Inbox, InboxRow

BOUND = 0.3  # seconds: the test's statement bound
ROWS = 5


@pytest.fixture
async def bounded(db_url: str) -> AsyncIterator[AppContext]:
    settings = Settings.from_env({"DATABASE_URL": db_url, "GITHUB_WEBHOOK_SECRET": "test-secret",
                                  "RLTRACKER_STATEMENT_TIMEOUT": str(BOUND)})
    ctx = AppContext.create(settings)
    yield ctx
    await ctx.close()


def _row(n: int) -> InboxRow:
    return InboxRow(delivery_id=f"held-{n}", event="ping", action=None, repo=None,
                    installation_id=None, payload='{"zen": "hold"}')


async def _submit_all(inbox: Inbox) -> list[object]:
    # queued before the writer task first runs: one batch of ROWS
    tasks = [asyncio.ensure_future(inbox.submit(_row(n))) for n in range(ROWS)]
    return await asyncio.gather(*tasks, return_exceptions=True)


async def test_a_batch_waiting_on_a_held_lock_fails_once_not_once_per_row(
        bounded: AppContext, db_url: str) -> None:
    inbox = Inbox(bounded.engine)
    if db_url.startswith("postgresql"):
        holder = await asyncpg.connect(db_url.replace("postgresql+asyncpg://", "postgresql://"))
        lock = holder.transaction()
        await lock.start()
        await holder.execute("LOCK TABLE deliveries IN ACCESS EXCLUSIVE MODE")

        async def release() -> None:
            await lock.rollback()
            await holder.close()
    else:
        assert inbox._sqlite is not None
        inbox._sqlite.BUSY_SECONDS = BOUND  # the writer's wait for the lock, shortened
        sqlite_holder = sqlite3.connect(bounded.engine.url.database, isolation_level=None)
        sqlite_holder.execute("BEGIN IMMEDIATE")

        async def release() -> None:
            sqlite_holder.execute("ROLLBACK")
            sqlite_holder.close()
    try:
        with store_db.bounded_statements(BOUND):
            inbox.start()
        outcomes = await _submit_all(inbox)
        assert all(isinstance(o, Exception) for o in outcomes), outcomes  # each answered 503
        # one statement waited out the bound, not 1 + ROWS of them
        assert inbox.errors == 1, inbox.errors
    finally:
        await release()
    # GitHub's redelivery (or `rltracker replay`) stores every one of them
    assert await _submit_all(inbox) == [STORED] * ROWS
    await inbox.close()
