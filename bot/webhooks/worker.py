"""The inbox worker: takes stored deliveries in arrival order and dispatches them.

Claiming. One UPDATE ... WHERE id = (SELECT ... ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING marks the oldest takeable row `processing`, stamps it with this worker's id
(`claimed_by`), counts the attempt and sets a lease end. On PostgreSQL the row lock plus SKIP
LOCKED means two replicas never take the same row; on SQLite (one process, writes serialised)
FOR UPDATE renders as nothing and the statement is atomic by itself.

Leases. While a row is `processing`, `next_attempt_at` holds the lease end; a heartbeat moves it
forward while the handler runs. A row whose lease ran out belongs to a dead process and is
taken again. Every later write is fenced by `claimed_by = me AND status = 'processing'`, so a
worker that lost its lease cannot mark a row another worker owns. On SQLite there is only one
process, so rows left `processing` are put back to pending at start without waiting.

Failures. Exceptions that retrying cannot fix (a payload missing a field: KeyError, TypeError,
ValueError, ...) fail the row at once with the reason; anything else is retried with
exponential backoff and jitter (`next_attempt_at`) up to `max_attempts`, then failed. Either
way the worker goes on with the next row.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import socket
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from gidgethub import sansio
from gidgethub.routing import Router
from sqlalchemy import and_, bindparam, or_, select, update

from bot.logs import log_delivery
from bot.store.models import Delivery
from bot.store.types import utcnow

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 5
PERMANENT_ERRORS: tuple[type[BaseException], ...] = (
    KeyError,
    IndexError,
    TypeError,
    ValueError,
    AttributeError,
)


def _build_statements() -> tuple[Any, Any]:
    """The claim and lease-extension statements, built once (SQLAlchemy caches their SQL)."""
    t = Delivery.__table__
    now = bindparam("now", type_=t.c.started_at.type)
    takeable = or_(
        and_(t.c.status == "pending", or_(t.c.next_attempt_at.is_(None), t.c.next_attempt_at <= now)),
        and_(t.c.status == "processing", t.c.next_attempt_at <= now),  # lease ran out
    )
    oldest = (
        select(t.c.id)
        .where(takeable)
        .order_by(t.c.id)
        .limit(1)
        .with_for_update(skip_locked=True)  # PostgreSQL; SQLite renders nothing
        .scalar_subquery()
    )
    claim = (
        update(t)
        .where(t.c.id == oldest)
        .values(
            status="processing",
            claimed_by=bindparam("me"),
            attempts=t.c.attempts + 1,
            started_at=now,
            next_attempt_at=bindparam("lease_end", type_=t.c.next_attempt_at.type),
        )
        .returning(
            t.c.id, t.c.delivery_id, t.c.event, t.c.action, t.c.repo, t.c.payload, t.c.attempts
        )
    )
    extend = (
        update(t)
        .where(
            t.c.id == bindparam("row_id"),
            t.c.claimed_by == bindparam("me"),
            t.c.status == "processing",
        )
        .values(next_attempt_at=bindparam("lease_end", type_=t.c.next_attempt_at.type))
    )
    return claim, extend


_CLAIM, _EXTEND = _build_statements()


def _without_nul(value: Any) -> Any:
    """GitHub text may carry U+0000, which PostgreSQL text columns refuse: every handler would
    fail on it, so it becomes U+FFFD (the replacement character) before dispatch."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_nul(v) for v in value]
    return value


def default_backoff(attempt: int) -> float:
    """Seconds before attempt `attempt + 1`: 5, 20, 80, 320 (+-25% jitter), so five attempts
    span about seven minutes: long enough to ride out a short GitHub outage."""
    base = min(3600.0, 5.0 * 4.0 ** max(0, attempt - 1))
    return base * random.uniform(0.75, 1.25)


def make_worker_id() -> str:
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@dataclass
class Claimed:
    id: int
    delivery_id: str
    event: str
    action: str | None
    repo: str | None
    payload: str
    attempts: int


