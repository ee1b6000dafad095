"""The inbox worker: takes stored deliveries in arrival order and dispatches them.

Claiming. One UPDATE ... WHERE id = (SELECT ... ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING marks the oldest takeable row `processing`, stamps it with this worker's id
(`claimed_by`), counts the attempt and sets a lease end. On PostgreSQL the row lock plus SKIP
LOCKED means two replicas never take the same row; on SQLite (one process, writes serialised)
FOR UPDATE renders as nothing and the statement is atomic by itself.

Leases. While a row is `processing`, `next_attempt_at` holds the lease end; a heartbeat moves it
forward while the handler runs (and is waited for when the rows are done or the task is
cancelled: a beat cut off mid-statement holds the rows until its connection is closed). A row
whose lease ran out belongs to a dead process and is taken again. Every later write is fenced by `claimed_by = me AND status = 'processing'`, so a
worker that lost its lease cannot mark a row another worker owns. On SQLite there is only one
process, so the leases of rows left `processing` end at start, without waiting.

Abandoned rows. A row claimed and never finished (its process was killed, ran out of memory,
exited or hung) may be what kills the process. It is taken again alone (a batch claim takes
such a row by itself, before fresh rows), and the claim that would take it a
`max_attempts + 1`-th time sets it aside instead: failed, with ABANDONED_REASON, listed by
`rltracker deliveries`, replayable. Its attempts count claims, so attempts used by transient
retries before a crash count too.

Failures. Exceptions that retrying cannot fix (a payload missing a field: KeyError, TypeError,
ValueError, ...; a GitHub 4xx such as a locked issue's 403 or a deleted thread's 404) fail
the row at once with the reason. Transient ones (`transient`: GitHub's 5xx and rate limits,
401/408/409/429, the network, the database connection, the database's retryable
answers: a deadlock, a serialization failure, a lock timeout) are retried with exponential backoff
and jitter (`next_attempt_at`) up to `max_transient_attempts` (about four and a half hours:
GitHub outages outlast minutes), anything else (most likely a bug) up to `max_attempts`
(about seven minutes); then the row fails (listed and re-queued by `rltracker deliveries`).
A GitHub rate-limit answer the client gave up on puts the next attempt no earlier than GitHub
asked (`retry-after`, the limit's reset). Either way the worker goes on with the next row.

Batches (`batch_size`, PROCESS_BATCH in a worker process; 1 in the web process). The oldest
`batch_size` takeable rows are claimed in one statement (`... WHERE id IN (SELECT ... LIMIT n
FOR UPDATE SKIP LOCKED)`) and finished in one fenced statement, in the transaction that claims
the next batch; the heartbeat extends them all. Runs of consecutive rows the router's batch
handling takes (thread events on their first attempt, bot.webhooks.routers) are handled
together: one transaction for their records, one analysis per thread, their decisions in
order (bot.webhooks.events.handle_batch). Every row still gets its own outcome: a row whose
own part fails is retried or failed alone; when the shared part fails, each row of the run is
handled alone through the router, so a poison row cannot fail the others; a retried row is
always handled alone.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import re
import socket
import traceback
import uuid
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import aiohttp
import gidgethub
from gidgethub import sansio
from gidgethub.routing import Router
from sqlalchemy import and_, bindparam, case, false, literal, null, or_, select, update
from sqlalchemy.exc import DBAPIError, DisconnectionError, InterfaceError, OperationalError

from bot.github.client import RETRYABLE_CLIENT_ERRORS, rate_limit_wait, refused_for_good
from bot.logs import error_text, is_statement_error, log_delivery
from bot.metrics import SharedCounts
from bot.store.models import Delivery
from bot.store.privacy import empty_finished_deliveries
from bot.store.types import storable_text, utcnow

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 5  # an unexpected error: 5, 20, 80, 320 s apart, about seven minutes
# A transient one (`transient`): then 21 min and four hours apart, about four and a half hours
# in all, so a GitHub outage of an afternoon does not leave deliveries failed for a person to
# re-queue. Bounded all the same: a delivery is not retried forever.
MAX_TRANSIENT_ATTEMPTS = 10
# Why a row claimed `max_attempts` times without ever being finished is set aside (failed).
ABANDONED_REASON = (
    "abandoned: claimed {attempts} times and never finished; the process handling it died "
    "(killed, out of memory, a hard exit) or hung past its lease each time. Set aside so the "
    "inbox goes on; `rltracker deliveries retry ID` replays it"
)
# Rows a worker process (`serve --workers N`) claims and handles at once. A batch's rows share
# their claim, their records' transaction, one analysis per thread and their finish; a kill
# leaves at most this many rows claimed, each taken again (and handled again, idempotently)
# once its lease ends or, on SQLite, at the next start.
PROCESS_BATCH = 64
PERMANENT_ERRORS: tuple[type[BaseException], ...] = (
    KeyError,
    IndexError,
    TypeError,
    ValueError,
    AttributeError,
)


# PostgreSQL's answers that a later attempt of the same transaction may well not get
# (SQLSTATE): asyncpg's errors reach SQLAlchemy as a plain DBAPIError, not OperationalError,
# so they are told by their code. Two transactions that locked rows in opposite orders
# (deadlock_detected: PostgreSQL aborts one of them), a serializable transaction that lost
# (serialization_failure), a commit whose outcome the server does not know
# (statement_completion_unknown), a lock or statement timeout (lock_not_available,
# query_canceled), the server going down, starting up or out of connections, a write on a
# standby during a failover (read_only_sql_transaction).
RETRYABLE_SQLSTATES = frozenset({
    "40001", "40P01", "40003", "55P03", "57014", "57P01", "57P02", "57P03", "57P05",
    "25006",
})
# Whole classes: connection exceptions (08), insufficient resources (53: too many
# connections, out of memory, disk full).
RETRYABLE_SQLSTATE_CLASSES = ("08", "53")


def retryable_sqlstate(error: DBAPIError) -> bool:
    """Whether the database's own code for `error` says another attempt may succeed."""
    orig = error.orig
    code = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    if not isinstance(code, str):
        return False
    return code in RETRYABLE_SQLSTATES or code[:2] in RETRYABLE_SQLSTATE_CLASSES


