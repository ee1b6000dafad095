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

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from bot.context import AppContext
from bot.github.sync import SyncError, sync
from bot.store.models import Comment, Thread
from tests.fake_graphql import FakeData, FakeGraphQL
from tests.fakegithub import no_sleep, token_context

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


@pytest.fixture
async def sync_ctx(settings: Any, fake_github: Any) -> AsyncIterator[AppContext]:
    async with token_context(settings, fake_github) as ctx:
        yield ctx


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

