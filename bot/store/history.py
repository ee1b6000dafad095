"""A proposal's review-state history (table `review_transitions`, migration 0026).

The pipeline stores a thread's latest analysis in three places (bot.pipeline: one thread
after a delivery, a sync or a command, `analyse_and_store`; the worker's batches, one upsert,
`threads_changed`; the nightly re-analysis's compare and set, `store_analysis_if`). Each
calls `record_transitions` in the same transaction, just before its write: one statement
that compares the stored row with the new state and inserts a row only where a proposal's
state changes. The comparison is made by the database at the write, not from what the
caller read earlier: the writers of a thread are serialised (its row locked on PostgreSQL,
SQLite's one write lock, taken by this statement), so a redelivered webhook, or two workers
storing the same state, find it stored and write nothing.

A thread's first row (no row for it yet, as when it is first stored as a proposal) is from
None: the state before it was a proposal is not a proposal's state. Rows go with their
thread (ON DELETE CASCADE)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import String, and_, bindparam, case, exists, func, insert, null, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.store.models import Analysis, ReviewTransition, Thread
from bot.store.types import UTCDateTime, format_datetime

# What stored a state (ReviewTransition.source): a webhook delivery, a sync (nightly or
# `rltracker sync`), a person's `/rltracker recheck`, the nightly re-analysis of threads
# analysed by an older analyzer version (a change it stores is the analyzer's, not anybody's
# action on GitHub), and migration 0026's one row per proposal stored before it.
SOURCES = ("webhook", "sync", "command", "reanalysis", "backfill")
SOURCE_LABELS = {"webhook": "GitHub event", "sync": "sync", "command": "/rltracker recheck",
                 "reanalysis": "re-analysis (new analyzer version)",
                 "backfill": "stored state when the history began"}


def source_of(trigger: str) -> str:
    """The source of bot.pipeline.thread_changed's `trigger` ("<event>.<action>" for a
    webhook, "sync", "command")."""
    return trigger if trigger in ("sync", "command") else "webhook"


@dataclass(frozen=True)
class NewState:
    """A review state about to be stored for a thread."""

    thread_id: int
    state: str | None
    is_proposal: bool
    analyzer_version: str


@cache
def _statement(compare: str) -> Any:
    """INSERT INTO review_transitions SELECT ... for one thread (run as an executemany).
    `compare`: "any" (a plain write), "version" (the write happens only if the stored row is
    of the analyzer version `expected`), "absent" (only if no row is stored): the same
    condition as the compare and set it comes before, so no row is written for a write that
    does not happen."""
    threads, analyses, rows = Thread.__table__, Analysis.__table__, ReviewTransition.__table__
    to_state = bindparam("to_state", type_=String(32))
    has_rows = exists().where(rows.c.thread_id == threads.c.id)
    conditions = [threads.c.id == bindparam("thread_id"),
                  or_(analyses.c.id.is_(None), ~has_rows,
                      analyses.c.review_state.is_distinct_from(to_state))]
    if compare == "version":
        conditions.append(analyses.c.analyzer_version == bindparam("expected"))
    elif compare == "absent":
        conditions.append(analyses.c.id.is_(None))
    found = (select(threads.c.id, case((has_rows, analyses.c.review_state), else_=null()),
                    to_state, bindparam("observed_at", type_=UTCDateTime()),
                    bindparam("analyzer_version", type_=String(32)),
                    bindparam("source", type_=String(16)))
             .select_from(threads.outerjoin(analyses, analyses.c.thread_id == threads.c.id))
             .where(and_(*conditions)))
    return insert(rows).from_select(["thread_id", "from_state", "to_state", "observed_at",
                                     "analyzer_version", "source"], found)


async def record_transitions(session: AsyncSession, states: list[NewState], *, source: str,
                             at: datetime, expected: str | None | bool = False) -> None:
    """Record the proposals among `states` whose stored review state is about to change (or
    that have no history yet), as of `at`. Called in the writer's transaction before it
    writes the states (it reads the stored ones). `expected`: False for a plain write; else
    the compare and set's expected analyzer version (None: no row stored yet)."""
    assert source in SOURCES
    params = [{"thread_id": s.thread_id, "to_state": s.state, "observed_at": at,
               "analyzer_version": s.analyzer_version, "source": source,
               **({"expected": expected} if isinstance(expected, str) else {})}
              for s in sorted(states, key=lambda s: s.thread_id) if s.is_proposal]
    if not params:
        return
    compare = "any" if expected is False else "absent" if expected is None else "version"
    await session.execute(_statement(compare), params)


async def thread_history(session: AsyncSession, thread_id: int, *, limit: int, offset: int = 0
                         ) -> tuple[list[dict[str, Any]], int]:
    """A thread's latest `limit` transitions after skipping the `offset` newest, listed oldest
    first (from, to, when in ISO 8601, analyzer version, source), and how many it has in all:
    a proposal reopened and closed without end is read a page at a time (left78)."""
    total = await session.scalar(select(func.count()).select_from(ReviewTransition)
                                 .where(ReviewTransition.thread_id == thread_id)) or 0
    rows = list(await session.scalars(
        select(ReviewTransition).where(ReviewTransition.thread_id == thread_id)
        .order_by(ReviewTransition.observed_at.desc(), ReviewTransition.id.desc())
        .limit(limit).offset(min(offset, total))))
    return [{"from_state": r.from_state, "to_state": r.to_state,
             "observed_at": format_datetime(r.observed_at),
             "analyzer_version": r.analyzer_version, "source": r.source}
            for r in reversed(rows)], int(total)


async def reread_since(session: AsyncSession, since: datetime | None, until: datetime
                       ) -> dict[str, str]:
    """The proposals whose latest state change after `since` (up to `until`) was stored by the nightly
    re-analysis (a new analyzer version read the thread otherwise; nobody acted on GitHub
    for it): `owner/repo#N` -> the analyzer version. Empty when `since` is None."""
    if since is None:
        return {}
    rows = await session.execute(
        select(Thread.repo, Thread.number, ReviewTransition.source,
               ReviewTransition.analyzer_version)
        .join(Thread, Thread.id == ReviewTransition.thread_id)
        .where(ReviewTransition.observed_at > since, ReviewTransition.observed_at <= until)
        .order_by(ReviewTransition.thread_id, ReviewTransition.observed_at, ReviewTransition.id))
    latest: dict[str, tuple[str, str | None]] = {}
    for repo, number, source, version in rows:
        latest[f"{repo}#{number}"] = (source, version)  # the last one of each thread wins
    return {key: version or "" for key, (source, version) in latest.items()
            if source == "reanalysis"}