def transient(error: BaseException) -> bool:
    """A failure the same attempt may well not meet later: GitHub's 5xx, a rate limit or
    another answer worth retrying (401, 408, 409, 429), the network (a refused or dropped
    connection, a timeout), the database's connection, and the database's retryable answers
    (RETRYABLE_SQLSTATES: a deadlock, a serialization failure, a lock timeout, ...). A unique
    violation (23505) is not among them: the writers that race on an insert retry it
    themselves (bot.webhooks.events._committed, bot.pipeline.thread_changed), so one that
    reaches the worker is more likely a bug, retried within `max_attempts`."""
    if isinstance(error, gidgethub.GitHubBroken) or rate_limit_wait(error) is not None:
        return True
    if isinstance(error, gidgethub.GraphQLAuthorizationFailure):  # GraphQL's 401, as REST's
        return True
    if _asked_wait(error) is not None:
        return True
    if isinstance(error, gidgethub.BadRequest):
        return int(error.status_code) in RETRYABLE_CLIENT_ERRORS
    if isinstance(error, DBAPIError):
        return (error.connection_invalidated
                or isinstance(error, OperationalError | InterfaceError)
                or retryable_sqlstate(error))
    return isinstance(error, OSError | aiohttp.ClientError | DisconnectionError)


def _asked_wait(error: BaseException) -> float | None:
    """Seconds a handler asked the delivery to wait before its next attempt (an exception's
    `retry_after`: bot.speaking.claims.ClaimHeld, a once-only slot an earlier attempt of the
    delivery left claimed, taken over when it turns stale)."""
    wait = getattr(error, "retry_after", None)
    return float(wait) if isinstance(wait, int | float) and not isinstance(wait, bool) else None


def _abandoned(t: Any, now: Any) -> Any:
    """A row claimed and never finished: its lease ran out (the process handling it died or
    hung), or, on SQLite, it was left `processing` by the process before this one."""
    return and_(t.c.status == "processing", t.c.next_attempt_at <= now)


