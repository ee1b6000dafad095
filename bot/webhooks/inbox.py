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
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bot.logs import error_text
from bot.store.db import (
    dialect_insert,
    is_sqlite_locked,
    is_statement_timeout,
    lock_waited_out,
    refuses_writes,
    switch_to_wal,
)
from bot.store.models import Delivery
from bot.store.privacy import EMPTIED_PAYLOAD
from bot.store.types import utcnow

log = logging.getLogger(__name__)

STORED = "stored"
REQUEUED = "requeued"
DUPLICATE = "duplicate"

MAX_BATCH = 256  # rows per transaction; bounds statement size (SQLite variable limit)



def _waited_out(exc: BaseException) -> bool:
    """`exc` says the database could not take ANY row for a while, not that a row is bad: a
    statement cut at the bound (PostgreSQL), a lock not granted within the wait (PostgreSQL's
    lock_timeout, SQLite's write lock still held when the writer stopped waiting). Trying the
    rows again one by one would wait the whole bound again for each of them."""
    return is_statement_timeout(exc) or lock_waited_out(exc)


@dataclass
class InboxRow:
    delivery_id: str
    event: str
    action: str | None
    repo: str | None
    installation_id: int | None
    payload: str
    received_at: datetime = field(default_factory=utcnow)
    repo_id: int | None = None  # the payload's `repository.id` (`forget` finds it by this)

    def values(self) -> dict[str, Any]:
        return {
            "delivery_id": self.delivery_id,
            "event": self.event,
            "action": self.action,
            "repo": self.repo,
            "repo_id": self.repo_id,
            "installation_id": self.installation_id,
            "payload": self.payload,
            "status": "pending",
            "attempts": 0,
            "received_at": self.received_at,
        }


@cache
def _insert_ignoring_duplicates(dialect: str) -> Any:
    """INSERT ... ON CONFLICT (delivery_id) DO NOTHING RETURNING delivery_id, built once per
    dialect and run as an executemany: one cached statement instead of compiling a new
    multi-row VALUES for every batch size (that compile was most of the writer's CPU)."""
    table = Delivery.__table__
    return (
        dialect_insert(dialect)(table)
        .on_conflict_do_nothing(index_elements=["delivery_id"])
        .returning(table.c.delivery_id)
    )


async def store_rows(conn: AsyncConnection, rows: list[InboxRow]) -> list[str]:
    """Store a batch inside the caller's transaction; returns one outcome per row, in order.

    The common case (all ids new) costs one statement: the INSERT. Only ids it skipped are
    looked up, to tell a duplicate from a failed delivery that is being redelivered.
    """
    table = Delivery.__table__
    first: dict[str, InboxRow] = {}
    for row in rows:
        first.setdefault(row.delivery_id, row)  # repeats inside the batch: the first one counts
    stmt = _insert_ignoring_duplicates(conn.dialect.name)
    result = await conn.execute(stmt, [r.values() for r in first.values()])
    inserted = set(result.scalars().all())
    skipped = [d for d in first if d not in inserted]
    requeued: set[str] = set()
    if skipped:
        failed = select(table.c.delivery_id).where(
            table.c.delivery_id.in_(skipped), table.c.status == "failed",
            table.c.payload != EMPTIED_PAYLOAD,  # not re-queued (requeue_failed)
        )
        requeued = set((await conn.execute(failed)).scalars().all())
    if requeued:
        # GitHub's "Redeliver": a delivery whose processing failed gets a fresh set of attempts.
        await requeue_failed(conn, sorted(requeued))
    return _outcomes(rows, first, inserted, requeued)


async def requeue_failed(conn: AsyncConnection, delivery_ids: list[str] | None) -> list[str]:
    """Failed deliveries back to pending with a fresh set of attempts (GitHub's "Redeliver",
    or `rltracker deliveries retry`); `None`: every failed one. Returns the ids re-queued.
    The worker takes them at its next look (a running `serve` polls every few seconds).
    A delivery of a private repository whose payload was not kept (bot.store.privacy) is not
    re-queued: there is nothing to handle (`rltracker deliveries` says so; GitHub's
    redelivery of it is answered as a duplicate)."""
    table = Delivery.__table__
    stmt = update(table).where(table.c.status == "failed", table.c.payload != EMPTIED_PAYLOAD)
    if delivery_ids is not None:
        stmt = stmt.where(table.c.delivery_id.in_(delivery_ids))
    result = await conn.execute(
        stmt.values(status="pending", attempts=0, next_attempt_at=None, claimed_by=None)
        .returning(table.c.delivery_id))
    return list(result.scalars().all())


