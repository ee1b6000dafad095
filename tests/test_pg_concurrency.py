"""Two writers on one PostgreSQL database at once: what PostgreSQL answers when their
transactions collide, and what the worker makes of it.

Each test drives two sessions of the app's own engine concurrently, in an order fixed by
the locks themselves (no sleeps): the first statement of each takes a row lock, the second
waits for the other's. PostgreSQL then aborts one of them (a deadlock, a serialization
failure) or, with a lock timeout, gives up waiting. asyncpg's errors reach SQLAlchemy as a
plain DBAPIError (not OperationalError), told apart only by their SQLSTATE: before, the
worker's `transient` said none of them was worth retrying, so a delivery that lost a
deadlock had the budget of a bug (`max_attempts`, about seven minutes) instead of the
transient one. And no lock timeout was set: a row lock held by a stuck session hung a
worker for good (its heartbeat kept extending the lease, so no other worker took over)."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from gidgethub.routing import Router
from sqlalchemy import select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession

from bot.context import AppContext
from bot.store.models import Thread
from bot.store.threads import upsert_thread
from bot.webhooks.worker import Worker, transient
from tests.conftest import database_backends
from tests.test_worker import no_wait, rows_by_id, store
from tests.test_worker_batch import REPO as BACKLOG_REPO
from tests.test_worker_batch import backlog

POSTGRES_ONLY = [p for p in database_backends() if getattr(p, "id", None) == "postgres"]
pytestmark = pytest.mark.parametrize("db_url", POSTGRES_ONLY, indirect=True)

REPO = "octo-org/concurrency"


async def two_threads(ctx: AppContext) -> tuple[int, int]:
    async with ctx.sessionmaker() as s:
        ids = []
        for n in (1, 2):
            thread = await upsert_thread(s, {"repo": REPO, "number": n, "kind": "issue",
                                             "title": f"thread {n}"})
            ids.append(thread.id)
        await s.commit()
    return ids[0], ids[1]


async def retitle(session: AsyncSession, thread_id: int, title: str) -> None:
    await session.execute(text("UPDATE threads SET title = :t WHERE id = :i"),
                          {"t": title, "i": thread_id})


async def collide(ctx: AppContext, first: Any, second: Any) -> DBAPIError:
    """Run `second(a)` and `second(b)` at once after `first(a)` and `first(b)`, each of a
    and b a session in its own transaction; the database error one of them got."""
    async with ctx.sessionmaker() as a, ctx.sessionmaker() as b:
        await first(a, 0)
        await first(b, 1)
        results = await asyncio.gather(second(a, 0), second(b, 1), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        assert len(errors) == 1, results
        for s in (a, b):
            await s.rollback()
    assert isinstance(errors[0], DBAPIError), repr(errors[0])
    return errors[0]


def sqlstate(error: DBAPIError) -> str | None:
    return getattr(error.orig, "sqlstate", None)


async def test_two_writers_locking_in_opposite_orders_deadlock_and_are_retried(
        ctx: AppContext) -> None:
    x, y = await two_threads(ctx)
    order = [(x, y), (y, x)]  # a locks x then y, b locks y then x

    async def first(s: AsyncSession, k: int) -> None:
        await retitle(s, order[k][0], f"first {k}")

    async def second(s: AsyncSession, k: int) -> None:
        await retitle(s, order[k][1], f"second {k}")

    error = await collide(ctx, first, second)
    assert sqlstate(error) == "40P01"  # deadlock_detected
    assert transient(error), error


async def test_a_serialization_failure_is_retried(ctx: AppContext) -> None:
    x, _ = await two_threads(ctx)

    async def first(s: AsyncSession, k: int) -> None:
        await s.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"))
        await s.execute(text("SELECT title FROM threads WHERE id = :i"), {"i": x})
        if k == 0:
            await retitle(s, x, "a")

    async def second(s: AsyncSession, k: int) -> None:
        if k == 0:
            await s.commit()  # b, waiting for a's row lock, then finds the row changed
        else:
            await retitle(s, x, "b")

    error = await collide(ctx, first, second)
    assert sqlstate(error) == "40001"  # serialization_failure
    assert transient(error), error


async def test_a_stuck_lock_does_not_hang_a_worker(ctx: AppContext) -> None:
    """The app's connections wait for a row lock at most `lock_timeout`, well inside the
    worker's lease; the error a wait that long gets (55P03), and a statement cancelled by a
    statement timeout (57014), are retried."""
    async with ctx.engine.connect() as conn:
        waits = (await conn.execute(text("SHOW lock_timeout"))).scalar_one()
        ms = (await conn.execute(text(
            "SELECT setting::int FROM pg_settings WHERE name = 'lock_timeout'"))).scalar_one()
    assert 0 < ms < ctx.settings.worker_lease * 1000, waits

    x, _ = await two_threads(ctx)
    for setting, code in (("lock_timeout", "55P03"), ("statement_timeout", "57014")):
        async def first(s: AsyncSession, k: int, setting: str = setting) -> None:
            if k == 0:
                await retitle(s, x, "holds the lock")
            else:  # shorter than the default, so the test does not wait for it
                await s.execute(text(f"SET LOCAL {setting} = '200ms'"))

        async def second(s: AsyncSession, k: int) -> None:
            if k == 1:
                await retitle(s, x, "waits for it")

        error = await collide(ctx, first, second)
        assert sqlstate(error) == code
        assert transient(error), error


async def test_a_delivery_that_lost_a_deadlock_gets_the_transient_budget(
        ctx: AppContext) -> None:
    """Through the worker: a handler whose write PostgreSQL aborted as a deadlock is retried
    later, not failed after the few attempts a bug gets."""
    x, y = await two_threads(ctx)
    order = [(x, y), (y, x)]

    async def first(s: AsyncSession, k: int) -> None:
        await retitle(s, order[k][0], f"first {k}")

    async def second(s: AsyncSession, k: int) -> None:
        await retitle(s, order[k][1], f"second {k}")

    router = Router()

    @router.register("test")
    async def handle(event: Any, ctx_: Any) -> None:
        raise await collide(ctx, first, second)

    [delivery] = await store(ctx, ("test", json.dumps({"n": 1})))
    worker = Worker(ctx, router, backoff=no_wait, max_attempts=1, max_transient_attempts=3)
    assert await worker.process_one(claim_next=False)
    row = (await rows_by_id(ctx))[delivery]
    assert row.status == "pending", row.last_error
    assert "40P01" in (row.last_error or "") or "deadlock" in (row.last_error or "")
    assert worker.counts["retry"] == 1 and worker.counts["failed"] == 0


async def test_a_thread_inserted_by_another_worker_meanwhile_is_updated_not_failed(
        ctx: AppContext, shared_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Unique violation (23505) on the batch's plain INSERT of new threads: another session
    inserted the same thread and had not committed when the batch looked it up. The batch
    waits for that session on the unique index, gets the violation once it commits, and
    writes its whole transaction again (bot.webhooks.events._committed), updating the row:
    the deliveries are done at their first attempt, one row per thread."""
    caplog.set_level(logging.INFO, logger="bot.webhooks.events")
    deliveries = backlog(shared_dir)[:2]  # issues #100 and #101 opened
    await store(ctx, *deliveries)
    async with ctx.sessionmaker() as other:
        other.add(Thread(repo=BACKLOG_REPO, number=100, kind="issue", title="stored meanwhile"))
        await other.flush()  # inserted, not committed: the row is locked in the unique index
        other_pid = (await other.execute(text("SELECT pg_backend_pid()"))).scalar_one()
        worker = Worker(ctx, backoff=no_wait, max_attempts=1, batch_size=2)
        task = asyncio.create_task(worker.process_one(claim_next=False))
        while not await waiting_for(ctx, other_pid):  # the batch waits for this transaction
            assert not task.done(), task
            await asyncio.sleep(0.01)
        await other.commit()
    assert await task
    assert any("after a concurrent insert" in r.getMessage() for r in caplog.records)
    rows = await rows_by_id(ctx)
    assert [(r.status, r.attempts) for r in rows.values()] == [("done", 1)] * 2
    assert worker.counts == {"done": 2, "failed": 0, "retry": 0, "lost": 0}
    async with ctx.sessionmaker() as s:
        threads = (await s.scalars(select(Thread).order_by(Thread.number))).all()
    assert [t.number for t in threads] == [100, 101]
    assert threads[0].title != "stored meanwhile"  # the delivery's state was written over it


async def waiting_for(ctx: AppContext, pid: int) -> bool:
    """Whether some session of this database waits for a lock that session `pid` holds."""
    async with ctx.engine.connect() as conn:
        return bool((await conn.execute(text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND :pid = ANY(pg_blocking_pids(pid))"), {"pid": pid})).scalar_one())
