"""Long lists on the tracker site, SQLite and PostgreSQL: a full backfill tracks thousands of
proposals, so /proposals pages through all of them, and every count (the proposals page, a
framework's proposals by state, a method's threads, a failure's reports) counts every tracked
thread, not the ones a page happens to list."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from bot.app import create_app
from bot.context import AppContext
from bot.store.models import Analysis, Thread

START = datetime(2025, 6, 1, tzinfo=UTC)
VERL_OPEN = 1203  # more than one page of /proposals, and more than a framework page lists
VERL_MERGED = 2
TRL_REPORTS = 45


def _analysis(*, proposal: bool, state: str, failure: str | None) -> dict[str, Any]:
    return {
        "failure": {"is_failure_report": failure is not None, "category": failure,
                    "categories": [failure] if failure else [], "confidence": 0.9},
        "papers": [],
        "proposal": {"is_proposal": proposal, "confidence": 0.9},
        "review": {"state": state, "replied_from_other": False, "concerns": []},
    }


async def _seed(ctx: AppContext) -> None:
    rows: list[tuple[str, int, str, bool, str | None]] = (
        [("verl-project/verl", n, "open_no_reply", True, None) for n in range(1, VERL_OPEN + 1)]
        + [("verl-project/verl", 5000 + n, "merged", True, None) for n in range(VERL_MERGED)]
        + [("huggingface/trl", n, "open_no_reply", False, "entropy_collapse")
           for n in range(1, TRL_REPORTS + 1)]
    )
    async with ctx.sessionmaker() as s, s.begin():
        threads = [Thread(repo=repo, number=n, kind="issue", title=f"{repo} thread {n}",
                          state="open", created_at=START + timedelta(minutes=i))
                   for i, (repo, n, *_) in enumerate(rows)]
        s.add_all(threads)
        await s.flush()
        s.add_all([
            Analysis(thread_id=t.id, analyzer_version="test",
                     result=_analysis(proposal=proposal, state=state, failure=failure),
                     is_failure_report=failure is not None, failure_category=failure,
                     is_proposal=proposal, review_state=state,
                     methods=["gspo"] if proposal else [], arxiv_ids=[])
            for t, (_, _, state, proposal, failure) in zip(threads, rows, strict=True)
        ])


@pytest.fixture
async def client(ctx: AppContext) -> AsyncIterator[TestClient]:
    await _seed(ctx)
    async with TestClient(TestServer(create_app(ctx, worker=False))) as c:
        yield c


async def _html(client: TestClient, path: str, status: int = 200) -> str:
    resp = await client.get(path)
    assert resp.status == status, (path, resp.status)
    return await resp.text()


def _threads_listed(html: str) -> list[str]:
    return re.findall(r'<a href="/threads/([^"]+)">', html)


def _next_page(html: str) -> str | None:
    found = re.search(r'<a rel="next" href="([^"]+)">', html)
    return found.group(1).replace("&amp;", "&") if found else None


async def test_proposals_page_counts_them_all_and_pages_through_every_one(client) -> None:
    total = VERL_OPEN + VERL_MERGED
    first = await _html(client, "/proposals")
    assert f"{total:,} proposals" in first
    seen: list[str] = []
    path: str | None = "/proposals"
    while path is not None:
        html = await _html(client, path)
        seen += _threads_listed(html)
        path = _next_page(html)
        assert len(seen) <= total  # a next link only while some are left
    assert len(seen) == len(set(seen)) == total
    # the filters stay on every page
    filtered = await _html(client, "/proposals?framework=verl&state=open_no_reply")
    assert f"{VERL_OPEN:,} proposals" in filtered
    assert "framework=verl" in (_next_page(filtered) or "") and "state=open_no_reply" in (_next_page(filtered) or "")
    await _html(client, "/proposals?page=0", status=400)
    await _html(client, "/proposals?page=x", status=400)
    # past the last page: it said "1,205 proposals. No tracked proposal matches." (200)
    past = await _html(client, "/proposals?framework=verl&page=4", status=404)
    assert "page 4 is past the last page of these proposals (3)" in past
    assert "No tracked proposal matches" not in past and _threads_listed(past) == []
    assert re.search(r'<a rel="prev" href="/proposals\?framework=verl&amp;page=3">', past)
    assert len(_threads_listed(await _html(client, "/proposals?framework=verl&page=3"))) == total - 1000


@pytest.mark.parametrize("page", ["1000000000", "99999999999999999999", "0099999999999"])
async def test_a_page_number_too_large_to_count_is_past_the_last_page(client, page: str) -> None:
    """page=999999999 answered 404 'past the last page' with a link to the last one; a page
    number of ten digits or more answered 400 'page must be a whole number from 1', which it
    is: it is past the last page as well."""
    past = await _html(client, f"/proposals?framework=verl&page={page}", status=404)
    assert "is past the last page of these proposals (3)" in past
    assert "must be a whole number" not in past and _threads_listed(past) == []
    assert re.search(r'<a rel="prev" href="/proposals\?framework=verl&amp;page=3">', past)
    await _html(client, "/proposals?page=-1", status=400)  # not a page number: still 400
    # leading zeros say nothing: page 0000000002 is page 2
    two = await _html(client, "/proposals?framework=verl&page=0000000002")
    assert two.count('<a href="/threads/') == 500


async def test_api_proposals_offset_limit_and_total(client) -> None:
    total = VERL_OPEN + VERL_MERGED
    resp = await client.get("/api/proposals?framework=verl&limit=300&offset=1000")
    assert resp.status == 200 and resp.headers["X-Total-Count"] == str(total)
    page = await resp.json()
    assert len(page) == 205
    everything = await (await client.get("/api/proposals")).json()
    assert len(everything) == total  # under the row limit: every one, as before
    assert [p["number"] for p in page] == [p["number"] for p in everything[1000:]]
    assert (await client.get("/api/proposals?offset=-1")).status == 400
    assert (await client.get("/api/proposals?limit=0")).status == 400


async def test_framework_page_counts_every_proposal_by_state(client) -> None:
    data = await (await client.get("/api/frameworks/verl")).json()
    assert data["proposal_counts"] == {"open_no_reply": VERL_OPEN, "merged": VERL_MERGED}
    html = await _html(client, "/frameworks/verl")
    assert f"open, no reply: {VERL_OPEN}<" in html and f"merged: {VERL_MERGED}<" in html
    assert f"of {VERL_OPEN:,}" in html  # the list is the newest few, and says so
    assert 'href="/proposals?framework=verl&amp;state=open_no_reply"' in html
    index = await _html(client, "/")
    assert f"open, no reply: {VERL_OPEN}<" in index  # the front page agrees


async def test_method_and_failure_pages_say_how_many_there_are(client) -> None:
    method = await _html(client, "/methods/gspo")
    assert f"of {VERL_OPEN + VERL_MERGED:,}" in method
    assert (await (await client.get("/api/methods/gspo")).json())["threads_total"] == VERL_OPEN + VERL_MERGED
    failure = await _html(client, "/failures/entropy_collapse")
    assert f"of {TRL_REPORTS:,} reports" in failure


async def test_failure_page_pages_through_every_report(client) -> None:
    """The failure page listed the 30 most recent reports and said "The 30 most recent of 45
    reports." with no link to the other 15: they pages like /proposals now."""
    seen: list[str] = []
    path: str | None = "/failures/entropy_collapse"
    while path is not None:
        html = await _html(client, path)
        seen += _threads_listed(html)
        path = _next_page(html)
        assert len(seen) <= TRL_REPORTS
    assert len(seen) == len(set(seen)) == TRL_REPORTS
    await _html(client, "/failures/entropy_collapse?page=0", status=400)
    await _html(client, "/failures/entropy_collapse?page=x", status=400)
    past = await _html(client, "/failures/entropy_collapse?page=3", status=404)
    assert "page 3 is past the last page of these reports (2)" in past and _threads_listed(past) == []
    assert re.search(r'<a rel="prev" href="/failures/entropy_collapse\?page=2">', past)
    far = await _html(client, "/failures/entropy_collapse?page=99999999999", status=404)
    assert "is past the last page of these reports (2)" in far


