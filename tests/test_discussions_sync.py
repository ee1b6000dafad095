"""Discussions end to end: webhook deliveries and the nightly GraphQL sync of the same
discussion (project-written threads, GitHub's real schema through the fake server)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from gidgethub import sansio
from sqlalchemy import select

from bot.context import AppContext
from bot.github.sync import sync
from bot.store.models import Comment
from bot.store.threads import load_thread_record
from bot.webhooks import events
from tests.fake_graphql import FakeData, FakeGraphQL, rest_discussion, rest_user
from tests.fakegithub import no_sleep

REPO = "THUDM/slime"


async def _record(ctx: AppContext, number: int) -> dict[str, Any]:
    async with ctx.sessionmaker() as session:
        rec = await load_thread_record(session, REPO, number)
    assert rec is not None
    return rec


def _payload(action: str, disc: dict[str, Any], sender: dict[str, Any] | None) -> dict[str, Any]:
    return {"action": action, "discussion": rest_discussion(disc),
            "repository": {"id": 31, "full_name": REPO, "default_branch": "main",
                           "owner": {"login": "THUDM", "type": "Organization"}},
            "sender": rest_user(sender)}


async def test_the_nightly_sync_keeps_who_closed_a_discussion(
        sync_ctx: AppContext, fake_github: Any, schema_path: Path) -> None:
    """A discussion closed by its own author: the `discussion.closed` webhook names the closer
    (its sender) and the review state reads "closed_by_author" from it. GraphQL has no closer
    for a discussion (no timeline): the nightly sync wrote closed_by None over the stored
    closer, and the discussion became "closed, closer unknown"."""
    data = FakeData(rng=__import__("random").Random(3))
    disc = data.add_thread(REPO, "discussion", n_comments=2, closed=False)
    disc["author"] = {"__typename": "User", "login": "carol"}
    fake_github.graphql_handler = FakeGraphQL(data, schema_path)
    await sync(sync_ctx, [REPO], sleep=no_sleep)
    assert (await _record(sync_ctx, disc["number"]))["closed_by"] is None
    data.close(disc)
    await events.router.dispatch(sansio.Event(
        _payload("closed", disc, disc["author"]), event="discussion",
        delivery_id=str(uuid.uuid4())), sync_ctx)
    rec = await _record(sync_ctx, disc["number"])
    assert rec["state"] == "closed" and rec["closed_by"] == "carol"
    data.touch(REPO, "discussion", disc["number"], new_comments=1)  # a late comment
    await sync(sync_ctx, [REPO], sleep=no_sleep)
    rec = await _record(sync_ctx, disc["number"])
    assert len(rec["comments"]) == data.comment_count(disc)  # the refresh did read it
    assert rec["state"] == "closed" and rec["closed_by"] == "carol"
    await sync(sync_ctx, [REPO], sleep=no_sleep, full=True)
    assert (await _record(sync_ctx, disc["number"]))["closed_by"] == "carol"
    # Reopened on GitHub while no webhook told of it: the closer goes with the closing.
    disc["closed"], disc["closedAt"], disc["stateReason"] = False, None, "REOPENED"
    data.touch(REPO, "discussion", disc["number"], new_comments=0)
    await sync(sync_ctx, [REPO], sleep=no_sleep)
    rec = await _record(sync_ctx, disc["number"])
    assert rec["state"] == "open" and rec["closed_by"] is None


async def test_long_discussions_with_long_reply_threads_are_stored_whole(
        sync_ctx: AppContext, fake_github: Any, schema_path: Path) -> None:
    """More than 100 comments, comments on the first and the later pages with more than 100
    replies each, a reply by a deleted account (null author), a comment deleted on GitHub
    (deletedAt) whose replies stay."""
    data = FakeData(rng=__import__("random").Random(5))
    disc = data.add_thread(REPO, "discussion", n_comments=0, closed=False)
    for _ in range(130):
        node = data._add_comment(disc)
        node["_replies"].clear()
    for index in (0, 39, 40, 41, 120):  # in the nested page, at its edge, in continuations
        parent = disc["_comments"][index]
        parent["_replies"] = [data._comment("DiscussionComment", data._tick(5)) for _ in range(130)]
    disc["_comments"][120]["_replies"][110]["author"] = None
    gone = disc["_comments"][41]
    gone["deletedAt"] = gone["updatedAt"]
    fake_github.graphql_handler = FakeGraphQL(data, schema_path)
    await sync(sync_ctx, [REPO], sleep=no_sleep)
    async with sync_ctx.sessionmaker() as session:
        stored = dict((await session.execute(select(Comment.github_id, Comment.author))).all())
    expected = {c["databaseId"] for c in disc["_comments"] if c is not gone}
    expected |= {r["databaseId"] for c in disc["_comments"] for r in c["_replies"]}
    assert len(expected) == 129 + 5 * 130
    assert set(stored) == expected
    assert stored[disc["_comments"][120]["_replies"][110]["databaseId"]] == "ghost"
    assert len((await _record(sync_ctx, disc["number"]))["comments"]) == len(expected)
