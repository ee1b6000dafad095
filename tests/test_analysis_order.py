"""Two deliveries of one thread handled at once by two workers (PostgreSQL, several
processes): the analysis stored last must be of the thread as stored last. GitHub's recorded
payload (../shared/fixtures/webhooks/issues/opened.json) with project-written bodies; the
two handlers are interleaved through a row lock the test holds, watched in pg_stat_activity
(no timing)."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text

from bot.store.models import Analysis, Thread
from tests.test_edit_order import _shared, deliver, dispatch

LINKED = "GRPO (https://arxiv.org/abs/2402.03300) collapses: the loss is NaN after step 300."
UNLINKED = "The policy collapses: the loss is NaN after step 300."

WAITING = text(
    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
    "AND wait_event_type = 'Lock'")


def edited(opened: dict[str, Any], body: str, was: str, at: str) -> dict[str, Any]:
    payload = copy.deepcopy(opened)
    payload["action"] = "edited"
    payload["issue"].update(body=body, updated_at=at)
    payload["changes"] = {"body": {"from": was}}
    return payload


async def waiters(watcher: Any) -> int:
    found = int(await watcher.scalar(WAITING))
    await watcher.commit()  # pg_stat_activity is read once per transaction
    return found


@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
async def test_the_analysis_stored_last_is_of_the_thread_stored_last(
        ctx: Any, shared_dir: Path, batched: bool) -> None:
    """An issue's arXiv link removed by one edit and put back by the next, the two handled
    by two workers at once: the first worker read the thread without the link, the second
    stored the edit putting it back and analysed (the same analysis as stored: nothing
    written), then the first stored its analysis — the stored analysis said no paper while
    the issue links one, until the thread's next event or the nightly re-analysis. Alone
    (`thread_changed`) and in the worker's batches (`threads_changed`)."""
    if ctx.engine.dialect.name != "postgresql":
        pytest.skip("two workers at once: PostgreSQL (SQLite has one process writing)")
    opened = _shared(shared_dir, "issues/opened.json")
    opened["issue"]["body"] = LINKED
    await dispatch(ctx, "issues", opened)
    first = edited(opened, UNLINKED, LINKED, "2030-01-02T03:04:05Z")
    second = edited(opened, LINKED, UNLINKED, "2030-01-02T03:04:06Z")
    async with ctx.engine.connect() as blocker, ctx.engine.connect() as watcher:
        # The analysis row held: the first worker's analysis, read and computed, waits to
        # be written.
        await blocker.execute(select(Analysis.id).with_for_update())
        one = asyncio.create_task(deliver(ctx, batched, ("issues", first)))
        for _ in range(100_000):
            if await waiters(watcher) or one.done():
                break
            await asyncio.sleep(0)
        assert not one.done()
        two = asyncio.create_task(deliver(ctx, batched, ("issues", second)))
        for _ in range(100_000):
            if two.done() or await waiters(watcher) >= 2:
                break
            await asyncio.sleep(0)
        await blocker.rollback()
        await asyncio.gather(one, two)
    async with ctx.sessionmaker() as session:
        thread = await session.scalar(select(Thread))
        analysis = await session.scalar(select(Analysis))
    assert thread.body == LINKED
    assert analysis.arxiv_ids == ["2402.03300"]