class Worker:
    def __init__(
        self,
        ctx: Any,
        router: Router | None = None,
        *,
        worker_id: str | None = None,
        max_attempts: int = MAX_ATTEMPTS,
        lease_seconds: float | None = None,
        poll_seconds: float = 2.0,
        backoff: Callable[[int], float] = default_backoff,
        intake: Any = None,
        intake_window: float = 0.02,
        max_defer: float = 1.0,
    ) -> None:
        if router is None:
            from bot.webhooks.routers import router as default_router

            router = default_router
        self.ctx = ctx
        self.router = router
        self.worker_id = worker_id or make_worker_id()
        self.max_attempts = max_attempts
        self.lease = float(lease_seconds if lease_seconds is not None else ctx.settings.worker_lease)
        self.poll_seconds = poll_seconds
        self.backoff = backoff
        # The inbox (bot.webhooks.inbox.Inbox) of this process, when the worker shares it with /webhook.
        self.intake = intake
        self.intake_window = intake_window
        self.max_defer = max_defer
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._next: Claimed | None = None  # claimed together with the previous row's finish
        self.counts = {"done": 0, "failed": 0, "retry": 0, "lost": 0}

    @property
    def table(self) -> Any:
        return Delivery.__table__

    def wake(self) -> None:
        self._wake.set()

    # -- lifecycle -----------------------------------------------------------------------
    async def recover(self) -> int:
        """On SQLite (one process) rows left `processing` by a crash go back to pending now.
        On PostgreSQL other live replicas may own them: their leases decide."""
        if self.ctx.engine.dialect.name != "sqlite":
            return 0
        t = self.table
        async with self.ctx.engine.begin() as conn:
            result = await conn.execute(
                update(t)
                .where(t.c.status == "processing")
                .values(status="pending", next_attempt_at=None, claimed_by=None)
            )
        if result.rowcount:
            log.warning("took back %d deliveries left in processing", result.rowcount)
        return int(result.rowcount or 0)

    def start(self) -> None:
        if self._task is None:
            self._stopping = False
            self._task = asyncio.get_running_loop().create_task(self._run(), name="inbox-worker")

    async def stop(self) -> None:
        """Finish the row in hand, then stop."""
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            await self._task
            self._task = None

    async def _run(self) -> None:
        await self.recover()
        from bot.analysis import paper_pool, warm_up

        await warm_up()
        try:  # the stored pool's index (read from its saved file), before the first row
            async with self.ctx.sessionmaker() as session:
                await paper_pool(session, self.ctx.extras)
        except Exception:  # noqa: BLE001 - the first analysis loads it then
            log.warning("could not load the paper pool's index at start", exc_info=True)
        while not self._stopping:
            # Cleared BEFORE looking for work: a commit that lands while we look sets it
            # again, so its wake-up is not lost.
            self._wake.clear()
            await self.yield_to_intake()
            try:
                worked = await self.process_one()
            except Exception:  # database down: wait for the next wake-up or poll, go on
                log.exception("worker loop error")
                worked = False
            if worked:
                continue
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=self.poll_seconds)
            except TimeoutError:
                pass
        await self.release_next()

    async def yield_to_intake(self) -> bool:
        """While deliveries are arriving in this process, wait for a lull before the next
        row: handlers and analyses share the CPU (and the GIL) with /webhook, and answering
        GitHub comes first. Waits at most `max_defer`, so a steady stream is still worked
        through. Returns whether it had to wait."""
        intake = self.intake
        if intake is None or not intake.busy(self.intake_window):
            return False
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.max_defer
        # A lull is the absence of arrivals for a while, not an event: it is polled.
        while not self._stopping and loop.time() < deadline and intake.busy(self.intake_window):  # noqa: ASYNC110
            await asyncio.sleep(min(self.intake_window, deadline - loop.time()))
        return True

    async def release_next(self) -> None:
        """Give back a row claimed for the next step but not started (on stop)."""
        claimed, self._next = self._next, None
        if claimed is None:
            return
        t = self.table
        async with self.ctx.engine.begin() as conn:
            await conn.execute(
                update(t)
                .where(t.c.id == claimed.id, t.c.claimed_by == self.worker_id,
                       t.c.status == "processing")
                .values(status="pending", attempts=t.c.attempts - 1, next_attempt_at=None,
                        claimed_by=None)
            )

    async def run_until_idle(self, limit: int = 100_000) -> int:
        """Process takeable rows until none is left (tests, one-shot use)."""
        count = 0
        while count < limit and await self.process_one(claim_next=count + 1 < limit):
            count += 1
        return count

    # -- one row -------------------------------------------------------------------------
    async def claim(self) -> Claimed | None:
        async with self.ctx.engine.begin() as conn:
            return await self._claim_in(conn)

    async def _claim_in(self, conn: Any) -> Claimed | None:
        now = utcnow()
        row = (
            await conn.execute(
                _CLAIM,
                {"now": now, "me": self.worker_id, "lease_end": now + timedelta(seconds=self.lease)},
            )
        ).first()
        return Claimed(*row) if row is not None else None

    async def process_one(self, *, claim_next: bool = True) -> bool:
        """Handle the oldest takeable row; False when there was none.

        The write that finishes a row and the claim of the next one share one transaction
        (half the commits); the finish is still committed before the next handler starts.
        """
        claimed, self._next = self._next, None
        if claimed is None:
            claimed = await self.claim()
        if claimed is None:
            return False
        heartbeat = asyncio.get_running_loop().create_task(self._heartbeat(claimed.id))
        error: BaseException | None = None
        try:
            data = json.loads(claimed.payload)
            if "\\u0000" in claimed.payload:  # cheap test first: almost never true
                data = _without_nul(data)
            if not isinstance(data, dict):
                raise ValueError("payload is not a JSON object")
            event = sansio.Event(data, event=claimed.event, delivery_id=claimed.delivery_id)
            await self.router.dispatch(event, self.ctx)
        except asyncio.CancelledError:
            heartbeat.cancel()
            raise
        except Exception as exc:  # noqa: BLE001 - every handler failure is recorded on the row
            error = exc
        finally:
            heartbeat.cancel()
        claim_next = claim_next and not self._stopping
        if error is None:
            await self.finish(claimed, claim_next)
        else:
            await self._failed(claimed, error, claim_next)
        return True

    async def _heartbeat(self, row_id: int) -> None:
        while True:
            await asyncio.sleep(self.lease / 3)
            try:
                async with self.ctx.engine.begin() as conn:
                    await conn.execute(
                        _EXTEND,
                        {"row_id": row_id, "me": self.worker_id,
                         "lease_end": utcnow() + timedelta(seconds=self.lease)},
                    )
            except Exception:  # noqa: BLE001 - a missed beat only risks the lease
                log.warning("lease heartbeat failed for row %s", row_id)

    async def _update_fenced(self, claimed: Claimed, claim_next: bool, **values: Any
                             ) -> bool:
        """Write the row's outcome only if we still own it; optionally claim the next row in
        the same transaction (kept in self._next)."""
        t = self.table
        async with self.ctx.engine.begin() as conn:
            result = await conn.execute(
                update(t)
                .where(
                    t.c.id == claimed.id,
                    t.c.claimed_by == self.worker_id,
                    t.c.status == "processing",
                )
                .values(**values)
            )
            if claim_next:
                self._next = await self._claim_in(conn)
        return bool(result.rowcount)

    def _log(self, claimed: Claimed, outcome: str, level: int = logging.INFO, **extra: Any) -> None:
        log_delivery(
            delivery_id=claimed.delivery_id,
            event=claimed.event,
            action=claimed.action,
            repo=claimed.repo,
            outcome=outcome,
            level=level,
            attempt=claimed.attempts,
            worker=self.worker_id,
            **extra,
        )

    async def finish(self, claimed: Claimed, claim_next: bool) -> None:
        ok = await self._update_fenced(
            claimed, claim_next,
            status="done", finished_at=utcnow(), next_attempt_at=None, last_error=None,
        )
        if ok:
            self.counts["done"] += 1
            self._log(claimed, "done")
        else:
            self.counts["lost"] += 1
            self._log(claimed, "lease_lost", logging.WARNING)

    async def _failed(self, claimed: Claimed, error: BaseException, claim_next: bool) -> None:
        reason = f"{type(error).__name__}: {error}"
        if isinstance(error, KeyError):
            reason = f"payload is missing field {error}"
        permanent = isinstance(error, PERMANENT_ERRORS)
        detail = "".join(traceback.format_exception(error))[-4000:]
        if permanent or claimed.attempts >= self.max_attempts:
            ok = await self._update_fenced(
                claimed,
                claim_next,
                status="failed",
                finished_at=utcnow(),
                next_attempt_at=None,
                last_error=f"{reason}\n{detail}",
            )
            outcome = "failed"
        else:
            delay = max(0.0, self.backoff(claimed.attempts))
            ok = await self._update_fenced(
                claimed,
                claim_next,
                status="pending",
                next_attempt_at=utcnow() + timedelta(seconds=delay),
                last_error=f"{reason}\n{detail}",
            )
            outcome = "retry"
        if ok:
            self.counts[outcome] += 1
            self._log(claimed, outcome, logging.WARNING, error=reason[:500])
        else:
            self.counts["lost"] += 1
            self._log(claimed, "lease_lost", logging.WARNING)


# -- a worker process beside the web process ------------------------------------------------
async def run_worker(ctx: Any, stop: asyncio.Event, *, poll_seconds: float = 0.25) -> Worker:
    """Drain the inbox of `ctx` until `stop` is set, then finish the row in hand. Used by a
    process that only works (`rltracker serve --workers N`): the web process that stores
    the deliveries cannot wake it, so it looks for new rows every `poll_seconds` when idle."""
    worker = Worker(ctx, poll_seconds=poll_seconds)
    worker.start()
    await stop.wait()
    await worker.stop()
    return worker


def worker_process_main(settings: Any, make_github: Callable[[Any], Any] | None = None,
                        log_level: str = "INFO") -> None:
    """Entry point of a worker process (spawned, so it shares no state with its parent). It
    loads the analyzers and the saved paper index once, then works until SIGTERM or SIGINT;
    leases, fencing and recovery are the Worker's, as in the web process."""
    import signal

    from bot.context import AppContext
    from bot.logs import configure_logging

    configure_logging(log_level)

    async def main() -> None:
        ctx = AppContext.create(settings)
        if make_github is not None:
            ctx.github = make_github(settings)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            await run_worker(ctx, stop)
        finally:
            await ctx.close()

    asyncio.run(main())
