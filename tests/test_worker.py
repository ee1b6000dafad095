"""The inbox worker on SQLite and PostgreSQL: order, retries, failure, recovery, leases.

Handlers here are plain gidgethub Routers handed to the Worker (its plug-in point), so the
worker's own code runs unpatched; one test runs the app's real router over GitHub's examples.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from gidgethub.routing import Router
from sqlalchemy import select, update

from bot.app import create_app
from bot.context import AppContext
from bot.store.models import Delivery
from bot.store.types import utcnow
from bot.webhooks.inbox import Inbox, InboxRow
from bot.webhooks.replay import delivery_headers
from bot.webhooks.worker import Worker


def no_wait(attempt: int) -> float:
    return 0.0


async def store(ctx: AppContext, *rows: tuple[str, str]) -> list[str]:
    """Store (event, JSON payload) rows through the real inbox; returns their delivery ids."""
    inbox = Inbox(ctx.engine)
    inbox.start()
    ids = [str(uuid.uuid4()) for _ in rows]
    try:
        await asyncio.gather(*(
            inbox.submit(InboxRow(delivery_id=d, event=e, action=None, repo=None,
                                  installation_id=None, payload=p))
            for d, (e, p) in zip(ids, rows, strict=True)
        ))
    finally:
        await inbox.close()
    return ids


async def rows_by_id(ctx: AppContext) -> dict[str, Delivery]:
    async with ctx.sessionmaker() as s:
        return {r.delivery_id: r for r in await s.scalars(select(Delivery).order_by(Delivery.id))}


def recording_router(seen: list[str], fail: set[str] | None = None,
                     error: type[Exception] = RuntimeError) -> Router:
    router = Router()

    @router.register("test")
    async def handle(event: Any, ctx: Any) -> None:
        seen.append(event.delivery_id)
        if fail and event.data.get("n") in fail:
            raise error("handler failed on purpose")

    return router


async def test_processes_in_arrival_order(ctx: AppContext) -> None:
    ids = []
    for n in range(30):  # one at a time, so arrival order is known
        ids += await store(ctx, ("test", f'{{"n": "{n}"}}'))
    seen: list[str] = []
    worker = Worker(ctx, recording_router(seen), backoff=no_wait)
    assert await worker.run_until_idle() == 30
    assert seen == ids
    rows = await rows_by_id(ctx)
    assert all(r.status == "done" and r.attempts == 1 and r.finished_at for r in rows.values())
    assert {r.claimed_by for r in rows.values()} == {worker.worker_id}


async def test_transient_failure_retried_then_failed_and_worker_goes_on(ctx: AppContext) -> None:
    ids = await store(ctx, ("test", '{"n": "a"}'), ("test", '{"n": "bad"}'),
                      ("test", '{"n": "b"}'))
    seen: list[str] = []
    worker = Worker(ctx, recording_router(seen, {"bad"}), backoff=no_wait, max_attempts=5)
    await worker.run_until_idle()
    rows = await rows_by_id(ctx)
    assert seen.count(ids[1]) == 5
    bad = rows[ids[1]]
    assert bad.status == "failed" and bad.attempts == 5
    assert "RuntimeError: handler failed on purpose" in bad.last_error
    assert rows[ids[0]].status == rows[ids[2]].status == "done"
    assert worker.counts["retry"] == 4 and worker.counts["failed"] == 1


async def test_backoff_puts_next_attempt_in_future(ctx: AppContext) -> None:
    ids = await store(ctx, ("test", '{"n": "bad"}'))
    worker = Worker(ctx, recording_router([], {"bad"}), backoff=lambda a: 3600.0)
    assert await worker.run_until_idle() == 1  # tried once; the retry is an hour away
    row = (await rows_by_id(ctx))[ids[0]]
    assert row.status == "pending" and row.attempts == 1
    assert row.next_attempt_at > utcnow() + timedelta(minutes=50)
    assert await worker.claim() is None


async def test_payload_missing_fields_fails_at_once_with_reason(ctx: AppContext) -> None:
    router = Router()

    @router.register("issues")
    async def needs_issue(event: Any, ctx: Any) -> None:
        event.data["issue"]["number"]

    ids = await store(ctx, ("issues", '{"action": "opened"}'), ("ping", '{"zen": "z"}'))
    worker = Worker(ctx, router, backoff=no_wait)
    await worker.run_until_idle()
    rows = await rows_by_id(ctx)
    assert rows[ids[0]].status == "failed" and rows[ids[0]].attempts == 1
    assert rows[ids[0]].last_error.startswith("payload is missing field 'issue'")
    assert rows[ids[1]].status == "done"


async def test_rows_left_processing_are_taken_again(ctx: AppContext) -> None:
    ids = await store(ctx, ("test", '{"n": "1"}'), ("test", '{"n": "2"}'))
    # a crashed process left the first row mid-way, its lease already over
    async with ctx.sessionmaker() as s:
        await s.execute(update(Delivery).where(Delivery.delivery_id == ids[0]).values(
            status="processing", claimed_by="dead:1:x", attempts=1,
            next_attempt_at=utcnow() - timedelta(seconds=1)))
        await s.commit()
    seen: list[str] = []
    worker = Worker(ctx, recording_router(seen), backoff=no_wait)
    await worker.recover()
    await worker.run_until_idle()
    assert seen == ids
    rows = await rows_by_id(ctx)
    assert rows[ids[0]].status == "done" and rows[ids[0]].attempts == 2


async def test_live_lease_is_respected_on_postgres_and_reset_on_sqlite(ctx: AppContext) -> None:
    ids = await store(ctx, ("test", '{"n": "1"}'))
    async with ctx.sessionmaker() as s:
        await s.execute(update(Delivery).values(
            status="processing", claimed_by="other:1:x", attempts=1,
            next_attempt_at=utcnow() + timedelta(minutes=5)))
        await s.commit()
    seen: list[str] = []
    worker = Worker(ctx, recording_router(seen), backoff=no_wait)
    recovered = await worker.recover()
    await worker.run_until_idle()
    if ctx.engine.dialect.name == "sqlite":
        assert recovered == 1 and seen == ids  # one process: a processing row is a crash's
    else:
        assert recovered == 0 and seen == []  # another replica holds a live lease


async def test_worker_that_lost_its_lease_cannot_finish(ctx: AppContext) -> None:
    await store(ctx, ("test", '{"n": "1"}'))
    router = Router()

    @router.register("test")
    async def stolen(event: Any, ctx_: Any) -> None:
        # while we work, another worker takes the row over (our lease ran out)
        async with ctx.sessionmaker() as s:
            await s.execute(update(Delivery).values(claimed_by="thief:1:x"))
            await s.commit()

    worker = Worker(ctx, router, backoff=no_wait)
    await worker.process_one()
    row = next(iter((await rows_by_id(ctx)).values()))
    assert row.status == "processing" and row.claimed_by == "thief:1:x"
    assert worker.counts == {"done": 0, "failed": 0, "retry": 0, "lost": 1}


async def test_heartbeat_extends_the_lease(ctx: AppContext) -> None:
    await store(ctx, ("test", '{"n": "1"}'))
    router = Router()
    lease_ends: list[Any] = []

    @router.register("test")
    async def slow(event: Any, ctx_: Any) -> None:
        # wait (bounded) until the heartbeat has moved the lease end at least once
        for _ in range(500):
            async with ctx.sessionmaker() as s:
                end = await s.scalar(select(Delivery.next_attempt_at))
            lease_ends.append(end)
            if end != lease_ends[0]:
                return
            await asyncio.sleep(0.02)
        raise AssertionError("lease never extended")

    worker = Worker(ctx, router, backoff=no_wait, lease_seconds=0.3)
    await worker.process_one()
    assert lease_ends[-1] > lease_ends[0]
    assert (await rows_by_id(ctx)).popitem()[1].status == "done"


async def test_two_workers_never_take_the_same_row(ctx: AppContext) -> None:
    ids = await store(ctx, *[("test", f'{{"n": "{n}"}}') for n in range(120)])
    seen: list[str] = []
    w1 = Worker(ctx, recording_router(seen), backoff=no_wait)
    w2 = Worker(ctx, recording_router(seen), backoff=no_wait)
    done = await asyncio.gather(w1.run_until_idle(), w2.run_until_idle())
    assert sum(done) == 120
    assert sorted(seen) == sorted(ids)  # each exactly once
    rows = await rows_by_id(ctx)
    assert all(r.status == "done" and r.attempts == 1 for r in rows.values())


@pytest.fixture
async def live_app(ctx: AppContext) -> AsyncIterator[tuple[TestClient, asyncio.Queue[str]]]:
    handled: asyncio.Queue[str] = asyncio.Queue()
    router = Router()

    @router.register("test")
    async def handle(event: Any, ctx_: Any) -> None:
        handled.put_nowait(event.delivery_id)

    app = create_app(ctx, worker=True, worker_options={"router": router, "poll_seconds": 30})
    async with TestClient(TestServer(app)) as client:
        yield client, handled


async def test_worker_is_woken_by_the_inbox(live_app: tuple[TestClient, asyncio.Queue[str]],
                                            ctx: AppContext) -> None:
    client, handled = live_app
    # poll_seconds is 30: only the inbox's wake-ups can make these quick enough. Several
    # rounds, some sent while the worker is looking for work, so a lost wake-up shows.
    for n in range(20):
        body = f'{{"n": "{n}"}}'.encode()
        headers = delivery_headers("test", body, "test-secret")
        resp = await client.post("/webhook", data=body, headers=headers)
        assert resp.status == 202
        got = await asyncio.wait_for(handled.get(), timeout=10)
        assert got == headers["X-GitHub-Delivery"]


async def test_real_router_handles_every_shared_payload(ctx: AppContext, shared_dir: Path
                                                        ) -> None:
    """The app's own routers over GitHub's example payloads: nothing may fail."""
    root = shared_dir / "fixtures" / "webhooks"
    files = sorted(root.rglob("*.json"))
    await store(ctx, *[(p.parent.name, p.read_text()) for p in files])
    worker = Worker(ctx, backoff=no_wait, max_attempts=1)
    await worker.run_until_idle()
    rows = await rows_by_id(ctx)
    failed = {r.event + "/" + (r.action or ""): r.last_error for r in rows.values()
              if r.status != "done"}
    assert failed == {}


async def test_nul_characters_do_not_fail_the_handlers(ctx: AppContext, shared_dir: Path) -> None:
    """U+0000 in an issue (PostgreSQL text refuses it) reaches handlers as U+FFFD."""
    import json

    payload = json.loads((shared_dir / "fixtures" / "webhooks" / "issues" / "opened.json")
                         .read_text())
    payload["issue"]["title"] = "nul \u0000 title"
    payload["issue"]["body"] = "before\u0000after"
    seen: list[Any] = []
    router = Router()

    @router.register("issues")
    async def record(event: Any, ctx_: Any) -> None:
        seen.append(event.data["issue"]["body"])

    await store(ctx, ("issues", json.dumps(payload)))
    await Worker(ctx, router, backoff=no_wait, max_attempts=1).run_until_idle()
    assert seen == ["before\ufffdafter"]
    # and the app's own handlers store it on both databases
    await store(ctx, ("issues", json.dumps(payload)))
    await Worker(ctx, backoff=no_wait, max_attempts=1).run_until_idle()
    rows = await rows_by_id(ctx)
    assert [r.status for r in rows.values()] == ["done", "done"], [r.last_error for r in rows.values()]


async def test_worker_defers_to_arriving_deliveries_but_never_starves(ctx: AppContext) -> None:
    """Answering GitHub comes first: while the inbox of this process is taking deliveries the
    worker waits for a lull before its next row, but only up to `max_defer`, so a steady
    stream is still worked through."""
    inbox = Inbox(ctx.engine)
    inbox.start()
    seen: list[str] = []
    try:
        idle = Worker(ctx, recording_router(seen), intake=inbox, intake_window=0.05)
        assert not await idle.yield_to_intake()  # nothing arriving: no wait at all

        delivery = str(uuid.uuid4())
        await inbox.submit(InboxRow(delivery_id=delivery, event="test", action=None, repo=None,
                                    installation_id=None, payload='{"n": "1"}'))
        # A window far longer than the test: the inbox stays "busy" throughout, and the
        # bound on deferring is what lets the worker go on.
        busy = Worker(ctx, recording_router(seen), intake=inbox, intake_window=3600.0,
                      max_defer=0.05)
        assert await busy.yield_to_intake()
        assert await busy.process_one()
    finally:
        await inbox.close()
    assert seen == [delivery]


async def test_lone_surrogates_do_not_fail_the_handlers(ctx: AppContext, shared_dir: Path) -> None:
    """A payload escaping a lone surrogate ("\\ud800": valid JSON, not encodable as UTF-8) in
    an issue's title and body: the app's handlers could store neither on SQLite nor on
    PostgreSQL, so the delivery failed and the issue was lost. It is stored with U+FFFD."""
    import json

    from bot.store.models import Thread

    payload = json.loads((shared_dir / "fixtures" / "webhooks" / "issues" / "opened.json")
                         .read_text())
    payload["issue"]["title"] = "Entropy \ud83d\ude00 drops \ud800"
    payload["issue"]["body"] = "before\udfffafter"
    await store(ctx, ("issues", json.dumps(payload)))
    await Worker(ctx, backoff=no_wait, max_attempts=1).run_until_idle()
    rows = await rows_by_id(ctx)
    assert [r.status for r in rows.values()] == ["done"], [r.last_error for r in rows.values()]
    async with ctx.sessionmaker() as s:
        thread = await s.scalar(select(Thread))
    assert (thread.title, thread.body) == ("Entropy \U0001F600 drops \ufffd", "before\ufffdafter")


async def test_a_worker_cancelled_mid_beat_leaves_no_beat_behind(ctx: AppContext) -> None:
    """A worker task cancelled (its process stopping) while its lease heartbeat waits on the
    delivery's row: the beat's connection is closed by the cancellation (SQLAlchemy's pool does
    not return it with its transaction: measured, docs/comments.md, worker 59), but
    `process_one` cancelled the heartbeat without waiting for it to end, so the beat was still
    on the server holding its row locks when the task was over: a claim right after skipped the
    delivery (SKIP LOCKED). Two real connections, synchronised through pg_stat_activity."""
    from contextlib import suppress

    from sqlalchemy import text

    if ctx.engine.dialect.name != "postgresql":
        pytest.skip("row locks and SKIP LOCKED: PostgreSQL")
    [delivery] = await store(ctx, ("test", '{"n": "1"}'))
    router = Router()
    handling = asyncio.Event()

    @router.register("test")
    async def hangs(event: Any, ctx_: Any) -> None:
        handling.set()
        await asyncio.Event().wait()

    worker = Worker(ctx, router, backoff=no_wait, lease_seconds=0.3)
    task = asyncio.create_task(worker.process_one())
    await handling.wait()
    waiting_beats = text(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND wait_event_type = 'Lock' AND query LIKE 'UPDATE deliveries%'")
    async with ctx.engine.connect() as blocker, ctx.engine.connect() as watcher:
        # The delivery's row held by another connection: the next beat waits on it.
        await blocker.execute(select(Delivery.id).where(Delivery.delivery_id == delivery)
                              .with_for_update())
        for _ in range(100_000):
            beats = await watcher.scalar(waiting_beats)
            await watcher.commit()  # (pg_stat_activity is read once per transaction)
            if beats:
                break
        assert beats == 1
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task
        assert await watcher.scalar(waiting_beats) == 0
        await blocker.rollback()
    # Its lease lapsed, the delivery is the next worker's at once.
    async with ctx.sessionmaker() as s:
        await s.execute(update(Delivery).values(next_attempt_at=utcnow() - timedelta(seconds=1)))
        await s.commit()
    seen: list[str] = []
    assert await Worker(ctx, recording_router(seen), backoff=no_wait).process_one()
    assert seen == [delivery]
