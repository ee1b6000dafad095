"""Two app processes on one database: the nightly run is run by one of them (ops77).

On SQLite the run-once lock was an asyncio lock of the process: a second `serve` on the same
file (a container started before the old one stopped, a second replica by mistake) took it
too. Starting, its look for interrupted runs marked the first process's live run "cancelled"
and, that night now counting as missed, ran it again alongside. Now a SQLite database's lock is
also an advisory lock on a file beside it (released by the system when its process dies, as
PostgreSQL's session lock is). A second AppContext is the second process: its own extras
(the asyncio lock), its own engine. SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select

from bot.context import AppContext
from bot.scheduler import catch_up, last_fire_time, nightly_job, nightly_trigger
from bot.store.models import JobRun

HANG_GUARD = 60  # seconds: only so that a broken test ends; nothing waits on time


async def outcomes(ctx: AppContext) -> list[str]:
    async with ctx.sessionmaker() as session:
        return list(await session.scalars(
            select(JobRun.outcome).where(JobRun.name == "nightly").order_by(JobRun.id)))


async def test_a_second_process_neither_cancels_nor_reruns_a_live_night(ctx: AppContext) -> None:
    other = AppContext.create(ctx.settings)
    fire = last_fire_time(nightly_trigger(ctx), datetime.now(UTC))
    started, finish = asyncio.Event(), asyncio.Event()

    async def long_step(_ctx: Any) -> str:
        started.set()
        await finish.wait()
        return "done"

    first = asyncio.create_task(nightly_job(ctx, steps=[("s", long_step)], fire_time=fire))
    try:
        await asyncio.wait_for(started.wait(), HANG_GUARD)
        # the second process starts: its catch-up, then its scheduler firing the same night
        assert await catch_up(other) in (None, {"outcome": "skipped"})
        assert (await nightly_job(other, steps=[("s", long_step)], fire_time=fire))["outcome"] \
            == "skipped"
        assert (await outcomes(ctx))[0] == "running"
        finish.set()
        assert (await asyncio.wait_for(first, HANG_GUARD))["outcome"] == "ok"
    finally:
        finish.set()
        await other.close()
    assert [o for o in await outcomes(ctx) if o != "skipped"] == ["ok"]
