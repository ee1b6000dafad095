"""A proposal's review-state history (history75: table `review_transitions`, migration 0026,
bot/store/history.py): one row per change of the stored state, written by each of the
pipeline's three writers, never twice for one change (redelivered webhooks, two workers at
once), the nightly re-analysis's changes marked as the analyzer's; shown on the thread page
and in /api/threads. SQLite and PostgreSQL; webhook payloads from
../shared/fixtures/webhooks/ (skipped without ../shared)."""

from __future__ import annotations

import asyncio
import copy
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from analyzers.version import ANALYZER_VERSION
from bot.store.models import Analysis, ReviewTransition
from bot.store.threads import upsert_thread
from tests.test_edit_order import _shared, deliver
from tests.test_migrations import _execute, downgrade, schema_differences

HELLO = "Codertocat/Hello-World"
TITLE = "Support DAPO (arXiv:2503.14476) clip-higher"
BODY = ("Please add DAPO: https://arxiv.org/abs/2503.14476 . I can open a PR implementing the "
        "dynamic sampling and clip-higher.")
REPLY = "Thanks, sounds good, we would welcome a PR."
CLOSING = ("Closing: this is out of scope for the library, please implement it as a recipe in "
           "your own repository.")


async def history(ctx: Any) -> list[tuple[str | None, str | None, str]]:
    async with ctx.sessionmaker() as session:
        rows = await session.scalars(select(ReviewTransition)
                                     .order_by(ReviewTransition.observed_at, ReviewTransition.id))
        return [(r.from_state, r.to_state, r.source) for r in rows]


# ---- migration 0026 ------------------------------------------------------------------------
def test_0026_backfills_one_row_per_proposal_and_goes_down_and_up(db_url: str) -> None:
    """Going up from 0025: one row per stored proposal (none for other threads), from no
    state to its stored one, observed when the state last changed (0022) or else at its
    analysis time, marked `backfill`. Down: the table goes; up again: backfilled again."""
    downgrade(db_url, "0025")
    rows = ", ".join(f"({i}, 'o/r', {i}, 'issue', 't', 'open', '[]', '[]', true, false, "
                     "CURRENT_TIMESTAMP)" for i in (1, 2, 3))
    asyncio.run(_execute(db_url, "INSERT INTO threads (id, repo, number, kind, title, state, "
                                 f"labels, assignees, complete, muted, stored_at) VALUES {rows}"))
    analyses = ("(1, 1, 'v1', '{}', false, true, 'declined', '[]', '[]', "
                "'2026-01-02 03:04:05+00:00', '2025-12-30 00:00:00+00:00'), "
                "(2, 2, 'v1', '{}', false, true, 'open_no_reply', '[]', '[]', "
                "'2026-01-03 00:00:00+00:00', NULL), "
                "(3, 3, 'v1', '{}', true, false, 'open_replied', '[]', '[]', "
                "'2026-01-04 00:00:00+00:00', NULL)")
    asyncio.run(_execute(db_url, "INSERT INTO analyses (id, thread_id, analyzer_version, result, "
                                 "is_failure_report, is_proposal, review_state, methods, "
                                 "arxiv_ids, analyzed_at, review_state_changed_at) "
                                 f"VALUES {analyses}"))
    from bot.store import migrate

    migrate.upgrade(db_url)
    expected = [(1, None, "declined", "v1", "backfill", datetime(2025, 12, 30, tzinfo=UTC)),
                (2, None, "open_no_reply", "v1", "backfill", datetime(2026, 1, 3, tzinfo=UTC))]

    async def backfilled() -> list[Any]:
        from bot.store.db import make_engine, make_sessionmaker

        engine = make_engine(db_url)
        try:
            async with make_sessionmaker(engine)() as session:
                return [(r.thread_id, r.from_state, r.to_state, r.analyzer_version, r.source,
                         r.observed_at) for r in await session.scalars(
                    select(ReviewTransition).order_by(ReviewTransition.thread_id))]
        finally:
            await engine.dispose()

    assert asyncio.run(backfilled()) == expected
    assert schema_differences(db_url) == []
    downgrade(db_url, "0025")
    tables = asyncio.run(_execute(db_url, "SELECT count(*) FROM analyses"))
    assert tables == [(3,)]
    with pytest.raises(Exception, match="review_transitions"):
        asyncio.run(_execute(db_url, "SELECT count(*) FROM review_transitions"))
    migrate.upgrade(db_url)
    assert asyncio.run(backfilled()) == expected
    asyncio.run(_execute(db_url, "DELETE FROM threads WHERE id = 1"))  # rows go with the thread
    assert [r[0] for r in asyncio.run(backfilled())] == [2]


