"""GraphQL sync against the fake GitHub server answering from GitHub's real schema."""

from __future__ import annotations

import dataclasses
import re
import time
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from gidgethub import sansio
from sqlalchemy import func, select

from bot.context import AppContext
from bot.github.sync import SyncError, sync
from bot.pipeline import sync_changed
from bot.store.models import Analysis, Comment, SyncCursor, Thread
from bot.store.threads import load_thread_record
from bot.webhooks import events
from tests.fake_graphql import REPOS, ActingOnCall, FakeData, FakeGraphQL
from tests.fakegithub import clocked_github, install_app, no_sleep

THREADS_PER_REPO = 80  # 560 threads; every 40th has 250 comments, some PRs 45 reviews


@pytest.fixture
def world(fake_github: Any, schema_path: Path) -> tuple[FakeData, FakeGraphQL]:
    data = FakeData.generate(THREADS_PER_REPO, seed=7)
    responder = FakeGraphQL(data, schema_path)
    fake_github.graphql_handler = responder
    return data, responder


def graphql_calls(fake: Any) -> int:
    return len(fake.requests("POST", r"^/graphql$"))


async def count(ctx: AppContext, model: Any) -> int:
    async with ctx.sessionmaker() as session:
        return int(await session.scalar(select(func.count()).select_from(model)) or 0)


async def assert_matches(ctx: AppContext, data: FakeData) -> None:
    """Every thread and comment of the fake is stored, with the fake's values."""
    threads = data.all_threads()
    assert await count(ctx, Thread) == len(threads)
    assert await count(ctx, Comment) == sum(data.comment_count(t) for t in threads)
    async with ctx.sessionmaker() as session:
        for t in threads[::37]:
            record = await load_thread_record(session, t["_repo"], t["number"])
            assert record is not None
            assert record["title"] == t["title"]
            assert len(record["comments"]) == data.comment_count(t)
            assert record["updated_at"] == t["updatedAt"]


async def test_backfill_stores_every_thread_and_comment(sync_ctx: AppContext, fake_github: Any, world: Any) -> None:
    data, _ = world
    stats = await sync(sync_ctx, sleep=no_sleep)
    await assert_matches(sync_ctx, data)
    requests = graphql_calls(fake_github)
    threads = len(data.all_threads())
    assert stats.requests == requests
    assert requests / threads <= 0.02, f"{requests} requests for {threads} threads"
    # Every stream is marked done with its high-water mark.
    async with sync_ctx.sessionmaker() as session:
        cursors = list(await session.scalars(select(SyncCursor)))
    assert len(cursors) == 3 * len(REPOS)
    assert all(c.full_done and c.cursor is None and c.updated_since for c in cursors)


async def test_records_match_the_rest_spelling(sync_ctx: AppContext, fake_github: Any, world: Any) -> None:
    data, _ = world
    repo = "huggingface/trl"
    bot_issue = data.add_thread(repo, "issue", n_comments=0, closed=True, body="")
    bot_issue["author"] = {"__typename": "Bot", "login": "github-actions"}
    merged = data.add_thread(repo, "pull_request", n_comments=1, closed=False)
    merged.update(state="MERGED", merged=True, mergedAt=merged["updatedAt"],
                  closedAt=merged["updatedAt"], mergedBy={"__typename": "User", "login": "eve"})
    merged["_closer"] = {"__typename": "User", "login": "eve"}
    await sync(sync_ctx, [repo], sleep=no_sleep, on_changed=partial(sync_changed, sync_ctx))
    async with sync_ctx.sessionmaker() as session:
        rec = await load_thread_record(session, repo, bot_issue["number"])
        pr = await load_thread_record(session, repo, merged["number"])
    assert rec["author"] == "github-actions[bot]" and rec["author_is_bot"] is True
    assert rec["body"] is None  # GraphQL "" is REST's null
    assert rec["state"] == "closed" and rec["state_reason"] == bot_issue["stateReason"].lower()
    assert rec["closed_by"] == bot_issue["_closer"]["login"]
    assert pr["state"] == "merged" and pr["closed_by"] == "eve"
    # Sync analyses what it stored, through the same pipeline as webhooks.
    assert await count(sync_ctx, Analysis) == THREADS_PER_REPO + 2
    assert rec["kind"] == "issue" and pr["kind"] == "pull_request"


async def test_refresh_after_a_few_changes_costs_a_handful(sync_ctx: AppContext, fake_github: Any, world: Any) -> None:
    data, _ = world
    await sync(sync_ctx, sleep=no_sleep)
    before = graphql_calls(fake_github)
    long_issue = next(t for t in data.all_threads() if t["_kind"] == "issue" and len(t["_comments"]) > 100)
    data.touch(long_issue["_repo"], "issue", long_issue["number"], new_comments=3)
    data.touch("huggingface/trl", "pull_request", data.repos["huggingface/trl"]["pull_request"][0]["number"], title="renamed")
    first_disc = data.repos["alibaba/ROLL"]["discussion"][0]
    data.touch("alibaba/ROLL", "discussion", first_disc["number"], new_comments=1)
    victim = next(t for t in data.repos["THUDM/slime"]["issue"] if t["_comments"])
    data.delete_comment("THUDM/slime", "issue", victim["number"])
    new = data.add_thread("NVIDIA-NeMo/RL", "issue", n_comments=2, closed=False)
    stats = await sync(sync_ctx, sleep=no_sleep)
    used = graphql_calls(fake_github) - before
    # One request finds all five changes; the 253-comment thread then needs three more
    # round trips for its comments (100 per page, one page after the other).
    assert used <= 5, f"refresh used {used} requests"
    assert stats.changed == 5
    await assert_matches(sync_ctx, data)
    async with sync_ctx.sessionmaker() as session:
        rec = await load_thread_record(session, "NVIDIA-NeMo/RL", new["number"])
    assert rec is not None and len(rec["comments"]) == 2
    # Nothing changed: one request for all seven repositories.
    before = graphql_calls(fake_github)
    stats = await sync(sync_ctx, sleep=no_sleep)
    assert graphql_calls(fake_github) - before == 1 and stats.changed == 0


