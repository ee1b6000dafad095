"""One thread stored twice (at both ends of a transfer, under two names of a renamed
repository) becomes one: of the two verdicts people gave, the latest by the time it was given
stays, as `set_verdict` decides for two verdicts on one row (review study71). On main the
surviving row's verdict stayed even when the other's was given later. SQLite and PostgreSQL,
the transfer through the webhook routers with GitHub's `issues.transferred` payload."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select

from bot.store.models import Thread, Verdict
from bot.store.repositories import follow_rename
from bot.store.threads import get_thread, upsert_thread
from bot.store.verdicts import set_verdict
from tests.test_feeds import add
from tests.test_private_repos import dispatch_all
from tests.test_thread_identity import RECIPE, VERL, _repositories, transferred

EARLIER = datetime(2026, 11, 10, 10, 0, tzinfo=UTC)
LATER = datetime(2026, 11, 10, 10, 10, tzinfo=UTC)


async def _verdict(ctx: Any, repo: str, number: int, login: str, given_at: datetime,
                   category: str | None) -> None:
    """What the command handler stores for `/rltracker kind ...` / `not-a-failure` written at
    `given_at` (bot.webhooks.commands passes the comment's time)."""
    async with ctx.sessionmaker() as session, session.begin():
        thread = await get_thread(session, repo, number)
        assert thread is not None
        await set_verdict(session, thread, is_failure_report=category is not None,
                          category=category, login=login, role="maintainer", comment_id=None,
                          given_at=given_at)


async def _verdicts(ctx: Any) -> list[tuple[str, int, str]]:
    async with ctx.sessionmaker() as session:
        rows = await session.execute(select(Thread.repo, Thread.number, Verdict.login)
                                     .join(Verdict, Verdict.thread_id == Thread.id))
        return sorted(tuple(r) for r in rows)


async def _new_place_stored_first(ctx: Any) -> None:
    """The issue at its new place stored before the transfer's delivery was handled (its
    delivery in the other repository came first, or the sync read it)."""
    await add(ctx, VERL, 11, "Support GSPO in the PPO trainer", days=1, active=9, proposal=True)
    await _repositories(ctx)
    async with ctx.sessionmaker() as session, session.begin():
        await upsert_thread(session, {"repo": RECIPE, "number": 3, "kind": "issue",
                                      "title": "Support GSPO in the PPO trainer", "state": "open",
                                      "created_at": "2026-11-02T09:00:00Z",
                                      "updated_at": "2026-11-10T09:00:01Z"})


async def test_a_transfer_keeps_the_later_verdict_given_on_the_former_place(
        ctx: Any, shared_dir: Path) -> None:
    """The word given last was stored on the former place, the earlier one on the new place
    (their deliveries handled out of order): the later one stays. Failed on main (bob's)."""
    await _new_place_stored_first(ctx)
    await _verdict(ctx, RECIPE, 3, "bob", EARLIER, "kl_growth")
    await _verdict(ctx, VERL, 11, "alice", LATER, None)
    await dispatch_all(ctx, "issues", transferred(shared_dir, old=(VERL, 7070, 11),
                                                  new=(RECIPE, 7071, 3)))
    assert await _verdicts(ctx) == [(RECIPE, 3, "alice")]


async def test_a_transfer_keeps_the_later_verdict_given_on_the_new_place(
        ctx: Any, shared_dir: Path) -> None:
    """The other order: the later word is the new place's, and it stays (as on main)."""
    await _new_place_stored_first(ctx)
    await _verdict(ctx, VERL, 11, "alice", EARLIER, None)
    await _verdict(ctx, RECIPE, 3, "bob", LATER, "kl_growth")
    await dispatch_all(ctx, "issues", transferred(shared_dir, old=(VERL, 7070, 11),
                                                  new=(RECIPE, 7071, 3)))
    assert await _verdicts(ctx) == [(RECIPE, 3, "bob")]


async def test_a_rename_keeps_the_later_verdict_given_under_the_former_name(ctx: Any) -> None:
    """One thread stored under both names of a renamed repository, the later word under the
    former name: the thread kept under the new name carries it. Failed on main (bob's)."""
    old, new = "verl-project/verl-old", VERL
    for repo in (old, new):
        async with ctx.sessionmaker() as session, session.begin():
            await upsert_thread(session, {"repo": repo, "number": 5, "kind": "issue",
                                          "title": "NaN loss after step 40", "state": "open",
                                          "created_at": "2026-11-02T09:00:00Z",
                                          "updated_at": "2026-11-10T09:00:00Z"})
    await _verdict(ctx, new, 5, "bob", EARLIER, "kl_growth")
    await _verdict(ctx, old, 5, "alice", LATER, None)
    async with ctx.sessionmaker() as session, session.begin():
        await follow_rename(session, old, new)
    assert await _verdicts(ctx) == [(new, 5, "alice")]
