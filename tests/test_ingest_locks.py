"""A worker's write of a batch and another worker's analysis at once (PostgreSQL, two real
connections): the analysis holds its threads' rows, locked in id order, to its commit
(bot.pipeline); a batch that deleted one thread and then updated another of a lower id took
the two in the other order, and PostgreSQL aborted one of the two as a deadlock. Project-
written payloads; the two are interleaved through a row lock the test holds, watched in
pg_stat_activity (no timing)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from sqlalchemy import select, text

from bot import pipeline
from bot.store.models import Analysis, Thread
from tests.test_edit_order import deliver
from tests.test_events import REPO, dispatch, envelope, issue, record

WAITING = text(
    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
    "AND wait_event_type = 'Lock'")


async def waiters(watcher: Any) -> int:
    found = int(await watcher.scalar(WAITING))
    await watcher.commit()  # pg_stat_activity is read once per transaction
    return found


async def until(watcher: Any, count: int, *tasks: asyncio.Task[Any]) -> None:
    for _ in range(100_000):
        if await waiters(watcher) >= count or any(t.done() for t in tasks):
            return
        await asyncio.sleep(0)


async def meet(ctx: Any, hold: Any, first: Callable[[], Awaitable[Any]],
               second: Callable[[], Awaitable[Any]]) -> list[Any]:
    """Two writers meeting on PostgreSQL: a third connection runs `hold` (a row or advisory
    lock) in a transaction, `first` starts and waits on it, `second` starts and waits too
    (both seen waiting in pg_stat_activity, no sleeps), then the hold is let go. What each
    returned or raised. On SQLite (one writer at a time) the two run one after the other."""
    if ctx.engine.dialect.name != "postgresql":
        return [await first(), await second()]
    async with ctx.engine.connect() as blocker, ctx.engine.connect() as watcher:
        await blocker.execute(hold)
        one = asyncio.create_task(first())
        await until(watcher, 1, one)
        assert not one.done()
        two = asyncio.create_task(second())
        await until(watcher, 2, one, two)
        await blocker.rollback()
        return list(await asyncio.gather(one, two, return_exceptions=True))


async def test_a_batch_deleting_one_thread_and_editing_another_meets_an_analysis(ctx: Any):
    """Issues #1 and #2 stored; a batch [issues.deleted #2, issues.edited #1] deleted #2 (its
    row locked), then updated #1 at its commit, while another worker's analysis of #1 and #2
    had locked #1 and waited for #2: each waited for the other, and PostgreSQL aborted one
    (DeadlockDetected): the delivery was retried, or the analysis lost."""
    if ctx.engine.dialect.name != "postgresql":
        pytest.skip("two workers at once: PostgreSQL (SQLite has one process writing)")
    for number in (1, 2):
        await dispatch(ctx, "issues", envelope("opened", issue=issue(number, minute=1)))
    async with ctx.sessionmaker() as session:
        ids = {t.number: t.id for t in await session.scalars(select(Thread))}
        held = await session.scalar(select(Analysis.id).where(Analysis.thread_id == ids[2]))
    assert ids[1] < ids[2] and held is not None
    edited = envelope("edited", issue=issue(1, minute=5, body="Entropy falls to 0.001 now."),
                      changes={"body": {"from": "Entropy falls to 0.01 with GRPO."}})
    deleted = envelope("deleted", issue=issue(2, minute=5))
    # #2's analysis row held: the batch's deletion of #2 (which cascades to it) waits there.
    done = await meet(
        ctx, select(Analysis.id).where(Analysis.id == held).with_for_update(),
        lambda: deliver(ctx, True, ("issues", deleted), ("issues", edited)),
        lambda: pipeline.threads_changed(ctx, [pipeline.ThreadChange(REPO, 1, trigger="sync"),
                                               pipeline.ThreadChange(REPO, 2, trigger="sync")]))
    assert [d for d in done if isinstance(d, BaseException)] == []
    assert await record(ctx, REPO, 2) is None
    stored = await record(ctx, REPO, 1)
    assert stored is not None and stored["body"] == "Entropy falls to 0.001 now."