# ---- the webhook path ----------------------------------------------------------------------
def opened(shared_dir: Path) -> dict[str, Any]:
    payload = _shared(shared_dir, "issues/opened.json")
    payload["issue"].update(title=TITLE, body=BODY)
    return payload


def commented(shared_dir: Path, comment_id: int, body: str, at: str) -> dict[str, Any]:
    """issue_comment.created on the opened issue by a maintainer other than its opener."""
    payload = _shared(shared_dir, "issue_comment/created.json")
    payload["issue"].update(title=TITLE, body=BODY)
    payload["comment"].update(id=comment_id, body=body, created_at=at, updated_at=at,
                              author_association="MEMBER",
                              user={"login": "maint", "id": 7001, "type": "User"})
    return payload


def closed(opened_payload: dict[str, Any], at: str) -> dict[str, Any]:
    payload = copy.deepcopy(opened_payload)
    payload["action"] = "closed"
    payload["issue"].update(state="closed", state_reason="not_planned", closed_at=at,
                            updated_at=at)
    payload["sender"] = {"login": "maint", "id": 7001, "type": "User"}
    return payload


@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
async def test_webhooks_record_each_change_of_a_proposals_state_once(
        ctx: Any, shared_dir: Path, batched: bool) -> None:
    """Opened (no reply), a maintainer's reply (replied), the reply redelivered (nothing), a
    closing comment (still replied: nothing), the close (redirected): three rows, each from
    the state stored before, source `webhook`, this analyzer's version."""
    first = opened(shared_dir)
    reply = commented(shared_dir, 9101, REPLY, "2019-05-15T16:00:00Z")
    await deliver(ctx, batched, ("issues", first))
    await deliver(ctx, batched, ("issue_comment", reply))
    await deliver(ctx, batched, ("issue_comment", reply))  # GitHub's "Redeliver"
    await deliver(ctx, batched, ("issue_comment",
                                 commented(shared_dir, 9102, CLOSING, "2019-05-16T15:20:00Z")))
    await deliver(ctx, batched, ("issues", closed(first, "2019-05-16T15:20:05Z")))
    assert await history(ctx) == [(None, "open_no_reply", "webhook"),
                                  ("open_no_reply", "open_replied", "webhook"),
                                  ("open_replied", "redirected", "webhook")]
    async with ctx.sessionmaker() as session:
        assert set(await session.scalars(select(ReviewTransition.analyzer_version))) == {
            ANALYZER_VERSION}
        assert await session.scalar(select(Analysis.review_state)) == "redirected"


@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
async def test_two_workers_storing_one_change_record_it_once(
        ctx: Any, shared_dir: Path, batched: bool) -> None:
    """The same reply delivered twice (two delivery ids) and handled at once, as two workers
    do: the thread's writers are serialised and the second finds the state stored, so one
    row for the change."""
    await deliver(ctx, batched, ("issues", opened(shared_dir)))
    reply = commented(shared_dir, 9101, REPLY, "2019-05-15T16:00:00Z")
    await asyncio.gather(*(deliver(ctx, batched, ("issue_comment", copy.deepcopy(reply)))
                           for _ in range(3)))
    assert await history(ctx) == [(None, "open_no_reply", "webhook"),
                                  ("open_no_reply", "open_replied", "webhook")]


# ---- the other writers: sync, command, the nightly re-analysis ------------------------------
T0 = datetime(2026, 11, 1, 9, tzinfo=UTC)


async def older_analysis(ctx: Any, number: int, state: str, *, history_row: bool) -> int:
    """Proposal `number` of huggingface/trl closed by a stale bot (it reads `lapsed` now), its
    analysis stored by an older analyzer version reading it `state` (test_feeds' helper), and,
    with `history_row`, its backfilled row. Returns the thread's id."""
    from bot.store.threads import get_thread
    from tests.test_feeds import _closed_proposal_read_by_an_older_analyzer

    await _closed_proposal_read_by_an_older_analyzer(ctx, number, state)
    async with ctx.sessionmaker() as session, session.begin():
        thread = await get_thread(session, "huggingface/trl", number)
        assert thread is not None
        if history_row:
            session.add(ReviewTransition(thread_id=thread.id, to_state=state, observed_at=T0,
                                         analyzer_version="2020.01.01-1", source="backfill"))
        return thread.id


