"""The webhook inbox writer: group commit.

A commit per request caps SQLite at a few hundred deliveries per second with a p99 over a
second (ARCHITECTURE.md). Here every request hands its row to one writer task and awaits a
future; the writer takes everything waiting, stores it in ONE transaction, and resolves each
future only after that transaction committed. While a commit runs, new rows queue up for the
next one, so the batch size follows the load by itself.

Per row the outcome is one of:
- "stored":    new delivery id, inserted (answer 202)
- "requeued":  the id was stored before and its processing had failed: back to pending (202)
- "duplicate": the id was stored before (or twice in the same batch): nothing stored (200)

Duplicates never fail a batch: ids already present are found with one SELECT, repeats within
the batch are resolved in memory, and the INSERT is `ON CONFLICT DO NOTHING` so a row another
replica inserted a moment earlier is reported as a duplicate instead of raising.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bot.store.models import Delivery
from bot.store.types import utcnow

log = logging.getLogger(__name__)

STORED = "stored"
REQUEUED = "requeued"
DUPLICATE = "duplicate"

MAX_BATCH = 256  # rows per transaction; bounds statement size (SQLite variable limit)


@dataclass
class InboxRow:
    delivery_id: str
    event: str
    action: str | None
    repo: str | None
    installation_id: int | None
    payload: str
    received_at: datetime = field(default_factory=utcnow)

    def values(self) -> dict[str, Any]:
        return {
            "delivery_id": self.delivery_id,
            "event": self.event,
            "action": self.action,
            "repo": self.repo,
            "installation_id": self.installation_id,
            "payload": self.payload,
            "status": "pending",
            "attempts": 0,
            "received_at": self.received_at,
        }


_INSERTS: dict[str, Any] = {}


def _insert_ignoring_duplicates(dialect: str) -> Any:
    """INSERT ... ON CONFLICT (delivery_id) DO NOTHING RETURNING delivery_id, built once per
    dialect and run as an executemany: one cached statement instead of compiling a new
    multi-row VALUES for every batch size (that compile was most of the writer's CPU)."""
    stmt = _INSERTS.get(dialect)
    if stmt is None:
        table = Delivery.__table__
        if dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        elif dialect == "sqlite":
            from sqlalchemy.dialects.sqlite import insert
        else:  # pragma: no cover - only the two supported databases
            raise RuntimeError(f"unsupported database dialect {dialect!r}")
        stmt = (
            insert(table)
            .on_conflict_do_nothing(index_elements=["delivery_id"])
            .returning(table.c.delivery_id)
        )
        _INSERTS[dialect] = stmt
    return stmt


async def store_rows(conn: AsyncConnection, rows: list[InboxRow]) -> list[str]:
    """Store a batch inside the caller's transaction; returns one outcome per row, in order."""
    table = Delivery.__table__
    ids = list({r.delivery_id for r in rows})
    existing: dict[str, str] = {}
    if ids:
        result = await conn.execute(
            select(table.c.delivery_id, table.c.status).where(table.c.delivery_id.in_(ids))
        )
        existing = {d: s for d, s in result.all()}

    outcomes: list[str] = []
    to_insert: list[InboxRow] = []
    requeue: list[str] = []
    seen: set[str] = set()
    for row in rows:
        if row.delivery_id in seen:
            outcomes.append(DUPLICATE)
            continue
        seen.add(row.delivery_id)
        status = existing.get(row.delivery_id)
        if status is None:
            outcomes.append(STORED)
            to_insert.append(row)
        elif status == "failed":
            # GitHub's "redeliver" button: a delivery that failed gets a fresh set of attempts.
            outcomes.append(REQUEUED)
            requeue.append(row.delivery_id)
        else:
            outcomes.append(DUPLICATE)

    if requeue:
        await conn.execute(
            update(table)
            .where(table.c.delivery_id.in_(requeue), table.c.status == "failed")
            .values(status="pending", attempts=0, next_attempt_at=None, claimed_by=None)
        )
    if to_insert:
        stmt = _insert_ignoring_duplicates(conn.dialect.name)
        result = await conn.execute(stmt, [r.values() for r in to_insert])
        inserted = set(result.scalars().all())
        lost = {r.delivery_id for r in to_insert} - inserted
        if lost:  # another replica stored the same id between our SELECT and INSERT
            outcomes = [
                DUPLICATE if (o == STORED and r.delivery_id in lost) else o
                for r, o in zip(rows, outcomes, strict=True)
            ]
    return outcomes


class Inbox:
    """One writer task per process; `await inbox.submit(row)` returns the row's outcome once the
    transaction holding it has committed (or raises if it could not be stored)."""

    def __init__(self, engine: AsyncEngine, *, max_batch: int = MAX_BATCH) -> None:
        self.engine = engine
        self.max_batch = max_batch
        self._queue: list[tuple[InboxRow, asyncio.Future[str]]] = []
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._listeners: list[Callable[[], None]] = []
        # figures for /metrics
        self.commits = 0
        self.rows_committed = 0
        self.errors = 0

    def add_listener(self, callback: Callable[[], None]) -> None:
        """Called after each commit that stored or re-queued rows (the worker's wake-up)."""
        self._listeners.append(callback)

    def start(self) -> None:
        if self._task is None:
            self._closing = False
            self._task = asyncio.get_running_loop().create_task(self._run(), name="inbox-writer")

    async def close(self) -> None:
        """Store what is already queued, then stop."""
        self._closing = True
        self._wakeup.set()
        if self._task is not None:
            await self._task
            self._task = None

    @property
    def queued(self) -> int:
        return len(self._queue)

    async def submit(self, row: InboxRow) -> str:
        if self._task is None or self._closing:
            raise RuntimeError("inbox is not running")
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._queue.append((row, future))
        self._wakeup.set()
        # shield: a client that disconnects must not cancel the commit other rows share.
        return await asyncio.shield(future)

    async def _run(self) -> None:
        while True:
            if not self._queue:
                if self._closing:
                    return
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            batch = self._queue[: self.max_batch]
            del self._queue[: self.max_batch]
            try:
                await self._commit(batch)
            except Exception as exc:  # noqa: BLE001 - never leave a request waiting forever
                log.exception("inbox writer error")
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)

    async def _commit(self, batch: list[tuple[InboxRow, asyncio.Future[str]]]) -> None:
        rows = [r for r, _ in batch]
        try:
            async with self.engine.begin() as conn:
                outcomes = await store_rows(conn, rows)
        except Exception as exc:  # noqa: BLE001 - isolate the bad row, fail only it
            self.errors += 1
            if len(batch) > 1:
                log.warning("inbox batch of %d failed (%s); storing rows one by one", len(batch), exc)
                for item in batch:
                    await self._commit([item])
                return
            log.error("inbox could not store delivery %s: %s", rows[0].delivery_id, exc)
            _, future = batch[0]
            if not future.done():
                future.set_exception(exc)
            return
        self.commits += 1
        self.rows_committed += sum(1 for o in outcomes if o != DUPLICATE)
        for (_, future), outcome in zip(batch, outcomes, strict=True):
            if not future.done():
                future.set_result(outcome)
        if any(o != DUPLICATE for o in outcomes):
            for callback in self._listeners:
                try:
                    callback()
                except Exception:  # noqa: BLE001 - a listener must not undo a commit
                    log.exception("inbox listener failed")