def _takeable(t: Any, now: Any, kind: str = "any") -> Any:
    pending = and_(t.c.status == "pending",
                   or_(t.c.next_attempt_at.is_(None), t.c.next_attempt_at <= now))
    if kind == "abandoned":
        return _abandoned(t, now)
    if kind == "fresh":
        return pending
    return or_(pending, _abandoned(t, now))


_CLAIMS: dict[tuple[int, str], Any] = {}


def _claim_statement(limit: int, kind: str = "any") -> Any:
    """The claim of the `limit` oldest takeable rows, built once per size and kind (SQLAlchemy
    caches its SQL): UPDATE ... WHERE id IN (SELECT ... ORDER BY id LIMIT n FOR UPDATE SKIP
    LOCKED) RETURNING ... `kind`: "any" takeable row, only "abandoned" ones (claimed before
    and never finished), or only "fresh" ones (pending).

    Every claim counts an attempt. An abandoned row that has had its `bound` of attempts is
    not claimed again: the same statement sets it aside, failed with `abandoned_reason` (and
    RETURNING says so), since whatever it does to the process that handles it (out of memory,
    a hang, a hard exit) it would do again, forever, and on SQLite ahead of every later row."""
    claim = _CLAIMS.get((limit, kind))
    if claim is None:
        t = Delivery.__table__
        now = bindparam("now", type_=t.c.started_at.type)
        oldest = (
            select(t.c.id)
            .where(_takeable(t, now, kind))
            .order_by(t.c.id)
            .limit(limit)
            .with_for_update(skip_locked=True)  # PostgreSQL; SQLite renders nothing
        )
        target = t.c.id == oldest.scalar_subquery() if limit == 1 else t.c.id.in_(oldest)
        if kind == "fresh":
            exhausted: Any = false()
        else:  # SET expressions read the row as it was before the UPDATE
            exhausted = and_(_abandoned(t, now),
                             t.c.attempts >= bindparam("bound", type_=t.c.attempts.type))
        lease_end = bindparam("lease_end", type_=t.c.next_attempt_at.type)

        def unless_exhausted(set_aside: Any, claimed: Any) -> Any:
            return claimed if kind == "fresh" else case((exhausted, set_aside), else_=claimed)

        claim = (
            update(t)
            .where(target)
            .values(
                status=unless_exhausted(literal("failed"), literal("processing")),
                claimed_by=unless_exhausted(t.c.claimed_by,
                                            bindparam("me", type_=t.c.claimed_by.type)),
                attempts=unless_exhausted(t.c.attempts, t.c.attempts + 1),
                started_at=unless_exhausted(t.c.started_at, now),
                finished_at=unless_exhausted(now, t.c.finished_at),
                next_attempt_at=unless_exhausted(null(), lease_end),
                last_error=unless_exhausted(
                    bindparam("abandoned_reason", type_=t.c.last_error.type), t.c.last_error),
            )
            .returning(
                t.c.id, t.c.delivery_id, t.c.event, t.c.action, t.c.repo, t.c.payload,
                t.c.attempts, t.c.status,
            )
        )
        _CLAIMS[(limit, kind)] = claim
    return claim


def _build_statements() -> tuple[Any, Any]:
    """The lease extension and the fenced finish of a batch, built once."""
    t = Delivery.__table__
    ids = bindparam("row_ids", expanding=True)
    mine = and_(t.c.id.in_(ids), t.c.claimed_by == bindparam("me"), t.c.status == "processing")
    extend = update(t).where(mine).values(
        next_attempt_at=bindparam("lease_end", type_=t.c.next_attempt_at.type)
    )
    finish = (
        update(t)
        .where(mine)
        .values(status="done", finished_at=bindparam("now", type_=t.c.finished_at.type),
                next_attempt_at=None, last_error=None)
        .returning(t.c.id)
    )
    return extend, finish


_EXTEND, _FINISH = _build_statements()


