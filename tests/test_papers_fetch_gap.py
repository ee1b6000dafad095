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


def flaky_arxiv(fake_github: Any, entries: list[tuple[str, str, str]], failures: int) -> list[int]:
    """The fake arXiv API (as fake_arxiv, oldest first), answering 503 (arXiv under load) to
    the first `failures` requests of any page after the first. The starts asked are returned."""
    from aiohttp import web

    from tests.test_papers_import import _RANGE, atom_feed

    asked: list[int] = []
    left = [failures]

    @fake_github.route("GET", r"^/api/query$")
    def listing(fake: Any, request: Any, match: Any, body: Any) -> web.Response:
        start, size = int(request.query.get("start", 0)), int(request.query.get("max_results", 10))
        asked.append(start)
        if start and left[0] > 0:
            left[0] -= 1
            return web.Response(status=503, text="Service Unavailable", headers={"Retry-After": "5"})
        low, high = _RANGE.search(request.query.get("search_query", "")).groups()
        chosen = sorted(e for e in entries if low <= e[2][:10].replace("-", "") <= high)
        chosen.sort(key=lambda e: (e[2], e[0]))
        return web.Response(text=atom_feed(chosen[start:start + size]),
                            content_type="application/atom+xml")

    return asked


def _three_days(today: date) -> list[tuple[str, str, str]]:
    return [(f"2512.{d * 100 + k:05d}v1", f"Paper {d}-{k}",
             (today - timedelta(days=3 - d)).isoformat() + f"T12:{k // 60:02d}:{k % 60:02d}Z")
            for d in range(3) for k in range(90)]


async def _stored_listings(ctx: Any) -> int:
    async with ctx.sessionmaker() as session:
        return int(await session.scalar(select(func.count()).select_from(Paper)
                                        .where(Paper.arxiv_id.like("2512.%"))) or 0)


async def test_a_page_arxiv_answers_503_once_is_asked_again(ctx: Any, fake_github: Any) -> None:
    """arXiv's API answers 503 with Retry-After when loaded. One such answer on the second
    page failed the whole fetch (the night's `papers` step failed) and stored nothing of the
    page read before it. The page is asked again after the wait it asks for."""
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    entries = _three_days(utcnow().date())
    asked = flaky_arxiv(fake_github, entries, failures=1)
    stats = await fetch_new_papers(ctx, base_url=fake_github.url + "/api/query", sleep=sleep)
    assert stats.added == len(entries) == await _stored_listings(ctx)
    assert asked == [0, 100, 100, 200] and 5.0 in waits


async def test_a_fetch_stopped_by_arxiv_keeps_the_pages_it_read(ctx: Any, fake_github: Any) -> None:
    """arXiv keeps answering 503: the fetch stops with the error, and the listings of the
    pages read before it are stored (they were all dropped); the next run goes on."""
    import aiohttp
    import pytest

    entries = _three_days(utcnow().date())
    flaky_arxiv(fake_github, entries, failures=100)
    with pytest.raises(aiohttp.ClientResponseError):
        await fetch_new_papers(ctx, base_url=fake_github.url + "/api/query", sleep=no_sleep)
    assert await _stored_listings(ctx) == PAGE_SIZE
    fake_github._routes.clear()
    flaky_arxiv(fake_github, entries, failures=0)
    await fetch_new_papers(ctx, base_url=fake_github.url + "/api/query", sleep=no_sleep)
    assert await _stored_listings(ctx) == len(entries)
