"""A thread delivery and `repository.privatized` at once (review59).

The webhook handlers check a delivery's repository (as its payload says, or as its stored row
is marked) before they write, in a session of their own. A `privatized` committed between that
check and the write's commit let the write store the thread of the now-private repository
again, after `forget` had deleted what was stored of it. The write and `forget` now exclude
each other: both lock the repository's row first (PostgreSQL: a row lock; SQLite: the
database's write lock), and the write, holding it, reads the mark again.

Ordered without sleeps: on both databases through the fake GitHub server (the handler reads
a review from GitHub between its check and its write, and `privatized` is handled during that
read); on PostgreSQL with two real connections, ordered by waiting on pg_stat_activity.
"""

from __future__ import annotations

import asyncio
import copy
import uuid
from pathlib import Path
from typing import Any

import pytest
from gidgethub import sansio
from sqlalchemy import func, select, text

from bot.store.models import Comment, Repository, Thread
from bot.webhooks import events
from bot.webhooks.privacy import handle_repository
from tests.test_events import envelope, issue
from tests.test_review_events import HELLO, PLAIN, Reviews, edited, submitted

SECRET = "someorg/secret-repo"


def _privatized(name: str, rid: int) -> dict[str, Any]:
    payload = envelope("privatized", name)
    payload["repository"].update(id=rid, private=True, visibility="private")
    return payload


async def _threads(ctx: Any, name: str) -> int:
    async with ctx.sessionmaker() as session:
        return int(await session.scalar(select(func.count()).select_from(Thread).where(
            func.lower(Thread.repo) == name.lower())) or 0)


async def _marked(ctx: Any, name: str) -> bool:
    async with ctx.sessionmaker() as session:
        return bool(await session.scalar(select(Repository.private).where(
            func.lower(Repository.full_name) == name.lower())))


@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
async def test_privatized_between_the_check_and_the_write_stores_nothing(
        app_ctx: Any, fake_github: Any, shared_dir: Path, batched: bool) -> None:
    """A review edit that does not follow from the stored review: the handler checks the
    repository (public), reads the review from GitHub, then writes. `privatized` is handled
    while GitHub answers. On main the write stored the pull request and its review again
    after `forget` (1 thread of the private repository)."""
    gh = Reviews(fake_github, shared_dir)
    first = submitted(shared_dir)
    await events.router.dispatch(sansio.Event(first, event="pull_request_review",
                                              delivery_id=str(uuid.uuid4())), app_ctx)
    assert await _threads(app_ctx, HELLO) == 1
    rid = int(first["repository"]["id"])

    async def privatized_meanwhile() -> None:
        gh.on_get = None
        await handle_repository(_privatized(HELLO, rid), app_ctx)

    gh.on_get = privatized_meanwhile
    gh.now("A later text")
    late = edited(shared_dir, "A later text", PLAIN)  # its `from` is not the stored body
    event = sansio.Event(copy.deepcopy(late), event="pull_request_review",
                         delivery_id=str(uuid.uuid4()))
    if batched:
        assert await events.handle_batch([event], app_ctx) == [None]
    else:
        await events.router.dispatch(event, app_ctx)
    assert gh.on_get is None  # GitHub was asked, and privatized handled meanwhile
    assert await _marked(app_ctx, HELLO)
    assert await _threads(app_ctx, HELLO) == 0
    async with app_ctx.sessionmaker() as session:
        assert await session.scalar(select(func.count()).select_from(Comment)) == 0


