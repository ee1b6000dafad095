"""The nightly job: every step, recorded runs, run-once locking, catching up a missed run."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text

from bot.context import AppContext
from bot.scheduler import (
    NIGHTLY_LOCK,
    catch_up,
    create_scheduler,
    last_fire_time,
    missed_run,
    nightly_job,
    nightly_trigger,
)
from bot.store.db import is_postgres
from bot.store.models import Analysis, JobRun, Report, Thread
from tests.fake_graphql import FakeData, graphql_context


@pytest.fixture
async def nctx(settings: Any, fake_github: Any, shared_dir: Path) -> AsyncIterator[AppContext]:
    async with graphql_context(settings, fake_github, shared_dir, FakeData.generate(6, seed=5, long_every=0)) as ctx:
        yield ctx


async def runs(ctx: AppContext) -> list[JobRun]:
    async with ctx.sessionmaker() as session:
        # The nightly job's own runs; its study step records its result as a run of its own.
        return list(await session.scalars(select(JobRun).where(JobRun.name == "nightly")
                                          .order_by(JobRun.id)))


async def test_nightly_job_runs_every_step_and_records_it(nctx: AppContext) -> None:
    async with nctx.sessionmaker() as session:
        stale = Thread(repo="someone/else", number=1, kind="issue", title="old")
        fresh = Thread(repo="someone/else", number=2, kind="issue", title="never analysed")
        session.add_all([stale, fresh])
        await session.flush()
        session.add(Analysis(thread_id=stale.id, analyzer_version="an-old-version", result={}))
        await session.commit()
    result = await nightly_job(nctx)
    [run] = await runs(nctx)
    assert run.outcome in ("ok", "failed") and run.finished_at and run.finished_at >= run.started_at
    counts = run.counts
    assert set(counts) == {"sync", "reanalyse", "recovery", "reception", "settings", "rules", "papers",
                           "study", "report"}
    assert counts["sync"]["threads"] == len(nctx.extras["data"].all_threads())
    assert counts["reanalyse"]["reanalysed"] == 2  # sync analysed what it stored itself
    assert counts["report"]["date"] == datetime.now(UTC).date().isoformat()
    assert result["outcome"] == run.outcome
    async with nctx.sessionmaker() as session:
        assert await session.scalar(select(Report)) is not None
        versions = set(await session.scalars(select(Analysis.analyzer_version)))
    assert "an-old-version" not in versions


async def test_a_failing_step_does_not_stop_the_others(ctx: AppContext) -> None:
    seen: list[str] = []

    async def boom(_: Any) -> None:
        raise RuntimeError("step broke")

    async def fine(_: Any) -> dict[str, int]:
        seen.append("fine")
        return {"n": 1}

    result = await nightly_job(ctx, steps=[("boom", boom), ("fine", fine)])
    assert result["outcome"] == "failed" and seen == ["fine"]
    [run] = await runs(ctx)
    assert run.counts["boom"] == {"error": "RuntimeError: step broke"} and run.counts["fine"] == {"n": 1}
    assert run.error == "steps failed: boom"


async def test_runs_once_while_another_replica_holds_the_lock(ctx: AppContext) -> None:
    async def step(_: Any) -> str:
        return "ran"

    if is_postgres(ctx.settings.database_url):
        other = AppContext.create(ctx.settings)  # a second replica on the same database
        conn = await other.engine.connect()
        assert await conn.scalar(text("SELECT pg_try_advisory_lock(:k)"), {"k": NIGHTLY_LOCK})
        try:
            assert (await nightly_job(ctx, steps=[("s", step)]))["outcome"] == "skipped"
        finally:
            await conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": NIGHTLY_LOCK})
            await conn.close()
            await other.close()
    else:
        import asyncio

        lock = ctx.extras.setdefault("nightly_lock", asyncio.Lock())
        await lock.acquire()
        try:
            assert (await nightly_job(ctx, steps=[("s", step)]))["outcome"] == "skipped"
        finally:
            lock.release()
    assert (await nightly_job(ctx, steps=[("s", step)]))["outcome"] == "ok"
    assert [r.outcome for r in await runs(ctx)] == ["skipped", "ok"]


async def test_a_missed_run_runs_at_start(ctx: AppContext) -> None:
    now = datetime.now(UTC)
    assert not await missed_run(ctx, now)  # a fresh installation waits for its first 03:00
    async with ctx.sessionmaker() as session:
        session.add(JobRun(name="nightly", outcome="ok", started_at=now - timedelta(days=2),
                           finished_at=now - timedelta(days=2)))
        await session.commit()
    assert await missed_run(ctx, now)  # down over the last scheduled time
    result = await catch_up(ctx)  # no GitHub client: the GitHub steps skip, the report is built
    assert result is not None and result["outcome"] == "ok"
    assert not await missed_run(ctx)
    assert await catch_up(ctx) is None
    # A run that started before the last 03:00 does not count for it.
    fire = last_fire_time(nightly_trigger(ctx), now)
    assert fire is not None and (fire.hour, fire.minute) == (3, 0) and fire <= now
    async with ctx.sessionmaker() as session:
        for row in await session.scalars(select(JobRun)):
            row.started_at = fire - timedelta(minutes=1)
        await session.commit()
    assert await missed_run(ctx, now)


async def test_a_run_cut_short_by_a_stop_runs_again_at_start(ctx: AppContext) -> None:
    """The process stopped during the night's run (a deploy at 03:05): its row stayed
    "running" and counted as that night's run, so the start did not run it again and the
    night had no sync and no report."""
    now = datetime.now(UTC)
    fire = last_fire_time(nightly_trigger(ctx), now)
    assert fire is not None
    async with ctx.sessionmaker() as session:
        session.add(JobRun(name="nightly", outcome="ok", started_at=fire - timedelta(days=1),
                           finished_at=fire - timedelta(days=1)))
        session.add(JobRun(name="nightly", outcome="running", started_at=fire + timedelta(seconds=1)))
        await session.commit()
    result = await catch_up(ctx)
    assert result is not None and result["outcome"] == "ok"
    assert [r.outcome for r in await runs(ctx)] == ["ok", "cancelled", "ok"]
    async with ctx.sessionmaker() as session:
        assert await session.scalar(select(Report.id)) is not None  # the night's report
    assert await catch_up(ctx) is None


def test_scheduler_has_the_nightly_job(settings: Any) -> None:
    ctx = AppContext.create(dataclasses.replace(settings, nightly_cron="30 2 * * *"))
    scheduler = create_scheduler(ctx)
    jobs = {j.id: j for j in scheduler.get_jobs()}
    nightly = jobs["nightly"]
    assert nightly.misfire_grace_time >= 3600 and nightly.coalesce
    fields = {f.name: str(f) for f in nightly.trigger.fields}
    assert (fields["hour"], fields["minute"]) == ("2", "30")
    assert "nightly-catch-up" in jobs


async def test_a_first_backfill_that_could_not_read_a_repository_says_so(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """App credentials only, installed on TRL: the other repositories cannot be read. The
    backfill said "ok", the front page's progress section went away, and nothing told the
    installer that six of the seven repositories were never read, nor that GITHUB_TOKEN is
    what they need."""
    from bot.scheduler import first_backfill
    from bot.site.progress import backfill_progress
    from tests.fake_graphql import FakeGraphQL
    from tests.fakegithub import install_app

    fake_github.graphql_handler = FakeGraphQL(FakeData.generate(3, seed=5, long_every=0),
                                              shared_dir / "fixtures" / "github-api" / "schema.graphql")
    fake_github.allow_anonymous = False
    await install_app(app_ctx, fake_github, 55, "huggingface", ["huggingface/trl"])
    assert (await first_backfill(app_ctx))["outcome"] == "failed"
    async with app_ctx.sessionmaker() as session:
        progress = await backfill_progress(session)
    assert progress is not None and progress["outcome"] == "failed"
    assert "verl-project/verl" in progress["error"] and "GITHUB_TOKEN" in progress["error"]
    assert "huggingface/trl" not in progress["left"] and "verl-project/verl" in progress["left"]


async def test_a_nightly_run_whose_sync_github_refused_in_part_says_so(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """App credentials only, installed on TRL: the nightly sync could not read the other
    repositories, yet the run was recorded "ok". It is "partial" and names them; it still
    counts as that night's run (no second run at the next start)."""
    from bot.scheduler import step_sync
    from tests.fake_graphql import FakeGraphQL
    from tests.fakegithub import install_app

    fake_github.graphql_handler = FakeGraphQL(FakeData.generate(3, seed=5, long_every=0),
                                              shared_dir / "fixtures" / "github-api" / "schema.graphql")
    fake_github.allow_anonymous = False
    await install_app(app_ctx, fake_github, 55, "huggingface", ["huggingface/trl"])
    result = await nightly_job(app_ctx, steps=[("sync", step_sync)])
    assert result["outcome"] == "partial"
    (run,) = await runs(app_ctx)
    assert run.outcome == "partial" and run.finished_at is not None
    assert "verl-project/verl" in run.error and "huggingface/trl" not in run.error
    async with app_ctx.sessionmaker() as session:  # an earlier night's run
        session.add(JobRun(name="nightly", outcome="ok", started_at=run.started_at - timedelta(days=2),
                           finished_at=run.started_at - timedelta(days=2)))
        await session.commit()
    assert not await missed_run(app_ctx)


