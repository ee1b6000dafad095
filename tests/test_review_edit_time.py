"""A pull-request review edited after it was submitted (GitHub's `pull_request_review.edited`;
GraphQL's `updatedAt` / `lastEditedAt` move, `submittedAt` does not): the new text is what is
stored and what the thread is analysed on, through the webhook and through the nightly sync,
and the review's time stays its submit time (reviews store no `updated_at`).

Real payloads from the shared fixtures, the fake GitHub over HTTP (GitHub's real schema),
SQLite and PostgreSQL."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from bot.context import AppContext
from bot.github.sync import sync
from bot.pipeline import sync_changed
from bot.store.models import Analysis, Comment
from bot.store.threads import get_thread
from bot.store.types import parse_datetime
from tests.fake_graphql import ActingOnCall, FakeData, FakeGraphQL
from tests.fakegithub import no_sleep
from tests.test_review_events import CONCERN, HELLO, PLAIN, Reviews, dispatch, edited, submitted

SLIME = "THUDM/slime"


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


async def stored_review(ctx: AppContext, repo: str, number: int, github_id: int | None = None
                        ) -> tuple[Comment, list[str]]:
    """The thread's one review (or the one of `github_id`), and its analysis's concerns."""
    async with ctx.sessionmaker() as session:
        thread = await get_thread(session, repo, number)
        assert thread is not None
        (review,) = (await session.scalars(select(Comment).where(
            Comment.thread_id == thread.id, Comment.kind == "review",
            Comment.github_id == github_id if github_id is not None else Comment.kind == "review"
        ))).all()
        row = await session.scalar(select(Analysis).where(Analysis.thread_id == thread.id))
    assert row is not None
    return review, list(row.result["review"]["concerns"])


def _utc(value: datetime | None) -> datetime | None:
    return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value


async def test_an_edited_review_delivery_stores_the_new_text_at_the_submit_time(
        app_ctx: AppContext, fake_github: Any, shared_dir: Path) -> None:
    Reviews(fake_github, shared_dir)
    first = submitted(shared_dir, PLAIN)
    at = parse_datetime(first["review"]["submitted_at"])
    await dispatch(app_ctx, "pull_request_review", first)
    review, concerns = await stored_review(app_ctx, HELLO, 2)
    assert (review.body, _utc(review.created_at), review.updated_at, concerns) == (
        PLAIN, at, None, [])
    await dispatch(app_ctx, "pull_request_review", edited(shared_dir, CONCERN, PLAIN))
    review, concerns = await stored_review(app_ctx, HELLO, 2)
    assert (review.body, _utc(review.created_at), review.updated_at, concerns) == (
        CONCERN, at, None, ["tests_or_docs"])


@pytest.mark.parametrize("days_ago", [3, 90], ids=["recent", "older"])
@pytest.mark.parametrize("thread_moves", [False, True], ids=["thread-still", "thread-moves"])
async def test_a_review_edited_on_github_is_read_by_the_nightly_sync_at_its_submit_time(
        sync_ctx: AppContext, fake_github: Any, schema_path: Path,
        days_ago: int, thread_moves: bool) -> None:
    data = FakeData(rng=random.Random(5))
    data.clock = datetime.now(UTC) - timedelta(days=days_ago)
    fake_github.graphql_handler = FakeGraphQL(data, schema_path)
    pr = data.add_thread(SLIME, "pull_request", n_reviews=1, closed=False)
    pr["author"] = {"__typename": "User", "login": "alice"}
    (review,) = pr["_reviews"]
    review.update(author={"__typename": "User", "login": "bob"}, authorAssociation="MEMBER",
                  body=PLAIN, state="COMMENTED", _comments=[])
    submit = parse_datetime(review["submittedAt"])
    assert submit is not None
    # A review is created (pending) before it is submitted: the submit time is its time.
    review["createdAt"] = _iso(submit - timedelta(hours=2))
    await sync(sync_ctx, [SLIME], sleep=no_sleep, on_changed=partial(sync_changed, sync_ctx))
    stored, concerns = await stored_review(sync_ctx, SLIME, pr["number"])
    assert (stored.body, _utc(stored.created_at), stored.updated_at, concerns) == (
        PLAIN, submit, None, [])

    later = _iso(datetime.now(UTC) - timedelta(minutes=5))
    review.update(body=CONCERN, updatedAt=later, lastEditedAt=later)
    if thread_moves:
        pr["updatedAt"] = later
    from bot.scheduler import step_sync
    await step_sync(sync_ctx)
    stored, concerns = await stored_review(sync_ctx, SLIME, pr["number"])
    assert (stored.body, _utc(stored.created_at), stored.updated_at, concerns) == (
        CONCERN, submit, None, ["tests_or_docs"])


async def test_a_review_edit_stored_while_the_sync_held_its_pull_request_is_read_back(
        sync_ctx: AppContext, fake_github: Any, schema_path: Path, shared_dir: Path) -> None:
    """The reviewer edits a review while the sync holds the pull request it read (its other
    reviews come in a later request); the `edited` delivery is handled meanwhile, and the
    edit does not move the pull request's time. Before: the sync's older snapshot of the
    review overwrote the edit (no time to compare), and the run's check passed the thread
    over (read tonight): the old text stayed, and was analysed, until a later night. Now a
    review whose text the sync replaced is asked again at the end of the run."""
    data = FakeData(rng=random.Random(7))
    data.clock = datetime.now(UTC) - timedelta(days=90)  # older than the check of recent ones
    pr = data.add_thread(SLIME, "pull_request", n_reviews=25, closed=False)  # more than nested
    pr["author"] = {"__typename": "User", "login": "alice"}
    review = pr["_reviews"][0]
    review.update(author={"__typename": "User", "login": "bob"}, authorAssociation="MEMBER",
                  body=PLAIN, state="COMMENTED")

    async def edit_the_first_review() -> None:
        review["body"] = CONCERN
        payload = edited(shared_dir, CONCERN, PLAIN)
        payload["repository"].update(full_name=SLIME, name="slime",
                                     owner={**payload["repository"]["owner"], "login": "THUDM"})
        payload["pull_request"].update(
            id=pr["databaseId"], node_id=pr["id"], number=pr["number"], title=pr["title"],
            body=pr["body"], state="open", user={"login": "alice", "id": 1, "type": "User"},
            created_at=pr["createdAt"], updated_at=pr["updatedAt"])  # its time unmoved
        payload["review"].update(id=review["databaseId"], node_id=review["id"],
                                 user={"login": "bob", "id": 2, "type": "User"},
                                 submitted_at=review["submittedAt"])
        await dispatch(sync_ctx, "pull_request_review", payload)

    # the 2nd request: the rest of the reviews; meanwhile the first one is edited
    handler = ActingOnCall(FakeGraphQL(data, schema_path), 2, edit_the_first_review)
    fake_github.graphql_handler = handler
    stats = await sync(sync_ctx, [SLIME], sleep=no_sleep, on_changed=partial(sync_changed, sync_ctx))
    assert handler.calls >= 3
    stored, concerns = await stored_review(sync_ctx, SLIME, pr["number"], review["databaseId"])
    assert (stored.body, _utc(stored.created_at), concerns) == (
        CONCERN, parse_datetime(review["submittedAt"]), ["tests_or_docs"])
    assert stats.hidden_edited == 1


@pytest.mark.parametrize("state", ["open", "closed"])
async def test_an_older_review_edited_on_an_active_open_pull_request_is_read_the_next_night(
        sync_ctx: AppContext, fake_github: Any, schema_path: Path, state: str) -> None:
    """left66: a review submitted 90 days ago on a pull request still open and active in the
    last week (its time moved 3 days ago) is edited; the delivery is lost and the edit does
    not move the pull request's time. Before, only the rotation of older comments read it
    (within `recheck_runs` nights; here a sync without the rotation: the edit was never read).
    Now the nightly check of recent comments asks the reviews of the open pull requests
    active within its window too, whatever their age; a closed one's waits for the rotation."""
    data = FakeData(rng=random.Random(11))
    data.clock = datetime.now(UTC) - timedelta(days=90)
    fake_github.graphql_handler = FakeGraphQL(data, schema_path)
    pr = data.add_thread(SLIME, "pull_request", n_reviews=1, closed=state == "closed")
    pr["author"] = {"__typename": "User", "login": "alice"}
    (review,) = pr["_reviews"]
    review.update(author={"__typename": "User", "login": "bob"}, authorAssociation="MEMBER",
                  body=PLAIN, state="COMMENTED", _comments=[])
    pr["updatedAt"] = _iso(datetime.now(UTC) - timedelta(days=3))  # active this week
    await sync(sync_ctx, [SLIME], sleep=no_sleep, on_changed=partial(sync_changed, sync_ctx))
    stored, _ = await stored_review(sync_ctx, SLIME, pr["number"])
    assert stored.body == PLAIN

    later = _iso(datetime.now(UTC) - timedelta(minutes=5))
    review.update(body=CONCERN, updatedAt=later, lastEditedAt=later)  # the PR's time unmoved
    stats = await sync(sync_ctx, [SLIME], sleep=no_sleep,
                       on_changed=partial(sync_changed, sync_ctx), recheck=False)
    stored, concerns = await stored_review(sync_ctx, SLIME, pr["number"])
    if state == "closed":
        assert (stored.body, stats.hidden_edited) == (PLAIN, 0)
        return
    assert (stored.body, concerns, stats.hidden_edited) == (CONCERN, ["tests_or_docs"], 1)
