"""`rltracker papers fetch` after a long gap (sched61): more new listings than one run reads
(MAX_PAGES pages) are all fetched over the next runs, none lost.

The fake arXiv API here answers as arXiv's does: the query's `submittedDate:[FROM TO TO]`
range, `sortOrder` ascending or descending by submission date, `start` and `max_results`."""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Any

from aiohttp import web
from sqlalchemy import func, select

from bot.github.papers import MAX_PAGES, PAGE_SIZE, fetch_new_papers
from bot.store.models import Paper
from bot.store.types import utcnow
from tests.fakegithub import no_sleep
from tests.test_papers_import import atom_feed

_RANGE = re.compile(r"submittedDate:\[(\d{8})\d* TO (\d{8})\d*\]")


def fake_arxiv(fake_github: Any, entries: list[tuple[str, str, str]]) -> list[dict[str, str]]:
    """Serve `entries` (id, title, published) at /api/query as arXiv's API does; the
    queries asked are returned."""
    seen: list[dict[str, str]] = []

    @fake_github.route("GET", r"^/api/query$")
    def listing(fake: Any, request: Any, match: Any, body: Any) -> web.Response:
        query = dict(request.query)
        seen.append(query)
        chosen = list(entries)
        bounds = _RANGE.search(query.get("search_query", ""))
        if bounds:
            low, high = bounds.groups()
            chosen = [e for e in chosen if low <= e[2][:10].replace("-", "") <= high]
        chosen.sort(key=lambda e: (e[2], e[0]), reverse=query.get("sortOrder") != "ascending")
        start, size = int(query.get("start", 0)), int(query.get("max_results", 10))
        return web.Response(text=atom_feed(chosen[start:start + size]),
                            content_type="application/atom+xml")

    return seen


async def test_a_gap_longer_than_one_run_is_fetched_over_two_runs(ctx: Any, fake_github: Any) -> None:
    """The last fetch was 20 days ago; since then 15 days of 100 listings each (1,500, more
    than the 1,000 one run reads). Newest first, the first run read the newest 1,000 and the
    next started from the newest stored date: the oldest 500 were never fetched."""
    today = utcnow().date()
    async with ctx.sessionmaker() as session:
        session.add(Paper(arxiv_id="2401.00001", title="An older fetch", aliases=[],
                          first_public=(today - timedelta(days=20)).isoformat(), source="arxiv-api"))
        await session.commit()
    days = 15
    assert days * 100 > MAX_PAGES * PAGE_SIZE
    entries = [(f"2512.{d * 100 + k:05d}v1", f"Paper {d}-{k}",
                date.fromordinal(today.toordinal() - days + 1 + d).isoformat() + "T12:00:00Z")
               for d in range(days) for k in range(100)]
    fake_arxiv(fake_github, entries)
    url = fake_github.url + "/api/query"
    first = await fetch_new_papers(ctx, base_url=url, sleep=no_sleep)
    assert first.added <= MAX_PAGES * PAGE_SIZE
    second = await fetch_new_papers(ctx, base_url=url, sleep=no_sleep)
    async with ctx.sessionmaker() as session:
        stored = set(await session.scalars(select(Paper.arxiv_id).where(Paper.arxiv_id.like("2512.%"))))
        total = await session.scalar(select(func.count()).select_from(Paper))
    missing = {e[0][:10] for e in entries} - stored
    assert not missing, f"{len(missing)} listings never fetched (first run {first}, second {second})"
    assert total == len(entries) + 1
    third = await fetch_new_papers(ctx, base_url=url, sleep=no_sleep)  # nothing new: no loss, no growth
    assert third.added == 0