async def test_a_reanalysis_changing_the_state_is_recorded_as_the_analyzers(ctx: Any) -> None:
    """The nightly re-analysis under a new analyzer version reads `lapsed` where the older
    one read `closed_other`: recorded with source `reanalysis` and the new version (no
    maintainer did anything); one that reads the state as before records nothing; a second
    night (nothing stale) nothing more."""
    from bot.scheduler import step_reanalyse

    await older_analysis(ctx, 41, "closed_other", history_row=True)
    await older_analysis(ctx, 42, "lapsed", history_row=True)
    await step_reanalyse(ctx)
    await step_reanalyse(ctx)
    async with ctx.sessionmaker() as session:
        rows = (await session.execute(
            select(ReviewTransition.from_state, ReviewTransition.to_state,
                   ReviewTransition.source, ReviewTransition.analyzer_version)
            .order_by(ReviewTransition.id))).all()
    assert [tuple(r) for r in rows] == [
        (None, "closed_other", "backfill", "2020.01.01-1"),
        (None, "lapsed", "backfill", "2020.01.01-1"),
        ("closed_other", "lapsed", "reanalysis", ANALYZER_VERSION)]


async def test_each_writer_records_its_source_and_only_changes(ctx: Any) -> None:
    """The three writers of bot.pipeline: the worker's batch (`threads_changed`, here a
    sync's trigger), one thread (`thread_changed`, a `/rltracker recheck`), the compare and
    set (`store_analysis_if`: only when its compare holds). A proposal first stored with no
    history gets its first row from no state."""
    from bot.pipeline import ThreadChange, store_analysis_if, thread_changed, threads_changed

    thread_id = await older_analysis(ctx, 43, "closed_other", history_row=False)

    async def set_state(state: str) -> None:
        async with ctx.sessionmaker() as session, session.begin():
            await session.execute(update(Analysis).values(review_state=state))

    await threads_changed(ctx, [ThreadChange("huggingface/trl", 43, "sync")])
    await threads_changed(ctx, [ThreadChange("huggingface/trl", 43, "sync")])
    assert await history(ctx) == [(None, "lapsed", "sync")]
    await set_state("closed_other")  # as if another analysis had read it so
    await thread_changed(ctx, "huggingface/trl", 43, trigger="command")
    await thread_changed(ctx, "huggingface/trl", 43, trigger="issues.edited")
    assert await history(ctx) == [(None, "lapsed", "sync"), ("closed_other", "lapsed", "command")]
    result = {"proposal": {"is_proposal": True}, "review": {"state": "declined"}}
    async with ctx.sessionmaker() as session, session.begin():
        assert not await store_analysis_if(session, thread_id, "2020.01.01-1", result)
    async with ctx.sessionmaker() as session, session.begin():
        assert await store_analysis_if(session, thread_id, ANALYZER_VERSION, result)
    assert await history(ctx) == [(None, "lapsed", "sync"), ("closed_other", "lapsed", "command"),
                                  ("lapsed", "declined", "reanalysis")]


