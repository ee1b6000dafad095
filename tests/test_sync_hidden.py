"""Comments GitHub hides (minimized as spam, abuse, off-topic...) after their thread's last
sync: no webhook tells of hiding, and hiding does not move the thread's `updatedAt`, which the
nightly refresh pages by. The nightly sync asks GitHub again, a hundred node ids a request,
whether the stored comments posted recently, of threads it did not read, are hidden
(`Syncer._check_hidden`); one found hidden or shown again is stored so and its thread analysed
again, one GitHub no longer finds (NOT_FOUND) is deleted as its webhook deletes it.

Through the fake GitHub GraphQL server (GitHub's real schema) over HTTP, SQLite and
PostgreSQL, with short threads the tests write."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from bot.context import AppContext
from bot.github import sync as sync_module
from bot.github.sync import sync
from bot.pipeline import sync_changed
from bot.store.models import Analysis, Comment, Deletion
from bot.store.threads import get_thread, load_thread_record
from tests.fake_graphql import FakeData, FakeGraphQL
from tests.fakegithub import no_sleep

SLIME = "THUDM/slime"
ASKS = "Please add unit tests and documentation for the new loss, the docs are missing."


def graphql_calls(fake: Any) -> int:
    return len(fake.requests("POST", r"^/graphql$"))


def world(schema_path: Path, fake_github: Any, *, days_ago: float) -> FakeData:
    data = FakeData(rng=random.Random(3))
    data.clock = datetime.now(UTC) - timedelta(days=days_ago)
    fake_github.graphql_handler = FakeGraphQL(data, schema_path)
    return data


def issue_with_reply(data: FakeData, replies: int = 1) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """An open issue by alice with comments by bob asking for tests and docs."""
    issue = data.add_thread(SLIME, "issue", n_comments=replies, closed=False)
    issue["author"] = {"__typename": "User", "login": "alice"}
    for reply in issue["_comments"]:
        reply["author"] = {"__typename": "User", "login": "bob"}
        reply["body"] = ASKS
        reply["authorAssociation"] = "NONE"
    return issue, issue["_comments"]


async def stored(ctx: AppContext, number: int) -> tuple[dict[str, Any], dict[str, Any] | None]:
    async with ctx.sessionmaker() as session:
        thread = await get_thread(session, SLIME, number)
        assert thread is not None
        record = await load_thread_record(session, SLIME, number)
        row = await session.scalar(select(Analysis).where(Analysis.thread_id == thread.id))
    assert record is not None
    return record, (row.result if row is not None else None)


async def run(ctx: AppContext) -> Any:
    return await sync(ctx, [SLIME], sleep=no_sleep, on_changed=partial(sync_changed, ctx))


async def test_a_comment_hidden_after_the_last_sync_stops_counting_at_the_next_refresh(
        sync_ctx: AppContext, fake_github: Any, schema_path: Path) -> None:
    """On main: hidden as spam after its thread was read, the reply stayed a reply from
    someone else (`open_replied`, its words a concern) until a `--full` sync, since the
    thread's updatedAt did not move and the nightly refresh never read it again."""
    data = world(schema_path, fake_github, days_ago=3)
    issue, (reply,) = issue_with_reply(data)
    await run(sync_ctx)
    record, analysis = await stored(sync_ctx, issue["number"])
    assert "minimized_reason" not in record["comments"][0]
    assert analysis is not None and analysis["review"]["replied_from_other"] is True

    reply.update(isMinimized=True, minimizedReason="spam")  # the thread's updatedAt stays
    before = graphql_calls(fake_github)
    stats = await run(sync_ctx)
    record, analysis = await stored(sync_ctx, issue["number"])
    assert record["comments"][0].get("minimized_reason") == "spam"
    assert analysis is not None and analysis["review"]["replied_from_other"] is False
    assert analysis["review"]["state"] == "open_no_reply"
    # what it cost: the listing (one request, nothing changed) and one of node ids
    assert graphql_calls(fake_github) - before == stats.requests == 2
    assert stats.hidden_checked == 1 and stats.hidden_changed == 1 and stats.changed == 1

    # shown again on GitHub: a reply again
    reply.update(isMinimized=False, minimizedReason=None)
    stats = await run(sync_ctx)
    record, analysis = await stored(sync_ctx, issue["number"])
    assert "minimized_reason" not in record["comments"][0]
    assert analysis is not None and analysis["review"]["replied_from_other"] is True
    assert stats.hidden_changed == 1 and not stats.failed_threads


