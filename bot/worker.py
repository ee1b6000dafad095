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
from sqlalchemy import and_, or_, select, update

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


def default_backoff(attempt: int) -> float:
    """Seconds before attempt `attempt + 1`: 2, 4, 8, 16 ... capped at 10 minutes, +-25% jitter."""
    base = min(600.0, 2.0**attempt)
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
    ) -> None:
        if router is None:
            from bot.routers import router as default_router

            router = default_router
        self.ctx = ctx
        self.router = router
        self.worker_id = worker_id or make_worker_id()
        self.max_attempts = max_attempts
        self.lease = float(
            lease_seconds
            if lease_seconds is not None
            else os.environ.get("RLTRACKER_WORKER_LEASE", "120")
        )
        self.poll_seconds = poll_seconds
        self.backoff = backoff
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
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
        while not self._stopping:
            try:
                worked = await self.process_one()
            except Exception:  # database down: wait for the next wake-up or poll, go on
                log.exception("worker loop error")
                worked = False
            if worked:
                continue
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=self.poll_seconds)
            except TimeoutError:
                pass

    async def run_until_idle(self, limit: int = 100_000) -> int:
        """Process takeable rows until none is left (tests, `rltracker` one-shot use)."""
        count = 0
        while count < limit and await self.process_one():
            count += 1
        return count

    # -- one row -------------------------------------------------------------------------
    async def claim(self) -> Claimed | None:
        t = self.table
        now = utcnow()
        takeable = or_(
            and_(
                t.c.status == "pending",
                or_(t.c.next_attempt_at.is_(None), t.c.next_attempt_at <= now),
            ),
            and_(t.c.status == "processing", t.c.next_attempt_at <= now),  # lease ran out
        )
        oldest = (
            select(t.c.id)
            .where(takeable)
            .order_by(t.c.id)
            .limit(1)
            .with_for_update(skip_locked=True)
            .scalar_subquery()
        )
        stmt = (
            update(t)
            .where(t.c.id == oldest)
            .values(
                status="processing",
                claimed_by=self.worker_id,
                attempts=t.c.attempts + 1,
                started_at=now,
                next_attempt_at=now + timedelta(seconds=self.lease),
            )
            .returning(
                t.c.id, t.c.delivery_id, t.c.event, t.c.action, t.c.repo, t.c.payload, t.c.attempts
            )
        )
        async with self.ctx.engine.begin() as conn:
            row = (await conn.execute(stmt)).first()
        return Claimed(*row) if row is not None else None

    async def process_one(self) -> bool:
        """Claim and handle the oldest takeable row; False when there was none."""
        claimed = await self.claim()
        if claimed is None:
            return False
        heartbeat = asyncio.get_running_loop().create_task(self._heartbeat(claimed.id))
        error: BaseException | None = None
        try:
            data = json.loads(claimed.payload)
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
        if error is None:
            await self._finish(claimed, "done")
        else:
            await self._failed(claimed, error)
        return True

    async def _heartbeat(self, row_id: int) -> None:
        t = self.table
        while True:
            await asyncio.sleep(self.lease / 3)
            try:
                async with self.ctx.engine.begin() as conn:
                    await conn.execute(
                        update(t)
                        .where(
                            t.c.id == row_id,
                            t.c.claimed_by == self.worker_id,
                            t.c.status == "processing",
                        )
                        .values(next_attempt_at=utcnow() + timedelta(seconds=self.lease))
                    )
            except Exception:  # noqa: BLE001 - a missed beat only risks the lease
                log.warning("lease heartbeat failed for row %s", row_id)

    async def _update_fenced(self, claimed: Claimed, **values: Any) -> bool:
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

    async def _finish(self, claimed: Claimed, status: str) -> None:
        ok = await self._update_fenced(
            claimed, status=status, finished_at=utcnow(), next_attempt_at=None, last_error=None
        )
        if ok:
            self.counts["done"] += 1
            self._log(claimed, "done")
        else:
            self.counts["lost"] += 1
            self._log(claimed, "lease_lost", logging.WARNING)

    async def _failed(self, claimed: Claimed, error: BaseException) -> None:
        reason = f"{type(error).__name__}: {error}"
        if isinstance(error, KeyError):
            reason = f"payload is missing field {error}"
        permanent = isinstance(error, PERMANENT_ERRORS)
        detail = "".join(traceback.format_exception(error))[-4000:]
        if permanent or claimed.attempts >= self.max_attempts:
            ok = await self._update_fenced(
                claimed,
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
