"""A job run left "running" by a process that died (a crash, a killed replica) while another
process goes on serving: read as interrupted everywhere once its lease ran out, on SQLite
and PostgreSQL.

It used to read "running" until a process with the scheduler started again: the front page
said "First backfill: running" and reloaded every 10 seconds for good, and a night whose run
died counted as run (the scheduler of a replica that did not restart never ran it again,
and a replica firing a little late for the same time skipped it). A live run renews its
row's heartbeat while it runs, so a slow run is not taken for a dead one.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import select

from bot.app import create_app
from bot.context import AppContext
from bot.scheduler import last_fire_time, missed_run, nightly_job, nightly_trigger
from bot.site.progress import backfill_progress, tracking_state
from bot.store.jobs import FIRST_BACKFILL
from bot.store.models import JobRun

HANG_GUARD = 60  # seconds: only so that a broken test ends; nothing waits on time


async def add_run(ctx: AppContext, name: str, outcome: str, started_at: datetime,
                  **values: Any) -> int:
    async with ctx.sessionmaker() as session:
        row = JobRun(name=name, outcome=outcome, started_at=started_at, counts={}, **values)
        session.add(row)
        await session.commit()
        return int(row.id)


async def outcomes(ctx: AppContext, name: str = "nightly") -> list[str]:
    async with ctx.sessionmaker() as session:
        return list(await session.scalars(
            select(JobRun.outcome).where(JobRun.name == name).order_by(JobRun.id)))


async def test_a_dead_first_backfill_reads_interrupted_on_the_front_page(ctx: AppContext) -> None:
    await add_run(ctx, FIRST_BACKFILL, "running", datetime.now(UTC) - timedelta(hours=2))
    async with ctx.sessionmaker() as session:
        progress = await backfill_progress(session)
        tracking = await tracking_state(session, ctx.settings)
    assert progress is not None and progress["running"] is False
    assert progress["outcome"] == "interrupted"
    assert tracking["backfill_running"] is False
    async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
        page = await (await client.get("/")).text()
    assert 'http-equiv="refresh"' not in page and "First backfill: interrupted" in page


async def test_a_live_first_backfill_still_reads_running(ctx: AppContext) -> None:
    await add_run(ctx, FIRST_BACKFILL, "running", datetime.now(UTC) - timedelta(hours=2),
                  heartbeat_at=datetime.now(UTC) - timedelta(seconds=30))
    async with ctx.sessionmaker() as session:
        progress = await backfill_progress(session)
    assert progress is not None and progress["running"] is True


async def test_a_night_whose_run_died_counts_as_missed_without_a_restart(ctx: AppContext) -> None:
    """Another replica died at 03:05 during the night's run: this process (never restarted)
    finds the night missed, and its run for that time goes ahead instead of skipping;
    the dead row is recorded cancelled."""
    now = datetime.now(UTC)
    fire = last_fire_time(nightly_trigger(ctx), now)
    assert fire is not None
    started = min(fire + timedelta(seconds=5), now - timedelta(minutes=30))
    if started < fire:  # the last 03:00 was less than half an hour ago: take yesterday's
        fire = last_fire_time(nightly_trigger(ctx), fire - timedelta(seconds=1))
        assert fire is not None
        started = fire + timedelta(seconds=5)
    # The night before the dead run's (after choosing which night: between 03:00 and 03:30
    # the test takes yesterday's, and a run recorded at "today's fire - 1 day" would then
    # stand for the very night being tested).
    await add_run(ctx, "nightly", "ok", fire - timedelta(days=1),
                  finished_at=fire - timedelta(days=1))
    await add_run(ctx, "nightly", "running", started)
    assert await missed_run(ctx, now)

    async def step(_: Any) -> str:
        return "ran"

    result = await nightly_job(ctx, steps=[("s", step)], fire_time=fire)
    assert result["outcome"] == "ok"
    assert await outcomes(ctx) == ["ok", "cancelled", "ok"]


async def test_a_live_run_keeps_its_night(ctx: AppContext) -> None:
    """A run of another replica still beating: its night is not missed."""
    now = datetime.now(UTC)
    fire = last_fire_time(nightly_trigger(ctx), now)
    assert fire is not None
    await add_run(ctx, "nightly", "running", fire + timedelta(seconds=5),
                  heartbeat_at=now - timedelta(seconds=20))
    assert not await missed_run(ctx, now)


async def test_a_running_job_renews_its_heartbeat(ctx: AppContext, monkeypatch: Any) -> None:
    from bot.store import jobs

    monkeypatch.setattr(jobs, "HEARTBEAT_EVERY", 0.05)
    seen: list[datetime] = []

    async def step(c: Any) -> str:
        for _ in range(int(HANG_GUARD / 0.05)):
            async with c.sessionmaker() as session:
                beat = await session.scalar(select(JobRun.heartbeat_at)
                                            .where(JobRun.name == "nightly"))
            if beat is not None and (not seen or beat > seen[0]):
                seen.append(beat)
            if len(seen) >= 2:
                return "beat"
            await asyncio.sleep(0.05)
        return "no beat"

    result = await nightly_job(ctx, steps=[("s", step)])
    assert result["counts"] == {"s": "beat"}


async def test_a_replica_that_does_not_restart_runs_the_night_whose_run_died(
        ctx: AppContext) -> None:
    """The scheduler's watch (every 15 minutes): the last scheduled time's run died with its
    process, nothing took its place: the night is run now. A live run, or one within the
    lease of its fire time, is left alone."""
    from bot.scheduler import create_scheduler, rerun_dead_night

    assert create_scheduler(ctx).get_job("nightly-watch") is not None
    fire = last_fire_time(nightly_trigger(ctx), datetime.now(UTC) - timedelta(hours=1))
    assert fire is not None
    at = fire + timedelta(hours=1)  # the watch's look, an hour after that fire time
    await add_run(ctx, "nightly", "ok", fire - timedelta(days=1),
                  finished_at=fire - timedelta(days=1))
    dead_id = await add_run(ctx, "nightly", "running", fire + timedelta(seconds=5))
    assert await rerun_dead_night(ctx, fire + timedelta(minutes=5)) is None  # within the lease
    async with ctx.sessionmaker() as session:  # still beating: alive
        row = await session.get(JobRun, dead_id)
        assert row is not None
        row.heartbeat_at = at - timedelta(seconds=10)
        await session.commit()
    assert await rerun_dead_night(ctx, at) is None
    async with ctx.sessionmaker() as session:  # the heartbeat stopped 20 minutes before
        row = await session.get(JobRun, dead_id)
        assert row is not None
        row.heartbeat_at = at - timedelta(minutes=20)
        await session.commit()
    result = await rerun_dead_night(ctx, at)
    assert result is not None and result["outcome"] == "ok"
    assert await outcomes(ctx) == ["ok", "cancelled", "ok"]
    assert await rerun_dead_night(ctx, at) is None


async def test_metrics_show_each_jobs_last_run_as_it_stands(ctx: AppContext) -> None:
    """/metrics said nothing of the nightly job: an operator could not alert on a night
    without a run. The last run of each job, with its outcome as it stands (a dead one
    interrupted), and the end of its last successful run."""
    now = datetime.now(UTC)
    ok_end = now - timedelta(days=1, minutes=-20)
    await add_run(ctx, "nightly", "ok", now - timedelta(days=1), finished_at=ok_end)
    await add_run(ctx, "nightly", "running", now - timedelta(hours=1))
    async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
        text = await (await client.get("/metrics")).text()
    started = int((now - timedelta(hours=1)).timestamp())
    [line] = [x for x in text.splitlines()
              if x.startswith('rltracker_job_last_run_timestamp_seconds{job="nightly"')]
    assert line.startswith('rltracker_job_last_run_timestamp_seconds{job="nightly",outcome="interrupted"} ')
    assert abs(float(line.rpartition(" ")[2]) - started) < 2
    [ok] = [x for x in text.splitlines()
            if x.startswith('rltracker_job_last_success_timestamp_seconds{job="nightly"}')]
    assert abs(float(ok.rpartition(" ")[2]) - ok_end.timestamp()) < 2


async def test_metrics_show_the_last_finish_of_each_outcome(ctx: AppContext) -> None:
    """The success gauge counts `ok` runs only: a night that ran and ended `partial` (one
    thread not re-analysed, one repository refused) read as no run at all to an alert on its
    age, and one on "no run finished" could not be written. Each job's latest finish per
    outcome is shown beside it, so an alert may take `ok` alone or `ok|partial`; `skipped`
    records and runs still going are not finishes."""
    now = datetime.now(UTC)
    ok_end = now - timedelta(days=3)
    partial_end = now - timedelta(days=1)
    failed_end = now - timedelta(days=2)
    await add_run(ctx, "nightly", "ok", ok_end - timedelta(minutes=30), finished_at=ok_end)
    await add_run(ctx, "nightly", "failed", failed_end - timedelta(minutes=30),
                  finished_at=failed_end)
    await add_run(ctx, "nightly", "partial", partial_end - timedelta(minutes=30),
                  finished_at=partial_end)
    await add_run(ctx, "nightly", "skipped", now - timedelta(hours=2),
                  finished_at=now - timedelta(hours=2))
    await add_run(ctx, "nightly", "running", now - timedelta(minutes=5))
    async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
        text = await (await client.get("/metrics")).text()
    name = "rltracker_job_last_finish_timestamp_seconds"
    assert f"# TYPE {name} gauge" in text
    lines = {x.rpartition(" ")[0]: float(x.rpartition(" ")[2]) for x in text.splitlines()
             if x.startswith(name + "{")}
    assert set(lines) == {f'{name}{{job="nightly",outcome="{o}"}}' for o in ("ok", "partial", "failed")}
    for outcome, end in (("ok", ok_end), ("partial", partial_end), ("failed", failed_end)):
        assert abs(lines[f'{name}{{job="nightly",outcome="{outcome}"}}'] - end.timestamp()) < 2
    [ok] = [x for x in text.splitlines()
            if x.startswith('rltracker_job_last_success_timestamp_seconds{job="nightly"}')]
    assert abs(float(ok.rpartition(" ")[2]) - ok_end.timestamp()) < 2