async def test_injected_failures_finish_with_nothing_missing(sync_ctx: AppContext, fake_github: Any, world: Any) -> None:
    data, responder = world
    fake_github.fail_next("POST", r"^/graphql$", 502, times=2)
    fake_github.secondary_rate_limit("POST", r"^/graphql$", retry_after=1)
    fake_github.fail_next("POST", r"^/graphql$", 429, headers={"retry-after": "1"})
    responder.inject_errors(2)
    stats = await sync(sync_ctx, sleep=no_sleep)
    assert stats.graphql_errors == 2
    await assert_matches(sync_ctx, data)
    # After two errors without data (GitHub's timeouts) the next request asked for a quarter.
    sizes = [sum(v for k, v in (c.json.get("variables") or {}).items() if re.fullmatch(r"f\d+", k))
             for c in fake_github.requests("POST", r"^/graphql$")]
    assert 0 < min(s for s in sizes if s) <= 25


async def test_a_query_too_heavy_for_github_is_asked_again_smaller(
        sync_ctx: AppContext, fake_github: Any, world: Any) -> None:
    """GitHub answers a GraphQL query it cannot finish in its time with 502, as often as the
    same document is sent: the client's five attempts all failed and the sync ended with
    GitHubBroken. As for errors without data, the sync now asks for half as much."""
    data, _ = world
    fake_github.fail_next("POST", r"^/graphql$", 502, times=5)  # every attempt of the client
    await sync(sync_ctx, sleep=no_sleep)
    await assert_matches(sync_ctx, data)
    calls = fake_github.requests("POST", r"^/graphql$")
    sizes = [sum(v for k, v in (c.json.get("variables") or {}).items() if re.fullmatch(r"f\d+", k))
             for c in calls]
    assert [c.status for c in calls[:6]] == [502] * 5 + [200] and sizes[5] <= sizes[0] // 2


@pytest.mark.parametrize("limit", ["secondary", "primary"])
async def test_a_long_rate_limit_is_waited_out(sync_ctx: AppContext, fake_github: Any, world: Any,
                                              limit: str) -> None:
    """A rate limit longer than the client waits for itself (a secondary limit's retry-after
    of 5 min; the hourly limit spent, reset in 20 min), answered four times in a row.
    gidgethub drops a GraphQL error's headers, so the sync took it for a GraphQL error, asked
    again after 2, 4 and 8 s (inside the limit) and stopped ("GraphQL request failed 4
    times"); the first backfill ended there. Now each answer is waited out as GitHub asks."""
    data, _ = world
    if limit == "secondary":
        fake_github.secondary_rate_limit("POST", r"^/graphql$", times=4, retry_after=300)
    else:
        fake_github.rate_limited("POST", r"^/graphql$", reset_in=1200, times=4)
    async with clocked_github(sync_ctx) as clock:  # (the waits pass for the client too)
        stats = await sync(sync_ctx, sleep=clock.sleep)
    await assert_matches(sync_ctx, data)
    assert stats.waited_for_rate_limit >= 4 * 290 and stats.graphql_errors == 0


async def test_a_graphql_rate_limit_answered_200_is_waited_out(
        sync_ctx: AppContext, fake_github: Any, world: Any) -> None:
    """GitHub answers a spent GraphQL limit with status 200, errors of type RATE_LIMITED and
    x-ratelimit-remaining 0 (its GraphQL rate-limit docs). The sync took that for a GraphQL
    error, asked again after 2, 4 and 8 s (inside the limit) and stopped ("GraphQL request
    failed 4 times"); it now waits for the reset, as for the 403 shape. (The client holds
    GraphQL until the reset, limits65: the sync's wait moves the client's clock with it;
    GitHub's answers after the reset name a reset past, which the client retries itself.)"""
    data, _ = world
    reset = int(time.time()) + 1200
    fake_github.fail_next("POST", r"^/graphql$", 200, times=4, headers={
        "x-ratelimit-limit": "5000", "x-ratelimit-remaining": "0",
        "x-ratelimit-reset": str(reset)}, body={"data": None, "errors": [
            {"type": "RATE_LIMITED", "message": "API rate limit exceeded for user ID 1."}]})
    async with clocked_github(sync_ctx) as clock:
        stats = await sync(sync_ctx, sleep=clock.sleep)
    await assert_matches(sync_ctx, data)
    assert stats.waited_for_rate_limit >= 1100 and stats.graphql_errors == 0