def _outcomes(rows: list[InboxRow], first: dict[str, InboxRow], inserted: set[str],
              requeued: set[str]) -> list[str]:
    outcomes: list[str] = []
    for row in rows:
        if first.get(row.delivery_id) is not row:
            outcomes.append(DUPLICATE)  # a repeat inside the batch
        elif row.delivery_id in inserted:
            outcomes.append(STORED)
        elif row.delivery_id in requeued:
            outcomes.append(REQUEUED)
        else:
            outcomes.append(DUPLICATE)
    return outcomes


class SqliteBatchWriter:
    """The same batch store on SQLite, as ONE hop to a dedicated thread holding a plain sqlite3
    connection: through aiosqlite every statement, fetch and commit is its own hop to its
    thread, and those hops (and the GIL hand-overs they cost) were most of the price of a
    stored delivery. Same SQL semantics and the same column formats as SQLAlchemy writes
    (datetimes go through the column type's own SQLite bind processor).

    Two things keep a group's commit off the slow paths SQLite takes by default (measured in
    docs/performance.md, "Where the goals stand"), because every request of the group, and
    every request queued behind it, waits for that commit:
    - Checkpoints. By default the connection whose commit brings the WAL past 1,000 pages
      copies the WAL back into the database and syncs both before its COMMIT returns (20-160
      ms). This connection does not checkpoint on commit (wal_autocheckpoint=0); a second
      thread with its own connection runs a PASSIVE checkpoint (it waits for no reader or
      writer) after each CHECKPOINT_BYTES stored, while the writer goes on committing. The
      WAL starts again from its beginning only when a write begins with every frame copied,
      which commits landing during those checkpoints can prevent for as long as deliveries
      keep coming without a pause: once the WAL holds WAL_CATCH_UP_BYTES, the writer's
      thread takes the next checkpoint itself (RESTART), between two groups (after the
      first one's answers went out), so the next write starts the WAL again. That bounds
      the file at about 300 MB (reused afterwards, as SQLite does by default; cutting it
      back, journal_size_limit, stalled the next commit 270 ms) at the price of one such
      pause (about 160 ms) per 256 MB of WAL, where SQLite's own way pauses (20-160 ms)
      every 4 MB. Without a flood the WAL starts again by itself after a checkpoint.
    - Waiting for the write lock while another process (a worker) writes. SQLite's busy
      handler sleeps 1, 2, 5, 10, 15, 20, 25, 25, 25, 50 ... ms between tries, so a lock held
      for 20 ms is taken after 33 and one held for 35 after 53. This connection does not use
      it (busy_timeout=0): BEGIN IMMEDIATE is tried again every BUSY_POLL_SECONDS, up to the
      same 30 s, and the group takes the lock within half a millisecond of its release.
    """

    _INSERT = (
        "INSERT INTO deliveries (delivery_id, event, action, repo, repo_id, installation_id, "
        "payload, status, attempts, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?) "
        "ON CONFLICT (delivery_id) DO NOTHING RETURNING delivery_id"
    )
    BUSY_SECONDS = 30.0  # as busy_timeout=30000 on the engine's connections
    BUSY_POLL_SECONDS = 0.0005
    CHECKPOINT_BYTES = 4 * 1024 * 1024  # SQLite's own default: 1,000 pages of 4 KiB
    WAL_CATCH_UP_BYTES = 64 * CHECKPOINT_BYTES  # a 4,500-delivery burst stays under it
    CATCH_UP_WAIT_MS = 200

    def __init__(self, path: str, dialect: Any, *, uri: bool = False) -> None:
        self.path = path
        self.uri = uri  # `path` is a file: URI (DATABASE_URL ...?mode=ro&uri=true)
        column_type = Delivery.__table__.c.received_at.type
        self._datetime = column_type.dialect_impl(dialect).bind_processor(dialect)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="inbox-sqlite")
        self._conn: sqlite3.Connection | None = None
        self._checkpointer = ThreadPoolExecutor(max_workers=1,
                                                thread_name_prefix="inbox-checkpoint")
        self._checkpoint_conn: sqlite3.Connection | None = None
        self._checkpoint: Future[None] | None = None  # the one in flight, if any
        self._stored_since_checkpoint = 0  # payload bytes: about what the WAL grew by
        self._catch_up_due = False  # set by the checkpointer: the WAL is not restarting

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=self.BUSY_SECONDS, isolation_level=None,
                               uri=self.uri)
        switch_to_wal(lambda sql: conn.execute(sql).fetchall(), self.BUSY_SECONDS)
        for pragma in ("synchronous=NORMAL", "foreign_keys=ON", "busy_timeout=30000"):
            conn.execute(f"PRAGMA {pragma}")
        # After the set-up above (which may wait like any connection): see the class docstring.
        conn.execute("PRAGMA wal_autocheckpoint=0")
        conn.execute("PRAGMA busy_timeout=0")
        return conn

    def _begin(self, conn: sqlite3.Connection) -> None:
        """BEGIN IMMEDIATE, tried again every BUSY_POLL_SECONDS while another connection holds
        the write lock (SQLITE_BUSY), for up to BUSY_SECONDS."""
        deadline = time.monotonic() + self.BUSY_SECONDS
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                # any BUSY (BUSY_RECOVERY, BUSY_SNAPSHOT too): bot.store.db's one judgement
                if not is_sqlite_locked(exc) or time.monotonic() >= deadline:
                    raise
            time.sleep(self.BUSY_POLL_SECONDS)

    def _after_commit(self, stored_bytes: int) -> None:
        """Once CHECKPOINT_BYTES were stored since the last checkpoint (and none is running):
        start one on the other thread (the writer does not wait for it), or, when the last
        one found the WAL past WAL_CATCH_UP_BYTES, queue the catch-up on this thread."""
        self._stored_since_checkpoint += stored_bytes
        if self._stored_since_checkpoint < self.CHECKPOINT_BYTES:
            return
        if self._checkpoint is not None and not self._checkpoint.done():
            return
        self._stored_since_checkpoint = 0
        if self._catch_up_due:
            self._catch_up_due = False
            self._executor.submit(self._catch_up)  # runs before the next group's store
        else:
            self._checkpoint = self._checkpointer.submit(self._run_checkpoint)

    def _catch_up(self) -> None:
        """The checkpoint, on the writer's thread between two groups, in RESTART mode: it
        takes the write lock (no frame can land while it copies) and waits for readers to
        leave the WAL, so the next write starts it again. It may wait for a worker's
        transaction or reader up to CATCH_UP_WAIT_MS; past that it gives up and a later
        catch-up tries again."""
        conn = self._conn
        if conn is None:
            return
        try:
            conn.execute(f"PRAGMA busy_timeout={self.CATCH_UP_WAIT_MS}")
            try:
                conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchall()
            finally:
                conn.execute("PRAGMA busy_timeout=0")
        except sqlite3.Error as exc:
            log.warning("inbox checkpoint failed: %s", error_text(exc))

    def _run_checkpoint(self) -> None:
        try:
            conn = self._checkpoint_conn
            if conn is None:
                conn = self._checkpoint_conn = sqlite3.connect(
                    self.path, timeout=30, isolation_level=None, uri=self.uri)
            page_size = conn.execute("PRAGMA page_size").fetchone()[0]
            _, wal_frames, _ = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            if wal_frames * page_size > self.WAL_CATCH_UP_BYTES:
                self._catch_up_due = True
        except sqlite3.Error as exc:  # the next one, or any other connection's, catches up
            log.warning("inbox checkpoint failed: %s", error_text(exc))
            self._close_checkpoint_conn()

    def _close_checkpoint_conn(self) -> None:
        conn, self._checkpoint_conn = self._checkpoint_conn, None
        if conn is not None:
            conn.close()

    def _store(self, rows: list[InboxRow]) -> list[str]:
        first: dict[str, InboxRow] = {}
        for row in rows:
            first.setdefault(row.delivery_id, row)
        if self._conn is None:
            self._conn = self._connect()
        conn = self._conn
        try:
            self._begin(conn)
            inserted: set[str] = set()
            for r in first.values():
                cursor = conn.execute(self._INSERT, (
                    r.delivery_id, r.event, r.action, r.repo, r.repo_id, r.installation_id,
                    r.payload,
                    self._datetime(r.received_at) if self._datetime else r.received_at,
                ))
                if cursor.fetchone() is not None:
                    inserted.add(r.delivery_id)
            skipped = [d for d in first if d not in inserted]
            requeued: set[str] = set()
            if skipped:
                marks = ",".join("?" * len(skipped))
                requeued = {d for (d,) in conn.execute(
                    f"SELECT delivery_id FROM deliveries WHERE status = 'failed' "
                    f"AND payload != ? AND delivery_id IN ({marks})",
                    [EMPTIED_PAYLOAD, *skipped])}
            if requeued:
                marks = ",".join("?" * len(requeued))
                conn.execute(
                    "UPDATE deliveries SET status = 'pending', attempts = 0, "
                    "next_attempt_at = NULL, claimed_by = NULL "
                    f"WHERE status = 'failed' AND delivery_id IN ({marks})", list(requeued))
            conn.execute("COMMIT")
        except BaseException:
            self._discard()
            raise
        self._after_commit(sum(len(r.payload) for r in first.values()))
        return _outcomes(rows, first, inserted, requeued)

    def _discard(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
            finally:
                conn.close()

    async def store(self, rows: list[InboxRow]) -> list[str]:
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._store, rows)

    async def close(self) -> None:
        loop = asyncio.get_running_loop()
        executor, checkpointer = self._executor, self._checkpointer
        await loop.run_in_executor(executor, self._discard)
        await loop.run_in_executor(checkpointer, self._close_checkpoint_conn)  # after any in flight
        executor.shutdown(wait=False)
        checkpointer.shutdown(wait=False)
        # a later batch (the inbox started again) gets fresh threads
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="inbox-sqlite")
        self._checkpointer = ThreadPoolExecutor(max_workers=1,
                                                thread_name_prefix="inbox-checkpoint")
        self._checkpoint = None


