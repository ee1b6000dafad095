"""The nightly job's schedule on APScheduler, as it runs in `serve`: the time zone (UTC,
whatever TZ says), a machine that slept through the night (misfire grace, coalescing, the
watch that runs a night the grace let pass), and a run that lasts past the next night's
start. SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from bot.scheduler import (
    MISFIRE_GRACE,
    create_scheduler,
    last_fire_time,
    nightly_job,
    nightly_trigger,
    rerun_dead_night,
)
from bot.store.jobs import RUN_LEASE
from bot.store.models import JobRun


def _cron(at: datetime) -> str:
    return f"{at.minute} {at.hour} * * *"


async def _nightly_runs(ctx: Any) -> list[JobRun]:
    async with ctx.sessionmaker() as session:
        return list(await session.scalars(select(JobRun).where(JobRun.name == "nightly")
                                          .order_by(JobRun.id)))


async def _ran_before(ctx: Any, days: int = 3) -> None:
    """An earlier night's run: the service ran the job before (a fresh one waits)."""
    long_ago = datetime.now(UTC) - timedelta(days=days)
    async with ctx.sessionmaker() as session:
        session.add(JobRun(name="nightly", outcome="ok", started_at=long_ago, finished_at=long_ago))
        await session.commit()


@pytest.mark.parametrize("zone", ["Asia/Tokyo", "America/Los_Angeles", "Australia/Lord_Howe"])
def test_the_night_is_at_its_utc_time_whatever_the_local_time_zone(
        settings: Any, monkeypatch: pytest.MonkeyPatch, zone: str) -> None:
    """RLTRACKER_NIGHTLY_CRON is read in UTC (README): a TZ variable on the host or in the
    container must not move the night, nor the time a missed night is looked for."""
    from bot.context import AppContext

    try:
        with monkeypatch.context() as env:
            env.setenv("TZ", zone)
            time.tzset()
            ctx = AppContext.create(dataclasses.replace(settings, nightly_cron="30 2 * * *"))
            scheduler = create_scheduler(ctx)
            assert str(scheduler.timezone) == "UTC"
            trigger = scheduler.get_job("nightly").trigger
            now = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)  # summer: LA and Lord Howe shift too
            fire = trigger.get_next_fire_time(None, now)
            assert fire.astimezone(UTC) == datetime(2026, 7, 2, 2, 30, tzinfo=UTC)
            assert last_fire_time(nightly_trigger(ctx), now) == datetime(2026, 7, 1, 2, 30, tzinfo=UTC)
    finally:
        time.tzset()  # the TZ of before, restored by the context


async def _run_scheduler_until(ctx: Any, modify: dict[str, datetime], want: int) -> list[JobRun]:
    """serve's scheduler, its timers as a machine that slept left them (`modify`: job id ->
    next run time), until `want` nightly runs are recorded and finished."""
    scheduler = create_scheduler(ctx)
    scheduler.remove_job("nightly-catch-up")  # the process kept running: no start-up catch-up
    scheduler.start(paused=True)
    try:
        for job_id, when in modify.items():
            scheduler.modify_job(job_id, next_run_time=when)
        scheduler.resume()
        deadline = asyncio.get_running_loop().time() + 90
        while True:
            runs = [r for r in await _nightly_runs(ctx) if r.outcome != "skipped"]
            if len(runs) >= want and all(r.finished_at for r in runs):
                await asyncio.sleep(1.0)  # and nothing more comes
                return await _nightly_runs(ctx)
            assert asyncio.get_running_loop().time() < deadline, runs
            await asyncio.sleep(0.2)
    finally:
        scheduler.shutdown(wait=False)
        await asyncio.sleep(0)


