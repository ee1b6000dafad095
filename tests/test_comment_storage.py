"""How threads' comments and discussion fields are stored (SQLite and PostgreSQL): GitHub's
recorded payloads (../shared/fixtures/webhooks) through the webhook handlers, and the nightly
GraphQL sync through the one fake GitHub server (GitHub's schema), agreeing on one row.

- Discussion comments are numbered by GitHub apart from issue comments: one of each with the
  same id are two comments (kind `discussion_comment` in the store; the contract record says
  `comment`, as before).
- A review comment keeps the file it is on (`path`), given in the record as an optional key.
- A discussion keeps whether an answer was chosen, by whom, and its category.
"""

from __future__ import annotations

import copy
import json
import random
import uuid
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from gidgethub import sansio
from sqlalchemy import func, select

from bot.context import AppContext
from bot.github.sync import sync
from bot.store.models import Comment, Deletion
from bot.store.threads import get_thread, load_thread_record
from bot.webhooks import events
from tests.fake_graphql import FakeData, FakeGraphQL, rest_comment, rest_discussion, rest_user
from tests.fakegithub import no_sleep

HELLO = "Codertocat/Hello-World"
SLIME = "THUDM/slime"


def shared(shared_dir: Path, name: str) -> dict[str, Any]:
    return json.loads((shared_dir / "fixtures" / "webhooks" / name).read_text())


async def dispatch(ctx: Any, event: str, payload: dict[str, Any]) -> None:
    await events.router.dispatch(
        sansio.Event(payload, event=event, delivery_id=str(uuid.uuid4())), ctx)


async def record(ctx: Any, repo: str, number: int) -> dict[str, Any]:
    async with ctx.sessionmaker() as session:
        rec = await load_thread_record(session, repo, number)
    assert rec is not None
    return rec


async def comment_rows(ctx: Any) -> list[Comment]:
    async with ctx.sessionmaker() as session:
        return list(await session.scalars(select(Comment).order_by(Comment.id)))