VERDICTS = 130  # more than /verdicts lists on a page


async def test_verdicts_page_pages_through_every_verdict(ctx: AppContext, client) -> None:
    """/verdicts listed the 100 latest verdicts ("The 100 latest of 130.") and no more: the
    other 30 were on no page."""
    from sqlalchemy import select

    from bot.store.models import Verdict

    async with ctx.sessionmaker() as s, s.begin():
        ids = list(await s.scalars(select(Thread.id).where(Thread.repo == "verl-project/verl")
                                   .order_by(Thread.id).limit(VERDICTS)))
        s.add_all([Verdict(thread_id=i, is_failure_report=False, category=None, login="someone",
                           role="author", given_at=START + timedelta(minutes=n))
                   for n, i in enumerate(ids)])
    seen: list[str] = []
    path: str | None = "/verdicts"
    while path is not None:
        html = await _html(client, path)
        seen += _threads_listed(html)
        path = _next_page(html)
        assert len(seen) <= VERDICTS
    assert len(seen) == len(set(seen)) == VERDICTS
    await _html(client, "/verdicts?page=x", status=400)
    past = await _html(client, "/verdicts?page=3", status=404)
    assert "page 3 is past the last page of these verdicts (2)" in past and _threads_listed(past) == []
    assert re.search(r'<a rel="prev" href="/verdicts\?page=2">', past)


