"""What happens after a thread changed (webhook, sync or command): analyse it, store the
findings, and let bot.speaking decide whether to act. One entry point so every path behaves
the same. The analyses themselves run in bot.analysis, off the event loop."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.analysis import paper_pool, run_analysis
from bot.store.models import Analysis, Thread
from bot.store.threads import load_comments, thread_record


async def analyse_and_store(
    session: AsyncSession, thread: Thread, cache: dict[str, Any] | None = None,
    record: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run the analyzers on a stored thread and upsert its Analysis row; returns the analysis.

    `cache` is the process's ctx.extras: it keeps the paper pool's index between calls.
    `record`: the thread's record when the caller already loaded it."""
    from analyzers.analyze import ANALYZER_VERSION

    if record is None:
        record = thread_record(thread, await load_comments(session, thread))
    result = await run_analysis(record, await paper_pool(session, cache))
    row = await session.scalar(select(Analysis).where(Analysis.thread_id == thread.id))
    if row is None:
        row = Analysis(thread_id=thread.id)
        session.add(row)
    failure = result.get("failure") or {}
    proposal = result.get("proposal") or {}
    papers = result.get("papers") or []
    row.analyzer_version = ANALYZER_VERSION
    row.result = result
    row.is_failure_report = bool(failure.get("is_failure_report"))
    row.failure_category = failure.get("category")
    row.is_proposal = bool(proposal.get("is_proposal"))
    row.review_state = (result.get("review") or {}).get("state")
    row.methods = sorted({p["method"] for p in papers if p.get("method")})
    row.arxiv_ids = sorted({p["arxiv_id"] for p in papers if p.get("arxiv_id")})
    await session.flush()
    return result



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
            thread = await get_thread(session, repo, number)
            if thread is None:
                return None
            repo = thread.repo  # canonical spelling from here on
            record = thread_record(thread, await load_comments(session, thread))
            try:
                result = await analyse_and_store(session, thread, ctx.extras, record)
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


async def sync_changed(ctx: Any, repo: str, number: int) -> None:
    """What sync calls for every thread it changed (bot.github.sync's `on_changed`)."""
    await thread_changed(ctx, repo, number, trigger="sync")
