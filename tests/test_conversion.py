"""An issue converted to a discussion (GitHub's payloads: `discussion.created` with the
discussion "converting", which keeps the issue's number; the issue's comments become
discussion comments with ids of their own), as the webhook handlers store it, on SQLite and
PostgreSQL, one delivery at a time and as a worker's batch."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from bot.store.models import Comment, Thread
from tests.test_edit_order import deliver

HELLO = "Codertocat/Hello-World"


def _shared(shared_dir: Path, name: str) -> dict[str, Any]:
    return json.loads((shared_dir / "fixtures" / "webhooks" / name).read_text())


async def stored(ctx: Any) -> tuple[str | None, list[tuple[str, str]]]:
    """The kind of #4 and its comments' (kind, body)."""
    async with ctx.sessionmaker() as session:
        thread = await session.scalar(select(Thread).where(Thread.number == 4))
        if thread is None:
            return None, []
        rows = await session.scalars(select(Comment).where(Comment.thread_id == thread.id)
                                     .order_by(Comment.id))
        return thread.kind, [(c.kind, c.body) for c in rows]


def _issue_comment(shared_dir: Path) -> dict[str, Any]:
    payload = _shared(shared_dir, "issue_comment/created.json")
    payload["issue"]["number"] = 4
    return payload


def _converted_comment(shared_dir: Path, issue_comment: dict[str, Any]) -> dict[str, Any]:
    """The issue's comment as the discussion's comment after the conversion: same author and
    words, an id of the discussion comments' own."""
    payload = _shared(shared_dir, "discussion_comment/created.json")
    was = issue_comment["comment"]
    payload["comment"].update(body=was["body"], user=copy.deepcopy(was["user"]),
                              created_at=was["created_at"], updated_at=was["updated_at"])
    return payload


@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
async def test_a_converted_issue_keeps_each_comment_once(
        ctx: Any, shared_dir: Path, batched: bool) -> None:
    """Issue #4 with a comment, converted: `discussion.created` wrote over the issue's row
    (kind discussion) and the issue's comment stayed on it as a `comment` row; the same
    words delivered as the discussion's comment were stored beside it (the page and the
    analysis read every comment twice until the nightly sync). The issue's comment now stays
    until its discussion copy arrives (nothing is lost meanwhile), then only the copy is
    kept; a late delivery about the issue stores nothing over the discussion."""
    opened = _shared(shared_dir, "issues/opened.json")
    opened["issue"]["number"] = 4
    comment = _issue_comment(shared_dir)
    await deliver(ctx, batched, ("issues", opened), ("issue_comment", comment))
    assert await stored(ctx) == ("issue", [("comment", comment["comment"]["body"])])

    await deliver(ctx, batched, ("discussion", _shared(shared_dir, "discussion/created.json")))
    assert await stored(ctx) == ("discussion", [("comment", comment["comment"]["body"])])
    copy_of = _converted_comment(shared_dir, comment)
    await deliver(ctx, batched, ("discussion_comment", copy_of))
    body = comment["comment"]["body"]
    assert await stored(ctx) == ("discussion", [("discussion_comment", body)])
    # Redelivered: the issue's comment (and the issue's view of #4) stores nothing again.
    later = copy.deepcopy(comment)
    later["issue"]["updated_at"] = "2030-01-02T03:04:05Z"
    await deliver(ctx, batched, ("issue_comment", comment), ("issue_comment", later),
                  ("discussion_comment", copy_of))
    assert await stored(ctx) == ("discussion", [("discussion_comment", body)])


@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
async def test_a_late_delivery_of_a_converted_issue_not_stored(
        ctx: Any, shared_dir: Path, batched: bool) -> None:
    """The issue never stored (the app installed since, or its deliveries late): the
    discussion "converting" then a late `issue_comment` of the issue (a retry, GitHub's
    Redeliver). The comment was stored on the discussion as an issue comment, beside the
    copy GitHub made of it, and a newer issue view turned the discussion back into an
    issue."""
    discussion = _shared(shared_dir, "discussion/created.json")
    comment = _issue_comment(shared_dir)
    comment["issue"]["updated_at"] = "2030-01-02T03:04:05Z"
    await deliver(ctx, batched, ("discussion", discussion), ("issue_comment", comment))
    assert await stored(ctx) == ("discussion", [])


@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
async def test_the_apps_comment_copied_by_a_conversion_stays_the_apps(
        ctx: Any, shared_dir: Path, batched: bool) -> None:
    """user82: the app's failure comment on issue #4, converted with it: GitHub makes a
    discussion comment of it (an id and node id of its own) and the issue comment is gone.
    Its action kept the issue comment's ids, so the nightly reception check read that node
    as deleted (counted against the repository as a comment its maintainers deleted: the
    pause rule) and `/rltracker stop` in the discussion found "nothing to hide" while the
    copy stayed shown. The action now follows the copy, as the stored comment does; a
    person's comment copied beside it changes no action. Failed on main (the issue
    comment's ids kept)."""
    from bot.store.models import Action

    opened = _shared(shared_dir, "issues/opened.json")
    opened["issue"]["number"] = 4
    mine = _issue_comment(shared_dir)
    mine["comment"].update(id=7001, node_id="IC_7001", body="<!-- rltracker:failure-comment -->\n"
                           "**Likely entropy collapse**", user={"login": "rltracker[bot]",
                                                                 "type": "Bot", "id": 1})
    theirs = _issue_comment(shared_dir)
    theirs["comment"].update(id=7002, node_id="IC_7002")
    await deliver(ctx, batched, ("issues", opened), ("issue_comment", mine), ("issue_comment", theirs))
    async with ctx.sessionmaker() as session:
        session.add_all([  # what posting them recorded
            Action(repo=HELLO, number=4, kind="failure_comment", status="posted",
                   dedupe_key=f"{HELLO}#4:failure_comment", comment_id=7001,
                   comment_node_id="IC_7001", body=mine["comment"]["body"]),
            Action(repo=HELLO, number=4, kind="command", status="posted",
                   dedupe_key=f"{HELLO}#4:command:6999", comment_id=7003,
                   comment_node_id="IC_7003", body="a reply")])
        await session.commit()
    await deliver(ctx, batched, ("discussion", _shared(shared_dir, "discussion/created.json")))
    mine_copied = _converted_comment(shared_dir, mine)
    mine_copied["comment"].update(id=8001, node_id="DC_8001")
    theirs_copied = _converted_comment(shared_dir, theirs)
    theirs_copied["comment"].update(id=8002, node_id="DC_8002")
    await deliver(ctx, batched, ("discussion_comment", theirs_copied),
                  ("discussion_comment", mine_copied))
    async with ctx.sessionmaker() as session:
        ids = {a.kind: (a.comment_id, a.comment_node_id) for a in await session.scalars(select(Action))}
    assert ids == {"failure_comment": (8001, "DC_8001"), "command": (7003, "IC_7003")}
    assert [kind for kind, _ in (await stored(ctx))[1]] == ["discussion_comment"] * 2
