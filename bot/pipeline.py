"""What happens after a thread changed (webhook or sync): analyse it, store the findings, and
let `actions` decide whether to act. One entry point so both paths behave the same."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.store.models import Analysis, Paper, Thread
from bot.store.threads import load_comments, thread_record

POOL_CACHE_KEY = "paper_pool"

# The analyzers are CPU-bound and synchronous. Run on the event loop they would stall
# /webhook answers and the worker's lease heartbeat for the length of each analysis; one
# dedicated thread keeps the loop responsive, and being a single thread it never runs two
# analyses at once (the spaCy pipeline and the caches are shared, process-wide objects).
_ANALYSIS_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rltracker-analysis")


def _load_analyzers() -> None:
    """Import the analyzers and load what they load lazily (catalog, spaCy pipeline, pattern
    tables, the catalog's paper index) by analysing one tiny thread."""
    from analyzers.analyze import analyze_thread

    analyze_thread({"id": "warm/up#0", "repo": "warm/up", "number": 0, "kind": "issue",
                    "title": "warm-up", "body": "warm-up", "state": "open", "comments": []})


async def warm_up() -> None:
    """Pay the analyzers' start-up cost (1-2 s) on the analysis thread, once, so the first
    delivery does not pay it on the event loop (imports there would stall /webhook)."""
    await asyncio.get_running_loop().run_in_executor(_ANALYSIS_THREAD, _load_analyzers)


async def run_analysis(record: dict[str, Any], pool: Any = None) -> dict[str, Any]:
    """analyze_thread off the event loop, on the process's one analysis thread."""
    from analyzers.analyze import analyze_thread

    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_ANALYSIS_THREAD, analyze_thread, record, pool)


async def paper_pool(session: AsyncSession, cache: dict[str, Any] | None) -> Any:
    """The PaperIndex of the catalog plus the Paper table, built once per process and rebuilt
    only when the table changed (its row count or newest addition differ from the cached ones).
    None when the table is empty: the analyzers then use their cached catalog-only index."""
    from analyzers.papers import PaperIndex

    count, newest = (await session.execute(select(func.count(Paper.id), func.max(Paper.id)))).one()
    if not count:
        return None
    key = (count, newest)
    cached = (cache or {}).get(POOL_CACHE_KEY)
    if cached is not None and cached[0] == key:
        return cached[1]
    papers = [
        {"arxiv_id": p.arxiv_id, "title": p.title, "aliases": list(p.aliases or []),
         "method": p.method, "first_public": p.first_public}
        for p in await session.scalars(select(Paper))
    ]
    # Seconds of CPU for a large pool: built on the analysis thread, not the event loop.
    index = await asyncio.get_running_loop().run_in_executor(
        _ANALYSIS_THREAD, PaperIndex.build, papers
    )
    if cache is not None:
        cache[POOL_CACHE_KEY] = (key, index)
    return index


async def analyse_and_store(
    session: AsyncSession, thread: Thread, cache: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Run the analyzers on a stored thread and upsert its Analysis row; returns the analysis.

    `cache` is the process's ctx.extras: it keeps the paper pool's index between calls."""
    from analyzers.analyze import ANALYZER_VERSION

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
            try:
                result = await analyse_and_store(session, thread, ctx.extras)
                await session.commit()
                break
            except IntegrityError:
                # Two runs on the same new thread both inserted its Analysis row; the loser
                # retries once and finds the row to update.
                await session.rollback()
                if attempt:
                    raise
    # Decide whether to act (comment, reply, or record why not); see bot/actions.py.
    from bot.actions import act

    await act(ctx, repo, number, trigger=trigger, payload=payload, analysis=result)
    return result