async def test_a_dropped_connection_does_not_stop_the_sync(
        sync_ctx: AppContext, fake_github: Any, world: Any) -> None:
    """A connection GitHub (or a proxy) drops before answering a sync request: the client
    repeated only GETs, so the sync's GraphQL query (a POST that only reads) ended the run
    with ServerDisconnectedError. A query is as safe to repeat as a GET."""
    data, _ = world
    fake_github.disconnect_next("POST", r"^/graphql$")
    await sync(sync_ctx, sleep=no_sleep)
    await assert_matches(sync_ctx, data)


async def test_a_webhook_during_the_sync_is_not_undone(
        sync_ctx: AppContext, fake_github: Any, schema_path: Path) -> None:
    """A comment GitHub delivers (and the app stores) while the sync still holds the thread
    it fetched earlier (its remaining comments came in a later request; a wait for the rate
    limit can make that an hour): the sync wrote its older snapshot over the newer thread and
    deleted the comment as gone. The webhook path keeps the newer state; so does the sync now
    (its own comments are added, the newer thread and comment stay)."""
    repo = "huggingface/trl"
    data = FakeData()
    data.add_thread(repo, "issue", n_comments=1, closed=False)
    long = data.add_thread(repo, "issue", n_comments=60, closed=False)  # more than fit nested

    async def someone_comments() -> None:
        thread = data.touch(repo, "issue", long["number"], new_comments=1)
        node = thread["_comments"][-1]
        alice = {"login": "alice", "type": "User"}
        await events.router.dispatch(sansio.Event({
            "action": "created", "repository": {"id": 9, "full_name": repo}, "sender": alice,
            "issue": {"id": thread["databaseId"], "number": thread["number"],
                      "title": thread["title"], "body": thread["body"], "state": "open",
                      "user": alice, "labels": [], "assignees": [],
                      "created_at": thread["createdAt"], "updated_at": thread["updatedAt"]},
            "comment": {"id": node["databaseId"], "body": node["body"], "user": alice,
                        "author_association": "NONE", "created_at": node["createdAt"],
                        "updated_at": node["updatedAt"]},
        }, event="issue_comment", delivery_id="d-1"), sync_ctx)

    # the 2nd request: the rest of the long thread's comments; then someone comments there
    handler = ActingOnCall(FakeGraphQL(data, schema_path), 2, someone_comments)
    fake_github.graphql_handler = handler
    await sync(sync_ctx, [repo], sleep=no_sleep)
    assert handler.calls == 2
    async with sync_ctx.sessionmaker() as session:
        stored = await load_thread_record(session, repo, long["number"])
    assert stored is not None and stored["updated_at"] == long["updatedAt"]
    assert len(stored["comments"]) == 61


async def test_a_deletion_during_the_sync_stays_deleted(
        sync_ctx: AppContext, fake_github: Any, schema_path: Path) -> None:
    """An issue, and a comment of another one, deleted on GitHub (their deliveries handled)
    while the sync still held what it had fetched of them: the sync stored them again; the
    comment until the next refresh, the issue for good (GitHub lists it no more, so no later
    sync removed it). Deletions the webhooks noted now hold for the sync too."""
    repo = "huggingface/trl"
    data = FakeData()
    gone = data.add_thread(repo, "issue", n_comments=60, closed=False)  # more than fit nested
    kept = data.add_thread(repo, "issue", n_comments=60, closed=False)
    alice = {"login": "alice", "type": "User"}

    def issue(t: dict[str, Any]) -> dict[str, Any]:
        return {"id": t["databaseId"], "number": t["number"], "title": t["title"], "body": t["body"],
                "state": "open", "user": alice, "labels": [], "assignees": [],
                "created_at": t["createdAt"], "updated_at": t["updatedAt"]}

    async def deliver(event: str, payload: dict[str, Any]) -> None:
        payload = {"repository": {"id": 9, "full_name": repo}, "sender": alice, **payload}
        await events.router.dispatch(sansio.Event(payload, event=event, delivery_id=event), sync_ctx)

    async def delete_both() -> None:
        data.repos[repo]["issue"].remove(gone)
        await deliver("issues", {"action": "deleted", "issue": issue(gone)})
        node = data.delete_comment(repo, "issue", kept["number"], index=0)
        await deliver("issue_comment", {"action": "deleted", "issue": issue(kept), "comment": {
            "id": node["databaseId"], "body": node["body"], "user": alice,
            "created_at": node["createdAt"], "updated_at": node["updatedAt"]}})

    # the 2nd request: the rest of both threads' comments; then the deletions on GitHub
    handler = ActingOnCall(FakeGraphQL(data, schema_path), 2, delete_both)
    fake_github.graphql_handler = handler
    await sync(sync_ctx, [repo], sleep=no_sleep)
    async with sync_ctx.sessionmaker() as session:
        stored = await load_thread_record(session, repo, kept["number"])
    assert stored is not None and len(stored["comments"]) == 59  # (a refresh repaired that)
    await sync(sync_ctx, [repo], sleep=no_sleep)  # a refresh: GitHub lists the issue no more
    assert handler.calls >= 3
    async with sync_ctx.sessionmaker() as session:
        assert await load_thread_record(session, repo, gone["number"]) is None


