"""What the nightly run and the first backfill record as their outcome (sched61): the same
outcome for the same facts, and a skipped run naming what really held the lock."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select

from bot.store.models import JobRun
from bot.store.types import utcnow
from tests.fake_graphql import (
    REPOS,
    FakeData,
    answering_then_down,
    forbidding_first_issue,
    graphql_context,
)


def _data() -> FakeData:
    data = FakeData()
    for repo in REPOS:
        for kind in ("issue", "pull_request", "discussion"):
            data.add_thread(repo, kind, n_comments=1, closed=False, body="Loss spikes at step 9.")
    return data


async def test_a_first_backfill_that_left_threads_unsynced_is_not_ok(
        settings: Any, fake_github: Any, shared_dir: Path) -> None:
    """The sync left threads unsynced (GitHub answered them null): the nightly run records
    `partial` and names them, the first backfill recorded `ok` and named them nowhere."""
    from bot.scheduler import first_backfill

    async with graphql_context(settings, fake_github, shared_dir, _data()) as ctx:
        fake_github.graphql_handler = forbidding_first_issue(fake_github.graphql_handler)
        result = await first_backfill(ctx)
        async with ctx.sessionmaker() as session:
            run = await session.scalar(select(JobRun).where(JobRun.name == "first_backfill"))
    assert run is not None and result["counts"]["failed_threads"]
    assert result["outcome"] == "partial" and run.outcome == "partial", (result, run.outcome)
    assert run.error and "unsynced" in run.error and "a thread GitHub answered null" in run.error


async def test_a_night_whose_rules_refresh_failed_is_partial(ctx: Any) -> None:
    """The rules step counted repositories whose contribution rules could not be read nor
    kept (`failed`): the night was recorded `ok`."""
    from bot.scheduler import nightly_job

    async def rules(_: Any) -> dict[str, int]:  # what bot.speaking.contribution.refresh_all counts
        return {"refreshed": 5, "failed": 2, "private": 0, "cached": 0}

    result = await nightly_job(ctx, steps=[("rules", rules)])
    async with ctx.sessionmaker() as session:
        run = await session.scalar(select(JobRun).where(JobRun.name == "nightly"))
    assert result["outcome"] == "partial" and run is not None and run.outcome == "partial"
    assert run.error and "rules" in run.error and "2" in run.error

    async def fine(_: Any) -> dict[str, int]:
        return {"refreshed": 7, "failed": 0, "private": 0, "cached": 0}

    assert (await nightly_job(ctx, steps=[("rules", fine)]))["outcome"] == "ok"


@asynccontextmanager
async def _first_backfill_held(ctx: Any, fake_github: Any) -> AsyncIterator[None]:
    """A night ran three days ago (the last one is missed) and this process's first backfill
    holds the nightly lock, held inside its first GitHub request until the block ends."""
    from bot.scheduler import first_backfill

    responder = fake_github.graphql_handler
    entered, release = asyncio.Event(), asyncio.Event()

    async def held(query: str, variables: dict[str, Any]) -> Any:
        entered.set()
        await release.wait()
        return responder(query, variables)

    fake_github.graphql_handler = held
    long_ago = utcnow() - timedelta(days=3)
    async with ctx.sessionmaker() as session:
        session.add(JobRun(name="nightly", outcome="ok", started_at=long_ago,
                           finished_at=long_ago, heartbeat_at=long_ago))
        await session.commit()
    backfill = asyncio.create_task(first_backfill(ctx))
    try:
        await entered.wait()
        yield
    finally:
        release.set()
        await backfill


async def test_a_catch_up_behind_this_process_first_backfill_says_so(
        settings: Any, fake_github: Any, shared_dir: Path) -> None:
    """A catch-up run that finds this process's own first backfill holding the lock recorded
    a skipped run saying "another replica holds the lock" (on SQLite there is none; on
    PostgreSQL it was this process too)."""
    from bot.scheduler import catch_up

    async with graphql_context(settings, fake_github, shared_dir, _data()) as ctx:
        async with _first_backfill_held(ctx, fake_github):
            assert (await catch_up(ctx) or {}).get("outcome") == "skipped"
        async with ctx.sessionmaker() as session:
            skipped = await session.scalar(select(JobRun).where(JobRun.name == "nightly",
                                                                JobRun.outcome == "skipped"))
    assert skipped is not None
    reason = skipped.counts["reason"]
    assert "another replica" not in reason and "first backfill" in reason, reason


async def test_the_watch_records_nothing_while_this_process_holds_the_lock(
        settings: Any, fake_github: Any, shared_dir: Path) -> None:
    """The watch (every 15 minutes) found the last night missed while this process's own
    first backfill (or a night longer than a day) held the lock: it recorded a `skipped`
    run at each look, hours of rows. It looks again at its next tick instead; the night runs
    once the lock is free."""
    from bot.scheduler import rerun_dead_night

    async with graphql_context(settings, fake_github, shared_dir, _data()) as ctx:
        responder = fake_github.graphql_handler
        async with _first_backfill_held(ctx, fake_github):
            for _ in range(3):
                assert await rerun_dead_night(ctx) is None
        async with ctx.sessionmaker() as session:
            outcomes = list(await session.scalars(select(JobRun.outcome).where(
                JobRun.name == "nightly").order_by(JobRun.id)))
        assert outcomes == ["ok"], outcomes
        fake_github.graphql_handler = responder
        ran = await rerun_dead_night(ctx)  # the lock free: the missed night runs now
    assert ran is not None and ran["outcome"] != "skipped"


async def test_a_first_night_cut_short_is_caught_up_at_the_next_start(ctx: Any) -> None:
    """The service's first scheduled night was cut short by a stop (recorded `cancelled`):
    the next start called the service one that never ran (a fresh installation waits for
    its first scheduled time) and the night was not caught up, nor by the watch."""
    import dataclasses
    from datetime import UTC, datetime

    from bot.scheduler import last_fire_time, missed_run, nightly_trigger

    fire_at = datetime.now(UTC) - timedelta(hours=2)
    ctx.settings = dataclasses.replace(ctx.settings,
                                       nightly_cron=f"{fire_at.minute} {fire_at.hour} * * *")
    fire = last_fire_time(nightly_trigger(ctx), utcnow())
    assert fire is not None
    async with ctx.sessionmaker() as session:
        session.add(JobRun(name="nightly", outcome="cancelled", started_at=fire + timedelta(seconds=1),
                           finished_at=fire + timedelta(minutes=5), error="stopped"))
        await session.commit()
    assert await missed_run(ctx)


async def test_a_nightly_sync_stopped_by_github_keeps_what_it_did(
        settings: Any, fake_github: Any, shared_dir: Path) -> None:
    """The nightly sync stopped by GitHub (every request failing after the first page): the
    run's counts said only the error; what the sync stored (deleted, moved) before the stop
    was in the log alone."""
    from bot.scheduler import nightly_job, step_sync
    from tests.fake_graphql import FakeGraphQL

    data = FakeData()
    for _ in range(130):  # more than a page: the second request is refused
        data.add_thread("verl-project/verl", "issue", n_comments=0, closed=False,
                        body="Loss spikes at step 9.")
    async with graphql_context(settings, fake_github, shared_dir, data) as ctx:
        responder = FakeGraphQL(data, shared_dir / "fixtures" / "github-api" / "schema.graphql")
        fake_github.graphql_handler = answering_then_down(responder)
        result = await nightly_job(ctx, steps=[("sync", step_sync)])
    sync_counts = result["counts"]["sync"]
    assert result["outcome"] == "failed" and "error" in sync_counts, result
    assert 0 < int(sync_counts.get("threads") or 0) < 130, sync_counts


def _forbidding_every_issue(responder: Any) -> Any:
    """`responder`, but GitHub answers every issue of every listing null with FORBIDDEN (a
    repository whose threads the token may not read: one `failed_threads` entry each)."""
    def forbidden(query: str, variables: dict[str, Any]) -> Any:
        answer = responder(query, variables)
        for alias, repo in (answer.get("data") or {}).items():
            nodes = (repo or {}).get("issues", {}).get("nodes") if isinstance(repo, dict) else None
            for k in range(len(nodes or ())):
                nodes[k] = None
                answer.setdefault("errors", []).append({
                    "type": "FORBIDDEN", "path": [alias, "issues", "nodes", k],
                    "message": "Resource not accessible by integration " + "x" * 300})
        return answer
    return forbidden


async def test_a_night_of_many_unsynced_threads_keeps_a_bounded_row(
        settings: Any, fake_github: Any, shared_dir: Path) -> None:
    """Every issue of a repository answered null (FORBIDDEN, by the hundred): the run's
    counts kept every `failed_threads` entry, a row growing with the failures (a thousand
    of them, half a megabyte). The row keeps the first FAILED_THREADS_SHOWN and the full count
    (`failed_threads_total`); the run's error and `rltracker sync`'s counts say the full count."""
    import json

    from bot.github.sync import FAILED_THREADS_SHOWN
    from bot.scheduler import nightly_job, step_sync

    many = FAILED_THREADS_SHOWN + 30
    data = FakeData()
    for _ in range(many):
        data.add_thread("verl-project/verl", "issue", n_comments=0, closed=False,
                        body="Loss spikes at step 9.")
    data.add_thread("verl-project/verl", "pull_request", n_comments=0, closed=False,
                    body="Fix the loss spike.")
    async with graphql_context(settings, fake_github, shared_dir, data) as ctx:
        fake_github.graphql_handler = _forbidding_every_issue(fake_github.graphql_handler)
        await nightly_job(ctx, steps=[("sync", step_sync)])
        async with ctx.sessionmaker() as session:
            run = await session.scalar(select(JobRun).where(JobRun.name == "nightly"))
    assert run is not None
    stored = run.counts["sync"]
    assert len(stored["failed_threads"]) == FAILED_THREADS_SHOWN, len(stored["failed_threads"])
    assert stored.get("failed_threads_total") == many, stored.get("failed_threads_total")
    assert len(json.dumps(stored["failed_threads"])) < 100_000
    assert run.error and f"the sync left {many} thread(s) unsynced" in run.error, run.error
    assert f"and {many - 10} more" in run.error, run.error
