"""`rltracker papers fetch` after a long gap (sched61): more new listings than one run reads
(MAX_PAGES pages) are all fetched over the next runs, none lost (the fake arXiv API:
tests.test_papers_import.fake_arxiv)."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from sqlalchemy import func, select

from bot.github.papers import MAX_PAGES, PAGE_SIZE, fetch_new_papers
from bot.store.models import Paper
from bot.store.types import utcnow
from tests.fakegithub import no_sleep
from tests.test_papers_import import fake_arxiv


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


async def test_a_day_of_more_listings_than_one_run_reads_is_fetched_on(
        ctx: Any, fake_github: Any) -> None:
    """One day with 1,500 listings (more than the 1,000 one run reads). Every run started from
    the day before the newest stored date (a day of overlap) and read the same first 1,000 of
    that day again: the other 500 were never fetched, whatever the number of runs. A run
    whose overlap alone would fill it goes on from the listings it stored (the last page of
    them read again)."""
    today = utcnow().date()
    async with ctx.sessionmaker() as session:
        session.add(Paper(arxiv_id="2401.00001", title="An older fetch", aliases=[],
                          first_public=(today - timedelta(days=3)).isoformat(), source="arxiv-api"))
        await session.commit()
    day = (today - timedelta(days=1)).isoformat()
    entries = [(f"2512.{k:05d}v1", f"Paper {k}", f"{day}T{k // 60 // 60 % 24:02d}:"
                f"{k // 60 % 60:02d}:{k % 60:02d}Z") for k in range(1500)]
    assert len(entries) > MAX_PAGES * PAGE_SIZE
    seen = fake_arxiv(fake_github, entries)
    url = fake_github.url + "/api/query"
    runs = [await fetch_new_papers(ctx, base_url=url, sleep=no_sleep) for _ in range(3)]
    async with ctx.sessionmaker() as session:
        stored = set(await session.scalars(select(Paper.arxiv_id).where(Paper.arxiv_id.like("2512.%"))))
    missing = {e[0][:10] for e in entries} - stored
    assert not missing, f"{len(missing)} listings never fetched ({[r.as_dict() for r in runs]})"
    assert runs[2].added == 0 and len(seen) <= 3 * MAX_PAGES
