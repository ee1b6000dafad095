"""Running the analyzers for the app: off the event loop, with the stored paper pool.

Owns the process's analysis thread and the PaperIndex cache of the Paper table. Imports the
store and analyzers only, so both the pipeline and what speaks (the install preview) use it.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.store.models import Paper

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