async def test_a_nightly_run_whose_report_github_refused_says_so(app_ctx: Any,
                                                                 fake_github: Any) -> None:
    """The report was stored but not posted on RLTRACKER_REPORT_ISSUE (the app is not
    installed there): the run was recorded "ok". It is "partial", with the reason."""
    import dataclasses

    from bot.scheduler import step_report

    fake_github.add_issue("tracker-org/tracker", 1, title="Nightly reports")
    app_ctx.settings = dataclasses.replace(app_ctx.settings, report_issue="tracker-org/tracker#1")
    result = await nightly_job(app_ctx, steps=[("report", step_report)])
    assert result["outcome"] == "partial"
    (run,) = await runs(app_ctx)
    assert run.outcome == "partial"
    # review36: never posted under the GITHUB_TOKEN's person; the reason says the app is missing
    assert ("could not be posted on tracker-org/tracker#1: NotInstalled: the app is not "
            "installed on tracker-org/tracker") in run.error
    fake_github.add_installation(77, "tracker-org", repos=["tracker-org/tracker"])
    assert (await nightly_job(app_ctx, steps=[("report", step_report)]))["outcome"] == "ok"
    assert len(fake_github.comments_of("tracker-org/tracker", 1)) == 1


async def test_a_scheduled_time_runs_once_across_replicas(ctx: AppContext) -> None:
    """Two replicas' schedulers fire for the same 03:00; the lock keeps them from overlapping,
    but the one whose clock or loop is a little late found the lock free again (the first
    run was short) and ran the whole night's job a second time: a second sync, re-analysis
    and report for one scheduled time. The late one now records a skipped run."""
    replicas = [ctx, AppContext.create(ctx.settings)]  # a second replica on the same database
    try:
        jobs = [create_scheduler(c).get_job("nightly") for c in replicas]
        first = await jobs[0].func(*jobs[0].args, **jobs[0].kwargs)
        second = await jobs[1].func(*jobs[1].args, **jobs[1].kwargs)
    finally:
        await replicas[1].close()
    assert first["outcome"] == "ok"
    assert second["outcome"] == "skipped"
    assert [r.outcome for r in await runs(ctx)] == ["ok", "skipped"]
    # Both replicas starting after a missed night: the catch-up runs it once as well.
    fire = last_fire_time(nightly_trigger(ctx), datetime.now(UTC))
    assert fire is not None
    async with ctx.sessionmaker() as session:
        await session.execute(text("DELETE FROM job_runs"))
        session.add(JobRun(name="nightly", outcome="ok", started_at=fire - timedelta(days=1),
                           finished_at=fire - timedelta(days=1)))
        await session.commit()
    other = AppContext.create(ctx.settings)
    try:
        assert await missed_run(ctx) and await missed_run(other)  # both looked before either ran
        assert (await nightly_job(ctx, fire_time=fire))["outcome"] == "ok"
        assert (await nightly_job(other, fire_time=fire))["outcome"] == "skipped"
    finally:
        await other.close()


