"""A delivery whose handling kills the process (out of memory, a hang past its lease, a hard
exit) on SQLite and PostgreSQL: every claim counts an attempt, and once it has had the worker's
bound it is set aside as failed with the reason, instead of being claimed again forever (on
SQLite ahead of every later row). Nothing is lost: `rltracker deliveries retry` replays it.

The crash is a handler raising SystemExit, which no `except Exception` in the worker catches:
the claim is left behind unfinished, as a killed process leaves it. Each "restart" is a new
Worker whose lease is 0 s (its own parameter), so its claims are over as soon as it dies;
`recover()` is what a SQLite restart runs.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from gidgethub.routing import Router
from sqlalchemy import select

from bot.context import AppContext
from bot.store.models import Delivery
from bot.webhooks.inbox import requeue_failed
from bot.webhooks.worker import Worker
from tests.test_worker import no_wait, rows_by_id, store


def crashing_router(seen: list[str]) -> Router:
    router = Router()

    @router.register("test")
    async def handle(event: Any, ctx: Any) -> None:
        seen.append(event.data["n"])
        if event.data["n"] == "poison":
            raise SystemExit("the process died handling this delivery")

    return router


async def restart_until_idle(ctx: AppContext, seen: list[str], batch_size: int,
                             restarts: int) -> int:
    """Run a fresh worker (a restarted process) until the inbox is idle; returns the crashes."""
    crashes = 0
    for _ in range(restarts):
        worker = Worker(ctx, crashing_router(seen), backoff=no_wait, lease_seconds=0,
                        batch_size=batch_size, max_attempts=5, worker_id=f"w{uuid.uuid4().hex[:6]}")
        await worker.recover()
        try:
            await worker.run_until_idle()
        except SystemExit:
            crashes += 1
            continue
        return crashes
    raise AssertionError(f"still crashing after {restarts} restarts")


@pytest.mark.parametrize("batch_size", [1, 64])
async def test_a_delivery_that_kills_its_process_is_set_aside(ctx: AppContext,
                                                              batch_size: int) -> None:
    ids = await store(ctx, ("test", '{"n": "a"}'), ("test", '{"n": "poison"}'),
                      ("test", '{"n": "b"}'))
    seen: list[str] = []
    crashes = await restart_until_idle(ctx, seen, batch_size, restarts=20)
    assert crashes == 5 and seen.count("poison") == 5  # the worker's bound, not forever
    rows = await rows_by_id(ctx)
    poison = rows[ids[1]]
    assert poison.status == "failed" and poison.attempts == 5
    assert poison.last_error.startswith("abandoned: claimed 5 times and never finished")
    assert poison.next_attempt_at is None and poison.finished_at is not None
    # the inbox moved on: the others are done, each handled once more at most (the batch
    # the first crash took down), never once per crash
    assert rows[ids[0]].status == rows[ids[2]].status == "done"
    assert rows[ids[0]].attempts <= 2 and rows[ids[2]].attempts <= 2
    assert seen.count("a") <= 2 and seen.count("b") <= 2

    # listed where failed deliveries are, and replayable
    from bot.cli.deliveries import failed_deliveries

    total, listed = await failed_deliveries(ctx.engine, 10)
    assert total == 1 and listed[0]["delivery_id"] == ids[1]
    assert listed[0]["error"].startswith("abandoned:")
    async with ctx.engine.begin() as conn:
        assert await requeue_failed(conn, [ids[1]]) == [ids[1]]
    async with ctx.engine.connect() as conn:
        status, attempts = (await conn.execute(
            select(Delivery.status, Delivery.attempts).where(Delivery.delivery_id == ids[1]))).one()
    assert (status, attempts) == ("pending", 0)


async def test_a_delivery_retaken_after_one_crash_is_still_handled(ctx: AppContext) -> None:
    """Below the bound an abandoned row is claimed again and handled (a kill during a deploy
    loses nothing)."""
    ids = await store(ctx, ("test", '{"n": "a"}'), ("test", '{"n": "b"}'))
    dead = Worker(ctx, crashing_router([]), backoff=no_wait, lease_seconds=0)
    assert (await dead.claim()) is not None  # claimed, then the process is killed
    seen: list[str] = []
    worker = Worker(ctx, crashing_router(seen), backoff=no_wait, batch_size=64)
    await worker.recover()
    assert await worker.run_until_idle() == 2
    rows = await rows_by_id(ctx)
    assert seen == ["a", "b"]
    assert [rows[i].status for i in ids] == ["done", "done"]
    assert [rows[i].attempts for i in ids] == [2, 1]