MANY_VERDICTS = 250  # three pages of /verdicts


async def test_verdicts_page_by_cursor_both_ways(ctx: AppContext, client) -> None:
    """/verdicts linked its pages by number (`?page=N`, read by OFFSET) when /proposals,
    /methods/{id} and /failures/{key} linked theirs by cursor (site66). Its Older and Newer
    links carry cursors now (`after`, `before`): followed down and back up they give the
    pages `?page=N` gives, latest first (ties of `given_at` by id), every verdict once; a
    cursor the page did not write is a 400 saying so."""
    from sqlalchemy import select

    from bot.site.api import encode_cursor
    from bot.store.models import Verdict
    from tests.test_site_queries import _walk

    async with ctx.sessionmaker() as s, s.begin():
        ids = list(await s.scalars(select(Thread.id).where(Thread.repo == "verl-project/verl")
                                   .order_by(Thread.id).limit(MANY_VERDICTS)))
        # three verdicts a minute: the order's ties are broken by the verdict's id
        s.add_all([Verdict(thread_id=i, is_failure_report=False, category=None, login="someone",
                           role="author", given_at=START + timedelta(minutes=n // 3))
                   for n, i in enumerate(ids)])
    async with ctx.sessionmaker() as s:
        latest_first = [f"{r}/{n}" for r, n in (await s.execute(
            select(Thread.repo, Thread.number).join(Verdict, Verdict.thread_id == Thread.id)
            .order_by(Verdict.given_at.desc(), Verdict.id.desc()))).all()]
    down = await _walk(client, "/verdicts", "next")
    numbered = [_threads_listed(await _html(client, "/verdicts" + (f"?page={n}" if n > 1 else "")))
                for n in (1, 2, 3)]
    assert [rows for _, rows in down] == numbered
    assert [t for rows in numbered for t in rows] == latest_first
    assert all("after=" in u and "page=" not in u for u, _ in down[1:]), down[1][0]
    up = await _walk(client, down[-1][0], "prev")
    assert [rows for _, rows in up] == numbered[::-1]
    assert all("before=" in u and "page=" not in u for u, _ in up[1:-1]), [u for u, _ in up]
    cursor_page = await _html(client, down[1][0])
    assert "100 on this page" in cursor_page
    threads_cursor = encode_cursor("threads", (START, ids[0]))
    for query in ("after=x", "before=%%%", f"after={threads_cursor}",
                  f"{down[1][0].split('?')[1]}&page=2"):
        bad = await _html(client, f"/verdicts?{query}", status=400)
        assert "must be a cursor of this list" in bad and _threads_listed(bad) == [], query
    # past the oldest verdict nothing is left (verdicts removed since the link was made)
    gone = encode_cursor("verdicts", (START - timedelta(days=1), 1))
    past = await _html(client, f"/verdicts?after={gone}", status=404)
    assert "none of these verdicts is left past that link" in past
    assert re.search(r'<a rel="prev" href="/verdicts">', past)


async def test_method_page_pages_through_every_thread_naming_it(ctx: AppContext, client) -> None:
    """The method page listed the 100 newest threads naming the method and linked only to the
    proposals among the rest: a thread naming it that is no proposal (a failure report citing
    the method) and not among the 100 newest was on no page. It pages like /proposals now."""
    from sqlalchemy import update

    async with ctx.sessionmaker() as s, s.begin():
        oldest = await s.scalar(select_first_verl())
        await s.execute(update(Analysis).where(Analysis.thread_id == oldest)
                        .values(is_proposal=False))
    total = VERL_OPEN + VERL_MERGED
    seen: list[str] = []
    path: str | None = "/methods/gspo"
    while path is not None:
        html = await _html(client, path)
        seen += _threads_listed(html)
        path = _next_page(html)
        assert len(seen) <= total
    assert len(seen) == len(set(seen)) == total
    assert "verl-project/verl/1" in seen
    await _html(client, "/methods/gspo?page=x", status=400)
    past = await _html(client, "/methods/gspo?page=14", status=404)
    assert "page 14 is past the last page of these threads (13)" in past and _threads_listed(past) == []
    assert re.search(r'<a rel="prev" href="/methods/gspo\?page=13">', past)


def select_first_verl() -> object:
    from sqlalchemy import select

    return select(Thread.id).where(Thread.repo == "verl-project/verl", Thread.number == 1)