async def test_reanalysis_refreshes_older_versions_only(ctx: AppContext) -> None:
    """The step took every analysis whose version differed from this code's: a replica still
    on the previous release (a rolling deploy) that got the night's lock rewrote the findings
    the new release had stored with its older analyzers. Older versions and missing analyses
    are refreshed; a newer version is left as it is, and the step still ends."""
    from analyzers.version import ANALYZER_VERSION
    from bot.scheduler import step_reanalyse

    day, _, serial = ANALYZER_VERSION.rpartition("-")
    older = f"{day}-{int(serial) - 1}" if int(serial) > 1 else "2000.01.01-1"
    newer = f"{day}-{int(serial) + 1}"  # -10 after -9: compared as numbers, not strings
    async with ctx.sessionmaker() as session:
        threads = [Thread(repo="someone/else", number=n, kind="issue", title=f"t{n}", body="b")
                   for n in (1, 2, 3, 4)]
        session.add_all(threads)
        await session.flush()
        session.add_all([
            Analysis(thread_id=threads[0].id, analyzer_version=older, result={}),
            Analysis(thread_id=threads[1].id, analyzer_version=newer, result={"kept": True}),
            Analysis(thread_id=threads[2].id, analyzer_version=ANALYZER_VERSION, result={"kept": True}),
        ])  # threads[3]: never analysed
        await session.commit()
    counts = await step_reanalyse(ctx)
    assert counts["reanalysed"] == 2
    async with ctx.sessionmaker() as session:
        got = {n: (v, r) for n, v, r in (await session.execute(
            select(Thread.number, Analysis.analyzer_version, Analysis.result)
            .join(Analysis, Analysis.thread_id == Thread.id))).all()}
    assert got[1][0] == ANALYZER_VERSION and got[4][0] == ANALYZER_VERSION
    assert got[2] == (newer, {"kept": True})
    assert got[3] == (ANALYZER_VERSION, {"kept": True})
    assert (await step_reanalyse(ctx))["reanalysed"] == 0