async def test_persistent_errors_stop_and_the_next_run_resumes(sync_ctx: AppContext, fake_github: Any, world: Any) -> None:
    data, responder = world
    with pytest.raises(SyncError):  # a first run cut short
        await sync(sync_ctx, ["huggingface/trl"], sleep=no_sleep, max_requests=2)
    responder.inject_errors(4)
    with pytest.raises(SyncError):
        await sync(sync_ctx, sleep=no_sleep)
    await sync(sync_ctx, sleep=no_sleep)
    await assert_matches(sync_ctx, data)


async def test_crash_mid_backfill_resumes_from_cursors(sync_ctx: AppContext, fake_github: Any, world: Any) -> None:
    data, _ = world
    with pytest.raises(SyncError):
        await sync(sync_ctx, sleep=no_sleep, max_requests=4)
    async with sync_ctx.sessionmaker() as session:
        cursors = list(await session.scalars(select(SyncCursor)))
    assert any(c.cursor for c in cursors), "progress was kept"
    partial = await count(sync_ctx, Thread)
    assert 0 < partial < len(data.all_threads())
    # A thread changes while the sync is down: it moved ahead of the cursor, and the next
    # refresh (after the resumed backfill) still gets it.
    stale = data.repos["OpenRLHF/OpenRLHF"]["issue"][-1]
    data.touch("OpenRLHF/OpenRLHF", "issue", stale["number"], new_comments=2)
    first = graphql_calls(fake_github)
    await sync(sync_ctx, sleep=no_sleep)
    resumed = graphql_calls(fake_github) - first
    assert first + resumed <= 0.02 * len(data.all_threads()) + 3
    await sync(sync_ctx, sleep=no_sleep)
    await assert_matches(sync_ctx, data)


async def test_paces_itself_on_the_rate_limit(sync_ctx: AppContext, fake_github: Any, schema_path: Path) -> None:
    data = FakeData.generate(30, seed=3, long_every=0)
    responder = FakeGraphQL(data, schema_path, rate_limit=103)
    fake_github.graphql_handler = responder
    waits: list[float] = []

    async def record_sleep(seconds: float) -> None:
        waits.append(seconds)

    await sync(sync_ctx, sleep=record_sleep)
    assert waits and all(w > 60 for w in waits)  # waited for the reset an hour ahead
    await assert_matches(sync_ctx, data)


async def test_unknown_repository_is_reported_not_fatal(sync_ctx: AppContext, fake_github: Any, world: Any) -> None:
    stats = await sync(sync_ctx, ["huggingface/trl", "nobody/nothing"], sleep=no_sleep)
    assert sorted(stats.failed_streams) == ["nobody/nothing:discussion", "nobody/nothing:issue", "nobody/nothing:pull_request"]
    assert stats.repos["huggingface/trl"] == THREADS_PER_REPO