async def test_a_machine_that_slept_through_three_nights_runs_one(ctx: Any) -> None:
    """The machine slept from before three nights ago to two hours after the last night's
    time: the loop's timers did not move meanwhile, so the scheduler wakes with the job three
    fire times late. Coalesced, within the grace: the night runs once, not three times."""
    now = datetime.now(UTC)
    fire_at = now - timedelta(hours=2)
    ctx.settings = dataclasses.replace(ctx.settings, nightly_cron=_cron(fire_at))
    await _ran_before(ctx, days=4)
    last = last_fire_time(nightly_trigger(ctx), now)
    assert last is not None and now - last < timedelta(seconds=MISFIRE_GRACE)
    runs = await _run_scheduler_until(ctx, {"nightly": last - timedelta(days=2)}, want=2)
    assert [r.outcome for r in runs][0] == "ok" and len(runs) == 2, [(r.outcome, r.error) for r in runs]
    assert runs[1].started_at >= now and runs[1].outcome in ("ok", "partial")


async def test_a_night_the_misfire_grace_let_pass_is_run_by_the_watch(ctx: Any) -> None:
    """Woken eight hours after the night's time, past the grace (6 h): APScheduler drops the
    fire time as missed and would wait a day. The watch (every 15 minutes) finds the night
    without a run and runs it, once."""
    now = datetime.now(UTC)
    ctx.settings = dataclasses.replace(ctx.settings, nightly_cron=_cron(now - timedelta(hours=8)))
    await _ran_before(ctx, days=2)
    last = last_fire_time(nightly_trigger(ctx), now)
    assert last is not None and now - last > timedelta(seconds=MISFIRE_GRACE)
    soon = datetime.now(UTC) + timedelta(seconds=1)
    runs = await _run_scheduler_until(ctx, {"nightly": last, "nightly-watch": soon}, want=2)
    assert len(runs) == 2 and runs[1].outcome in ("ok", "partial"), [(r.outcome, r.error) for r in runs]


async def test_a_run_that_lasts_past_the_next_nights_start(ctx: Any) -> None:
    """A night's run still going when the next night's time comes (a huge backfill): the next
    night neither runs beside it (the lock, held by this process: the watch looks again at
    its next tick, recording nothing; it recorded a `skipped` run at every look, sched61) nor
    is lost; once the long run ended, the watch runs it."""
    now = datetime.now(UTC)
    ctx.settings = dataclasses.replace(ctx.settings, nightly_cron=_cron(now + timedelta(minutes=5)))
    await _ran_before(ctx, days=2)
    release, started = asyncio.Event(), asyncio.Event()

    async def long_step(_ctx: Any) -> Any:
        started.set()
        await release.wait()
        return "done"

    long_run = asyncio.ensure_future(nightly_job(ctx, steps=[("sync", long_step)]))
    await asyncio.wait_for(started.wait(), 30)
    next_night = last_fire_time(nightly_trigger(ctx), now + timedelta(minutes=6))
    assert next_night is not None and next_night > now
    later = next_night + RUN_LEASE + timedelta(minutes=1)  # the watch's first look after it
    try:
        assert await rerun_dead_night(ctx, now=later) is None
    finally:
        release.set()
        first = await long_run
    assert first["outcome"] == "ok"
    second = await rerun_dead_night(ctx, now=later)
    assert second is not None and second["outcome"] in ("ok", "partial"), second
    outcomes = [r.outcome for r in await _nightly_runs(ctx)]
    assert outcomes[1:] == ["ok", second["outcome"]], outcomes


async def test_two_replicas_firing_together_run_the_night_once(ctx: Any) -> None:
    """PostgreSQL, two replicas whose schedulers fire for the same night at the same moment:
    the advisory lock lets one run it; the other records `skipped` and leaves (SQLite is one
    process: its lock is the process's own)."""
    from bot.context import AppContext
    from bot.store.db import is_postgres

    if not is_postgres(ctx.settings.database_url):
        pytest.skip("several replicas need PostgreSQL")
    now = datetime.now(UTC)
    ctx.settings = dataclasses.replace(ctx.settings, nightly_cron=_cron(now - timedelta(minutes=1)))
    fire = last_fire_time(nightly_trigger(ctx), now)
    other = AppContext.create(ctx.settings)
    release = asyncio.Event()
    entered: list[str] = []

    async def step(_ctx: Any) -> Any:
        entered.append("in")
        await release.wait()
        return "done"

    try:
        runs = [asyncio.ensure_future(nightly_job(c, steps=[("sync", step)], fire_time=fire))
                for c in (ctx, other)]
        done, _ = await asyncio.wait(runs, return_when=asyncio.FIRST_COMPLETED, timeout=30)
        assert len(done) == 1 and done.pop().result()["outcome"] == "skipped"
        release.set()
        outcomes = sorted(r["outcome"] for r in await asyncio.gather(*runs))
    finally:
        release.set()
        await other.close()
    assert outcomes == ["ok", "skipped"] and entered == ["in"]