# ---- 1. discussion comments and issue comments: two id spaces --------------------------------
def _same_id_pair(shared_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """GitHub's issue_comment.created (Hello-World#1) and discussion_comment.created
    (Hello-World discussion #4), the discussion comment given the issue comment's id."""
    issue_comment = shared(shared_dir, "issue_comment/created.json")
    disc_comment = shared(shared_dir, "discussion_comment/created.json")
    disc_comment["comment"]["id"] = issue_comment["comment"]["id"]
    return issue_comment, disc_comment


async def test_an_issue_comment_and_a_discussion_comment_of_one_id_are_two_comments(
        ctx: Any, shared_dir: Path) -> None:
    """GitHub numbers discussion comments apart from issue comments. Both were stored as
    (`comment`, id): the second delivery took the first one's row and moved it to its thread
    (the issue lost its comment), and the first one's deletion deleted the other."""
    issue_comment, disc_comment = _same_id_pair(shared_dir)
    await dispatch(ctx, "issue_comment", issue_comment)
    await dispatch(ctx, "discussion_comment", disc_comment)
    issue = await record(ctx, HELLO, 1)
    disc = await record(ctx, HELLO, 4)
    assert [c["body"] for c in issue["comments"]] == [issue_comment["comment"]["body"]]
    assert [c["body"] for c in disc["comments"]] == ["ANSWER"]
    # The contract's kind is unchanged: both are `comment`.
    assert [c["kind"] for c in issue["comments"] + disc["comments"]] == ["comment", "comment"]
    # The issue comment deleted: the discussion comment of the same id stays, and a
    # redelivery of it is stored (it is not the deleted one).
    deleted = shared(shared_dir, "issue_comment/deleted.json")
    await dispatch(ctx, "issue_comment", deleted)
    assert (await record(ctx, HELLO, 1))["comments"] == []
    assert [c["body"] for c in (await record(ctx, HELLO, 4))["comments"]] == ["ANSWER"]
    async with ctx.sessionmaker() as session:
        thread = await get_thread(session, HELLO, 4)
        assert thread is not None
        await session.execute(Comment.__table__.delete().where(Comment.thread_id == thread.id))
        await session.commit()
    await dispatch(ctx, "discussion_comment", disc_comment)
    assert [c["body"] for c in (await record(ctx, HELLO, 4))["comments"]] == ["ANSWER"]
    # And the discussion comment deleted stays deleted, the issue comment's grave apart.
    await dispatch(ctx, "discussion_comment", {**disc_comment, "action": "deleted"})
    await dispatch(ctx, "discussion_comment", disc_comment)
    assert (await record(ctx, HELLO, 4))["comments"] == []
    async with ctx.sessionmaker() as session:
        keys = sorted(await session.scalars(select(Deletion.key).where(Deletion.key.like("comment:%"))))
    gid = issue_comment["comment"]["id"]
    assert keys == [f"comment:comment:{gid}", f"comment:discussion_comment:{gid}"]


async def test_the_same_pair_in_one_batch(ctx: Any, shared_dir: Path) -> None:
    """The worker's batch looks comments up together, by (kind, id): the same pair in one
    batch is two comments as well."""
    issue_comment, disc_comment = _same_id_pair(shared_dir)
    outcomes = await events.handle_batch([
        sansio.Event(issue_comment, event="issue_comment", delivery_id=str(uuid.uuid4())),
        sansio.Event(disc_comment, event="discussion_comment", delivery_id=str(uuid.uuid4())),
    ], ctx)
    assert outcomes == [None, None]
    assert len((await record(ctx, HELLO, 1))["comments"]) == 1
    assert len((await record(ctx, HELLO, 4))["comments"]) == 1


async def test_the_sync_keeps_an_issue_comment_and_a_discussion_comment_of_one_id(
        sync_ctx: AppContext, fake_github: Any, schema_path: Path) -> None:
    """The nightly sync keyed both by (`comment`, databaseId): the second thread written took
    the first one's comment row."""
    data = FakeData(rng=random.Random(4))
    issue = data.add_thread(SLIME, "issue", n_comments=1, closed=False)
    disc = data.add_thread(SLIME, "discussion", n_comments=1, closed=False)
    disc["_comments"][0]["_replies"].clear()
    disc["_comments"][0]["databaseId"] = issue["_comments"][0]["databaseId"]
    fake_github.graphql_handler = FakeGraphQL(data, schema_path)
    await sync(sync_ctx, [SLIME], sleep=no_sleep)
    assert len((await record(sync_ctx, SLIME, issue["number"]))["comments"]) == 1
    assert len((await record(sync_ctx, SLIME, disc["number"]))["comments"]) == 1
    assert len(await comment_rows(sync_ctx)) == 2


async def test_a_discussion_comment_seen_by_webhook_and_sync_is_one_row(
        sync_ctx: AppContext, fake_github: Any, schema_path: Path) -> None:
    """A discussion comment and a reply stored from their webhooks, then read by the nightly
    sync: one row each, of the same kind, whichever came first."""
    data = FakeData(rng=random.Random(6))
    disc = data.add_thread(SLIME, "discussion", n_comments=1, closed=False)
    top = disc["_comments"][0]
    top["_replies"] = [data._comment("DiscussionComment", data._tick(30))]
    reply = top["_replies"][0]
    envelope = {"discussion": rest_discussion(disc),
                "repository": {"id": 31, "full_name": SLIME, "default_branch": "main",
                               "owner": {"login": "THUDM", "type": "Organization"}},
                "sender": rest_user(top["author"])}
    await dispatch(sync_ctx, "discussion_comment",
                   {**envelope, "action": "created", "comment": rest_comment(top)})
    await dispatch(sync_ctx, "discussion_comment",
                   {**envelope, "action": "created",
                    "comment": rest_comment(reply, top["databaseId"])})
    before = [(c.kind, c.github_id) for c in await comment_rows(sync_ctx)]
    fake_github.graphql_handler = FakeGraphQL(data, schema_path)
    await sync(sync_ctx, [SLIME], sleep=no_sleep)
    after = [(c.kind, c.github_id) for c in await comment_rows(sync_ctx)]
    assert after == before and len(after) == 2
    assert {kind for kind, _ in after} == {"discussion_comment"}


# ---- 2. review comments keep their file --------------------------------------------------
async def test_a_review_comment_keeps_its_file(ctx: Any, shared_dir: Path) -> None:
    """`pull_request_review_comment` names the file the remark is on (`path`): it was thrown
    away. Stored now, and given in the record (an optional key the review analyzer reads;
    tests/test_review_inputs.py)."""
    payload = shared(shared_dir, "pull_request_review_comment/created.json")
    await dispatch(ctx, "pull_request_review_comment", payload)
    [row] = await comment_rows(ctx)
    assert (row.kind, row.path) == ("review_comment", "README.md")
    [comment] = (await record(ctx, HELLO, 2))["comments"]
    assert (comment["path"], comment["kind"]) == ("README.md", "review_comment")
    # A payload without the key leaves it alone.
    thin = copy.deepcopy(payload)
    thin["action"] = "edited"
    del thin["comment"]["path"]
    thin["comment"]["body"] = "More emoji, please."
    thin["comment"]["updated_at"] = "2019-05-15T15:21:00Z"
    await dispatch(ctx, "pull_request_review_comment", thin)
    [row] = await comment_rows(ctx)
    assert (row.body, row.path) == ("More emoji, please.", "README.md")


async def test_the_sync_stores_a_review_comments_file(
        sync_ctx: AppContext, fake_github: Any, schema_path: Path) -> None:
    data = FakeData(rng=random.Random(8))
    pr = data.add_thread(SLIME, "pull_request", n_comments=0, n_reviews=0, closed=False)
    review = data._add_review(pr, 2)
    review["_comments"][0]["path"] = "verl/trainer/ppo/core_algos.py"
    review["_comments"][1]["path"] = "docs/algo/dapo.md"
    fake_github.graphql_handler = FakeGraphQL(data, schema_path)
    await sync(sync_ctx, [SLIME], sleep=no_sleep)
    paths = {c.github_id: c.path for c in await comment_rows(sync_ctx)}
    assert paths == {review["databaseId"]: None,
                     review["_comments"][0]["databaseId"]: "verl/trainer/ppo/core_algos.py",
                     review["_comments"][1]["databaseId"]: "docs/algo/dapo.md"}


# ---- 3. a discussion's answer and category -------------------------------------------------
async def _thread(ctx: Any, repo: str, number: int) -> Any:
    async with ctx.sessionmaker() as session:
        thread = await get_thread(session, repo, number)
    assert thread is not None
    return thread


async def test_a_discussions_answer_and_category_are_stored(ctx: Any, shared_dir: Path) -> None:
    """`discussion.answered` / `unanswered` / `category_changed` (GitHub's payloads): whether
    an answer was chosen, by whom, and the category were read and dropped."""
    await dispatch(ctx, "discussion", shared(shared_dir, "discussion/created.json"))
    thread = await _thread(ctx, HELLO, 4)
    assert (thread.answered, thread.answer_chosen_by, thread.category) == (False, None, "General")
    await dispatch(ctx, "discussion", shared(shared_dir, "discussion/category_changed.json"))
    assert (await _thread(ctx, HELLO, 4)).category == "Show and tell"
    await dispatch(ctx, "discussion", shared(shared_dir, "discussion/answered.json"))
    thread = await _thread(ctx, HELLO, 4)
    assert (thread.answered, thread.answer_chosen_by, thread.category) == (True, "Codertocat", "Q&A")
    # An older delivery (the `created` redelivered) does not undo it.
    await dispatch(ctx, "discussion", shared(shared_dir, "discussion/created.json"))
    assert (await _thread(ctx, HELLO, 4)).answered is True
    await dispatch(ctx, "discussion", shared(shared_dir, "discussion/unanswered.json"))
    thread = await _thread(ctx, HELLO, 4)
    assert (thread.answered, thread.answer_chosen_by) == (False, None)
    # The contract record is unchanged.
    rec = await record(ctx, HELLO, 4)
    assert not {"answered", "answer_chosen_by", "category"} & set(rec)


async def test_the_sync_stores_a_discussions_answer_and_category(
        sync_ctx: AppContext, fake_github: Any, schema_path: Path) -> None:
    data = FakeData(rng=random.Random(9))
    answered = data.add_thread(SLIME, "discussion", n_comments=2, closed=False)
    data.answer(answered, answered["_comments"][1], {"__typename": "User", "login": "guo"})
    answered["category"] = {"name": "Q&A"}
    plain = data.add_thread(SLIME, "discussion", n_comments=1, closed=False)
    fake_github.graphql_handler = FakeGraphQL(data, schema_path)
    await sync(sync_ctx, [SLIME], sleep=no_sleep)
    thread = await _thread(sync_ctx, SLIME, answered["number"])
    assert (thread.answered, thread.answer_chosen_by, thread.category) == (True, "guo", "Q&A")
    thread = await _thread(sync_ctx, SLIME, plain["number"])
    assert (thread.answered, thread.answer_chosen_by, thread.category) == (False, None, "General")


async def test_the_thread_page_shows_a_discussions_category_and_answer(
        ctx: Any, shared_dir: Path) -> None:
    from bot.app import create_app

    await dispatch(ctx, "discussion", shared(shared_dir, "discussion/answered.json"))
    client = TestClient(TestServer(create_app(ctx, worker=False)))
    await client.start_server()
    try:
        resp = await client.get(f"/threads/{HELLO}/4")
        assert resp.status == 200
        html = await resp.text()
    finally:
        await client.close()
    assert "Q&amp;A" in html and "answered" in html


async def test_comment_count_in_stats_is_unchanged_by_the_kind(ctx: Any, shared_dir: Path) -> None:
    """/api/stats counts every comment, whatever its stored kind."""
    issue_comment, disc_comment = _same_id_pair(shared_dir)
    await dispatch(ctx, "issue_comment", issue_comment)
    await dispatch(ctx, "discussion_comment", disc_comment)
    async with ctx.sessionmaker() as session:
        assert await session.scalar(select(func.count()).select_from(Comment)) == 2


async def test_a_discussion_command_deleted_before_it_was_handled_does_not_act(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """A discussion comment's deletion is noted under its own kind: the command check
    (bot.webhooks.commands) looks for it there. GitHub's discussion_comment payloads:
    `/rltracker stop` written, then deleted while its delivery waited; the deletion is
    handled first."""
    from bot.store.models import Action, Thread
    from bot.webhooks.routers import router
    from tests.test_actions_e2e import INST, install

    await install(app_ctx, fake_github, repo=HELLO, framework="verl")
    created = shared(shared_dir, "discussion_comment/created.json")
    deleted = shared(shared_dir, "discussion_comment/deleted.json")
    for payload in (created, deleted):
        payload["installation"] = {"id": INST}
        payload["comment"]["body"] = "/rltracker stop"
    await router.dispatch(sansio.Event(deleted, event="discussion_comment", delivery_id="del"), app_ctx)
    await router.dispatch(sansio.Event(created, event="discussion_comment", delivery_id="cre"), app_ctx)
    async with app_ctx.sessionmaker() as session:
        thread = await session.scalar(select(Thread).where(Thread.number == 4))
        assert thread is None or not thread.muted
        assert list(await session.scalars(select(Action).where(Action.kind == "command"))) == []


async def test_the_comments_of_a_draft_review_are_not_stored(
        sync_ctx: AppContext, fake_github: Any, schema_path: Path) -> None:
    """A pending (draft) review is visible only to its author, the token's owner when an
    operator's GITHUB_TOKEN reads a repository they review: the sync skipped the review but
    stored its draft comments, which the tracker then analysed (no webhook ever tells of
    them: GitHub sends them once the review is submitted)."""
    data = FakeData(rng=random.Random(12))
    pr = data.add_thread(SLIME, "pull_request", n_comments=1, n_reviews=0, closed=False)
    submitted = data._add_review(pr, 1)
    draft = data._add_review(pr, 2)
    draft["state"], draft["submittedAt"] = "PENDING", None
    fake_github.graphql_handler = FakeGraphQL(data, schema_path)
    await sync(sync_ctx, [SLIME], sleep=no_sleep)
    stored = {c.github_id for c in await comment_rows(sync_ctx)}
    assert stored == {pr["_comments"][0]["databaseId"], submitted["databaseId"],
                      submitted["_comments"][0]["databaseId"]}
