"""Two stores of one night's report at once (review 58): a hand-run `rltracker report` and
the nightly job both store the same date. store_report read the night's row and then
inserted it; the second of two racing stores hit the unique date and crashed."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from sqlalchemy import event, select, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.site.report import store_report
from bot.store.models import Report

DAY = "2026-12-03"


class _HeldSession(AsyncSession):
    """A session whose commit waits for the test: its insert is flushed (held uncommitted),
    `holding` is set, and it commits once `release` is set."""

    holding: asyncio.Event
    release: asyncio.Event

    async def commit(self) -> None:
        await self.flush()
        self.holding.set()
        await self.release.wait()
        await super().commit()


async def _waiting_on_a_lock(ctx: Any) -> bool:
    async with ctx.engine.connect() as conn:
        return bool(await conn.scalar(text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock'")))


async def test_two_stores_of_one_night_at_once_both_succeed(ctx: Any) -> None:
    """The first store holds its inserted row uncommitted while the second inserts the same
    date (on PostgreSQL the second waits on the first's row lock; on SQLite on the write
    lock); the first commits. On main the second read no row, inserted, and failed with
    IntegrityError (duplicate date). Both succeed and the one row holds the later store."""
    holding, release = asyncio.Event(), asyncio.Event()
    held = type("Held", (_HeldSession,), {"holding": holding, "release": release})
    first_ctx = dataclasses.replace(
        ctx, sessionmaker=async_sessionmaker(ctx.engine, class_=held, expire_on_commit=False))
    first = asyncio.create_task(store_report(first_ctx, {"date": DAY, "n": 1}, "first"))
    await holding.wait()

    inserting = asyncio.Event()

    def _seen(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO REPORTS"):
            inserting.set()

    event.listen(ctx.engine.sync_engine, "before_cursor_execute", _seen)
    try:
        second = asyncio.create_task(store_report(ctx, {"date": DAY, "n": 2}, "second"))
        await asyncio.wait({asyncio.ensure_future(inserting.wait()), second},
                           return_when=asyncio.FIRST_COMPLETED)
        assert inserting.is_set() and not second.done()
        if ctx.engine.dialect.name == "postgresql":  # the second really waits on the first
            for _ in range(600):
                if await _waiting_on_a_lock(ctx):
                    break
                await asyncio.sleep(0.05)
            else:
                raise AssertionError("the second store never waited on the first's row")
        release.set()
        await first
        await second
    finally:
        event.remove(ctx.engine.sync_engine, "before_cursor_execute", _seen)

    async with ctx.sessionmaker() as session:
        rows = list(await session.scalars(select(Report).where(Report.date == DAY)))
    assert [(r.data, r.markdown) for r in rows] == [({"date": DAY, "n": 2}, "second")]


async def test_a_night_stored_again_replaces_the_stored_one(ctx: Any) -> None:
    """Built again the same night (one after the other): one row, the later one."""
    await store_report(ctx, {"date": DAY, "n": 1}, "first")
    row = await store_report(ctx, {"date": DAY, "n": 2}, "second")
    assert (row.date, row.data, row.markdown) == (DAY, {"date": DAY, "n": 2}, "second")
    async with ctx.sessionmaker() as session:
        rows = list(await session.scalars(select(Report).where(Report.date == DAY)))
    assert [(r.data, r.markdown) for r in rows] == [({"date": DAY, "n": 2}, "second")]