async def test_a_monthly_schedule_missed_while_down_is_caught_up(ctx: Any) -> None:
    """RLTRACKER_NIGHTLY_CRON may fire less often than weekly (`0 3 1 * *`, the first of the
    month). The last fire time was looked for in the last 8 days only: from the 10th on it
    was "none", so a run missed on the 1st (the service down that night) was never caught up
    at start nor by the watch, as README promises (ops61)."""
    from bot.scheduler import missed_run

    ctx.settings = dataclasses.replace(ctx.settings, nightly_cron="0 3 1 * *")
    now = datetime(2026, 12, 20, 12, 0, tzinfo=UTC)
    assert last_fire_time(nightly_trigger(ctx), now) == datetime(2026, 12, 1, 3, 0, tzinfo=UTC)
    async with ctx.sessionmaker() as session:  # November's run; none since
        start = datetime(2026, 11, 1, 3, 0, tzinfo=UTC)
        session.add(JobRun(name="nightly", outcome="ok", started_at=start,
                           finished_at=start + timedelta(minutes=20)))
        await session.commit()
    assert await missed_run(ctx, now)
    # a yearly one too (the last fire months ago), and a daily one as before
    ctx.settings = dataclasses.replace(ctx.settings, nightly_cron="0 3 1 1 *")
    assert last_fire_time(nightly_trigger(ctx), now) == datetime(2026, 1, 1, 3, 0, tzinfo=UTC)
    ctx.settings = dataclasses.replace(ctx.settings, nightly_cron="0 3 * * *")
    assert last_fire_time(nightly_trigger(ctx), now) == datetime(2026, 12, 20, 3, 0, tzinfo=UTC)


async def test_other_replicas_watches_record_nothing_while_a_long_night_runs(ctx: Any) -> None:
    """Another replica's night still running (its heartbeat live, the lock held) past the
    next night's time: the watch of every other replica found the next night without a run
    every 15 minutes, did not get the lock and recorded a `skipped` run each time, for as long
    as the long run lasted. Now a live run of the job holds the lock and the watch looks
    again at its next tick, recording nothing; the night is run once the long run ended."""
    from bot.context import AppContext
    from bot.scheduler import _Lock
    from bot.store.db import is_postgres

    now = datetime.now(UTC)
    ctx.settings = dataclasses.replace(ctx.settings, nightly_cron=_cron(now - timedelta(minutes=30)))
    await _ran_before(ctx, days=2)
    # the other replica's run, started for the night before and still alive
    async with ctx.sessionmaker() as session:
        long_run = JobRun(name="nightly", outcome="running", started_at=now - timedelta(hours=25),
                          heartbeat_at=now, counts={})
        session.add(long_run)
        await session.commit()
        long_id = long_run.id
    other = AppContext.create(ctx.settings) if is_postgres(ctx.settings.database_url) else None
    lock = _Lock(other) if other is not None else None
    try:
        if lock is not None:
            assert await lock.acquire()  # the other replica holds the advisory lock
        assert await rerun_dead_night(ctx) is None
        assert [r.outcome for r in await _nightly_runs(ctx)] == ["ok", "running"]
    finally:
        if lock is not None:
            await lock.release()
        if other is not None:
            await other.close()
    async with ctx.sessionmaker() as session:  # the long run ends
        row = await session.get(JobRun, long_id)
        assert row is not None
        row.outcome, row.finished_at = "ok", datetime.now(UTC)
        await session.commit()
    second = await rerun_dead_night(ctx)
    assert second is not None and second["outcome"] in ("ok", "partial"), second
    assert [r.outcome for r in await _nightly_runs(ctx)] == ["ok", "ok", second["outcome"]]