# ---- shown: the thread page and /api/threads -----------------------------------------------
async def test_the_thread_page_and_the_api_show_the_history(ctx: Any, shared_dir: Path) -> None:
    """After the webhooks of a proposal replied to and closed with a pointer elsewhere: the
    thread page lists the changes oldest first with their days, the states' display labels
    and the source; /api/threads gives them as `review_history` (states as keys, ISO
    times). A state the page has no label for is shown escaped."""
    from aiohttp.test_utils import TestClient, TestServer

    from bot.app import create_app

    first = opened(shared_dir)
    await deliver(ctx, False, ("issues", first),
                  ("issue_comment", commented(shared_dir, 9101, REPLY, "2019-05-15T16:00:00Z")),
                  ("issue_comment", commented(shared_dir, 9102, CLOSING, "2019-05-16T15:20:00Z")),
                  ("issues", closed(first, "2019-05-16T15:20:05Z")))
    async with ctx.sessionmaker() as session, session.begin():
        thread_id = await session.scalar(select(Analysis.thread_id))
        session.add(ReviewTransition(thread_id=thread_id, from_state="redirected",
                                     to_state="<b>odd</b>", observed_at=datetime.now(UTC),
                                     analyzer_version="9999.01.01-1", source="reanalysis"))
    async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
        page = await client.get(f"/threads/{HELLO}/1")
        assert page.status == 200
        html = await page.text()
        api = await client.get(f"/api/threads/{HELLO}/1")
        assert api.status == 200
        found = await api.json()
    timeline = html.split('<ol id="review-history"', 1)[1].split("</ol>", 1)[0]
    items = timeline.split("<li>")[1:]
    assert len(items) == 4
    assert '<span class="tag">open, no reply</span>' in items[0] and "→" not in items[0]
    assert "open, no reply → " in items[1] and ">open, replied</span>" in items[1]
    assert "open, replied → " in items[2] and ">redirected</span>" in items[2]
    assert all("(GitHub event)" in item for item in items[:3])
    assert "&lt;b&gt;odd&lt;/b&gt;" in items[3] and "<b>odd" not in html
    assert "re-analysis (new analyzer version) 9999.01.01-1" in items[3]
    assert [(h["from_state"], h["to_state"], h["source"]) for h in found["review_history"]] == [
        (None, "open_no_reply", "webhook"), ("open_no_reply", "open_replied", "webhook"),
        ("open_replied", "redirected", "webhook"), ("redirected", "<b>odd</b>", "reanalysis")]
    assert all(h["observed_at"].endswith("Z") for h in found["review_history"])
    assert found["review_history"][0]["analyzer_version"] == ANALYZER_VERSION


# ---- the nightly report --------------------------------------------------------------------
async def test_the_report_marks_a_change_the_reanalysis_stored(ctx: Any) -> None:
    """Between two reports one proposal lapses by a person's recheck and another by the
    nightly re-analysis under a new analyzer version: both are listed as lapsed (the
    snapshots say so), the second marked as the re-analysis's reading with the version, in
    the data, the posted Markdown and the page, so it is not read as a maintainer's act."""
    from bot.pipeline import thread_changed
    from bot.scheduler import step_reanalyse
    from bot.site.report import build_report, render_html, render_markdown, store_report
    from bot.store.types import utcnow

    await older_analysis(ctx, 41, "closed_other", history_row=True)
    await older_analysis(ctx, 44, "closed_other", history_row=True)
    first_at = utcnow() - timedelta(minutes=1)
    first = await build_report(ctx, first_at.date() - timedelta(days=1), now=first_at)
    await store_report(ctx, first, render_markdown(first))
    await thread_changed(ctx, "huggingface/trl", 44, trigger="command")
    await step_reanalyse(ctx)
    data = await build_report(ctx, first_at.date(), now=utcnow() + timedelta(minutes=1))
    lapsed = {c["key"]: c for c in data["frameworks"]["trl"]["changes"]["lapsed"]}
    assert set(lapsed) == {"huggingface/trl#41", "huggingface/trl#44"}
    assert lapsed["huggingface/trl#41"]["reread"] == ANALYZER_VERSION
    assert "reread" not in lapsed["huggingface/trl#44"]
    markdown = render_markdown(data)
    line = next(x for x in markdown.splitlines() if x.startswith("- **Lapsed**"))
    assert line.count("read so by the nightly re-analysis") == 1
    assert line.index("trl#41") < line.index("re-analysis") < line.index("trl#44")
    assert f"read so by the nightly re-analysis, analyzer {ANALYZER_VERSION}" in render_html(data)


async def test_a_reanalysis_waiting_behind_a_webhook_records_no_second_row(ctx: Any) -> None:
    """PostgreSQL, a webhook and the nightly re-analysis storing the same change at once: the
    thread's row held (a third session), the webhook's analysis waits for it, then the
    re-analysis's compare and set. Released, the webhook stores `lapsed` and its row; the
    re-analysis finds the version changed and stores nothing, and records nothing (its
    comparison made before the thread was locked saw the old state: a second row)."""
    if ctx.engine.dialect.name != "postgresql":
        pytest.skip("two writers at once: PostgreSQL (SQLite has one writer)")
    from bot.pipeline import thread_changed
    from bot.scheduler import step_reanalyse
    from bot.store.models import Thread
    from tests.test_analysis_order import waiters

    thread_id = await older_analysis(ctx, 45, "closed_other", history_row=True)
    async with ctx.engine.connect() as blocker, ctx.engine.connect() as watcher:
        await blocker.execute(select(Thread.id).where(Thread.id == thread_id).with_for_update())
        webhook = asyncio.create_task(thread_changed(ctx, "huggingface/trl", 45,
                                                     trigger="issues.closed"))
        for _ in range(100_000):
            if await waiters(watcher) or webhook.done():
                break
            await asyncio.sleep(0)
        assert not webhook.done()
        nightly = asyncio.create_task(step_reanalyse(ctx))
        for _ in range(100_000):
            if nightly.done() or await waiters(watcher) >= 2:
                break
            await asyncio.sleep(0)
        assert not nightly.done()
        await blocker.rollback()
        await asyncio.gather(webhook, nightly)
    assert await history(ctx) == [(None, "closed_other", "backfill"),
                                  ("closed_other", "lapsed", "webhook")]


