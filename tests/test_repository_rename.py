"""A repository renamed on GitHub, then a delivery sent before the rename handled afterwards
(GitHub's "Redeliver", or a queue that was behind), on SQLite and PostgreSQL.

GitHub keeps the repository's id and its `updated_at` moves with the rename: a payload that
still shows the old name carries the older `updated_at`. The stale name used to win: the
repository row and every thread went back under the old name (or, in a process that had
written the old name before, the stale delivery's thread was stored under it beside the
moved one), and the next delivery under the new name was skipped by the process's cache of
written repositories: the thread was split across two names.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from gidgethub import sansio
from sqlalchemy import select

from bot.context import AppContext
from bot.store.models import Comment, Repository, Thread
from bot.webhooks import events
from tests.test_events import dispatch

OLD, NEW = "Codertocat/Hello-World", "Codertocat/Hello-Universe"


def _payload(shared_dir: Path, name: str) -> dict[str, Any]:
    return json.loads((shared_dir / "fixtures" / "webhooks" / name).read_text())


def _renamed(payload: dict[str, Any], *, comment_id: int, minute: int) -> dict[str, Any]:
    """A comment delivery sent after the rename: new name, the repository's `updated_at` at
    the rename, a new comment."""
    out = copy.deepcopy(payload)
    out["repository"].update(name="Hello-Universe", full_name=NEW,
                             updated_at="2019-05-15T16:00:00Z")
    when = f"2019-05-15T16:{minute:02d}:00Z"
    out["issue"]["updated_at"] = when
    out["comment"].update(id=comment_id, node_id=f"IC_{comment_id}", body=f"comment {comment_id}",
                          created_at=when, updated_at=when)
    return out


async def _state(ctx: AppContext) -> tuple[list[str], list[tuple[str, int]], list[int]]:
    async with ctx.sessionmaker() as session:
        repos = sorted(await session.scalars(select(Repository.full_name)))
        threads = sorted((t.repo, t.number) for t in await session.scalars(select(Thread)))
        comments = sorted(await session.scalars(select(Comment.github_id)))
    return repos, threads, comments


@pytest.mark.parametrize("process", ["same", "other"])
@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
async def test_a_stale_delivery_does_not_undo_a_rename(ctx: AppContext, shared_dir: Path,
                                                       process: str, batched: bool) -> None:
    opened = _payload(shared_dir, "issues/opened.json")
    before = _payload(shared_dir, "issue_comment/created.json")  # sent before the rename
    assert opened["repository"]["full_name"] == before["repository"]["full_name"] == OLD
    await dispatch(ctx, "issues", opened)
    await dispatch(ctx, "issue_comment", _renamed(before, comment_id=9001, minute=1))
    assert await _state(ctx) == ([NEW], [(NEW, 1)], [9001])

    # the delivery sent before the rename, handled now: in this process (whose cache holds
    # the old name's key) or in another one (an empty cache)
    other = AppContext.create(ctx.settings) if process == "other" else ctx
    try:
        if batched:
            assert await events.handle_batch(
                [sansio.Event(before, event="issue_comment", delivery_id="stale")], other) == [None]
        else:
            await dispatch(other, "issue_comment", before)
    finally:
        if other is not ctx:
            await other.close()
    assert await _state(ctx) == ([NEW], [(NEW, 1)], [9001, 492700400])

    # the next delivery under the new name, in the first process (its cache holds the new key)
    await dispatch(ctx, "issue_comment", _renamed(before, comment_id=9002, minute=2))
    assert await _state(ctx) == ([NEW], [(NEW, 1)], [9001, 9002, 492700400])


async def test_a_later_rename_back_is_followed(ctx: AppContext, shared_dir: Path) -> None:
    """A name the repository had before is not refused for good: renamed back (a later
    `updated_at`), its deliveries move everything again."""
    opened = _payload(shared_dir, "issues/opened.json")
    before = _payload(shared_dir, "issue_comment/created.json")
    await dispatch(ctx, "issues", opened)
    await dispatch(ctx, "issue_comment", _renamed(before, comment_id=9001, minute=1))
    back = _renamed(before, comment_id=9003, minute=30)
    back["repository"].update(name="Hello-World", full_name=OLD, updated_at="2019-05-15T16:30:00Z")
    await dispatch(ctx, "issue_comment", back)
    assert await _state(ctx) == ([OLD], [(OLD, 1)], [9001, 9003])