async def test_sync_and_webhook_paths_store_identical_rows(sync_ctx: AppContext, fake_github: Any, schema_path: Path) -> None:
    """The same threads written from GraphQL (sync) and from REST-shaped webhook payloads
    (bot.webhooks.normalize, as bot.webhooks.events does) give the same rows, column by column."""
    from bot.store.threads import get_thread, upsert_comment, upsert_thread
    from bot.webhooks import normalize
    from tests.fake_graphql import (
        rest_comment,
        rest_discussion,
        rest_issue,
        rest_pull,
        rest_review,
        rest_user,
    )

    repo = "THUDM/slime"
    data = FakeData(rng=__import__("random").Random(11))
    issue = data.add_thread(repo, "issue", n_comments=3, closed=True)
    issue["_comments"][0]["author"] = {"__typename": "Bot", "login": "github-actions"}
    issue["_comments"][1]["author"] = None  # a deleted account
    pr = data.add_thread(repo, "pull_request", n_comments=2, n_reviews=2, closed=False)
    data.close(pr)
    disc = data.add_thread(repo, "discussion", n_comments=4, closed=True)
    data.answer(disc, disc["_comments"][0], {"__typename": "Bot", "login": "helper"})  # a chosen answer
    disc["category"] = {"name": "Q&A"}
    opened = data.add_thread(repo, "issue", n_comments=0, closed=False, body="")
    fake_github.graphql_handler = FakeGraphQL(data, schema_path)
    await sync(sync_ctx, [repo], sleep=no_sleep)

    async def rows(number: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        async with sync_ctx.sessionmaker() as session:
            thread = await get_thread(session, repo, number)
            assert thread is not None
            comments = sorted((c for c in await session.scalars(select(Comment).where(Comment.thread_id == thread.id))),
                              key=lambda c: (c.kind, c.github_id))
            t = {k: getattr(thread, k) for k in Thread.__table__.columns.keys() if k not in ("id", "stored_at")}
            cs = [{k: getattr(c, k) for k in Comment.__table__.columns.keys() if k not in ("id", "thread_id")}
                  for c in comments]
            return t, cs

    from_sync = {t["number"]: await rows(t["number"]) for t in (issue, pr, disc, opened)}

    async def webhook(t: dict[str, Any]) -> None:
        closer = rest_user(t["_closer"]) if t["_closer"] else None
        action = "closed" if (t.get("closedAt")) else "opened"
        kind = t["_kind"]
        if kind == "issue":
            record = normalize.thread_from_issue(rest_issue(t), repo, action=action, sender=closer)
        elif kind == "pull_request":
            record = normalize.thread_from_pull_request(rest_pull(t), repo, action=action, sender=closer)
        else:
            record = normalize.thread_from_discussion(rest_discussion(t), repo, action=action, sender={"login": "x", "type": "User"})
            record["closed_by"] = None  # GraphQL has no discussion timeline: not known on either path
        comments = []
        for c in t["_comments"]:
            if kind == "discussion":
                comments.append(normalize.comment_from_discussion_comment(rest_comment(c)))
                comments += [normalize.comment_from_discussion_comment(rest_comment(r, c["databaseId"])) for r in c["_replies"]]
            else:
                comments.append(normalize.comment_from_issue_comment(rest_comment(c)))
        for r in t["_reviews"]:
            comments.append(normalize.comment_from_review(rest_review(r)))
            comments += [normalize.comment_from_review_comment(rest_comment(rc)) for rc in r["_comments"]]
        async with sync_ctx.sessionmaker() as session:
            old = await get_thread(session, repo, t["number"])
            await session.delete(old)
            await session.flush()
            thread = await upsert_thread(session, record)
            for c in comments:
                await upsert_comment(session, thread, c)
            await session.commit()

    for t in (issue, pr, disc, opened):
        await webhook(t)
        assert await rows(t["number"]) == from_sync[t["number"]], t["_kind"]
    authors = {c["author"] for c in from_sync[issue["number"]][1]}
    assert "github-actions[bot]" in authors and "ghost" in authors


async def test_sync_command_line(db_url: str, fake_github: Any, world: Any) -> None:
    """`rltracker sync --repo ...` as a process, with GITHUB_TOKEN, against the fake server."""
    import asyncio
    import json
    import os
    import sys

    env = {**os.environ, "DATABASE_URL": db_url, "GITHUB_API_URL": fake_github.url,
           "GITHUB_TOKEN": fake_github.user_token}
    env.pop("GITHUB_APP_ID", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "sync", "--repo", "HuggingFace/TRL", env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()[-2000:]
    stats = json.loads(out)
    assert stats["repos"] == {"huggingface/trl": THREADS_PER_REPO}  # canonical name from the catalog
    assert all(c.token == fake_github.user_token for c in fake_github.requests("POST", r"^/graphql$"))


async def test_installation_token_where_installed_else_github_token(app_settings: Any, fake_github: Any, world: Any) -> None:
    from bot.github.client import GitHubClient

    s = dataclasses.replace(app_settings, token=fake_github.user_token)
    ctx = AppContext.create(s)
    ctx.github = GitHubClient(s, sleep=no_sleep)
    try:
        await install_app(ctx, fake_github, 55, "huggingface", ["huggingface/trl"])
        stats = await sync(ctx, ["huggingface/trl", "alibaba/ROLL"], sleep=no_sleep)
    finally:
        await ctx.close()
    assert stats.repos == {"huggingface/trl": THREADS_PER_REPO, "alibaba/ROLL": THREADS_PER_REPO}
    calls = fake_github.requests("POST", r"^/graphql$")
    by_auth = {(c.auth, c.installation_id) for c in calls}
    assert by_auth == {("installation", 55), ("token", None)}
    # Installed and not installed repositories never share a request.
    for c in calls:
        owners = {v for k, v in (c.json.get("variables") or {}).items() if k.startswith("o")}
        assert owners in ({"huggingface"}, {"alibaba"}, set())


@pytest.mark.slow
async def test_thousands_of_threads(sqlite_template: Path, tmp_path: Path, fake_github: Any, schema_path: Path) -> None:
    """The scale of the issue's check: 2,100 threads over seven repositories, every 40th with
    250 comments, some pull requests with 45 reviews (SQLite only: the scale is the point)."""
    import shutil

    from bot.config import Settings
    from bot.github.client import GitHubClient

    data = FakeData.generate(300, seed=2)
    fake_github.graphql_handler = FakeGraphQL(data, schema_path)
    shutil.copy(sqlite_template, tmp_path / "big.db")
    s = Settings.from_env({}, database_url=f"sqlite+aiosqlite:///{tmp_path / 'big.db'}",
                          api_url=fake_github.url, token=fake_github.user_token)
    ctx = AppContext.create(s)
    ctx.github = GitHubClient(s, sleep=no_sleep)
    try:
        await sync(ctx, sleep=no_sleep)
        backfill = graphql_calls(fake_github)
        threads = data.all_threads()
        assert len(threads) == 2100 and backfill / len(threads) <= 0.02
        assert await count(ctx, Thread) == len(threads)
        assert await count(ctx, Comment) == sum(data.comment_count(t) for t in threads)
        for t in threads[::300]:
            data.touch(t["_repo"], t["_kind"], t["number"], new_comments=1)
        stats = await sync(ctx, sleep=no_sleep)
        assert stats.changed == 7 and graphql_calls(fake_github) - backfill <= 5
    finally:
        await ctx.close()


async def test_an_installed_repository_typed_in_another_case_syncs_into_its_rows(
        sync_ctx: AppContext, fake_github: Any, schema_path: Path) -> None:
    """`rltracker sync --repo codertocat/hello-world` for an installed Codertocat/Hello-World
    (a repository outside the catalog keeps GitHub's spelling) made a second Repository row
    and three new cursors, and backfilled the whole repository again instead of refreshing."""
    from bot.store.models import Repository

    data = FakeData(repos={})
    for _ in range(3):
        data.add_thread("Codertocat/Hello-World", "issue", n_comments=1)
    fake_github.graphql_handler = FakeGraphQL(data, schema_path)
    await sync(sync_ctx, ["Codertocat/Hello-World"], sleep=no_sleep)
    data.touch("Codertocat/Hello-World", "issue", 2, new_comments=1)
    stats = await sync(sync_ctx, ["codertocat/hello-world"], sleep=no_sleep)
    assert stats.threads == 1 and stats.repos == {"Codertocat/Hello-World": 1}  # a refresh
    async with sync_ctx.sessionmaker() as session:
        assert list(await session.scalars(select(Repository.full_name))) == ["Codertocat/Hello-World"]
        assert {c.repo for c in await session.scalars(select(SyncCursor))} == {"Codertocat/Hello-World"}
    assert await count(sync_ctx, Thread) == 3


async def test_repositories_the_credentials_cannot_read_do_not_stop_the_others(
        app_ctx: Any, fake_github: Any, world: Any) -> None:
    """App credentials and no GITHUB_TOKEN, installed on TRL only: the other tracked
    repositories have no token that reads them (GraphQL refuses anonymous clients, 401). That
    401 ended the whole sync, and when such a repository came first in the catalog (verl
    before trl) the installed repository was never synced by the nightly job at all."""
    fake_github.allow_anonymous = False
    await install_app(app_ctx, fake_github, 55, "huggingface", ["huggingface/trl"])
    stats = await sync(app_ctx, ["verl-project/verl", "huggingface/trl"], sleep=no_sleep)
    assert stats.repos == {"huggingface/trl": THREADS_PER_REPO}
    assert sorted(stats.failed_streams) == [
        "verl-project/verl:discussion", "verl-project/verl:issue", "verl-project/verl:pull_request"]


@pytest.mark.parametrize("gone", ["uninstalled", "suspended"])
async def test_an_installation_gone_unannounced_does_not_stop_the_others(
        app_ctx: Any, fake_github: Any, world: Any, gone: str) -> None:
    """The app was uninstalled from verl (or suspended there) while no event reached it (it
    was down; recovery redelivers days later): GitHub refuses that installation a token
    (404, 403), and that refusal ended the whole sync, so TRL, installed through another
    installation, was not synced either. That group is refused as a 401 is, the rest goes on."""
    await install_app(app_ctx, fake_github, 56, "verl-project", ["verl-project/verl"])
    await install_app(app_ctx, fake_github, 55, "huggingface", ["huggingface/trl"])
    if gone == "uninstalled":
        del fake_github.installations[56]
    else:
        fake_github.suspend_installation(56)
    stats = await sync(app_ctx, ["verl-project/verl", "huggingface/trl"], sleep=no_sleep)
    assert stats.repos == {"huggingface/trl": THREADS_PER_REPO}
    assert sorted(stats.failed_streams) == [
        "verl-project/verl:discussion", "verl-project/verl:issue", "verl-project/verl:pull_request"]


@pytest.mark.parametrize("action", ["suspend", "deleted"])
async def test_a_suspended_or_uninstalled_installations_repositories_sync_with_the_token(
        app_settings: Any, fake_github: Any, world: Any, shared_dir: Path, action: str) -> None:
    """Suspended: its repository rows still named it, so the sync asked GitHub for its token
    (refused) and TRL was not synced ("GitHub refused the sync", every night). Uninstalled:
    a delivery queued before the uninstall linked TRL to the deleted installation again, with
    the same result. Both are read with GITHUB_TOKEN now, and the late delivery links nothing."""
    import json

    from gidgethub import sansio

    from bot.github.client import GitHubClient
    from bot.store.models import Repository
    from bot.webhooks.routers import router

    s = dataclasses.replace(app_settings, token=fake_github.user_token)
    ctx = AppContext.create(s)
    ctx.github = GitHubClient(s, sleep=no_sleep)
    base = shared_dir / "fixtures" / "webhooks"
    try:
        await install_app(ctx, fake_github, 55, "huggingface", ["huggingface/trl"])
        event = json.loads((base / "installation" / "created.json").read_text())
        event.update(action=action, repositories=[])
        event["installation"].update(id=55, suspended_at="2026-12-01T00:00:00Z" if action == "suspend" else None)
        if action == "suspend":
            fake_github.suspend_installation(55)
        else:
            del fake_github.installations[55]
        await router.dispatch(sansio.Event(event, event="installation", delivery_id="i1"), ctx)
        late = json.loads((base / "issues" / "opened.json").read_text())
        late["repository"].update(full_name="huggingface/trl", name="trl")
        late["installation"] = {"id": 55}
        late["issue"]["number"] = 9999
        await router.dispatch(sansio.Event(late, event="issues", delivery_id="o1"), ctx)
        async with ctx.sessionmaker() as session:
            row = await session.scalar(select(Repository).where(Repository.full_name == "huggingface/trl"))
        assert row.installation_id == (55 if action == "suspend" else None)
        stats = await sync(ctx, ["huggingface/trl"], sleep=no_sleep)
    finally:
        await ctx.close()
    assert stats.repos == {"huggingface/trl": THREADS_PER_REPO} and not stats.failed_streams
    calls = fake_github.requests("POST", r"^/graphql$")
    assert calls and {(c.auth, c.installation_id) for c in calls} == {("token", None)}


async def test_sync_on_a_terminal_keeps_its_progress_bar_off_stdout(
        db_url: str, fake_github: Any, world: Any) -> None:
    """On a terminal (stderr a tty) `rltracker sync` draws a progress bar; rich's default
    console writes to stdout, so `rltracker sync > stats.json` (stderr still the terminal)
    got the bar's frames mixed into the JSON counts, which no longer parsed. The bar goes
    to stderr, beside the log lines; stdout holds the counts alone."""
    import asyncio
    import json
    import os
    import pty
    import sys

    env = {**os.environ, "DATABASE_URL": db_url, "GITHUB_API_URL": fake_github.url,
           "GITHUB_TOKEN": fake_github.user_token, "TERM": "xterm", "COLUMNS": "100"}
    env.pop("GITHUB_APP_ID", None)
    env.pop("NO_COLOR", None)
    terminal, tty = pty.openpty()
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot.cli", "sync", "--repo", "HuggingFace/TRL", env=env,
            stdout=asyncio.subprocess.PIPE, stderr=tty)
        os.close(tty)
        seen = bytearray()

        def drain() -> None:  # the terminal's side, read until the command closes it
            while True:
                try:
                    chunk = os.read(terminal, 4096)
                except OSError:
                    return
                if not chunk:
                    return
                seen.extend(chunk)

        reader = asyncio.get_running_loop().run_in_executor(None, drain)
        out, _ = await asyncio.wait_for(proc.communicate(), 120)
        await asyncio.wait_for(reader, 30)
    finally:
        os.close(terminal)
    assert proc.returncode == 0, seen.decode(errors="replace")[-2000:]
    stats = json.loads(out)
    assert stats["repos"] == {"huggingface/trl": THREADS_PER_REPO}
    assert b"sync" in bytes(seen)  # the bar was drawn, on the terminal


async def test_one_thread_failing_to_be_acted_on_does_not_stop_the_sync(
        sync_ctx: AppContext, fake_github: Any, world: Any) -> None:
    """`on_changed` (the pipeline: analyse the thread, decide) raising for one thread ended the
    whole sync: the threads after it in the same commit were stored but never analysed (and,
    their cursors stored, the next run did not see them as changed), the streams not yet read
    were not synced. The thread is recorded (which, why) and the rest synced and analysed."""
    data, _ = world
    trl = [t for t in data.all_threads() if t["_repo"] == "huggingface/trl"]
    bad = trl[len(trl) // 2]["number"]
    seen: list[int] = []

    async def changed(repo: str, number: int) -> None:
        if number == bad:
            raise RuntimeError("boom\nsecond line")
        seen.append(number)

    stats = await sync(sync_ctx, ["huggingface/trl"], sleep=no_sleep, on_changed=changed)
    assert stats.repos["huggingface/trl"] == THREADS_PER_REPO
    assert sorted(seen) == sorted(t["number"] for t in trl if t["number"] != bad)
    assert stats.failed_threads == [{"thread": f"huggingface/trl#{bad}",
                                     "error": "RuntimeError: boom"}]
    assert stats.as_dict()["failed_threads"] == stats.failed_threads


async def test_sync_command_line_when_the_database_refuses_one_threads_analysis(
        db_url: str, fake_github: Any, world: Any) -> None:
    """`rltracker sync` as a process, the database refusing one thread's analysis (a trigger:
    as a constraint, a full disk for one row or a bug would): it ended with a traceback as a
    bug, exit 1, and every thread after it unanalysed. Now the other threads are synced and
    analysed, the counts name the thread and why (`failed_threads`), stderr says it in one
    line, and the exit status is 2, some work failed (as for `failed_streams`)."""
    import asyncio
    import json
    import os
    import sys

    from sqlalchemy import text

    from bot.store.db import make_engine

    data, _ = world
    trl = [t for t in data.all_threads() if t["_repo"] == "huggingface/trl"]
    bad = trl[len(trl) // 2]["number"]
    engine = make_engine(db_url)
    one = f"(SELECT number FROM threads WHERE id = NEW.thread_id) = {bad}"
    async with engine.begin() as conn:
        if engine.dialect.name == "sqlite":
            await conn.execute(text(f"CREATE TRIGGER refuse_one BEFORE INSERT ON analyses WHEN {one} "
                                    "BEGIN SELECT RAISE(ABORT, 'refused by a test trigger'); END"))
        else:
            await conn.execute(text(
                "CREATE FUNCTION refuse_one() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                f"IF {one} THEN RAISE EXCEPTION 'refused by a test trigger'; END IF; "
                "RETURN NEW; END $$"))
            await conn.execute(text("CREATE TRIGGER refuse_one BEFORE INSERT ON analyses "
                                    "FOR EACH ROW EXECUTE FUNCTION refuse_one()"))
    env = {**os.environ, "DATABASE_URL": db_url, "GITHUB_API_URL": fake_github.url,
           "GITHUB_TOKEN": fake_github.user_token}
    env.pop("GITHUB_APP_ID", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "sync", "--repo", "HuggingFace/TRL", env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    assert proc.returncode == 2, err.decode()[-2000:]
    assert b"Traceback" not in err
    stats = json.loads(out)
    assert stats["repos"] == {"huggingface/trl": THREADS_PER_REPO}
    [failed] = stats["failed_threads"]
    assert failed["thread"] == f"huggingface/trl#{bad}" and "refused by a test trigger" in failed["error"]
    assert [line for line in err.decode().splitlines() if f"#{bad}" in line] == [
        f"sync: huggingface/trl#{bad} was stored but not analysed ({failed['error']}); "
        "the other threads are synced"]
    try:
        async with engine.connect() as conn:
            analysed = (await conn.execute(text(
                "SELECT t.number FROM analyses a JOIN threads t ON t.id = a.thread_id"))).scalars().all()
    finally:
        await engine.dispose()
    assert sorted(analysed) == sorted(t["number"] for t in trl if t["number"] != bad)


@pytest.mark.parametrize("redirect", [">&-", ">/dev/full"])
async def test_sync_whose_counts_cannot_be_written_keeps_its_work_and_says_so(
        redirect: str, db_url: str, fake_github: Any, world: Any) -> None:
    """`rltracker sync >&-` (cron with standard output closed) or a full disk under its
    redirection: the sync did all its work, then printing the counts failed and it exited 2,
    what a repository that could not be read exits with ("<stdout>: Bad file descriptor"),
    and a disk full was a traceback as a bug. The work is kept and its exit status is the
    sync's own (0: everything synced); one line on stderr says the counts were not written
    and why."""
    import asyncio
    import os
    import shlex
    import sys

    env = {**os.environ, "DATABASE_URL": db_url, "GITHUB_API_URL": fake_github.url,
           "GITHUB_TOKEN": fake_github.user_token}
    env.pop("GITHUB_APP_ID", None)
    command = f"{shlex.quote(sys.executable)} -m bot.cli sync --repo HuggingFace/TRL {redirect}"
    proc = await asyncio.create_subprocess_exec(
        "/bin/sh", "-c", command, env=env, stderr=asyncio.subprocess.PIPE)
    _, err = await proc.communicate()
    text = err.decode()
    assert proc.returncode == 0, text[-2000:]
    assert "Traceback" not in text and "Exception ignored" not in text
    last = text.splitlines()[-1]
    assert last.startswith(f"rltracker sync: synced {THREADS_PER_REPO} threads "), last
    assert "the counts were not written to standard output" in last
    from bot.config import Settings

    ctx = AppContext.create(Settings.from_env({}, database_url=db_url))
    try:
        assert await count(ctx, Thread) == THREADS_PER_REPO  # the work is kept
        assert await count(ctx, Analysis) == THREADS_PER_REPO
    finally:
        await ctx.close()


@pytest.mark.parametrize("when", ["before", "mid_run"])
async def test_an_installation_deleted_unannounced_falls_back_to_github_token(
        app_settings: Any, fake_github: Any, world: Any, when: str) -> None:
    """docs/github.md: the repositories of an uninstalled installation are synced with
    GITHUB_TOKEN like any other. The app uninstalled from verl with no event handled yet
    (before the night's run, or during it: its tokens revoked between two requests): GitHub
    refuses that installation (401, then 404 for a new token), and its streams were listed as
    failed although GITHUB_TOKEN reads them. They are read with GITHUB_TOKEN now."""
    from bot.github.client import GitHubClient

    data, responder = world
    s = dataclasses.replace(app_settings, token=fake_github.user_token)
    ctx = AppContext.create(s)
    ctx.github = GitHubClient(s, sleep=no_sleep)
    answered: list[int] = []

    def handler(query: str, variables: dict[str, Any]) -> Any:
        answered.append(1)
        if when == "mid_run" and len(answered) == 1:
            fake_github.remove_installation(56)  # this request was let in; the next is not
        return responder(query, variables)

    fake_github.graphql_handler = handler
    try:
        await install_app(ctx, fake_github, 56, "verl-project", ["verl-project/verl"])
        await install_app(ctx, fake_github, 55, "huggingface", ["huggingface/trl"])
        if when == "before":
            fake_github.remove_installation(56)
        stats = await sync(ctx, ["verl-project/verl", "huggingface/trl"], sleep=no_sleep)
    finally:
        await ctx.close()
    assert not stats.failed_streams
    assert stats.repos == {"verl-project/verl": THREADS_PER_REPO, "huggingface/trl": THREADS_PER_REPO}
    assert token_read_verl_only(fake_github)


def token_read_verl_only(fake: Any) -> bool:
    """Every GraphQL request GitHub answered went through installation 55, or 56 before it
    was removed, or GITHUB_TOKEN; the token's requests read verl only."""
    for c in fake.requests("POST", r"^/graphql$"):
        if c.status != 200:
            continue
        if c.auth == "token":
            owners = {v for k, v in (c.json.get("variables") or {}).items() if k.startswith("o")}
            if owners - {"verl-project"}:
                return False
    return any(c.auth == "token" and c.status == 200 for c in fake.requests("POST", r"^/graphql$"))