class Inbox:
    """One writer task per process; `await inbox.submit(row)` returns the row's outcome once the
    transaction holding it has committed (or raises if it could not be stored)."""

    def __init__(self, engine: AsyncEngine, *, max_batch: int = MAX_BATCH) -> None:
        self.engine = engine
        self.max_batch = max_batch
        self._queue: list[tuple[InboxRow, asyncio.Future[str]]] = []
        self.last_submit = 0.0  # time.monotonic() of the latest delivery handed in
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._listeners: list[Callable[[], None]] = []
        self._conn: AsyncConnection | None = None  # the writer's own connection, kept open
        self._sqlite: SqliteBatchWriter | None = None
        database = engine.url.database
        if engine.url.get_backend_name() == "sqlite" and database and database != ":memory:":
            # the file as the engine opens it (a file: URI with its mode included)
            args, kwargs = engine.dialect.create_connect_args(engine.url)
            self._sqlite = SqliteBatchWriter(args[0], engine.dialect,
                                             uri=bool(kwargs.get("uri")))
        # figures for /metrics
        self.commits = 0
        self.rows_committed = 0
        self.errors = 0
        # The database refused the last write as a whole (read-only, disk full, I/O error) and
        # no commit has succeeded since: what /healthz reports; None when writes work.
        self.write_failure: str | None = None

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

    def busy(self, window: float) -> bool:
        """Deliveries are arriving: one is waiting for its commit, or one came in the last
        `window` seconds. The worker defers to this so answers to GitHub come first."""
        return bool(self._queue) or time.monotonic() - self.last_submit < window

    async def submit(self, row: InboxRow) -> str:
        if self._task is None or self._closing:
            raise RuntimeError("inbox is not running")
        self.last_submit = time.monotonic()
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._queue.append((row, future))
        self._wakeup.set()
        # shield: a client that disconnects must not cancel the commit other rows share.
        return await asyncio.shield(future)

    async def _run(self) -> None:
        while True:
            if not self._queue:
                if self._closing:
                    await self._drop_connection()
                    return
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            batch = self._queue[: self.max_batch]
            del self._queue[: self.max_batch]
            try:
                await self._commit(batch)
            except Exception as exc:  # noqa: BLE001 - never leave a request waiting forever
                log.error("inbox writer error: %s", error_text(exc))
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)

    async def _drop_connection(self) -> None:
        if self._sqlite is not None:
            await self._sqlite.close()
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                await conn.close()
            except Exception:  # noqa: BLE001 - it is being thrown away
                log.debug("closing the inbox connection failed", exc_info=True)

    async def _commit(self, batch: list[tuple[InboxRow, asyncio.Future[str]]]) -> None:
        rows = [r for r, _ in batch]
        try:
            # One connection held across batches: no pool checkout and reset per commit
            # (with aiosqlite every such step is a hop to its thread).
            if self._sqlite is not None:
                outcomes = await self._sqlite.store(rows)
            else:
                if self._conn is None:
                    self._conn = await self.engine.connect()
                async with self._conn.begin():
                    outcomes = await store_rows(self._conn, rows)
        except Exception as exc:  # noqa: BLE001 - isolate the bad row, fail only it
            self.errors += 1
            if refuses_writes(exc):
                self.write_failure = error_text(exc)
            if self._sqlite is None:
                await self._drop_connection()  # it may be broken (database restarted)
            if len(batch) > 1 and _waited_out(exc):
                # Every row would wait as long again (N x the bound before GitHub's 10 s ran
                # out): the whole batch is answered 503 now; GitHub's redelivery or
                # `rltracker replay` stores them once the database takes writes again.
                log.error("inbox batch of %d not stored, the database kept it waiting (%s); "
                          "answered 503", len(batch), error_text(exc))
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                return
            if len(batch) > 1:
                log.warning("inbox batch of %d failed (%s); storing rows one by one", len(batch),
                            error_text(exc))
                for item in batch:
                    await self._commit([item])
                return
            log.error("inbox could not store delivery %s: %s", rows[0].delivery_id,
                      error_text(exc))
            _, future = batch[0]
            if not future.done():
                future.set_exception(exc)
            return
        self.commits += 1
        self.write_failure = None
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
