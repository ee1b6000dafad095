"""GitHub's `pageInfo` saying there is a next page but giving no way to it: `hasNextPage: true`
with no `endCursor`, or the cursor the page was asked with. Not seen from GitHub nor in any
recording here (github62 left it); the sync took the page's `endCursor` as the next `after`
and asked for the same page again, without end (a night's sync never finishing). Now the
listing (or the thread's comments) stops there with one log line and the stop is counted in
`failed_threads` (the night is "partial", `rltracker sync` exits 2): what was read is kept,
and the next sync reads it again. On SQLite and PostgreSQL, the fake answering from GitHub's
schema; `max_requests` bounds the run on main (where it did not stop)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from bot.context import AppContext
from bot.github.sync import sync
from bot.store.models import Comment, SyncCursor, Thread
from tests.fake_graphql import FakeData, FakeGraphQL
from tests.fakegithub import no_sleep

REPO = "huggingface/trl"


class StuckCursors:
    """The fake's answers, with the `pageInfo` of one kind of connection rewritten:
    `listing`: the repository's issues say hasNextPage with no endCursor (`none`) or with the
    cursor they were asked with (`same`; the first page, asked with none, is left as it is);
    `comments`: a thread's comments say hasNextPage with no endCursor."""

    def __init__(self, responder: FakeGraphQL, what: str, how: str = "none") -> None:
        self.responder, self.what, self.how = responder, what, how
        self.stuck = 0

    def __call__(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        variables = variables or {}
        out = self.responder(query, variables)
        for alias, value in (out.get("data") or {}).items():
            if not isinstance(value, dict):
                continue
            if self.what == "listing" and alias.startswith("s") and value.get("issues"):
                info = value["issues"]["pageInfo"]
                asked = variables.get("a" + alias[1:])
                if self.how == "none":
                    info.update(hasNextPage=True, endCursor=None)
                    self.stuck += 1
                elif asked is not None:
                    info.update(hasNextPage=True, endCursor=asked)
                    self.stuck += 1
            if self.what == "comments":
                self._comments(value)
        return out

    def _comments(self, value: Any) -> None:
        if isinstance(value, dict):
            comments = value.get("comments")
            if isinstance(comments, dict) and (comments.get("pageInfo") or {}).get("hasNextPage"):
                comments["pageInfo"]["endCursor"] = None
                self.stuck += 1
            for v in value.values():
                self._comments(v)
        elif isinstance(value, list):
            for v in value:
                self._comments(v)


async def stored(ctx: AppContext, kind: str) -> int:
    async with ctx.sessionmaker() as session:
        return int(await session.scalar(select(func.count()).select_from(Thread).where(
            Thread.repo == REPO, Thread.kind == kind)) or 0)


async def test_a_listing_with_a_next_page_and_no_cursor_stops_and_is_counted(
        sync_ctx: AppContext, fake_github: Any, shared_dir: Path) -> None:
    """The issues listing answers hasNextPage with no endCursor: on main the sync asked for the
    first page again until its request budget ran out. It stops the listing after that page,
    says so, and counts it; the pull requests and discussions are synced whole."""
    data = FakeData.generate(80, seed=7)
    responder = StuckCursors(FakeGraphQL(data, shared_dir / "fixtures" / "github-api"
                                         / "schema.graphql"), "listing", "none")
    fake_github.graphql_handler = responder
    stats = await sync(sync_ctx, [REPO], sleep=no_sleep, max_requests=40)
    assert responder.stuck == 1
    assert [f["thread"] for f in stats.failed_threads] == [f"{REPO} issues (the listing)"]
    assert "no next cursor" in stats.failed_threads[0]["error"]
    assert 0 < await stored(sync_ctx, "issue") < len(data.repos[REPO]["issue"])
    assert await stored(sync_ctx, "pull_request") == len(data.repos[REPO]["pull_request"])
    assert await stored(sync_ctx, "discussion") == len(data.repos[REPO]["discussion"])
    async with sync_ctx.sessionmaker() as session:
        cursor = await session.scalar(select(SyncCursor).where(
            SyncCursor.repo == REPO, SyncCursor.kind == "issue"))
    assert cursor is None or not cursor.full_done  # read again by the next sync


async def test_a_listing_answering_the_cursor_it_was_asked_with_stops(
        sync_ctx: AppContext, fake_github: Any, shared_dir: Path) -> None:
    """The second page of the issues answers hasNextPage with the very cursor it was asked
    with: on main the sync asked for that page again until its budget ran out."""
    data = FakeData.generate(80, seed=7)
    responder = StuckCursors(FakeGraphQL(data, shared_dir / "fixtures" / "github-api"
                                         / "schema.graphql"), "listing", "same")
    fake_github.graphql_handler = responder
    stats = await sync(sync_ctx, [REPO], sleep=no_sleep, max_requests=40)
    assert responder.stuck == 1
    assert [f["thread"] for f in stats.failed_threads] == [f"{REPO} issues (the listing)"]
    assert "the same cursor" in stats.failed_threads[0]["error"]
    assert 0 < await stored(sync_ctx, "issue") <= len(data.repos[REPO]["issue"])
    assert await stored(sync_ctx, "discussion") == len(data.repos[REPO]["discussion"])


async def test_a_threads_comments_with_a_next_page_and_no_cursor_stop_and_are_counted(
        sync_ctx: AppContext, fake_github: Any, shared_dir: Path) -> None:
    """A long thread's comments answer hasNextPage with no endCursor: on main its comments
    were asked from their start again and again until the budget ran out. The thread is
    written with what was read, named in `failed_threads`, and the sync goes on."""
    data = FakeData.generate(8, seed=7)
    long = data.add_thread(REPO, "issue", n_comments=250, closed=False)
    responder = StuckCursors(FakeGraphQL(data, shared_dir / "fixtures" / "github-api"
                                         / "schema.graphql"), "comments")
    fake_github.graphql_handler = responder
    stats = await sync(sync_ctx, [REPO], sleep=no_sleep, max_requests=40)
    assert [f["thread"] for f in stats.failed_threads] == [f"{REPO}#{long['number']} (comments)"]
    assert "no next cursor" in stats.failed_threads[0]["error"]
    assert await stored(sync_ctx, "issue") == len(data.repos[REPO]["issue"])
    async with sync_ctx.sessionmaker() as session:
        n = await session.scalar(select(func.count()).select_from(Comment).join(Thread).where(
            Thread.repo == REPO, Thread.number == long["number"]))
    assert 0 < int(n or 0) < 250

