"""A GraphQL answer with errors and data (a partial answer) in which a continuation (the next
page of a long thread's comments, `node(id:)`) came back null because of an error, on SQLite
and PostgreSQL, against the fake GitHub server answering from GitHub's real schema.

Such a null was read as "the thread vanished meanwhile": the thread was written with the
comments of its first page only, and every stored comment beyond it was deleted as deleted on
GitHub. A null with an error (a timeout of that part of the query) is now transient: the
continuation is asked again. A null with GitHub's NOT_FOUND error still means the parent is
gone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from bot.context import AppContext
from bot.github.sync import SyncError, sync
from bot.store.models import Comment, Thread
from tests.fake_graphql import FakeData, FakeGraphQL
from tests.fakegithub import no_sleep

TIMEOUT = ("Something went wrong while executing your query. This may be the result of a "
           "timeout, or it could be a GitHub bug.")


class NullContinuations:
    """The fake's answers, with the first continuation slot (`c0`) of the next `times`
    requests that carry one answered null with an error naming it, as GitHub does when that
    part of the query fails."""

    def __init__(self, responder: FakeGraphQL) -> None:
        self.responder = responder
        self.times = 0
        self.nulled = 0

    def __call__(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        out = self.responder(query, variables)
        data = out.get("data") or {}
        if self.times > 0 and data.get("c0") is not None:
            self.times -= 1
            self.nulled += 1
            data["c0"] = None
            out.setdefault("errors", []).append({"message": TIMEOUT, "path": ["c0"]})
        return out


@pytest.fixture
def world(fake_github: Any, shared_dir: Path) -> tuple[FakeData, NullContinuations]:
    data = FakeData.generate(8, seed=7)
    responder = NullContinuations(
        FakeGraphQL(data, shared_dir / "fixtures" / "github-api" / "schema.graphql"))
    fake_github.graphql_handler = responder
    return data, responder


async def stored_comments(ctx: AppContext, repo: str, number: int) -> int:
    async with ctx.sessionmaker() as session:
        return int(await session.scalar(
            select(func.count()).select_from(Comment).join(Thread)
            .where(Thread.repo == repo, Thread.number == number)) or 0)


def long_thread(data: FakeData) -> dict[str, Any]:
    repo = "huggingface/trl"
    return data.add_thread(repo, "issue", n_comments=250, closed=False)


async def test_a_continuation_null_with_an_error_is_asked_again(
        sync_ctx: AppContext, world: tuple[FakeData, NullContinuations]) -> None:
    data, responder = world
    thread = long_thread(data)
    repo, number = thread["_repo"], thread["number"]
    await sync(sync_ctx, [repo], sleep=no_sleep)
    assert await stored_comments(sync_ctx, repo, number) == 250
    data.touch(repo, "issue", number, new_comments=1)  # the refresh reads it again
    responder.times = 1
    await sync(sync_ctx, [repo], sleep=no_sleep)
    assert responder.nulled == 1
    assert await stored_comments(sync_ctx, repo, number) == 251


async def test_a_continuation_failing_every_time_ends_the_sync_keeping_the_comments(
        sync_ctx: AppContext, world: tuple[FakeData, NullContinuations]) -> None:
    data, responder = world
    thread = long_thread(data)
    repo, number = thread["_repo"], thread["number"]
    await sync(sync_ctx, [repo], sleep=no_sleep)
    data.touch(repo, "issue", number, new_comments=1)
    responder.times = 1000
    with pytest.raises(SyncError, match="continuation"):
        await sync(sync_ctx, [repo], sleep=no_sleep)
    assert await stored_comments(sync_ctx, repo, number) == 250  # none deleted
    responder.times = 0  # GitHub answers again: the next run finishes the thread
    await sync(sync_ctx, [repo], sleep=no_sleep)
    assert await stored_comments(sync_ctx, repo, number) == 251



class NullNestedComments:
    """The fake's answers, with the nested `comments` of thread `number` in a stream page
    answered null with an error naming them (that part of the query failed), `times` times."""

    def __init__(self, responder: FakeGraphQL, number: int) -> None:
        self.responder = responder
        self.number = number
        self.times = 0
        self.nulled = 0

    def __call__(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        out = self.responder(query, variables)
        data = out.get("data") or {}
        for alias, repo in data.items():
            if self.times <= 0 or not alias.startswith("s") or not isinstance(repo, dict):
                continue
            for field, conn in repo.items():
                if not isinstance(conn, dict):
                    continue  # the repository's id, name, updatedAt
                for k, node in enumerate((conn or {}).get("nodes") or []):
                    if node and node.get("number") == self.number and node.get("comments"):
                        self.times -= 1
                        self.nulled += 1
                        node["comments"] = None
                        out.setdefault("errors", []).append(
                            {"message": TIMEOUT, "path": [alias, field, "nodes", k, "comments"]})
        return out


async def test_a_thread_whose_comments_came_back_null_with_an_error_keeps_them(
        sync_ctx: AppContext, fake_github: Any, shared_dir: Path) -> None:
    """The same in a stream page: a thread's nested comments null with an error were read as
    a thread without comments, and every stored comment of it was deleted."""
    data = FakeData.generate(8, seed=7)
    thread = data.add_thread("huggingface/trl", "issue", n_comments=30, closed=False)
    repo, number = thread["_repo"], thread["number"]
    responder = NullNestedComments(
        FakeGraphQL(data, shared_dir / "fixtures" / "github-api" / "schema.graphql"), number)
    fake_github.graphql_handler = responder
    await sync(sync_ctx, [repo], sleep=no_sleep)
    assert await stored_comments(sync_ctx, repo, number) == 30
    data.touch(repo, "issue", number, new_comments=1)
    responder.times = 1
    await sync(sync_ctx, [repo], sleep=no_sleep)
    assert responder.nulled == 1
    assert await stored_comments(sync_ctx, repo, number) == 31  # none deleted, asked again


class NullReviewComments:
    """The nested comments of every review of pull request `number` in a stream page
    answered null with an error naming them, `times` answers."""

    def __init__(self, responder: FakeGraphQL, number: int) -> None:
        self.responder = responder
        self.number = number
        self.times = 0

    def __call__(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        out = self.responder(query, variables)
        for alias, repo in (out.get("data") or {}).items():
            if self.times <= 0 or not alias.startswith("s") or not isinstance(repo, dict):
                continue
            for field, conn in repo.items():
                if not isinstance(conn, dict):
                    continue  # the repository's id, name, updatedAt
                for k, node in enumerate((conn or {}).get("nodes") or []):
                    if not node or node.get("number") != self.number:
                        continue
                    self.times -= 1
                    for r, review in enumerate((node.get("reviews") or {}).get("nodes") or []):
                        review["comments"] = None
                        out.setdefault("errors", []).append({"message": TIMEOUT, "path": [
                            alias, field, "nodes", k, "reviews", "nodes", r, "comments"]})
        return out


async def test_review_comments_that_came_back_null_with_an_error_are_kept(
        sync_ctx: AppContext, fake_github: Any, shared_dir: Path) -> None:
    """Deeper down (a review's comments) the thread is marked incomplete: what is stored and
    was not seen is kept."""
    data = FakeData.generate(8, seed=7)
    pr = data.add_thread("huggingface/trl", "pull_request", n_comments=2, n_reviews=4,
                         closed=False)
    repo, number = pr["_repo"], pr["number"]
    for review in pr["_reviews"]:  # every review with a comment of its own
        review["_comments"] = review["_comments"] or [
            data._comment("PullRequestReviewComment", data._tick(5))]
    responder = NullReviewComments(
        FakeGraphQL(data, shared_dir / "fixtures" / "github-api" / "schema.graphql"), number)
    fake_github.graphql_handler = responder
    await sync(sync_ctx, [repo], sleep=no_sleep)
    before = await stored_comments(sync_ctx, repo, number)
    assert before == 2 + 4 + sum(len(r["_comments"]) for r in pr["_reviews"])
    data.touch(repo, "pull_request", number, new_comments=1)
    responder.times = 1
    await sync(sync_ctx, [repo], sleep=no_sleep)
    assert await stored_comments(sync_ctx, repo, number) == before + 1


class NullThread:
    """The fake's answers, with thread `number` (an issue) in a stream page answered null
    with a FORBIDDEN error naming its node, as GitHub does when one issue of a page may not
    be read, `times` times."""

    def __init__(self, responder: FakeGraphQL, number: int) -> None:
        self.responder = responder
        self.number = number
        self.times = 0
        self.nulled = 0

    def __call__(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        out = self.responder(query, variables)
        data = out.get("data") or {}
        for alias, repo in data.items():
            if self.times <= 0 or not alias.startswith("s") or not isinstance(repo, dict):
                continue
            nodes = (repo.get("issues") or {}).get("nodes") or []
            for k, node in enumerate(nodes):
                if node and node.get("number") == self.number:
                    self.times -= 1
                    self.nulled += 1
                    nodes[k] = None
                    out.setdefault("errors", []).append({
                        "type": "FORBIDDEN", "path": [alias, "issues", "nodes", k],
                        "message": "Resource not accessible by integration"})
        return out


async def test_a_thread_null_with_an_error_in_a_page_is_recorded_and_read_again(
        sync_ctx: AppContext, fake_github: Any, shared_dir: Path) -> None:
    """A thread node null with an error inside a page (FORBIDDEN on one issue) was skipped
    silently: the sync said nothing (exit 0) and its mark moved past the thread, so the change
    was read only when the thread was next updated. It is recorded in `failed_threads` (the
    command's exit 2) and the mark is held below it: the next refresh reads it again."""
    repo = "huggingface/trl"
    data = FakeData.generate(8, seed=7)
    issues = [t for t in data.repos[repo]["issue"]]
    hidden, other = issues[0]["number"], issues[1]["number"]
    responder = NullThread(FakeGraphQL(data, shared_dir / "fixtures" / "github-api"
                                       / "schema.graphql"), hidden)
    fake_github.graphql_handler = responder
    await sync(sync_ctx, [repo], sleep=no_sleep)
    before = await stored_comments(sync_ctx, repo, hidden)
    data.touch(repo, "issue", hidden, new_comments=2)
    data.touch(repo, "issue", other, new_comments=1)  # newer: the refresh's first thread
    responder.times = 1
    stats = await sync(sync_ctx, [repo], sleep=no_sleep)
    assert responder.nulled == 1
    assert [f["thread"] for f in stats.failed_threads] == [f"{repo} issues (a thread GitHub "
                                                          "answered null)"], stats.failed_threads
    assert "Resource not accessible" in stats.failed_threads[0]["error"]
    assert await stored_comments(sync_ctx, repo, hidden) == before
    stats = await sync(sync_ctx, [repo], sleep=no_sleep)  # GitHub answers it again
    assert not stats.failed_threads
    assert await stored_comments(sync_ctx, repo, hidden) == before + 2