def _storable(value: Any) -> Any:
    """GitHub text may carry U+0000, which PostgreSQL text columns refuse, and a payload may
    escape a lone surrogate ("\\ud800", valid JSON that no database can encode): every handler
    would fail on them (the thread or comment lost), so they become U+FFFD (the replacement
    character) before dispatch."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        return {_storable(k): _storable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_storable(v) for v in value]
    return value


# In the raw payload: an escaped U+0000 or surrogate (a pair, which is fine, or a lone one).
_ESCAPED_UNSTORABLE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")


async def give_back(engine: Any, worker_id: str) -> int:
    """End the lease of every row `worker_id` still holds, now: they stay `processing` (an
    abandoned claim: its attempt counts, and one that keeps being cut is set aside after its
    attempts) but claimed by no one and takeable at once, by another replica or the next
    start, instead of after the lease. For a worker cut short: its handler cancelled (a
    second SIGTERM), or its process killed. Fenced by the worker id: a row it finished, or
    lost to another worker, is not touched. Returns how many rows it gave back."""
    t = Delivery.__table__
    async with engine.begin() as conn:
        result = await conn.execute(
            update(t).where(t.c.claimed_by == worker_id, t.c.status == "processing")
            .values(next_attempt_at=utcnow(), claimed_by=None))
    count = int(result.rowcount or 0)
    if count:
        log.warning("stopped before finishing the deliveries in hand (%d): given back for "
                    "another attempt",
                    count, extra={"worker": worker_id})
    return count


def default_backoff(attempt: int) -> float:
    """Seconds before attempt `attempt + 1`: 5, 20, 80, 320, 1280, then an hour (+-25%
    jitter): the first five attempts span about seven minutes (a short GitHub outage), the
    ten a transient failure gets about four and a half hours."""
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
    status: str = "processing"  # "failed": set aside at claim time (see `_claim_statement`)


class Worker:
    def __init__(
        self,
        ctx: Any,
        router: Router | None = None,
        *,
        worker_id: str | None = None,
        max_attempts: int = MAX_ATTEMPTS,
        max_transient_attempts: int = MAX_TRANSIENT_ATTEMPTS,
        lease_seconds: float | None = None,
        poll_seconds: float = 2.0,
        backoff: Callable[[int], float] = default_backoff,
        intake: Any = None,
        intake_window: float = 0.02,
        max_defer: float = 1.0,
        batch_size: int = 1,
        batch: Any = None,
        counts: MutableMapping[str, int] | None = None,
    ) -> None:
        # How rows are handled together (bot.webhooks.routers.BatchHandling): the app's own
        # with the app's own router; with another router, none unless given.
        self.batch = batch
        if router is None:
            from bot.webhooks.routers import batch_handling
            from bot.webhooks.routers import router as default_router

            router = default_router
            self.batch = batch or batch_handling
        self.ctx = ctx
        self.router = router
        self.worker_id = worker_id or make_worker_id()
        self.max_attempts = max_attempts
        self.max_transient_attempts = max(max_attempts, max_transient_attempts)
        self.lease = float(lease_seconds if lease_seconds is not None else ctx.settings.worker_lease)
        self.poll_seconds = poll_seconds
        self.backoff = backoff
        # The inbox (bot.webhooks.inbox.Inbox) of this process, when the worker shares it with /webhook.
        self.intake = intake
        self.intake_window = intake_window
        self.max_defer = max_defer
        # Rows claimed, handled and finished together (see `process_one`). 1 in the web
        # process: a batch would hold its event loop for the length of all its rows.
        self.batch_size = max(1, int(batch_size))
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._aborted = False  # `abort`: cut short, the rows in hand given back
        self._next: list[Claimed] = []  # claimed together with the previous batch's finish
        # outcome -> deliveries; in a worker process, memory shared with serve (bot.metrics.SharedCounts)
        self.counts: MutableMapping[str, int] = (
            counts if counts is not None else {"done": 0, "failed": 0, "retry": 0, "lost": 0})

    @property
    def table(self) -> Any:
        return Delivery.__table__

    def wake(self) -> None:
        self._wake.set()

    # -- lifecycle -----------------------------------------------------------------------
    async def recover(self) -> int:
        """On SQLite (one process) rows left `processing` by a crash are taken again now:
        their lease ends now (they stay `processing`, so the claim knows they were abandoned,
        counts the attempt and sets aside one that has had its attempts). On PostgreSQL other
        live replicas may own them: their leases decide."""
        if self.ctx.engine.dialect.name != "sqlite":
            return 0
        t = self.table
        async with self.ctx.engine.begin() as conn:
            result = await conn.execute(
                update(t)
                .where(t.c.status == "processing")
                .values(next_attempt_at=utcnow(), claimed_by=None)
            )
        if result.rowcount:
            log.warning("took back %d deliveries left in processing", result.rowcount)
        return int(result.rowcount or 0)

    @property
    def task(self) -> asyncio.Task[None] | None:
        """The running worker's task (None before `start` and after `stop`): it ends by itself
        only on an error, which whoever runs the worker must notice (`serve` exits then)."""
        return self._task

    def start(self) -> None:
        if self._task is None:
            self._stopping = False
            self._task = asyncio.get_running_loop().create_task(self._run(), name="inbox-worker")

    async def stop(self) -> None:
        """Finish the rows in hand, then stop."""
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            await self._task
            self._task = None

    def abort(self) -> None:
        """Stop now, without waiting for the rows in hand (serve's second SIGTERM): the task
        is cancelled, the rows claimed for the next step are released, and every row this
        worker still holds is given back (`give_back`). `stop` returns once that is written."""
        self._stopping = self._aborted = True
        self._wake.set()
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def _run(self) -> None:
        try:
            await self._work()
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if not self._aborted or task is None:
                raise
            task.uncancel()  # cancelled by `abort`: what it held is given back, then it ends
            try:
                await self.release_next()
                given = await give_back(self.ctx.engine, self.worker_id)
                if given:  # /metrics counts them (rltracker_worker_outcomes_total, sched61)
                    self.counts["given_back"] = self.counts.get("given_back", 0) + given
            except Exception:  # noqa: BLE001 - their leases run out instead
                log.warning("could not give back the deliveries in hand", exc_info=True)

    async def _work(self) -> None:
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
        """Give back rows claimed for the next step but not started (on stop)."""
        claimed, self._next = self._next, []
        if not claimed:
            return
        t = self.table
        async with self.ctx.engine.begin() as conn:
            await conn.execute(
                update(t)
                .where(t.c.id.in_([c.id for c in claimed]), t.c.claimed_by == self.worker_id,
                       t.c.status == "processing")
                .values(status="pending", attempts=t.c.attempts - 1, next_attempt_at=None,
                        claimed_by=None)
            )

    async def run_until_idle(self, limit: int = 100_000) -> int:
        """Process takeable rows until none is left (tests, one-shot use)."""
        count = 0
        while count < limit:
            handled = await self._process(min(self.batch_size, limit - count),
                                          limit=limit - count)
            if not handled:
                break
            count += handled
        return count

    # -- a batch of rows -----------------------------------------------------------------
    async def claim(self) -> Claimed | None:
        async with self.ctx.engine.begin() as conn:
            rows = await self._claim_in(conn, 1)
        return rows[0] if rows else None

    async def _claim_in(self, conn: Any, limit: int) -> list[Claimed]:
        """Claim up to `limit` rows. A row claimed before and never finished (its worker died
        or hung) is claimed alone, before any fresh row: if it is what kills the process, it
        does not cost a batch of other rows an attempt each time. One that has had its
        `max_attempts` is set aside as failed instead (see `_claim_statement`)."""
        if limit == 1:
            return await self._claim_kind(conn, 1, "any")
        alone = await self._claim_kind(conn, 1, "abandoned")
        return alone or await self._claim_kind(conn, limit, "fresh")

    async def _claim_kind(self, conn: Any, limit: int, kind: str) -> list[Claimed]:
        while True:
            now = utcnow()
            rows = (
                await conn.execute(
                    _claim_statement(limit, kind),
                    {"now": now, "me": self.worker_id,
                     "lease_end": now + timedelta(seconds=self.lease),
                     "bound": self.max_attempts,
                     "abandoned_reason": ABANDONED_REASON.format(attempts=self.max_attempts)},
                )
            ).all()
            claimed = sorted((Claimed(*row) for row in rows), key=lambda c: c.id)  # arrival order
            set_aside = [c for c in claimed if c.status == "failed"]
            # a private repository's keeps no payload, as a finished one (privacy61)
            await empty_finished_deliveries(conn, [(c.id, c.repo, c.payload) for c in set_aside])
            for c in set_aside:
                self.counts["failed"] += 1
                self._log(c, "failed", logging.ERROR,
                          error=ABANDONED_REASON.format(attempts=c.attempts))
            taken = [c for c in claimed if c.status != "failed"]
            if taken or not set_aside:
                return taken

    async def process_one(self, *, claim_next: bool = True) -> bool:
        """Handle the oldest takeable rows (up to `batch_size`); False when there was none."""
        return bool(await self._process(self.batch_size, limit=None if claim_next else 0))

    async def _process(self, size: int, *, limit: int | None) -> int:
        """Claim (or take the rows claimed with the last finish), handle, finish; returns the
        number of rows handled. `limit`: rows this call may still take, this batch included
        (None: no limit).

        The write that finishes a batch and the claim of the next one share one transaction
        (half the commits); the finish is still committed before the next handlers start.
        Each row gets its own outcome: a row that fails is recorded alone (retried later on
        its own, see `_handle`) and never undoes its batch-mates' work.
        """
        batch, self._next = self._next, []
        if not batch:
            async with self.ctx.engine.begin() as conn:
                batch = await self._claim_in(conn, size)
        if not batch:
            return 0
        heartbeat = asyncio.get_running_loop().create_task(self._heartbeat([c.id for c in batch]))
        try:
            errors = await self._handle(batch)
        finally:
            # Waited for: a beat cut off mid-statement ends with its connection closed (the
            # pool does not keep a connection a cancellation cut off), and until then its
            # transaction holds the rows; no beat of this batch outlives it, also when the
            # task itself is cancelled (a claim right after would skip the rows).
            heartbeat.cancel()
            await asyncio.gather(heartbeat, return_exceptions=True)
        more = self.batch_size if limit is None else min(self.batch_size, limit - len(batch))
        if self._stopping:
            more = 0
        await self._record(batch, errors, more)
        return len(batch)

    def _event(self, claimed: Claimed) -> sansio.Event:
        data = json.loads(claimed.payload)
        if "\\u" in claimed.payload and _ESCAPED_UNSTORABLE.search(claimed.payload):
            data = _storable(data)  # the cheap test first: almost never true
        if not isinstance(data, dict):
            raise ValueError("payload is not a JSON object")
        # Which delivery decides (bot.speaking.claims: a once-only claim an earlier attempt of
        # this delivery left is its own to finish)
        data["_delivery_id"] = claimed.delivery_id
        return sansio.Event(data, event=claimed.event, delivery_id=claimed.delivery_id)

    async def _dispatch(self, claimed: Claimed, event: sansio.Event | None = None
                        ) -> BaseException | None:
        """One row through the whole router; the exception it raised, if any."""
        try:
            await self.router.dispatch(event or self._event(claimed), self.ctx)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - every handler failure is recorded on the row
            return exc
        return None

    def _batchable(self, claimed: Claimed, event: sansio.Event | BaseException) -> bool:
        # A retried row is handled alone: whatever made it fail cannot fail others again.
        return (self.batch is not None and claimed.attempts == 1
                and isinstance(event, sansio.Event) and self.batch.takes(event))

    async def _handle(self, batch: list[Claimed]) -> list[BaseException | None]:
        """Each row's outcome (None: done). Runs of consecutive rows the batch handler takes
        (thread events on their first attempt) are handled together; other rows one by one
        through the router, in arrival order."""
        events: list[sansio.Event | BaseException] = []
        for claimed in batch:
            try:
                events.append(self._event(claimed))
            except Exception as exc:  # noqa: BLE001 - an unreadable payload fails its row only
                events.append(exc)
        errors: list[BaseException | None] = [None] * len(batch)
        k = 0
        while k < len(batch):
            run = k
            while run < len(batch) and self._batchable(batch[run], events[run]):
                run += 1
            if run - k >= 2:
                await self._handle_together(batch, events, errors, range(k, run))
                k = run
                continue
            event = events[k]
            errors[k] = event if isinstance(event, BaseException) else await self._dispatch(
                batch[k], event)
            k += 1
        return errors

    async def _handle_together(self, batch: list[Claimed], events: list[Any],
                               errors: list[BaseException | None], run: range) -> None:
        assert self.batch is not None
        group = [events[k] for k in run]
        try:
            outcomes = await self.batch.handle(group, self.ctx)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the shared part failed: each row alone
            log.warning("a batch of %d deliveries failed (%s); handling them one by one",
                        len(group), error_text(exc) if is_statement_error(exc)
                        else f"{type(exc).__name__}: {exc}")
            for k in run:
                errors[k] = await self._dispatch(batch[k], events[k])
            return
        for k, outcome in zip(run, outcomes, strict=True):
            if outcome is not None:
                errors[k] = outcome
                continue
            try:  # the handlers of other routers for the same event (commands), per row
                await self.batch.rest.dispatch(events[k], self.ctx)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001
                errors[k] = exc

    async def _heartbeat(self, row_ids: list[int]) -> None:
        while True:
            await asyncio.sleep(self.lease / 3)
            try:
                async with self.ctx.engine.begin() as conn:
                    await conn.execute(
                        _EXTEND,
                        {"row_ids": row_ids, "me": self.worker_id,
                         "lease_end": utcnow() + timedelta(seconds=self.lease)},
                    )
            except Exception:  # noqa: BLE001 - a missed beat only risks the lease
                log.warning("lease heartbeat failed for rows %s", row_ids[:10])

    def _failure(self, claimed: Claimed, error: BaseException) -> tuple[str, str, dict[str, Any]]:
        """(outcome, reason, the row's values) of a failed attempt."""
        reason = f"{type(error).__name__}: {error}"
        if isinstance(error, KeyError):
            reason = f"payload is missing field {error}"
        permanent = isinstance(error, PERMANENT_ERRORS) or refused_for_good(error)
        detail = "".join(traceback.format_exception(error))[-4000:]
        bound = self.max_transient_attempts if transient(error) else self.max_attempts
        if permanent or claimed.attempts >= bound:
            return "failed", reason, {"status": "failed", "finished_at": utcnow(),
                                      "next_attempt_at": None, "last_error": f"{reason}\n{detail}"}
        delay = max(0.0, self.backoff(claimed.attempts))
        wait = rate_limit_wait(error)
        if wait is None:
            wait = _asked_wait(error)
        if wait is not None:  # not before GitHub's rate limit (or the handler) lets it through
            delay = max(delay, wait)
        return "retry", reason, {"status": "pending",
                                 "next_attempt_at": utcnow() + timedelta(seconds=delay),
                                 "last_error": f"{reason}\n{detail}"}

    async def _record(self, batch: list[Claimed], errors: list[BaseException | None],
                      claim_next: int) -> None:
        """Write every row's outcome, fenced (only rows we still own), in one transaction
        that also claims the next batch (kept in self._next)."""
        t = self.table
        done = [c.id for c, e in zip(batch, errors, strict=True) if e is None]
        failures = {c.id: self._failure(c, e) for c, e in zip(batch, errors, strict=True)
                    if e is not None}
        written: set[int] = set()
        next_rows: list[Claimed] = []
        async with self.ctx.engine.begin() as conn:
            if done:
                result = await conn.execute(
                    _FINISH, {"row_ids": done, "me": self.worker_id, "now": utcnow()})
                written.update(result.scalars().all())
            for row_id, (_, _, values) in failures.items():
                result = await conn.execute(
                    update(t)
                    .where(t.c.id == row_id, t.c.claimed_by == self.worker_id,
                           t.c.status == "processing")
                    .values(**values)
                )
                if result.rowcount:
                    written.add(row_id)
            # A private repository's delivery keeps no payload once finished (review59).
            final = [(c.id, c.repo, c.payload) for c in batch if c.id in written and (
                c.id not in failures or failures[c.id][0] == "failed")]
            if final:
                await empty_finished_deliveries(conn, final)
            if claim_next > 0:
                next_rows = await self._claim_in(conn, claim_next)
        # Kept only once committed: a commit that failed (the connection lost as it was sent)
        # may have claimed nothing, and rows read from an uncommitted claim are not ours;
        # another worker may take them. (The batch's own rows stay claimed by this worker:
        # their lease ends and they are taken again, handled again, idempotently.)
        self._next = next_rows
        for claimed, error in zip(batch, errors, strict=True):
            if claimed.id not in written:
                self.counts["lost"] += 1
                self._log(claimed, "lease_lost", logging.WARNING)
            elif claimed.id in failures:
                outcome, reason, _ = failures[claimed.id]
                self.counts[outcome] += 1
                # the stored last_error keeps the whole text; the log line no statement
                # parameters (thread text) of a database error
                why = error_text(error) if is_statement_error(error) else reason
                self._log(claimed, outcome, logging.WARNING, error=why[:500])
            else:
                self.counts["done"] += 1
                self._log(claimed, "done")

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


# -- a worker process beside the web process ------------------------------------------------
async def run_worker(ctx: Any, stop: asyncio.Event, *, poll_seconds: float = 0.25,
                     counts: MutableMapping[str, int] | None = None,
                     worker_id: str | None = None) -> Worker:
    """Drain the inbox of `ctx` until `stop` is set, then finish the row in hand. Used by a
    process that only works (`rltracker serve --workers N`): the web process that stores
    the deliveries cannot wake it, so it looks for new rows every `poll_seconds` when idle.
    `worker_id`: the one serve gave it, so that serve can give back what it held if it has
    to be killed (`give_back`)."""
    worker = Worker(ctx, poll_seconds=poll_seconds, batch_size=PROCESS_BATCH, counts=counts,
                    worker_id=worker_id)
    worker.start()
    task = worker.task
    assert task is not None
    stopped = asyncio.ensure_future(stop.wait())
    # The worker's task ends by itself only on an error (its start found SQLite's write lock
    # held past the busy timeout, ...): the process then ends on it, non-zero, so that serve's
    # watch of its worker processes sees it instead of a process alive working nothing.
    await asyncio.wait((stopped, task), return_when=asyncio.FIRST_COMPLETED)
    stopped.cancel()
    await worker.stop()  # raises the error the task ended on
    return worker


def worker_process_main(settings: Any, make_github: Callable[[Any], Any] | None = None,
                        log_level: str = "INFO", counts_array: Any = None,
                        worker_id: str | None = None) -> None:
    """Entry point of a worker process (spawned, so it shares no state with its parent). It
    loads the analyzers and the saved paper index once, then works until SIGTERM or SIGINT;
    leases, fencing and recovery are the Worker's, as in the web process. It stops too when
    the process that started it ends."""
    import multiprocessing
    import signal

    from bot.context import AppContext
    from bot.logs import configure_logging, register_settings_secrets

    configure_logging(log_level)
    register_settings_secrets(settings)  # this process's own scrubbing: nothing is inherited

    async def main() -> None:
        ctx = AppContext.create(settings)
        if make_github is not None:
            ctx.github = make_github(settings)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        # SIGHUP too (a terminal that closes sends it to serve and its worker processes
        # alike), unless it was ignored when serve started (nohup)
        stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        for sig in stops:
            if sig != signal.SIGHUP or signal.getsignal(sig) != signal.SIG_IGN:
                loop.add_signal_handler(sig, stop.set)
        # serve spawns it with these blocked (bot.server._start_worker_processes): one sent
        # while it was starting is pending, and delivered to the handler now; the process
        # then stops before working (it holds nothing yet)
        asked_while_starting = bool(signal.sigpending() & set(stops))
        signal.pthread_sigmask(signal.SIG_UNBLOCK, stops)
        if asked_while_starting:
            await ctx.close()
            return
        # `serve` gone without stopping us (SIGKILL, out of memory): stop as on SIGTERM, not
        # work on as an orphan beside the next serve's worker (its pipe closes with it).
        parent = multiprocessing.parent_process()
        if parent is not None and parent.sentinel is not None:
            loop.add_reader(parent.sentinel, stop.set)
        try:
            await run_worker(ctx, stop, counts=None if counts_array is None
                             else SharedCounts(counts_array), worker_id=worker_id)
        finally:
            await ctx.close()

    asyncio.run(main())