# ---------------------------------------------------------------------------- PostgreSQL
async def _pid(conn: Any) -> int:
    return int((await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one())


async def _blocked_by(ctx: Any, pid: int) -> int:
    """How many sessions of this database wait for a lock session `pid` holds."""
    async with ctx.engine.connect() as conn:
        return int((await conn.execute(text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND :pid = ANY(pg_blocking_pids(pid))"), {"pid": pid})).scalar_one())


async def _lock_waiters(ctx: Any) -> int:
    async with ctx.engine.connect() as conn:
        return int((await conn.execute(text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock'"))).scalar_one())


async def _until(check: Any, *tasks: asyncio.Task[Any]) -> None:
    """Poll `check()` until true; fail if a task ends (with its exception) first."""
    for _ in range(3000):
        if await check():
            return
        for task in tasks:
            if task.done():
                return
        await asyncio.sleep(0.01)
    raise AssertionError("the sessions never reached the expected order")


def _postgres_only(ctx: Any) -> None:
    if ctx.engine.dialect.name != "postgresql":
        pytest.skip("two connections ordered by pg_stat_activity: PostgreSQL")


async def _stored_public(ctx: Any) -> None:
    await events.handle("issues", envelope("opened", SECRET, issue=issue(5, title="Was public")),
                        ctx)
    assert await _threads(ctx, SECRET) == 1


async def _one_stopped_then_the_other(ctx: Any, table: str, *, write_first: bool) -> None:
    """PostgreSQL: a delivery of issue 6 (the write) and `privatized` (the forget) of SECRET,
    stored public. The first is stopped at `table`, locked by a third connection; the second
    starts and runs until it waits on a lock too; then the lock is let go. Either order ends
    with the repository marked private and nothing of it stored."""
    _postgres_only(ctx)
    await _stored_public(ctx)

    def write() -> Any:
        return events.handle(
            "issues", envelope("opened", SECRET, issue=issue(6, title="Stored after")), ctx)

    def forget() -> Any:
        return handle_repository(_privatized(SECRET, 555), ctx)

    first_step, second_step = (write, forget) if write_first else (forget, write)
    async with ctx.engine.connect() as blocker:
        await blocker.begin()
        await blocker.execute(text(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE"))
        pid = await _pid(blocker)
        first = asyncio.create_task(first_step())
        await _until(lambda: _blocked_by(ctx, pid), first)
        assert not first.done(), first
        second = asyncio.create_task(second_step())

        async def second_waits() -> bool:
            return await _lock_waiters(ctx) >= 2

        await _until(second_waits, second)
        await blocker.rollback()
    await first
    await second
    assert await _marked(ctx, SECRET)
    assert await _threads(ctx, SECRET) == 0


async def test_a_write_checked_before_privatized_and_committed_after_it(ctx: Any) -> None:
    """PostgreSQL, two real connections. The delivery of issue 6 is checked (public) and its
    write begins; a third connection holding `deletions` (which the write reads before it
    inserts the thread, and `forget` does not touch) stops it there. `privatized` runs. On
    main it committed at once and the write then stored issue 6 of the private repository;
    now `privatized` waits for the write's lock on the repository row and forgets issue 6
    after the write commits."""
    await _one_stopped_then_the_other(ctx, "deletions", write_first=True)


async def test_a_write_begun_while_privatized_forgets_stores_nothing(ctx: Any) -> None:
    """PostgreSQL, the other order: `privatized` has begun forgetting (it is stopped at the
    stored reports by a third connection holding them) when a delivery of issue 6 is checked
    (the row not marked yet: the forget is not committed) and written. On main the write
    committed issue 6 at once, after the forget's delete; now it waits for the forget's lock on
    the repository row, then reads the row marked private and stores nothing."""
    await _one_stopped_then_the_other(ctx, "reports", write_first=False)


@pytest.mark.parametrize("reported", [True, False], ids=["failure-comment", "skip-record"])
async def test_privatized_before_the_app_acts_posts_and_records_nothing(
        app_ctx: Any, fake_github: Any, reported: bool) -> None:
    """A thread stored while its repository was public; `privatized` is handled while the app
    reads the repository's config from GitHub, before it claims its comment. On main, for a
    failure report, the app then posted its failure comment in the now-private repository and
    recorded it (an Action naming the repository and the issue, public on /api/actions); for a
    thread it stays quiet on, the reason it stayed quiet was recorded after `privatized`."""
    from bot.speaking.decide import act
    from bot.store.models import Action
    from tests.test_actions_e2e import FAILURE, NOT_FAILURE, VERL, app_comments, install, open_issue

    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 1)
    rid = int(payload["repository"]["id"])
    asked: list[str] = []

    @fake_github.route("GET", r"/repos/[^/]+/[^/]+/contents/.*")
    async def _config(fake: Any, request: Any, match: Any, body: Any) -> Any:
        if not asked:
            asked.append(request.path)
            await handle_repository(_privatized(VERL, rid), app_ctx)
        return 404, {"message": "Not Found"}

    await act(app_ctx, VERL, 1, trigger="issues.opened", payload=payload,
              analysis=FAILURE if reported else NOT_FAILURE)
    assert asked  # the config was read, and privatized handled meanwhile
    assert app_comments(fake_github, VERL, 1) == []
    async with app_ctx.sessionmaker() as session:
        assert list(await session.scalars(select(Action.dedupe_key))) == []


async def test_privatized_while_the_sync_reads_a_page_keeps_the_page_out(
        settings: Any, fake_github: Any, shared_dir: Path) -> None:
    """`rltracker sync` (or the nightly one) read a page of a public repository; `privatized`
    is handled while GitHub answers. On main the sync then wrote the page's threads (4 of
    the private repository) and their cursors: stored until the next sync asked GitHub
    again. Now the write reads the mark under the lock and writes nothing of it."""
    from bot.github.sync import sync
    from bot.store.models import SyncCursor
    from tests.fake_graphql import FakeData, graphql_context
    from tests.fakegithub import no_sleep

    data = FakeData.generate(4, seed=3, repos=["huggingface/trl", SECRET], long_every=0)
    async with graphql_context(settings, fake_github, shared_dir, data) as ctx:
        inner = fake_github.graphql_handler
        fired: list[bool] = []

        async def answer(query: str, variables: dict[str, Any]) -> Any:
            result = inner(query, variables)
            if not fired:
                fired.append(True)
                fake_github.private_repos.add(SECRET.lower())  # (the handler asks GitHub)
                await handle_repository(_privatized(SECRET, 555), ctx)
            return result

        fake_github.graphql_handler = answer
        await sync(ctx, ["huggingface/trl", SECRET], sleep=no_sleep)
        assert fired
        assert await _threads(ctx, SECRET) == 0
        assert await _threads(ctx, "huggingface/trl") == 4
        assert await _marked(ctx, SECRET)
        async with ctx.sessionmaker() as session:
            assert list(await session.scalars(select(SyncCursor.repo).where(
                SyncCursor.repo == SECRET))) == []


async def test_privatized_before_a_command_is_recorded_does_nothing_on_github(
        app_ctx: Any, fake_github: Any) -> None:
    """`/rltracker ignore` by the issue's author, checked while the repository was public;
    `privatized` is handled while the app reads the repository's config. On main the command
    was recorded (an Action naming the private repository's issue) and acknowledged with a
    reaction on GitHub; with the record refused it still reacted, reading as answered."""
    from bot.store.models import Action
    from bot.webhooks.commands import handle_command
    from tests.test_actions_e2e import VERL, install, open_issue

    await install(app_ctx, fake_github)
    opened = await open_issue(app_ctx, fake_github, 1)
    rid = int(opened["repository"]["id"])
    said = fake_github.add_comment(VERL, 1, "/rltracker ignore", user="alice")
    payload = {**opened, "action": "created", "comment": {
        **said, "author_association": "NONE", "user": fake_github.user("alice")}}
    asked: list[str] = []

    @fake_github.route("GET", r"/repos/[^/]+/[^/]+/contents/.*")
    async def _config(fake: Any, request: Any, match: Any, body: Any) -> Any:
        if not asked:
            asked.append(request.path)
            await handle_repository(_privatized(VERL, rid), app_ctx)
        return 404, {"message": "Not Found"}

    outcome = await handle_command(sansio.Event(payload, event="issue_comment",
                                                delivery_id=str(uuid.uuid4())), app_ctx)
    assert asked
    assert fake_github.requests("POST", r"/reactions$") == []
    async with app_ctx.sessionmaker() as session:
        assert list(await session.scalars(select(Action.dedupe_key))) == []
    assert outcome == "private"
