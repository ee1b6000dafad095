"""A repository named twice to one sync (`--repo huggingface/trl --repo HuggingFace/TRL`,
or a name repeated): read once, every thread stored. Through the fake GitHub GraphQL server,
on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from bot.github.sync import sync
from bot.store.models import Comment, SyncCursor, Thread
from tests.fake_graphql import FakeData, FakeGraphQL, forbidding_first_issue
from tests.fakegithub import no_sleep

REPO = "huggingface/trl"


async def test_a_repository_named_twice_is_read_once_and_whole(
        sync_ctx: Any, fake_github: Any, schema_path: Path) -> None:
    """On main: two streams per kind read the same threads, one kept the other's pending
    thread under the same key: of four threads three were stored (the discussion and its
    comments lost: 9 comment rows of 28), and its cursor never marked done."""
    data = FakeData()
    for kind in ("issue", "pull_request", "discussion", "issue"):
        data.add_thread(REPO, kind, n_comments=3, closed=False, body="KL grows after step 50.")
    fake_github.graphql_handler = FakeGraphQL(data, schema_path)
    expected = sum(data.comment_count(t) for t in data.all_threads())
    for full in (False, True):
        stats = await sync(sync_ctx, [REPO, "HuggingFace/TRL", REPO], full=full, sleep=no_sleep)
        assert stats.threads == 4 and not stats.failed_streams
        async with sync_ctx.sessionmaker() as session:
            assert await session.scalar(select(func.count()).select_from(Thread)) == 4
            assert await session.scalar(select(func.count()).select_from(Comment)) == expected
            cursors = list(await session.scalars(select(SyncCursor)))
        assert sorted(c.kind for c in cursors) == ["discussion", "issue", "pull_request"]
        assert all(c.full_done for c in cursors)


async def test_a_nightly_run_whose_sync_left_a_thread_unread_says_so(
        settings: Any, fake_github: Any, shared_dir: Path) -> None:
    """The sync listed a thread in `failed_threads` (GitHub answered it null with FORBIDDEN;
    the database refused it; its analysis raised): `rltracker sync` exits 2 for it, but the
    nightly run was recorded "ok" and the thread named nowhere an operator looks. It is
    "partial" and names it."""
    from bot.scheduler import nightly_job, step_sync
    from tests.fake_graphql import REPOS, graphql_context

    data = FakeData()
    for repo in REPOS:  # the seven the nightly sync reads
        for kind in ("issue", "pull_request", "discussion"):
            data.add_thread(repo, kind, n_comments=1, closed=False, body="Loss spikes at step 9.")
    async with graphql_context(settings, fake_github, shared_dir, data) as ctx:
        responder = fake_github.graphql_handler

        fake_github.graphql_handler = forbidding_first_issue(responder)
        result = await nightly_job(ctx, steps=[("sync", step_sync)])
    sync_counts = result["counts"]["sync"]
    assert sync_counts["failed_threads"] and not sync_counts["failed_streams"]
    assert result["outcome"] == "partial", result
    assert "a thread GitHub answered null" in result["counts"]["sync"]["failed_threads"][0]["thread"]
