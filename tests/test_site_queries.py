"""The SQL the tracker site runs, counted (scale64): every page and JSON route asked on a
small and on a large store (built through the project's store code by
benchmarks/site_scale.py's `build_store`), with a `before_cursor_execute` listener. A page
that shows a bounded list must run as many statements on 1,200 threads as on 300 (no query
per row shown, no batch per 500 rows read), and must not read more than it shows. Counts
only, never times; SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from benchmarks.site_scale import build_store, counting, measure, routes
from bot.config import Settings
from bot.context import AppContext
from tests.conftest import _pg_execute, _with_database, database_backends, no_postgres

SMALL, LARGE = 300, 1200
# Streamed 500 threads at a time by design (docs/site.md, "JSON"): one statement per batch.
BATCHED = {"/api/export.json", "/api/export.csv"}
# Left (reported by scale64, not in this pass's area): the install preview decides on each
# issue of the window as the live path does, reading its comments and, for a proposal, its
# earlier proposals and rules (bot/speaking): about 5 statements per issue, bounded by the
# window (at most 90 days of one repository's issues) and cached while nothing changes.
KNOWN = {"/repos/verl-project/verl/preview"}


@pytest.fixture(scope="module", params=database_backends())
def stores(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
           sqlite_template: Path) -> Iterator[dict[int, tuple[str, dict[str, Any]]]]:
    """A small and a large store on the backend: size -> (URL, what build_store named)."""
    made: list[str] = []
    urls: dict[int, str] = {}
    if request.param == "sqlite":
        folder = tmp_path_factory.mktemp("scale")
        for n in (SMALL, LARGE):
            shutil.copy(sqlite_template, folder / f"{n}.db")
            urls[n] = f"sqlite+aiosqlite:///{folder}/{n}.db"
    elif request.param is None:
        no_postgres()
    else:
        template = request.getfixturevalue("postgres_template")
        for n in (SMALL, LARGE):
            name = f"rlt_{uuid.uuid4().hex[:12]}"
            asyncio.run(_pg_execute(request.param, f'CREATE DATABASE "{name}" TEMPLATE "{template}"'))
            made.append(name)
            urls[n] = _with_database(request.param, name)

    async def build(url: str, n: int) -> dict[str, Any]:
        ctx = AppContext.create(Settings.from_env({}, database_url=url, dry_run=True))
        try:
            return await build_store(ctx, n)
        finally:
            await ctx.close()

    try:
        yield {n: (url, asyncio.run(build(url, n))) for n, url in urls.items()}
    finally:
        for name in made:
            asyncio.run(_pg_execute(request.param, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


async def _client(url: str) -> AsyncIterator[tuple[TestClient, AppContext]]:
    from bot.app import create_app

    ctx = AppContext.create(Settings.from_env({}, database_url=url, dry_run=True))
    try:
        async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
            yield client, ctx
    finally:
        await ctx.close()


async def _statements(url: str, named: dict[str, Any], paths: list[str]
                      ) -> dict[str, tuple[int, int, list[str]]]:
    out = {}
    async for client, ctx in _client(url):
        for path in paths:
            out[path] = await measure(client, ctx.engine, path)
    return out


async def test_statements_per_route_do_not_grow_with_the_store(stores) -> None:
    """Every route but the streamed exports: the same number of statements on 1,200 threads
    as on 300 (the report page read its stored titles' graves 500 at a time: 1 statement
    per 500 threads of the night's snapshot)."""
    small_url, small_named = stores[SMALL]
    large_url, large_named = stores[LARGE]
    small = await _statements(small_url, small_named, routes(small_named))
    large = await _statements(large_url, large_named, routes(large_named))
    grew = {}
    for (path, (status, count, _)), (large_path, (large_status, large_count, seen)) in zip(
            small.items(), large.items(), strict=True):
        assert status < 500 and large_status < 500, (path, status, large_status)
        if path in BATCHED or path in KNOWN or status != large_status:
            continue  # (a page past the last on the small store: another answer)
        if large_count != count:
            grew[large_path] = (count, large_count, seen)
    assert not grew, {p: c[:2] for p, c in grew.items()}


async def test_a_report_in_markdown_reads_its_markdown_only(stores) -> None:
    """`/reports/{date}.md` answers the stored Markdown: it read the whole row, the night's
    data with it (the snapshot of every tracked thread, megabytes on a large tracker)."""
    url, named = stores[LARGE]
    path = f"/reports/{named['report']}.md"
    status, count, seen = (await _statements(url, named, [path]))[path]
    assert status == 200 and count == 1
    assert "reports.data" not in seen[0], seen[0]


async def test_pages_do_not_count_every_thread_to_know_one_is_stored(stores) -> None:
    """What an empty section says depends on whether any thread is stored: every page
    counted the whole threads table for it (`SELECT count(*) FROM threads`). Only
    /api/stats, which reports that count, counts them."""
    url, named = stores[LARGE]
    found = await _statements(url, named, [p for p in routes(named) if p != "/api/stats"])
    counting = {path for path, (_, _, seen) in found.items()
                if any(" ".join(s.split()).startswith("SELECT count(*) AS count_1 FROM threads")
                       and " ".join(s.split()).endswith("FROM threads") for s in seen)}
    assert not counting, sorted(counting)


async def test_the_list_of_reports_reads_no_nights_data(stores) -> None:
    """/reports/ shows each night's date, baseline flag and totals: it read them out of each
    night's data (`data -> 'totals'`), which had the database parse the whole snapshot of
    every tracked thread, three times a night listed (525 ms for two nights of a
    20,000-thread store on PostgreSQL)."""
    url, named = stores[LARGE]
    status, count, seen = (await _statements(url, named, ["/reports/"]))["/reports/"]
    assert status == 200 and count == 1
    assert "reports.data" not in seen[0], seen[0]


def test_0019_report_summary_is_filled_from_the_stored_data(db_url: str) -> None:
    """Migration 0019: the summary of each stored report, filled from its data on the way up
    (baseline, totals, new landings); dropped on the way down, the rows kept."""

    from bot.store import migrate
    from tests.test_migrations import _execute, columns, downgrade, schema_differences

    downgrade(db_url, "0018")
    assert "summary" not in columns(db_url, "reports")
    data = {"baseline": False, "totals": {"merged": 2, "lapsed": 1}, "new_landings": 3,
            "snapshot": {"o/r#1": {}}}
    asyncio.run(_execute(db_url, "INSERT INTO reports (date, data, markdown, created_at) VALUES "
                                 f"('2026-12-01', '{json.dumps(data)}', '# r', CURRENT_TIMESTAMP), "
                                 "('2026-12-02', '{}', '# r', CURRENT_TIMESTAMP)"))
    migrate.upgrade(db_url)
    rows = dict(asyncio.run(_execute(db_url, "SELECT date, summary FROM reports")))
    read = {day: json.loads(v) if isinstance(v, str) else v for day, v in rows.items()}
    assert read == {"2026-12-01": {"baseline": False, "totals": {"merged": 2, "lapsed": 1},
                                   "new_landings": 3},
                    "2026-12-02": {"baseline": False, "totals": {}, "new_landings": 0}}
    assert schema_differences(db_url) == []


# The front page's list: a small part of what matches on any store. (For a page of 50 or 500
# of the 600 proposals of the 1,200-thread store, reading them all and sorting is as good, and
# PostgreSQL's planner takes it; at 20,000 threads it reads them in the index's order.)
NEWEST_FIRST = ("/",)


async def _plan(ctx: AppContext, statement: str, params: Any) -> str:
    """The database's plan of `statement` as text (PostgreSQL: EXPLAIN after ANALYZE, as
    autovacuum keeps a live database's statistics; SQLite: EXPLAIN QUERY PLAN)."""
    async with ctx.engine.connect() as conn:
        raw = await conn.get_raw_connection()
        driver = raw.driver_connection
        if conn.dialect.name == "postgresql":
            await driver.execute("ANALYZE")
            rows = await driver.fetch("EXPLAIN " + statement, *params)
            return "\n".join(r[0] for r in rows)
        cursor = await driver.execute("EXPLAIN QUERY PLAN " + statement, params)
        return "\n".join(str(r[3]) for r in await cursor.fetchall())


async def test_newest_first_lists_read_threads_in_order_not_all_then_sort(stores) -> None:
    """The front page's recent failure reports (15, on every visit) are the newest first: with no index on the threads' date the
    database read and joined every thread, then sorted them all to keep the first few (on
    20,000 threads, 119 ms on PostgreSQL and 177 ms on SQLite for the front page's 15; with
    the index, the newest are read in order and the reading stops: 0.1 and 0.2 ms)."""
    url, named = stores[LARGE]
    sorted_all = {}
    async for client, ctx in _client(url):
        for path in NEWEST_FIRST:
            with counting(ctx.engine) as seen:
                resp = await client.get(path)
                await resp.read()
            assert resp.status == 200
            listing = [(s, p) for s, p in seen if s.lstrip().startswith("SELECT threads.repo")
                       and "ORDER BY threads.created_at DESC" in s]
            assert len(listing) == 1, path
            plan = await _plan(ctx, *listing[0])
            if "TEMP B-TREE FOR ORDER BY" in plan or "Sort Key: threads.created_at" in plan:
                sorted_all[path] = plan
    assert not sorted_all, sorted_all


@pytest.mark.parametrize("route, key, total_key", [
    ("/api/failures/entropy_collapse", "recent_reports", "reports_total"),
    ("/api/methods/gspo", "threads", "threads_total"),
    # scale65: /api/verdicts gave the latest 100 verdicts and ignored limit and offset too
    ("/api/verdicts", "latest", "total"),
])
async def test_the_lists_of_a_kind_and_a_method_page_through_every_thread(
        stores, route: str, key: str, total_key: str) -> None:
    """/api/failures/{key} gave a kind's 30 newest reports and /api/methods/{id} a method's
    100 newest threads, ignoring `limit` and `offset` (docs/site.md called these lists whole):
    on a large store the rest could not be read from the JSON API at all. They page as every
    /api/ list does now (`api_paging`, X-Total-Count), the first page as before."""
    url, named = stores[LARGE]
    async for client, _ in _client(url):
        first = await client.get(route)
        body = await first.json()
        total = body[total_key]
        assert total > 10
        seen: list[tuple[str, int]] = []
        offset = 0
        while offset < total:
            resp = await client.get(f"{route}?limit=10&offset={offset}")
            assert resp.status == 200 and resp.headers["X-Total-Count"] == str(total)
            page = (await resp.json())[key]
            assert page, offset
            seen += [(t["repo"], t["number"]) for t in page]
            offset += 10
        assert len(seen) == len(set(seen)) == total
        assert seen[:len(body[key])] == [(t["repo"], t["number"]) for t in body[key]]  # as before
        bad = await client.get(f"{route}?limit=0")
        assert bad.status == 400 and "limit" in (await bad.json())["error"]


@pytest.mark.parametrize("path", ["/frameworks/verl", "/api/frameworks/verl"])
async def test_a_framework_page_reads_its_proposal_lists_in_one_statement(stores, path: str) -> None:
    """A framework's page lists the 100 newest proposals of each review state: one statement
    per state that has any (8 on these stores), each on PostgreSQL walking the threads' date
    index for a rare framework and state (at 20,000 threads, 144 ms of the page's queries
    with that index, 39 without). One statement ranks them per state."""
    url, named = stores[LARGE]
    status, _, seen = (await _statements(url, named, [path]))[path]
    lists = [s for s in seen if s.lstrip().startswith("SELECT") and "threads.created_at DESC" in s]
    assert status == 200 and len(lists) == 1, len(lists)


async def _follow(client: TestClient, path: str) -> tuple[list[tuple[Any, ...]], list[str]]:
    """Every row of an /api/ list, page after page by its Link header's rel="next" (each
    page's X-Total-Count the same), and the pages' URLs."""
    rows: list[tuple[Any, ...]] = []
    urls = [path]
    total = None
    while True:
        resp = await client.get(urls[-1])
        assert resp.status == 200, (urls[-1], await resp.text())
        assert total is None or resp.headers["X-Total-Count"] == total
        total = resp.headers["X-Total-Count"]
        rows += [(r["repo"], r["number"], r.get("kind"), r.get("created_at"), r.get("status"))
                 for r in await resp.json()]
        link = resp.headers.get("Link")
        if link is None:
            break
        target, rel = link.split(";")
        assert rel.strip() == 'rel="next"' and target.startswith("<") and target.endswith(">")
        urls.append(target[1:-1])
    assert len(rows) == int(total)
    return rows, urls


@pytest.mark.parametrize("route, limit", [
    ("/api/proposals", 37), ("/api/proposals?framework=verl&state=merged", 3),
    ("/api/actions", 45), ("/api/actions?repo=verl-project/verl", 20)])
async def test_api_lists_page_by_cursor_through_every_row(stores, route: str, limit: int) -> None:
    """/api/proposals and /api/actions paged only by `offset`: a deep page read (and joined)
    every row before it (50 proposals at offset 9,900 of 20,000 threads: 72 ms on
    PostgreSQL, against 18 ms at offset 100). Each page now links the next (`Link:
    rel="next"`, an `after` cursor) which the database seeks by the list's index: followed
    to the end it gives every row once, in the order of the offset pages (threads of no known
    date last), with the same filters, limit and X-Total-Count; the last page links none."""
    url, named = stores[LARGE]
    join = "&" if "?" in route else "?"
    async for client, _ in _client(url):
        everything = await client.get(route + f"{join}limit=5000")
        expected = [(r["repo"], r["number"], r.get("kind"), r.get("created_at"), r.get("status"))
                    for r in await everything.json()]
        rows, urls = await _follow(client, route + f"{join}limit={limit}")
        assert rows == expected and len(urls) == -(-len(expected) // limit)
        assert all("after=" in u and f"limit={limit}" in u and "offset" not in u for u in urls[1:])
        # an offset page links on by cursor too; a name sent twice is read as the handler
        # reads it (the first), in the link as on the page
        resp = await client.get(route + f"{join}limit={limit}&offset={limit}&limit=1")
        assert "after=" in resp.headers["Link"] and len(await resp.json()) == limit
        assert f"limit={limit}&" in resp.headers["Link"] and "limit=1&" not in resp.headers["Link"]
        # a page asked again with its ETag (cache65): the 304 keeps the link and the total
        second = await client.get(urls[1])
        again = await client.get(urls[1], headers={"If-None-Match": second.headers["ETag"]})
        assert again.status == 304 and again.headers.get("Link") == second.headers.get("Link")
        assert again.headers["X-Total-Count"] == second.headers["X-Total-Count"]


async def test_a_page_after_a_cursor_is_sought_in_the_index(stores) -> None:
    """The page after a cursor reads from it by the threads' date index (migration 0020) and
    the actions' (created_at, id) index (0021): no sort of all the rows, no scan of the rows
    before it (SQLite: a SEARCH of the index from the cursor; PostgreSQL: an index condition
    on the cursor, not a filter)."""
    url, named = stores[LARGE]
    async for client, ctx in _client(url):
        for route, table in (("/api/proposals?limit=50", "threads"),
                             ("/api/actions?limit=50", "actions")):
            link = (await client.get(route)).headers["Link"]
            with counting(ctx.engine) as seen:
                resp = await client.get(link.split(";")[0][1:-1])
                await resp.read()
            assert resp.status == 200
            page = [(s, p) for s, p in seen if " ORDER BY " in s]
            assert len(page) == 1, [s for s, _ in seen]
            plan = await _plan(ctx, *page[0])
            index = {"threads": "ix_threads_created_at_id", "actions": "ix_actions_created_at_id"}
            assert index[table] in plan, plan
            assert "TEMP B-TREE FOR ORDER BY" not in plan and "Sort Key" not in plan, plan
            if ctx.engine.dialect.name == "sqlite":
                assert f"SEARCH {table} USING INDEX {index[table]} (created_at" in plan, plan
            else:
                assert "Index Cond: (ROW(" in plan, plan


@pytest.mark.parametrize("after", [
    "x", "%%%", "W10", "WyJ0aHJlYWRzIiwxLDJd",
    # well formed, not this list's, or not one it writes: another list's, a date with an
    # offset, an id a database cannot compare, no date for an action, a float id
    "WyJhY3Rpb25zIiwiMjAyNi0xMi0wMVQxMjowMDowMCswMDowMCIsMl0",
    "WyJwcm9wb3NhbHMiLCIyMDI2LTExLTI5VDIxOjAwOjAwKzA1OjAwIiwxXQ",
    "WyJwcm9wb3NhbHMiLCIyMDI2LTExLTI5VDIxOjAwOjAwKzAwOjAwIiw5OTk5OTk5OTk5OTk5OTk5OTk5OTk5OTk5XQ",
    "WyJwcm9wb3NhbHMiLCIyMDI2LTExLTI5VDIxOjAwOjAwKzAwOjAwIiwxLjVd",
    "A" * 300])
async def test_a_cursor_not_given_by_the_list_is_a_400(stores, after: str) -> None:
    """An `after` the list did not write (typed, cut, another list's, altered) answers 400
    with the rule, never a 500 or a page of something else; so does one with `offset`."""
    url, named = stores[SMALL]
    async for client, _ in _client(url):
        resp = await client.get(f"/api/proposals?after={after}")
        assert resp.status == 400, await resp.text()
        assert (await resp.json())["error"].startswith("after must be a cursor this list gave")
    async for client, _ in _client(url):
        link = (await client.get("/api/actions?limit=5")).headers["Link"]
        cursor = link.split("after=")[1].split(">")[0]
        for query in (f"after={cursor}&offset=5", "after=WyJhY3Rpb25zIixudWxsLDJd"):
            resp = await client.get(f"/api/actions?{query}")
            assert resp.status == 400 and "cursor" in (await resp.json())["error"]
        resp = await client.get(f"/api/proposals?after={cursor}")  # an actions cursor
        assert resp.status == 400


@pytest.mark.parametrize("path", ["/proposals", "/api/proposals?limit=1",
                                  "/proposals?framework=verl&state=declined",
                                  "/api/proposals?paper=gspo&limit=1"])
async def test_the_proposals_total_counts_the_analyses_alone(stores, path: str) -> None:
    """The proposals' total (on every visit of /proposals and every page of
    /api/proposals) joined every thread with its analysis and its verdict: 46 ms of the
    page at 20,000 threads on PostgreSQL. A proposal has an analysis and the filters read no
    verdict: it counts the analyses (by their is_proposal index), joined to the threads
    only for a framework, and the total is the one the list pages through."""
    url, named = stores[LARGE]
    async for client, ctx in _client(url):
        with counting(ctx.engine) as seen:
            resp = await client.get(path)
            await resp.read()
        assert resp.status == 200
        counts = [" ".join(s.split()) for s, _ in seen if "count(*)" in s]
        assert len(counts) == 1 and counts[0].startswith("SELECT count(*) AS count_1 FROM analyses")
        assert "verdicts" not in counts[0] and ("JOIN threads" in counts[0]) == ("framework" in path)
        listed = await client.get(path.replace("/proposals", "/api/proposals", 1)
                                  .replace("/api/api/", "/api/").split("limit")[0].rstrip("?&"))
        assert int(listed.headers["X-Total-Count"]) == len(await listed.json())


def test_0021_actions_index_goes_down_and_up(db_url: str) -> None:
    """Migration 0021: the index of /api/actions' order, dropped on the way down (the rows
    kept) and made again on the way up, as the model declares it."""
    from bot.store import migrate
    from tests.test_migrations import _execute, downgrade, indexes, schema_differences

    assert "ix_actions_created_at_id" in indexes(db_url, "actions")
    asyncio.run(_execute(db_url, "INSERT INTO actions (repo, number, kind, status, details, "
                                 "reactions_up, reactions_down, is_minimized, comment_deleted, "
                                 "frozen, created_at, updated_at) VALUES ('o/r', 1, 'command', "
                                 "'posted', '{}', 0, 0, false, false, false, CURRENT_TIMESTAMP, "
                                 "CURRENT_TIMESTAMP)"))
    downgrade(db_url, "0020")
    assert "ix_actions_created_at_id" not in indexes(db_url, "actions")
    migrate.upgrade(db_url)
    assert "ix_actions_created_at_id" in indexes(db_url, "actions")
    assert asyncio.run(_execute(db_url, "SELECT repo, number FROM actions")) == [("o/r", 1)]
    assert schema_differences(db_url) == []


async def test_the_list_of_frameworks_reads_their_counts_alone(stores) -> None:
    """/api/frameworks answers the front page's table of frameworks: it built the whole front
    page's data, its 15 recent failure reports with it, and dropped them (a second
    statement on every request). One statement, the proposals counted by repository and state."""
    url, named = stores[SMALL]
    status, count, seen = (await _statements(url, named, ["/api/frameworks"]))["/api/frameworks"]
    assert status == 200 and count == 1, seen
    assert "count(*)" in seen[0] and "threads.title" not in seen[0]


def _listed(html: str) -> list[str]:
    return re.findall(r'<a href="/threads/([^"]+)">', html)


def _link(html: str, rel: str) -> str | None:
    found = re.search(rf'<a rel="{rel}" href="([^"]+)">', html)
    return found.group(1).replace("&amp;", "&") if found else None


async def _walk(client: TestClient, path: str, rel: str) -> list[tuple[str, list[str]]]:
    """The pages met following `rel` links from `path`: (URL, the threads it lists)."""
    pages: list[tuple[str, list[str]]] = []
    next_path: str | None = path
    while next_path is not None:
        resp = await client.get(next_path)
        html = await resp.text()
        assert resp.status == 200, (next_path, resp.status)
        pages.append((next_path, _listed(html)))
        next_path = _link(html, rel)
        assert len(pages) < 100
    return pages


@pytest.mark.parametrize("path, per_page", [
    ("/proposals", 500),
    ("/failures/entropy_collapse", 30)])
async def test_html_lists_link_their_pages_by_cursor_both_ways(stores, path: str,
                                                               per_page: int) -> None:
    """The HTML lists linked their pages by number (`?page=N`), read by OFFSET: a deep page
    read and joined every row before it (/proposals?page=19 at 20,000 threads: 209 ms for
    its list on PostgreSQL). Their Older and Newer links carry cursors now (`after`,
    `before`, the API's): followed down and back up they give the pages `?page=N` gives
    (every thread once, threads of no known date last), and a bookmarked `?page=N` still
    answers its page."""
    url, named = stores[LARGE]
    join = "&" if "?" in path else "?"
    async for client, _ in _client(url):
        down = await _walk(client, path, "next")
        assert len(down) >= 2, path
        numbered = [_listed(await (await client.get(path + (f"{join}page={n}" if n > 1 else "")))
                            .text()) for n in range(1, len(down) + 1)]
        assert [rows for _, rows in down] == numbered
        everything = [t for rows in numbered for t in rows]
        assert len(everything) == len(set(everything)) and all(len(r) == per_page
                                                                for r in numbered[:-1])
        assert all("after=" in u and "page=" not in u for u, _ in down[1:]), down[1][0]
        up = await _walk(client, down[-1][0], "prev")
        assert [rows for _, rows in up] == numbered[::-1]
        # (the top is the first page, though reached by a cursor: no Newer link on it)
        assert all("before=" in u and "page=" not in u for u, _ in up[1:])


async def test_a_page_after_an_older_or_newer_link_is_sought_in_the_index(stores) -> None:
    """The page an Older (`after`) or Newer (`before`) link leads to reads its threads from
    the cursor in the threads' date index (0020), as /api/proposals' cursor pages do: no
    OFFSET, no sort of every thread. (A kind's reports, a rarer filter, PostgreSQL reads
    by a join and a sort of the rows past the cursor at this size, as it chooses.)"""
    url, named = stores[LARGE]
    async for client, ctx in _client(url):
        first = await (await client.get("/proposals")).text()
        second = await (await client.get(_link(first, "next") or "")).text()
        for link in (_link(first, "next"), _link(second, "prev")):
            assert link and ("after=" in link or "before=" in link), link
            with counting(ctx.engine) as seen:
                resp = await client.get(link)
                await resp.read()
            assert resp.status == 200
            # (the Newer link of the second page: the rows before it are fewer than a page,
            # so the first page is read after them, from the top)
            listing = [(s, p) for s, p in seen if " ORDER BY threads.created_at" in s]
            assert 1 <= len(listing) <= 2, [s for s, _ in seen]
            seeks = [(s, p) for s, p in listing if "threads.id) <" in s or "threads.id) >" in s]
            assert len(seeks) == 1, listing
            for statement, params in listing:  # (SQLite writes an OFFSET of 0 with a LIMIT)
                assert "OFFSET" not in statement or list(params)[-1] == 0, (statement, params)
            plan = await _plan(ctx, *seeks[0])
            # the rows past the cursor read from it in the index (PostgreSQL may then sort
            # those: at the end of a list they are fewer than a page; the thousand newer
            # rows before the last page of this small store it reads whole, as cheaper)
            if ctx.engine.dialect.name == "sqlite":
                assert "SEARCH threads USING INDEX ix_threads_created_at_id (created_at" in plan, plan
                assert "TEMP B-TREE FOR ORDER BY" not in plan, plan
            elif "after=" in link:
                assert "Index Cond: (ROW(" in plan, plan


async def test_a_page_before_a_newer_link_reads_the_index_backwards_unsorted(stores) -> None:
    """The rows before a Newer link's cursor were asked `created_at ASC` (NULLS LAST on
    PostgreSQL), which the date index (`created_at DESC NULLS LAST, id DESC`, 0020) read
    backwards does not give (it gives NULLS FIRST): PostgreSQL read every newer row, joined
    and sorted them (site66: 111 ms near the end of /proposals at 20,000 threads). The
    order is the index's, backwards, now (the cursor leaves no row of unknown date, so the
    rows are the same): a plan with sorting disabled needs no Sort. SQLite puts NULLs first
    ascending either way (the other test asserts its SEARCH of the index)."""
    url, named = stores[LARGE]
    async for client, ctx in _client(url):
        if ctx.engine.dialect.name != "postgresql":
            pytest.skip("SQLite's ascending order already is the index's read backwards")
        first = await (await client.get("/proposals")).text()
        second = await (await client.get(_link(first, "next") or "")).text()
        with counting(ctx.engine) as seen:
            await (await client.get(_link(second, "prev") or "")).read()
        seek = [(s, p) for s, p in seen if "threads.id) >" in s]
        assert len(seek) == 1, seen
        async with ctx.engine.connect() as conn:
            driver = (await conn.get_raw_connection()).driver_connection
            await driver.execute("SET enable_sort = off")
            plan = "\n".join(r[0] for r in await driver.fetch("EXPLAIN " + seek[0][0],
                                                              *seek[0][1]))
        assert "Sort" not in plan and "ix_threads_created_at_id" in plan, plan


@pytest.mark.parametrize("query", [
    "after=x", "before=%%%", "after=WyJ0aHJlYWRzIiwxLDJd&page=2",
    # a cursor of another list (/api/actions'), and both directions at once
    "after=WyJhY3Rpb25zIiwiMjAyNi0xMi0wMVQxMjowMDowMCswMDowMCIsMl0",
    "after=WyJ0aHJlYWRzIixudWxsLDJd&before=WyJ0aHJlYWRzIixudWxsLDJd"])
async def test_a_list_cursor_the_page_did_not_give_is_a_400(stores, query: str) -> None:
    """An `after` or `before` the page did not write answers 400 with the rule (the page
    without its list), never a 500 or another list's page."""
    url, named = stores[SMALL]
    async for client, _ in _client(url):
        for path in ("/failures/entropy_collapse", "/methods/grpo"):
            resp = await client.get(f"{path}?{query}")
            assert resp.status == 400, (path, query, resp.status)
            assert "must be a cursor of this list" in await resp.text()


async def test_proposal_counts_equal_a_recount_and_a_framework_counts_its_own(stores) -> None:
    """The proposals by framework and state (front page, /api/frameworks, each framework
    page) equal a recount of /api/proposals' rows; a framework's page counted every
    framework's proposals (a join of every proposal with its thread) to show one's: it
    counts its own repositories' now (site66: 55 -> 30 ms at 20,000 threads, PostgreSQL)."""
    from collections import Counter

    from analyzers.catalog import load_catalog

    url, named = stores[LARGE]
    async for client, ctx in _client(url):
        rows = await (await client.get("/api/proposals?limit=2000")).json()
        recount: dict[str, Counter[str]] = {}
        for r in rows:
            recount.setdefault(r["framework"], Counter())[r["review_state"] or "unknown"] += 1
        listed = {f["id"]: f["proposals"] for f in await (await client.get("/api/frameworks")).json()}
        for fid in load_catalog().frameworks:
            assert listed[fid] == dict(recount.get(fid, {})), fid
            with counting(ctx.engine) as seen:
                page = await (await client.get(f"/api/frameworks/{fid}")).json()
            assert page["proposal_counts"] == dict(recount.get(fid, {})), fid
            count = [s for s, _ in seen if "count(*)" in s and "GROUP BY threads.repo" in s]
            assert len(count) == 1 and "lower(threads.repo) IN" in count[0], count
        assert sum(sum(c.values()) for c in recount.values()) == len(rows) > 100


def test_0024_proposal_counts_index_goes_down_and_up(db_url: str) -> None:
    """Migration 0024: the index the proposals' counts read instead of the analyses' rows,
    dropped on the way down and made again on the way up, as the model declares it."""
    from bot.store import migrate
    from tests.test_migrations import downgrade, indexes, schema_differences

    assert "ix_analyses_proposal_counts" in indexes(db_url, "analyses")
    downgrade(db_url, "0023")
    assert "ix_analyses_proposal_counts" not in indexes(db_url, "analyses")
    migrate.upgrade(db_url)
    assert "ix_analyses_proposal_counts" in indexes(db_url, "analyses")
    assert schema_differences(db_url) == []


async def test_proposal_counts_read_the_index_not_the_analyses(stores) -> None:
    """The proposals' counts (front page, /api/frameworks, framework pages) read the wide
    analyses rows for two columns; with migration 0024's index SQLite reads it alone (a
    covering index), PostgreSQL as an index-only scan once (auto)vacuum has marked the
    table's pages visible."""
    url, named = stores[LARGE]
    async for client, ctx in _client(url):
        with counting(ctx.engine) as seen:
            resp = await client.get("/api/frameworks")
            await resp.read()
        count = [(s, p) for s, p in seen if "GROUP BY threads.repo" in s]
        assert resp.status == 200 and len(count) == 1
        if ctx.engine.dialect.name == "postgresql":  # (as autovacuum does on a live table)
            async with ctx.engine.connect() as conn:
                raw = await conn.get_raw_connection()
                await raw.driver_connection.execute("VACUUM analyses")
        plan = await _plan(ctx, *count[0])
        assert ("COVERING INDEX ix_analyses_proposal_counts" in plan
                or "Index Only Scan using ix_analyses_proposal_counts" in plan), plan
