"""What happens after a thread changed (webhook, sync or command): analyse it, store the
findings, and let bot.speaking decide whether to act. One entry point so every path behaves
the same (`thread_changed`, and `threads_changed` for the worker's batches). The analyses
themselves run in bot.analysis, off the event loop."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from sqlalchemy import case, literal, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.analysis import paper_pool, run_analyses, run_analysis
from bot.store.db import dialect_insert
from bot.store.history import NewState, record_transitions, source_of
from bot.store.models import Analysis, Thread
from bot.store.threads import get_threads, load_comments, load_comments_of, thread_record
from bot.store.types import UTCDateTime, utcnow


def _analysis_values(result: dict[str, Any]) -> dict[str, Any]:
    """The Analysis row's columns for an analysis result."""
    from analyzers.version import ANALYZER_VERSION

    failure = result.get("failure") or {}
    proposal = result.get("proposal") or {}
    papers = result.get("papers") or []
    return {
        "analyzer_version": ANALYZER_VERSION,
        "result": result,
        "is_failure_report": bool(failure.get("is_failure_report")),
        "failure_category": failure.get("category"),
        "failure_confidence": _number(failure.get("confidence")),
        "failure_runner_up": _runner_up(failure.get("categories")),
        "is_proposal": bool(proposal.get("is_proposal")),
        "review_state": (result.get("review") or {}).get("state"),
        "methods": sorted({p["method"] for p in papers if p.get("method")}),
        "arxiv_ids": sorted({p["arxiv_id"] for p in papers if p.get("arxiv_id")}),
    }


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _runner_up(categories: Any) -> str | None:
    """The kind an analysis lists second (a split kind), as migration 0007 reads it."""
    if isinstance(categories, list) and len(categories) > 1 and isinstance(categories[1], str):
        return categories[1][:64]
    return None


def _state_changed(new_state: Any, now: Any) -> Any:
    """The SET value of `review_state_changed_at` when an analysis reading `new_state` is
    written over the stored one: `now` if the stored state is another, else as it was (the
    right-hand side of an UPDATE's SET reads the row before it, on both databases). Not at
    every re-analysis: the feed's `updated` would move for every proposal at each release."""
    table = Analysis.__table__
    return case((table.c.review_state.is_distinct_from(new_state), now),
                else_=table.c.review_state_changed_at)


def _new_state(thread_id: int, values: dict[str, Any]) -> NewState:
    """The review state an Analysis row's `values` (`_analysis_values`) store, for its history."""
    return NewState(thread_id, values["review_state"], values["is_proposal"],
                    values["analyzer_version"])


def _fill_analysis(row: Analysis, result: dict[str, Any]) -> None:
    for column, value in _analysis_values(result).items():
        setattr(row, column, value)


async def analyse_and_store(
    session: AsyncSession, thread: Thread, cache: dict[str, Any] | None = None,
    record: dict[str, Any] | None = None, *, source: str = "webhook",
) -> dict[str, Any]:
    """Run the analyzers on a stored thread and upsert its Analysis row; returns the analysis.

    `cache` is the process's ctx.extras: it keeps the paper pool's index between calls.
    `record`: the thread's record when the caller already loaded it. `source`: what the
    review-state history says stored it (bot.store.history.SOURCES)."""
    if record is None:
        record = thread_record(thread, await load_comments(session, thread))
    result = await run_analysis(record, await paper_pool(session, cache))
    await record_transitions(session, [_new_state(thread.id, _analysis_values(result))],
                             source=source, at=utcnow())
    row = await session.scalar(select(Analysis).where(Analysis.thread_id == thread.id))
    if row is None:
        row = Analysis(thread_id=thread.id)
        session.add(row)
    elif row.review_state != (result.get("review") or {}).get("state"):
        row.review_state_changed_at = utcnow()  # as _state_changed does in SQL
    _fill_analysis(row, result)
    await session.flush()
    return result



async def store_analysis_if(
    session: AsyncSession, thread_id: int, expected: str | None, result: dict[str, Any], *,
    source: str = "reanalysis",
) -> bool:
    """Store `result` as the thread's analysis only if the row still holds the version
    `expected` (None: there is still no row); False when another writer (a webhook, another
    replica on a newer release) stored one since it was read. One statement: a compare and
    set on both databases, so what was written meanwhile is never overwritten.

    The thread's row is locked first (PostgreSQL), as every other writer of its analysis
    locks it: the review-state history's comparison (`record_transitions`, under the same
    compare) and the write then see the same stored row. False when the thread is gone."""
    from sqlalchemy import update

    if await session.scalar(select(Thread.id).where(Thread.id == thread_id)
                            .with_for_update()) is None:
        return False
    values = _analysis_values(result)
    await record_transitions(session, [_new_state(thread_id, values)], source=source,
                             at=utcnow(), expected=expected)
    if expected is None:
        insert = dialect_insert(session.get_bind().dialect.name)(Analysis.__table__)
        statement: Any = insert.values(thread_id=thread_id, **values).on_conflict_do_nothing(
            index_elements=["thread_id"])
    else:
        statement = (update(Analysis.__table__)
                     .where(Analysis.thread_id == thread_id, Analysis.analyzer_version == expected)
                     .values(**values, review_state_changed_at=_state_changed(
                         values["review_state"], literal(utcnow(), UTCDateTime()))))
    return (await session.execute(statement)).rowcount == 1