async def test_a_repository_made_private_leaves_no_history(ctx: Any) -> None:
    """Nothing of a private repository is kept (bot/store/privacy.py): its threads' review
    history goes with them (ON DELETE CASCADE, on SQLite with foreign keys on too)."""
    from bot.store.privacy import forget_repository

    await older_analysis(ctx, 46, "closed_other", history_row=True)
    async with ctx.sessionmaker() as session, session.begin():
        await forget_repository(session, "huggingface/trl")
    assert await history(ctx) == []


async def test_a_thread_joined_into_its_other_copy_brings_its_history(ctx: Any) -> None:
    """A proposal transferred to a place already stored (bot.store.threads.move_thread joins
    the two): the copy kept takes the history of the one that goes when it has none."""
    from bot.store.threads import get_thread, move_thread

    await older_analysis(ctx, 47, "closed_other", history_row=True)
    async with ctx.sessionmaker() as session, session.begin():
        target = await upsert_thread(session, {"repo": "huggingface/trl", "number": 48,
                                               "kind": "issue", "title": "Add CISPO loss"})
        await move_thread(session, "huggingface/trl", 47,
                          {"repo": "huggingface/trl", "number": 48, "kind": "issue"})
        assert await get_thread(session, "huggingface/trl", 47) is None
        kept = target.id
    async with ctx.sessionmaker() as session:
        assert set(await session.scalars(select(ReviewTransition.thread_id))) == {kept}
    assert await history(ctx) == [(None, "closed_other", "backfill")]


async def test_a_long_history_is_bounded_on_the_page_and_paged_in_the_api(ctx: Any) -> None:
    """left78: a proposal reopened and closed 200 times listed all 200 changes on the thread
    page and in /api/threads' `review_history`, however many there are. Now the page shows
    the latest 20 and says how many earlier ones there are (with the API's address of them);
    the API gives the latest `limit` (100 by default, at most 2,000, read by `api_paging`),
    `offset` skipping the newest, oldest first within the page, and `review_history_total`.
    Failed on main (200 items on the page and in the API)."""
    from aiohttp.test_utils import TestClient, TestServer

    from bot.app import create_app

    thread_id = await older_analysis(ctx, 51, "declined", history_row=False)
    states = ["open_replied", "declined"]
    async with ctx.sessionmaker() as session, session.begin():
        session.add_all(ReviewTransition(
            thread_id=thread_id, from_state=None if i == 0 else states[(i - 1) % 2],
            to_state=states[i % 2], observed_at=T0 + timedelta(hours=i),
            analyzer_version=f"v{i}", source="webhook") for i in range(200))
    path = "huggingface/trl/51"
    async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
        html = await (await client.get(f"/threads/{path}")).text()
        default = await (await client.get(f"/api/threads/{path}")).json()
        whole = await (await client.get(f"/api/threads/{path}?limit=5000")).json()
        page = await (await client.get(f"/api/threads/{path}?limit=10&offset=5")).json()
        past = await (await client.get(f"/api/threads/{path}?offset=200")).json()
        bad = await client.get(f"/api/threads/{path}?limit=0")
        assert bad.status == 400
    timeline = html.split('<ol id="review-history"', 1)[1].split("</ol>", 1)[0]
    assert timeline.count("<li>") == 20
    assert "180 earlier changes not shown" in html, html
    assert f'href="/api/threads/{path}?limit=2000"' in html
    assert [h["analyzer_version"] for h in default["review_history"]] == [f"v{i}" for i in range(100, 200)]
    assert default["review_history_total"] == whole["review_history_total"] == 200
    assert len(whole["review_history"]) == 200 and whole["review_history"][0]["from_state"] is None
    assert [h["analyzer_version"] for h in page["review_history"]] == [f"v{i}" for i in range(185, 195)]
    assert past["review_history"] == [] and past["review_history_total"] == 200