async def test_a_comment_deleted_without_a_webhook_leaves_at_the_next_refresh(
        sync_ctx: AppContext, fake_github: Any, schema_path: Path) -> None:
    """GitHub no longer finds a stored comment (NOT_FOUND for its node id): deleted as
    `issue_comment.deleted` deletes it, its deletion noted."""
    data = world(schema_path, fake_github, days_ago=3)
    issue, (first, second) = issue_with_reply(data, replies=2)
    await run(sync_ctx)
    issue["_comments"].remove(first)  # the thread's updatedAt left as it was
    data.nodes.pop(first["id"])
    stats = await run(sync_ctx)
    record, _ = await stored(sync_ctx, issue["number"])
    assert [c["created_at"] for c in record["comments"]] == [second["createdAt"]]
    assert stats.hidden_deleted == 1 and not stats.failed_threads
    async with sync_ctx.sessionmaker() as session:
        keys = set(await session.scalars(select(Deletion.key)))
    assert f"comment:comment:{first['databaseId']}" in keys


async def test_the_check_is_bounded_to_recent_threads_and_batched_by_a_hundred(
        sync_ctx: AppContext, fake_github: Any, schema_path: Path,
        monkeypatch: Any) -> None:
    """Which comments are asked about: those posted within the last HIDDEN_RECENT_DAYS, of
    threads this pass did not read (a thread read tonight was read with its comments'
    state), a hundred node ids to a request, at most HIDDEN_CHECK_REQUESTS requests a
    night, the newest first."""
    data = world(schema_path, fake_github, days_ago=90)
    old, _ = issue_with_reply(data, replies=3)  # posted ~90 days ago: not asked
    data.clock = datetime.now(UTC) - timedelta(days=5)
    recent = [issue_with_reply(data, replies=60)[0] for _ in range(4)]  # 240 comments
    await run(sync_ctx)
    stats = await run(sync_ctx)
    # 240 comments: three requests of node ids beside the listing
    assert stats.hidden_checked == 240 and stats.requests == 1 + 3
    assert stats.hidden_left == 0

    # a thread read tonight is not asked about again
    data.touch(SLIME, "issue", recent[0]["number"], new_comments=0)
    stats = await run(sync_ctx)
    # (its 60 comments: the listing and one continuation, then two of node ids)
    assert stats.hidden_checked == 180 and stats.requests == 2 + 2

    # the bound: what is left is said, the newest comments asked first
    monkeypatch.setattr(sync_module, "HIDDEN_CHECK_REQUESTS", 1)
    recent[1]["_comments"][-1].update(isMinimized=True, minimizedReason="abuse")  # older
    recent[3]["_comments"][-1].update(isMinimized=True, minimizedReason="off-topic")
    stats = await run(sync_ctx)
    assert stats.hidden_checked == 100 and stats.hidden_left == 140 and stats.requests == 2
    last = {n: (await stored(sync_ctx, n))[0]["comments"][-1].get("minimized_reason")
            for n in (recent[1]["number"], recent[3]["number"])}
    assert last == {recent[1]["number"]: None, recent[3]["number"]: "off-topic"}
    async with sync_ctx.sessionmaker() as session:
        assert await session.scalar(select(func.count()).select_from(Comment)) == 243


async def test_comments_of_a_kind_github_refused_to_list_are_not_taken_for_deleted(
        sync_ctx: AppContext, fake_github: Any, schema_path: Path) -> None:
    """GitHub answers NOT_FOUND for nodes the reader may not see, as for those deleted: with
    the discussions of a repository refused to the listing (FORBIDDEN: an installation
    without the discussions permission), a discussion comment's NOT_FOUND tells nothing, and
    the comments of that kind are not asked about at all."""
    data = world(schema_path, fake_github, days_ago=3)
    disc = data.add_thread(SLIME, "discussion", n_comments=1, closed=False)
    disc["_comments"][0]["_replies"].clear()
    issue_with_reply(data)
    await run(sync_ctx)
    responder = fake_github.graphql_handler
    data.nodes.pop(disc["_comments"][0]["id"])  # what GitHub shows a reader it refuses

    def no_discussions(query: str, variables: dict[str, Any]) -> Any:
        answer = responder(query, variables)
        for alias, value in list((answer.get("data") or {}).items()):
            if isinstance(value, dict) and "discussions" in value:
                value["discussions"] = None
                answer.setdefault("errors", []).append({
                    "type": "FORBIDDEN", "path": [alias, "discussions"],
                    "message": "Resource not accessible by integration"})
        return answer

    fake_github.graphql_handler = no_discussions
    stats = await run(sync_ctx)
    # (a skip named with the permission, not a failed stream: auth64)
    assert stats.failed_streams == []
    assert [(n["repo"], n["kind"], n["permission"]) for n in stats.not_permitted] == [
        (SLIME, "discussion", "discussions")]
    record, _ = await stored(sync_ctx, disc["number"])
    assert len(record["comments"]) == 1
    assert stats.hidden_deleted == 0 and stats.hidden_checked == 1  # the issue's reply alone