async def thread_changed(
    ctx: Any, repo: str, number: int, *, trigger: str, payload: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """Called by webhook handlers (after committing the records) and by sync.

    Opens its own session: analyses the stored thread, stores the findings, and (in `actions`)
    decides whether to act. `trigger` is "<event>.<action>" for webhooks, "sync" for sync,
    "command" for /rltracker recheck.
    """
    from sqlalchemy.exc import IntegrityError

    from bot.store.threads import get_thread

    result: dict[str, Any] | None = None
    for attempt in range(2):
        async with ctx.sessionmaker() as session:
            # Locked to the commit: a delivery of the thread handled meanwhile (another worker)
            # waits, then analyses what it stored; an analysis read before it cannot be
            # stored after its analysis.
            thread = await get_thread(session, repo, number, lock=True)
            if thread is None:
                return None
            repo = thread.repo  # canonical spelling from here on
            record = thread_record(thread, await load_comments(session, thread))
            try:
                result = await analyse_and_store(session, thread, ctx.extras, record,
                                                 source=source_of(trigger))
                await session.commit()
                break
            except IntegrityError:
                # Two runs on the same new thread both inserted its Analysis row; the loser
                # retries once and finds the row to update.
                await session.rollback()
                if attempt:
                    raise
    # Decide whether to act (comment, reply, or record why not).
    from bot.speaking.decide import act

    # The thread as just analysed: what decides does not load it a second time.
    await act(ctx, repo, number, trigger=trigger, payload=payload, analysis=result,
              thread=(thread, record))
    return result


@dataclass(frozen=True)
class ThreadChange:
    """One delivery's change to a thread, for `threads_changed`."""

    repo: str
    number: int
    trigger: str
    payload: dict[str, Any] | None = None


@cache
def _analyses_upsert(dialect: str) -> Any:
    """INSERT INTO analyses ... ON CONFLICT (thread_id) DO UPDATE, built once per dialect
    (run as an executemany, one row per distinct thread)."""
    table = Analysis.__table__
    base = dialect_insert(dialect)(table)
    columns = [c.name for c in table.columns
               if c.name not in ("id", "thread_id", "review_state_changed_at")]
    set_: dict[str, Any] = {c: base.excluded[c] for c in columns}
    # the row's analyzed_at (now) when the state read is another than the stored one
    set_["review_state_changed_at"] = _state_changed(base.excluded.review_state,
                                                     base.excluded.analyzed_at)
    return base.on_conflict_do_update(index_elements=["thread_id"], set_=set_)


async def threads_changed(ctx: Any, changes: list[ThreadChange]) -> list[BaseException | None]:
    """Several changes at once (the worker's batches), as `thread_changed` for each but with
    the shared work done once: each distinct thread is analysed once, on its stored state
    after all the changes (as if they had arrived before it was looked at), and the findings
    of all of them are stored in one statement (an upsert); then each change is decided on (`act`) in
    order. Raises when that shared step fails (nothing of it is stored: the caller handles
    each change alone); returns per change None or the exception its decision raised, which
    does not stop the decisions of the others."""
    from bot.speaking.decide import act
    from bot.speaking.records import skips_written_together
    from bot.speaking.situation import Prefetched, prefetch

    keys = {(c.repo.lower(), c.number) for c in changes}
    prefetched = Prefetched()
    found: dict[tuple[str, int], tuple[Thread, dict[str, Any], dict[str, Any]]] = {}
    if keys:
        async with ctx.sessionmaker() as session:
            # Locked to the commit, as thread_changed locks its thread.
            threads = [t for t in (await get_threads(session, keys, lock=True)).values()
                       if t is not None]
            comments = await load_comments_of(session, [t.id for t in threads])
            records = [thread_record(t, comments[t.id]) for t in threads]
            pool = await paper_pool(session, ctx.extras) if threads else None
            results = await run_analyses(records, pool)
            rows: list[dict[str, Any]] = []
            sources: dict[str, list[NewState]] = {}
            triggers = {(c.repo.lower(), c.number): c.trigger for c in changes}
            for thread, record, result in zip(threads, records, results, strict=True):
                rows.append({"thread_id": thread.id, **_analysis_values(result)})
                key = (thread.repo.lower(), thread.number)
                found[key] = (thread, record, result)
                # (a thread found under another name than its changes': a webhook's)
                sources.setdefault(source_of(triggers.get(key, "")), []).append(
                    _new_state(thread.id, rows[-1]))
            # Read before the upsert: on SQLite its write lock is held from the first write to
            # the commit, and /webhook's group commit waits for it (docs/performance.md).
            prefetched = await prefetch(session, [(t.repo, t.number) for t in threads])
            if rows:  # one statement for all: a concurrent insert of one is updated, not an error
                at = utcnow()
                for source, states in sorted(sources.items()):
                    await record_transitions(session, states, source=source, at=at)
                rows.sort(key=lambda r: r["thread_id"])  # two workers lock rows in one order
                await session.execute(_analyses_upsert(ctx.engine.dialect.name), rows)
            await session.commit()
    outcomes: list[BaseException | None] = []
    async with skips_written_together(ctx):
        for change in changes:
            hit = found.get((change.repo.lower(), change.number))
            if hit is None:  # deleted (or never stored): nothing to decide
                outcomes.append(None)
                continue
            thread, record, result = hit
            try:
                await act(ctx, thread.repo, thread.number, trigger=change.trigger,
                          payload=change.payload, analysis=result, thread=(thread, record),
                          prefetched=prefetched)
            except Exception as exc:  # noqa: BLE001 - this change fails alone
                outcomes.append(exc)
            else:
                outcomes.append(None)
    return outcomes


async def sync_changed(ctx: Any, repo: str, number: int) -> None:
    """What sync calls for every thread it changed (bot.github.sync's `on_changed`)."""
    await thread_changed(ctx, repo, number, trigger="sync")
