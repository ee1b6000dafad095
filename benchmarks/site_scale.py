"""Measured, not asserted: the tracker site and its JSON API on a small and a large store.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/site_scale.py [--small 300] [--large 20000]
        [--requests 5] [--database-url postgresql+asyncpg://.../postgres] [--lists-only]
        [--long-thread 5000]

Builds each store through the project's own store code (`insert_new` for threads and comments,
`store_analysis_if` for the analyses, `set_verdict`, `bury`, `build_report` + `store_report`,
`refresh_study`), then asks every page and API route over real HTTP (aiohttp TestServer) and
prints, per route: the SQL statements one request runs (a `before_cursor_execute` listener),
the median milliseconds of R requests at the small and the large size, and the ratio
large/small. Then, for the lists that page by cursor (scale65), a page deep in each read by
`offset` (the baseline, measured in the same run) and after its cursor. Figures only:
tests/test_site_queries.py holds the assertions (on counts).

`--long-thread N` (bounds79) measures only one thread of N comments and N actions in a store
of `--small` threads: its page and its /api/threads answer (default and whole), bytes and
median milliseconds.

`--database-url` (a PostgreSQL admin URL): each store is a database created there (ANALYZEd
once built, as autovacuum keeps a live one) and dropped after; without it, SQLite files in a
temporary folder.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

REVIEW_STATES = ("merged", "open_no_reply", "open_replied", "declined", "redirected", "lapsed",
                 "closed_by_author", "closed_other")
OTHER_REPOS = ("someone/rl-playground", "lab/grpo-experiments")
COMMENTS_PER_THREAD = 5
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _repos() -> list[str]:
    from analyzers.catalog import load_catalog

    return [fw.repo for fw in load_catalog().frameworks.values()] + list(OTHER_REPOS)


def _result(i: int, role: int, methods: list[str], failures: list[str]) -> dict[str, Any]:
    """An analysis result of the contract's shape: role 0 a proposal, 1 a failure report, 2
    neither, 3 both; the review state, the failure kind and the methods cycle with `i`."""
    cycle = i // (len(_repos()) * 4)
    proposal = role in (0, 3)
    failure = failures[cycle % len(failures)] if role in (1, 3) else None
    runner_up = failures[(cycle + 1) % len(failures)] if failure and i % 5 == 0 else None
    method = methods[cycle % len(methods)]
    confidence = round(0.3 + (i % 40) / 100, 3) if failure else round((i % 30) / 100, 3)
    state = REVIEW_STATES[cycle % len(REVIEW_STATES)]
    return {
        "failure": {"is_failure_report": failure is not None, "category": failure,
                    "categories": [c for c in (failure, runner_up) if c],
                    "confidence": confidence, "evidence": ["entropy", "collapse"] if failure else []},
        "papers": [{"arxiv_id": f"2503.{10000 + cycle % 50}", "title": f"Paper {cycle % 50}",
                    "method": method, "how": "arxiv_id", "score": 1.0}] if proposal or i % 3 == 0 else [],
        "proposal": {"is_proposal": proposal, "confidence": 0.9 if proposal else 0.1},
        "review": {"state": state if proposal else None, "replied_from_other": i % 2 == 0,
                   "concerns": ["design", "tests_or_docs"][: i % 3] if proposal else []},
    }


async def build_store(ctx: Any, n_threads: int, *, comments: int = COMMENTS_PER_THREAD) -> dict[str, Any]:
    """A store of `n_threads` threads over the seven frameworks' repositories and two others,
    `comments` comments each, an analysis for each (proposals in every review state of every
    repository once n_threads >= 288, failure reports of every kind), a verdict on one thread
    in 20, installations on three frameworks (one suspended) with posted comments (some
    hidden or deleted), dry runs and quiet decisions, a few buried threads, papers,
    contribution rules, the study's nightly record, and two nightly reports (the second
    diffed against the first). Returns what the routes need to name (a thread, a report)."""
    from analyzers.catalog import load_catalog
    from analyzers.rules import summarize_rules
    from bot.pipeline import store_analysis_if
    from bot.site.report import build_report, render_markdown, store_report
    from bot.site.study import refresh_study
    from bot.store.models import (
        Action,
        Comment,
        ContributionRules,
        Installation,
        JobRun,
        Paper,
        Repository,
        Thread,
    )
    from bot.store.threads import bury, insert_new, thread_grave
    from bot.store.verdicts import set_verdict

    cat = load_catalog()
    repos = _repos()
    methods = list(cat.methods)
    failures = list(cat.failures)
    kinds = ("issue", "pull_request", "discussion")
    threads = []
    for i in range(n_threads):
        created = NOW - timedelta(hours=3 * (n_threads - i)) if i % 97 else None
        threads.append({
            "repo": repos[i % len(repos)], "number": i + 1, "kind": kinds[i % 3],
            "title": f"Thread {i}: entropy <b>collapse</b> & GSPO 中文" if i % 7 else f"Support {methods[i % len(methods)]}",
            "body": "A body that pages never show.", "author": f"user{i % 50}",
            "author_association": "NONE", "author_is_bot": False,
            "state": "open" if i % 4 else "closed", "labels": ["bug"] if i % 2 else [],
            "assignees": [], "url": f"https://github.com/{repos[i % len(repos)]}/issues/{i + 1}",
            "complete": True, "muted": False, "created_at": created, "updated_at": created,
            "closed_at": None if i % 4 else created, "stored_at": NOW,
        })
    async with ctx.sessionmaker() as session, session.begin():
        for start in range(0, len(threads), 2000):
            await insert_new(session, Thread, threads[start:start + 2000])
    async with ctx.sessionmaker() as session:
        from sqlalchemy import select

        ids = {(r, n): tid for tid, r, n in (await session.execute(
            select(Thread.id, Thread.repo, Thread.number))).all()}
    rows = []
    for i, t in enumerate(threads):
        tid = ids[(t["repo"], t["number"])]
        for c in range(comments):
            rows.append({"thread_id": tid, "kind": "comment", "github_id": i * 100 + c + 1,
                         "author": f"user{(i + c + 1) % 50}", "author_association": "MEMBER",
                         "author_is_bot": False, "body": f"comment {c}",
                         "created_at": (t["created_at"] or NOW) + timedelta(minutes=c + 1),
                         "updated_at": None})
    async with ctx.sessionmaker() as session, session.begin():
        for start in range(0, len(rows), 5000):
            await insert_new(session, Comment, rows[start:start + 5000])
    async with ctx.sessionmaker() as session, session.begin():
        for i, t in enumerate(threads):
            role = (i // len(repos)) % 4
            await store_analysis_if(session, ids[(t["repo"], t["number"])], None,
                                    _result(i, role, methods, failures))
    # Installations: verl and trl installed, slime's suspended; repositories of no framework
    # installed too.
    installed = {repos[0]: 1, repos[1]: 1, repos[5]: 2, OTHER_REPOS[0]: 1}
    async with ctx.sessionmaker() as session, session.begin():
        session.add(Installation(id=1, account="org"))
        session.add(Installation(id=2, account="suspended-org", suspended=True))
        await session.flush()
        for name in repos:
            session.add(Repository(full_name=name, framework=None, installation_id=installed.get(name),
                                   comments_paused=name == repos[1],
                                   paused_reason="3 of the last 10 comments were hidden."
                                   if name == repos[1] else None))
        summary = summarize_rules({"CONTRIBUTING.md": "Every commit must be signed off "
                                   "(`git commit -s`).\n\nOpen an issue before a new feature.\n"},
                                  framework="verl")
        session.add(ContributionRules(repo=repos[0], files={}, summary=summary))
        for p in range(60):
            session.add(Paper(arxiv_id=f"2503.{10000 + p}", title=f"Paper {p}", aliases=[],
                              method=methods[p % len(methods)], source="pool"))
    # What the app did: a failure comment on failure reports of installed repositories
    # (posted, some hidden or deleted), dry runs, quiet decisions, command replies.
    async with ctx.sessionmaker() as session, session.begin():
        for i, t in enumerate(threads):
            if t["repo"] not in installed or i % 3:
                continue
            status = ("posted", "skipped", "dry_run", "posted")[i % 4]
            session.add(Action(repo=t["repo"], number=t["number"], kind="failure_comment",
                               status=status, dedupe_key=f"fc:{t['repo']}#{t['number']}",
                               body="**Entropy collapse?**\n\n<details><summary>why</summary>x</details>",
                               reason=None if status != "skipped" else "below the bar",
                               reactions_up=i % 3, reactions_down=i % 2,
                               is_minimized=i % 11 == 0, minimized_reason="OFF_TOPIC" if i % 11 == 0 else None,
                               comment_deleted=i % 13 == 0, created_at=NOW, updated_at=NOW))
            if i % 9 == 0:
                session.add(Action(repo=t["repo"], number=t["number"], kind="command",
                                   status="posted", body="Done.", created_at=NOW, updated_at=NOW))
    # Verdicts: one thread in 20, kinds and not-a-failure, by authors and maintainers.
    async with ctx.sessionmaker() as session, session.begin():
        rows_by_id = {t.id: t for t in await session.scalars(
            select(Thread).where(Thread.id.in_([ids[(t["repo"], t["number"])]
                                                for i, t in enumerate(threads) if i % 20 == 0])))}
        for i, t in enumerate(threads):
            if i % 20:
                continue
            thread = rows_by_id[ids[(t["repo"], t["number"])]]
            is_failure = i % 40 != 0
            await set_verdict(session, thread, is_failure_report=is_failure,
                              category=failures[(i // 20) % len(failures)] if is_failure else None,
                              login=f"person{i % 7}", role=("author", "maintainer")[i % 2],
                              comment_id=i, given_at=NOW - timedelta(minutes=i))
    # Threads gone from GitHub (their rows stay for the pages: a deletion noted after a
    # transfer elsewhere), and the jobs' records.
    async with ctx.sessionmaker() as session, session.begin():
        for i in range(0, n_threads, 50):
            t = threads[i]
            await bury(session, thread_grave(t["repo"], t["number"] + n_threads, t["kind"]), t["created_at"])
        session.add(JobRun(name="first_backfill", started_at=NOW, finished_at=NOW, outcome="ok"))
        session.add(JobRun(name="nightly", started_at=NOW, finished_at=NOW, outcome="ok"))
    await refresh_study(ctx)
    day = datetime.now(UTC).date()
    for d in (day - timedelta(days=2), day - timedelta(days=1)):
        data = await build_report(ctx, d)
        await store_report(ctx, data, render_markdown(data))
    t = threads[1]
    return {"thread": f"{t['repo']}/{t['number']}", "report": (day - timedelta(days=1)).isoformat(),
            "n_threads": n_threads}


def routes(named: dict[str, Any]) -> list[str]:
    """Every GET route the app serves, each once (with the list filters and pages it reads)."""
    thread = named["thread"]
    return [
        "/", "/study", "/study/sets/review.merged_prs.threads", "/api/study",
        "/proposals", "/proposals?framework=verl&state=declined", "/proposals?paper=gspo",
        "/proposals?page=2", "/proposals.atom", "/failures/entropy_collapse.atom",
        "/reports/feed.atom",
        "/verdicts", "/verdicts?page=2", "/api/verdicts",
        "/frameworks/verl", "/frameworks/slime", "/failures/entropy_collapse",
        "/failures/entropy_collapse?page=2", "/methods/gspo", "/methods/gspo?page=2",
        "/repos/", "/repos/verl-project/verl/preview", f"/threads/{thread}",
        "/reports/", f"/reports/{named['report']}", f"/reports/{named['report']}.md",
        "/api/methods", "/api/methods/gspo", "/api/failures", "/api/failures/entropy_collapse",
        "/api/frameworks", "/api/frameworks/verl", "/api/proposals",
        "/api/proposals?framework=trl&state=merged", "/api/proposals?limit=50&offset=100",
        "/api/repos", f"/api/threads/{thread}", "/api/actions", "/api/actions?limit=50",
        "/api/stats", "/api/export.json", "/api/export.csv", "/api/export.csv?limit=100",
        "/metrics", "/healthz",
        # deep pages (scale65): the last pages of the large store's lists, a page past the end
        "/proposals?page=19", "/proposals?page=99999", "/methods/gspo?page=9",
        "/api/proposals?limit=50&offset=9900", "/api/actions?limit=50&offset=3000",
    ]


@contextmanager
def counting(engine: Any) -> Iterator[list[tuple[str, Any]]]:
    """The statements `engine` runs inside the block, with their parameters (an
    executemany counts once)."""
    from sqlalchemy import event

    seen: list[tuple[str, Any]] = []

    def on_execute(conn: Any, cursor: Any, statement: str, parameters: Any, *args: Any) -> None:
        seen.append((statement, parameters))

    event.listen(engine.sync_engine, "before_cursor_execute", on_execute)
    try:
        yield seen
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", on_execute)


async def measure(client: Any, engine: Any, path: str) -> tuple[int, int, list[str]]:
    """One GET of `path`: its status, the statements it ran and their text."""
    status, seen, _ = await measure_body(client, engine, path)
    return status, len(seen), seen


async def measure_body(client: Any, engine: Any, path: str) -> tuple[int, list[str], bytes]:
    """One GET of `path`: its status, the statements it ran, and its body."""
    with counting(engine) as seen:
        resp = await client.get(path)
        body = await resp.read()
    return resp.status, [statement for statement, _ in seen], body


@asynccontextmanager
async def store_at(admin_url: str | None, folder: str) -> AsyncIterator[str]:
    """A freshly migrated database: a SQLite file in `folder`, or one created on the
    PostgreSQL server of `admin_url` (dropped after)."""
    from bot.store import migrate

    if admin_url is None:
        url = f"sqlite+aiosqlite:///{folder}/{uuid.uuid4().hex[:8]}.db"
        await asyncio.to_thread(migrate.upgrade, url)
        yield url
        return
    import asyncpg

    name = f"rlt_scale_{uuid.uuid4().hex[:10]}"
    dsn = admin_url.replace("postgresql+asyncpg://", "postgresql://")
    conn = await asyncpg.connect(dsn)
    await conn.execute(f'CREATE DATABASE "{name}"')
    await conn.close()
    url = admin_url.rpartition("/")[0] + "/" + name
    try:
        await asyncio.to_thread(migrate.upgrade, url)
        yield url
    finally:
        conn = await asyncpg.connect(dsn)
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.close()


# The lists that page by cursor (scale65): a page deep in each read by `offset` and the same
# rows read after the cursor the page before it links to (Link: rel="next"), both measured in
# the same run: the offset page is the baseline.
SEEK_LISTS = ("/api/proposals", "/api/actions")
SEEK_LIMIT = 50
SEEK_DEPTH = 0.95  # the page at 95% of the list (before the few threads of no known date)


async def _median_ms(client: Any, path: str, n_requests: int) -> tuple[float, bytes]:
    times = []
    body = b""
    for _ in range(n_requests):
        t0 = time.perf_counter()
        resp = await client.get(path)
        body = await resp.read()
        times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times), body


async def seek_pages(client: Any, engine: Any, n_requests: int
                     ) -> dict[str, tuple[str, int, int, float, float]]:
    """list -> (offset page, its statements, the cursor page's, median ms by offset, by cursor)."""
    out = {}
    for listing in SEEK_LISTS:
        total = int((await client.get(f"{listing}?limit=1")).headers["X-Total-Count"])
        limit = min(SEEK_LIMIT, max(1, total // 4))  # (a small store's short lists)
        offset = min(max(limit, int(total * SEEK_DEPTH) // limit * limit), total - 1)
        by_offset = f"{listing}?limit={limit}&offset={offset}"
        before = await client.get(f"{listing}?limit={limit}&offset={offset - limit}")
        by_cursor = before.headers["Link"].split(";")[0][1:-1]
        _, offset_statements, offset_body = await measure_body(client, engine, by_offset)
        _, cursor_statements, cursor_body = await measure_body(client, engine, by_cursor)
        assert offset_body == cursor_body, listing  # the same rows either way
        offset_ms, _ = await _median_ms(client, by_offset, n_requests)
        cursor_ms, _ = await _median_ms(client, by_cursor, n_requests)
        out[listing] = (by_offset, len(offset_statements), len(cursor_statements), offset_ms,
                        cursor_ms)
    return out


# The HTML list that pages by cursor (site66): the page at 95% of /proposals asked by its
# number (`?page=N`, by offset: a bookmark), after the cursor of the Older link of the page
# before it, and before the cursor of the Newer link of the page after it (the same rows).
HTML_PAGE = 500  # bot.site.pages.PROPOSALS_PAGE


def _listed(html: bytes) -> list[str]:
    import re

    return re.findall(r'<a href="/threads/([^"]+)">', html.decode())


def _linked(html: bytes, rel: str) -> str:
    import re

    found = re.search(rf'<a rel="{rel}" href="([^"]+)">', html.decode())
    assert found, rel
    return found.group(1).replace("&amp;", "&")


async def html_seek_pages(client: Any, n_requests: int
                          ) -> tuple[str, float, float, float] | None:
    """(the numbered page, median ms by its number, after the Older link's cursor, before the
    Newer link's); None when the list has fewer than three pages."""
    total = int((await client.get("/api/proposals?limit=1")).headers["X-Total-Count"])
    pages = -(-total // HTML_PAGE)
    if pages < 3:
        return None
    number = max(2, min(pages - 1, round(pages * SEEK_DEPTH)))
    by_number = f"/proposals?page={number}"
    older = _linked(await (await client.get(f"/proposals?page={number - 1}")).read(), "next")
    newer = _linked(await (await client.get(f"/proposals?page={number + 1}")).read(), "prev")
    number_ms, body = await _median_ms(client, by_number, n_requests)
    older_ms, older_body = await _median_ms(client, older, n_requests)
    newer_ms, newer_body = await _median_ms(client, newer, n_requests)
    assert _listed(body) == _listed(older_body) == _listed(newer_body), by_number
    return by_number, number_ms, older_ms, newer_ms


async def run_size(admin_url: str | None, n: int, n_requests: int, folder: str,
                   lists_only: bool = False) -> tuple[dict[str, tuple[int, int, float, int]],
                              dict[str, tuple[str, int, int, float, float]],
                              tuple[str, float, float, float] | None]:
    """path -> (status, statements, median ms, bytes) on a store of `n` threads, and the
    `seek_pages` and `html_seek_pages` figures (`lists_only`: these alone)."""
    from aiohttp.test_utils import TestClient, TestServer

    from bot.app import create_app
    from bot.config import Settings
    from bot.context import AppContext

    async with store_at(admin_url, folder) as url:
        ctx = AppContext.create(Settings.from_env({}, database_url=url, dry_run=True))
        try:
            t0 = time.perf_counter()
            named = await build_store(ctx, n)
            if ctx.engine.dialect.name == "postgresql":
                # The statistics a live database has (autovacuum's ANALYZE): a database just
                # loaded has none yet, and the planner's guesses are not what it would do.
                async with ctx.engine.connect() as conn:
                    await conn.execution_options(isolation_level="AUTOCOMMIT")
                    await conn.exec_driver_sql("ANALYZE")
            print(f"  store of {n} threads built in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
            out = {}
            async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
                for path in [] if lists_only else routes(named):
                    status, seen, body = await measure_body(client, ctx.engine, path)
                    ms, _ = await _median_ms(client, path, n_requests)
                    out[path] = (status, len(seen), ms, len(body))
                seek = await seek_pages(client, ctx.engine, n_requests)
                html_seek = await html_seek_pages(client, n_requests)
            return out, seek, html_seek
        finally:
            await ctx.close()


LONG_THREAD = ("someone/long-thread", 1)


async def add_long_thread(ctx: Any, n: int) -> str:
    """One thread with `n` comments and `n` actions (the app answered it `n` times)."""
    from bot.store.models import Action, Comment
    from bot.store.threads import insert_new, upsert_thread

    repo, number = LONG_THREAD
    async with ctx.sessionmaker() as session, session.begin():
        thread = await upsert_thread(session, {
            "repo": repo, "number": number, "kind": "issue", "title": "A long thread",
            "body": "b", "author": "alice", "state": "open", "complete": True,
            "created_at": NOW - timedelta(days=30)})
        for start in range(0, n, 5000):
            await insert_new(session, Comment, [
                {"thread_id": thread.id, "kind": "comment", "github_id": 10 ** 9 + i,
                 "author": f"user{i % 50}", "author_association": "NONE", "author_is_bot": False,
                 "body": f"Same here after step {i}: entropy drops to 0.1.",
                 "created_at": NOW - timedelta(days=30) + timedelta(minutes=i)}
                for i in range(start, min(n, start + 5000))])
        session.add_all(Action(repo=repo, number=number, kind="command", status="posted",
                               body=f"**Done** ({i}).", created_at=NOW + timedelta(seconds=i),
                               updated_at=NOW) for i in range(n))
    return f"{repo}/{number}"


async def long_thread(admin_url: str | None, n_threads: int, n: int, n_requests: int) -> None:
    """The page and the JSON of one thread of `n` comments and `n` actions: status, bytes,
    median ms (the whole comments as `?comments_limit=` a page can hold at most)."""
    from aiohttp.test_utils import TestClient, TestServer

    from bot.app import create_app
    from bot.config import Settings
    from bot.context import AppContext

    with tempfile.TemporaryDirectory() as folder:
        async with store_at(admin_url, folder) as url:
            ctx = AppContext.create(Settings.from_env({}, database_url=url, dry_run=True))
            try:
                await build_store(ctx, n_threads)
                path = await add_long_thread(ctx, n)
                backend = "PostgreSQL" if admin_url else "SQLite"
                print(f"{backend}: one thread of {n} comments and {n} actions in a store of "
                      f"{n_threads}, median of {n_requests} requests")
                print(f"{'route':52} {'status':>6} {'KiB':>8} {'ms':>8}")
                async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
                    for route in (f"/threads/{path}", f"/api/threads/{path}",
                                  f"/api/threads/{path}?comments_limit={n}"):
                        ms, body = await _median_ms(client, route, n_requests)
                        status = (await client.get(route)).status
                        print(f"{route:52} {status:>6} {len(body) / 1024:8.0f} {ms:8.1f}")
            finally:
                await ctx.close()


async def main_async(args: argparse.Namespace) -> None:
    if args.long_thread:
        await long_thread(args.database_url, args.small, args.long_thread, args.requests)
        return
    with tempfile.TemporaryDirectory() as folder:
        small, small_seek, small_html = await run_size(args.database_url, args.small,
                                                       args.requests, folder, args.lists_only)
        large, large_seek, large_html = await run_size(args.database_url, args.large,
                                                       args.requests, folder, args.lists_only)
    backend = "PostgreSQL" if args.database_url else "SQLite"
    print(f"{backend}: {args.small} and {args.large} threads ({COMMENTS_PER_THREAD} comments each), "
          f"median of {args.requests} requests")
    print(f"{'route':44} {'status':>7} {'stmts S/L':>9} {'ms S':>7} {'ms L':>7} {'L/S':>5} "
          f"{'KiB L':>7}")
    for path, (status, count, ms, _) in small.items():
        lstatus, lcount, lms, size = large[path]
        shown = status if status == lstatus else f"{status}/{lstatus}"
        print(f"{path[:44]:44} {shown!s:>7} {f'{count}/{lcount}':>9} {ms:7.1f} {lms:7.1f} "
              f"{lms / ms if ms else 0:5.1f} {size / 1024:7.0f}")
    print(f"\nThe same page of {SEEK_LIMIT} at {SEEK_DEPTH:.0%} of a list, by offset (the baseline) "
          "and after the cursor the page before links to (same run, same rows)")
    print(f"{'page (large store)':44} {'stmts O/C':>9} {'S off':>7} {'S cur':>7} {'L off':>7} "
          f"{'L cur':>7} {'L off/cur':>9}")
    for listing, (path, o_count, c_count, o_ms, c_ms) in large_seek.items():
        _, _, _, so_ms, sc_ms = small_seek[listing]
        print(f"{path[:44]:44} {f'{o_count}/{c_count}':>9} {so_ms:7.1f} {sc_ms:7.1f} {o_ms:7.1f} "
              f"{c_ms:7.1f} {o_ms / c_ms if c_ms else 0:9.1f}")
    print(f"\nThe same page of /proposals ({HTML_PAGE} a page) by its number (offset), after the "
          "Older link's cursor and before the Newer link's (same run, same rows), whole request")
    print(f"{'size':>7} {'page':28} {'ms number':>9} {'ms after':>9} {'ms before':>9}")
    for size, html in ((args.small, small_html), (args.large, large_html)):
        if html is not None:
            path, number_ms, older_ms, newer_ms = html
            print(f"{size:7} {path:28} {number_ms:9.1f} {older_ms:9.1f} {newer_ms:9.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=300)
    parser.add_argument("--large", type=int, default=20_000)
    parser.add_argument("--requests", type=int, default=5)
    parser.add_argument("--lists-only", action="store_true",
                        help="only the lists paged by offset and by cursor (the last two tables)")
    parser.add_argument("--long-thread", type=int, default=0, metavar="N",
                        help="only one thread of N comments and N actions: its page and JSON")
    parser.add_argument("--database-url", default=None,
                        help="a PostgreSQL admin URL (postgresql+asyncpg://...); default SQLite")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