async def nightly(ctx: AppContext) -> dict[str, Any]:
    """The nightly job's sync step (bot.scheduler.step_sync: the seven catalog repositories;
    those the fake does not hold are answered not found)."""
    from bot.scheduler import step_sync

    counts = await step_sync(ctx)
    assert isinstance(counts, dict)
    return counts


async def test_an_older_comment_hidden_or_edited_later_is_read_by_the_nightly_sync(
        sync_ctx: AppContext, fake_github: Any, schema_path: Path) -> None:
    """On main: only comments of the last HIDDEN_RECENT_DAYS were asked about. A reply posted
    three months ago and hidden as off-topic tonight, and a comment edited without its
    thread's time moving (old or recent), stayed as stored until the thread's next change or
    a `--full` sync. The nightly sync asks older comments again in a rotation and reads the
    edits of those it asks."""
    data = world(schema_path, fake_github, days_ago=90)
    old, (reply,) = issue_with_reply(data)
    edited_old = data.add_thread(SLIME, "issue", n_comments=1, closed=False)
    data.clock = datetime.now(UTC) - timedelta(days=3)
    recent = data.add_thread(SLIME, "issue", n_comments=1, closed=False)
    await run(sync_ctx)
    _, analysis = await stored(sync_ctx, old["number"])
    assert analysis is not None and analysis["review"]["replied_from_other"] is True

    reply.update(isMinimized=True, minimizedReason="off-topic")  # no time of the thread's moves
    later = (datetime.now(UTC) - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    for thread, words in ((edited_old, "Edited: it was the tokenizer."),
                          (recent, "Edited: fixed by #12.")):
        thread["_comments"][0].update(body=words, updatedAt=later)
    counts = await nightly(sync_ctx)
    record, analysis = await stored(sync_ctx, old["number"])
    assert record["comments"][0].get("minimized_reason") == "off-topic"
    assert analysis is not None and analysis["review"]["replied_from_other"] is False
    for thread, words in ((edited_old, "Edited: it was the tokenizer."),
                          (recent, "Edited: fixed by #12.")):
        record, _ = await stored(sync_ctx, thread["number"])
        assert record["comments"][0]["body"] == words
    assert counts["hidden_edited"] == 2 and counts["recheck_checked"] == 2
    assert counts["recheck_runs"] == 1 and counts["changed"] == 3

    # nothing changed since: asked again, nothing written
    counts = await nightly(sync_ctx)
    assert counts["hidden_edited"] == 0 and counts["hidden_changed"] == 0
    assert counts["changed"] == 0 and counts["recheck_checked"] == 2


async def test_the_rotation_asks_every_older_comment_within_its_period(
        sync_ctx: AppContext, fake_github: Any, schema_path: Path, monkeypatch: Any) -> None:
    """RECHECK_PER_REPO older comments a run per repository, from where the last run stopped,
    round the end to the first: 250 comments at 100 a run are all asked within 3 runs
    (`recheck_runs`), the last one's change read on the third."""
    monkeypatch.setattr(sync_module, "RECHECK_PER_REPO", 100)
    data = world(schema_path, fake_github, days_ago=90)
    threads = [issue_with_reply(data, replies=50)[0] for _ in range(5)]
    await run(sync_ctx)
    async with sync_ctx.sessionmaker() as session:  # the comment stored last: asked last
        newest = await session.scalar(select(Comment.github_id).order_by(Comment.id.desc()).limit(1))
    [(thread, last)] = [(t, c) for t in threads for c in t["_comments"] if c["databaseId"] == newest]
    last.update(isMinimized=True, minimizedReason="spam")
    before = graphql_calls(fake_github)
    counts = [await nightly(sync_ctx) for _ in range(2)]
    assert [c["recheck_checked"] for c in counts] == [100, 100]
    assert all(c["recheck_runs"] == 3 for c in counts)
    record, _ = await stored(sync_ctx, thread["number"])
    [row] = [c for c in record["comments"] if c["created_at"] == last["createdAt"]]
    assert row.get("minimized_reason") is None  # not asked yet
    third = await nightly(sync_ctx)
    assert third["recheck_checked"] == 100  # the last 50, then round to the first 50
    record, _ = await stored(sync_ctx, thread["number"])
    [row] = [c for c in record["comments"] if c["created_at"] == last["createdAt"]]
    assert row.get("minimized_reason") == "spam"
    # each run: the listing, and one request of node ids a hundred comments
    assert graphql_calls(fake_github) - before == sum(
        c["requests"] for c in (*counts, third)) == 3 * (1 + 1)