async def test_reanalysis_does_not_hold_the_sqlite_write_lock_across_analyses(
        sqlite_ctx: AppContext) -> None:
    """The step analysed a batch of 200 threads in one transaction, writing each finding as it
    went: on SQLite the write lock was held from the first write to the batch's commit,
    across every analysis after it (seconds each for long threads), and /webhook's group
    commit waited for it, past the 10 s GitHub waits after a version bump. Probed without
    timing: just before the step reads a thread's Analysis row (its analysis has run), a
    second connection asks for the write lock without waiting."""
    import sqlite3

    from sqlalchemy import event

    from bot.config import sqlite_path
    from bot.scheduler import step_reanalyse

    ctx = sqlite_ctx
    async with ctx.sessionmaker() as session:
        threads = [Thread(repo="someone/else", number=n, kind="issue", title=f"t{n}", body="b")
                   for n in (1, 2, 3)]
        session.add_all(threads)
        await session.flush()
        session.add_all([Analysis(thread_id=t.id, analyzer_version="2000.01.01-1", result={})
                         for t in threads])
        await session.commit()
    path = sqlite_path(ctx.settings.database_url)
    assert path is not None
    probes: list[bool] = []

    def probe(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.lstrip().startswith("SELECT") and "FROM analyses \nWHERE analyses.thread_id" in statement:
            other = sqlite3.connect(path, timeout=0, isolation_level=None)
            try:
                other.execute("BEGIN IMMEDIATE")
                other.execute("ROLLBACK")
                probes.append(True)
            except sqlite3.OperationalError:  # database is locked
                probes.append(False)
            finally:
                other.close()

    event.listen(ctx.engine.sync_engine, "before_cursor_execute", probe)
    try:
        assert (await step_reanalyse(ctx))["reanalysed"] == 3
    finally:
        event.remove(ctx.engine.sync_engine, "before_cursor_execute", probe)
    assert probes == [True, True, True]


@pytest.mark.parametrize(("weekdays", "expected_day"), [
    ("0", 6),      # Sunday, in crontab's numbering
    ("7", 6),      # Sunday too
    ("1-5", 7),    # Monday to Friday: after Saturday noon, Monday
    ("6", 12),     # Saturday: not today's (03:00 has passed), next week's
    ("0,6", 6),
    ("*/2", 6),    # crontab days 0, 2, 4, 6: Sunday, Tuesday, Thursday, Saturday
    ("sat", 12),   # names mean what they say in both
    ("*", 6),
])
def test_nightly_cron_weekdays_are_crontab_weekdays(weekdays: str, expected_day: int) -> None:
    """RLTRACKER_NIGHTLY_CRON is documented as a crontab line, but APScheduler 3's
    from_crontab numbers weekdays from Monday = 0: '0 3 * * 0' (Sundays) ran on Mondays,
    '1-5' (weekdays) from Tuesday to Saturday, and '7' (Sunday) was refused."""
    from types import SimpleNamespace

    from bot.config import check_env

    cron = f"0 3 * * {weekdays}"
    check_env({"RLTRACKER_NIGHTLY_CRON": cron})
    trigger = nightly_trigger(SimpleNamespace(settings=SimpleNamespace(nightly_cron=cron)))
    saturday_noon = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
    assert saturday_noon.weekday() == 5
    fire = trigger.get_next_fire_time(None, saturday_noon)
    assert fire == datetime(2026, 12, expected_day, 3, 0, tzinfo=UTC)


def test_nightly_cron_day_of_month_or_weekday_as_crontab() -> None:
    """crontab runs a line whose day of month and day of week are both restricted on either
    ('0 3 1 * 1': the 1st, and every Monday); APScheduler's CronTrigger wants both, so it ran
    only on a Monday that is the 1st, months apart."""
    from types import SimpleNamespace

    def next_fire(cron: str, after: datetime) -> datetime:
        trigger = nightly_trigger(SimpleNamespace(settings=SimpleNamespace(nightly_cron=cron)))
        return trigger.get_next_fire_time(None, after)

    saturday_noon = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
    assert next_fire("0 3 1 * 1", saturday_noon) == datetime(2026, 12, 7, 3, 0, tzinfo=UTC)
    assert next_fire("0 3 1 * 1", datetime(2026, 12, 29, 12, 0, tzinfo=UTC)) == datetime(
        2027, 1, 1, 3, 0, tzinfo=UTC)  # a Friday, the 1st
    # Only one of them restricted: that one alone, as before.
    assert next_fire("0 3 1 * *", saturday_noon) == datetime(2027, 1, 1, 3, 0, tzinfo=UTC)
    assert next_fire("0 3 * * 1", saturday_noon) == datetime(2026, 12, 7, 3, 0, tzinfo=UTC)
    last = last_fire_time(nightly_trigger(SimpleNamespace(settings=SimpleNamespace(
        nightly_cron="0 3 1 * 1"))), saturday_noon)
    assert last == datetime(2026, 12, 1, 3, 0, tzinfo=UTC)  # a Tuesday, the 1st


@pytest.mark.parametrize("value,fetched", [(" 1", True), ("yes", True), ("On ", True),
                                           ("0", False), (" off", False), ("", False)])
async def test_the_papers_step_reads_its_setting_as_the_start_up_check_does(
        db_url: str, fake_github: Any, monkeypatch: pytest.MonkeyPatch, value: str,
        fetched: bool) -> None:
    """RLTRACKER_FETCH_PAPERS=" 1" passed the start-up check, but the nightly step compared
    the value with "1" exactly and skipped, every night; "yes" (as RLTRACKER_DRY_RUN takes
    it) was refused. Boolean settings are read one way (bot.config)."""
    from aiohttp import web

    from bot.config import Settings
    from bot.scheduler import step_papers

    asked: list[str] = []

    @fake_github.route("GET", r"^/api/query$")
    def listing(fake: Any, request: Any, match: Any, body: Any) -> web.Response:
        asked.append(request.path)
        return web.Response(text='<feed xmlns="http://www.w3.org/2005/Atom"></feed>',
                            content_type="application/atom+xml")

    env = {"RLTRACKER_FETCH_PAPERS": value, "RLTRACKER_ARXIV_API_URL": fake_github.url + "/api/query"}
    for name, text_ in env.items():
        monkeypatch.setenv(name, text_)
    settings = Settings.from_env(env, database_url=db_url, dry_run=True)  # the check passes
    ctx = AppContext.create(settings)
    try:
        result = await step_papers(ctx)
    finally:
        await ctx.close()
    assert (not str(result).startswith("skipped")) is fetched, result
    assert bool(asked) is fetched


HANG_GUARD = 60  # seconds: only so that a broken test ends; nothing waits on time


def _blocking_step(started: Any) -> Any:
    import asyncio

    async def block(_: Any) -> None:
        started.set()
        await asyncio.Event().wait()  # until cancelled

    return block


async def test_a_run_cut_short_by_a_normal_stop_is_recorded_as_interrupted(ctx: AppContext) -> None:
    """A nightly run cancelled by a normal stop (serve's scheduler shut down, Ctrl-C) stayed
    "running" until a process with the scheduler started again: pages and metrics showed a
    run in progress that was not. It records itself as cancelled as it stops."""
    import asyncio

    async def first(_: Any) -> dict[str, int]:
        return {"n": 1}

    started = asyncio.Event()
    run = asyncio.create_task(nightly_job(ctx, steps=[("first", first), ("block", _blocking_step(started))]))
    await asyncio.wait_for(started.wait(), HANG_GUARD)
    [running] = await runs(ctx)
    assert running.outcome == "running"
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    [stopped] = await runs(ctx)
    assert stopped.outcome == "cancelled" and stopped.finished_at is not None
    assert stopped.counts == {"first": {"n": 1}} and "stopped during the run" in (stopped.error or "")
    # The lock is free and the night counts as missed: the next run goes ahead.
    async def step(_: Any) -> str:
        return "ran"

    assert (await nightly_job(ctx, steps=[("s", step)]))["outcome"] == "ok"


async def test_stopping_the_scheduler_records_its_run_in_progress_as_interrupted(
        ctx: AppContext) -> None:
    """What `serve` does on SIGTERM: APScheduler's shutdown(wait=False) cancels its job's task
    without waiting for it, and the process went on to close the database; the run stayed
    "running". stop_scheduler waits for the cancelled run to record itself."""
    import asyncio

    from bot.scheduler import stop_scheduler

    started = asyncio.Event()
    scheduler = create_scheduler(ctx)
    scheduler.remove_job("nightly-catch-up")
    scheduler.add_job(nightly_job, "date", run_date=datetime.now(UTC), args=[ctx],
                      kwargs={"steps": [("block", _blocking_step(started))]}, id="now",
                      misfire_grace_time=3600)
    scheduler.start()
    try:
        await asyncio.wait_for(started.wait(), HANG_GUARD)
    finally:
        await stop_scheduler(ctx, scheduler)
    [run] = await runs(ctx)
    assert run.outcome == "cancelled" and "stopped during the run" in (run.error or "")
