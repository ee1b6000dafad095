"""The nightly report's night: a restarted night posts the report the dead run left pending
(review55), a report is dated by the night it belongs to, and its times and titles as shown."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select

from bot.scheduler import nightly_job, step_report
from bot.site.report import build_report, run_report
from bot.store.models import Action, Report, Thread
from tests.test_report import DAY1, V, night_one, seed

ISSUE = "tracker-org/tracker"


def report_issue(ctx: Any, fake_github: Any) -> None:
    fake_github.add_installation(77, "tracker-org", repos=[ISSUE])
    fake_github.add_issue(ISSUE, 1, title="Nightly reports")
    ctx.settings = dataclasses.replace(ctx.settings, report_issue=f"{ISSUE}#1")


async def report_actions(ctx: Any) -> list[Action]:
    async with ctx.sessionmaker() as session:
        return list(await session.scalars(select(Action).where(Action.kind == "report")))


async def test_a_restarted_night_posts_the_report_its_dead_run_left_pending(
        app_ctx: Any, fake_github: Any) -> None:
    """The nightly run died while posting (the process stopped: GitHub had created the
    night's comment, its answer never came back). The catch-up run at the next start found
    the night's claim `pending` and less than ten minutes old and answered "owned": the
    report was on GitHub but the night stayed `pending` (shown in progress) until someone ran
    `rltracker report --date`. The claim names the run that took it; that run is known dead
    (cancelled), so the catch-up takes the night over and finds the comment by its marker."""
    ctx = app_ctx
    report_issue(ctx, fake_github)
    await night_one(ctx)
    reached = asyncio.Event()

    @fake_github.route("POST", rf"/repos/{ISSUE}/issues/1/comments")
    async def post(fake: Any, request: Any, match: Any, body: Any) -> Any:
        comment = fake.add_comment(ISSUE, 1, body["body"], "rltracker[bot]", "Bot")
        if not reached.is_set():
            reached.set()
            await asyncio.Event().wait()  # the answer never comes: the process stops
        return 201, {k: v for k, v in comment.items() if not k.startswith("_")}

    dying = asyncio.create_task(nightly_job(ctx, steps=[("report", step_report)]))
    await reached.wait()
    dying.cancel()
    await asyncio.gather(dying, return_exceptions=True)
    [claim] = await report_actions(ctx)
    assert claim.status == "pending"

    result = await nightly_job(ctx, steps=[("report", step_report)])  # the catch-up
    assert result["outcome"] == "ok", result
    assert result["counts"]["report"]["posted"] in ("posted", "edited")
    [comment] = fake_github.comments_of(ISSUE, 1)
    [action] = await report_actions(ctx)
    assert action.status == "posted" and action.comment_id == comment["id"]


async def test_a_live_nightly_runs_report_claim_is_left_to_it(app_ctx: Any, fake_github: Any) -> None:
    """The other side: a claim whose run is alive (running, its heartbeat fresh) is that run's;
    `rltracker report` beside it leaves the night to it."""
    ctx = app_ctx
    report_issue(ctx, fake_github)
    await night_one(ctx)
    reached, release = asyncio.Event(), asyncio.Event()
    held: list[int] = []

    @fake_github.route("POST", rf"/repos/{ISSUE}/issues/1/comments")
    async def post(fake: Any, request: Any, match: Any, body: Any) -> Any:
        if not held:
            held.append(1)
            reached.set()
            await release.wait()
        comment = fake.add_comment(ISSUE, 1, body["body"], "rltracker[bot]", "Bot")
        return 201, {k: v for k, v in comment.items() if not k.startswith("_")}

    nightly = asyncio.create_task(nightly_job(ctx, steps=[("report", step_report)]))
    await reached.wait()
    [claim] = await report_actions(ctx)
    by_hand = await run_report(ctx)
    release.set()
    result = await nightly
    assert by_hand is not None and by_hand["posted"] == "owned"
    assert result["counts"]["report"]["posted"] == "posted"
    assert (claim.details or {}).get("run") == result["run_id"]
    assert len(fake_github.comments_of(ISSUE, 1)) == 1


async def test_a_report_built_after_midnight_is_dated_by_its_night(ctx: Any) -> None:
    """The night scheduled at 23:00 UTC on DAY1 ran long: its report, built after midnight,
    took DAY1+1's date, and the next night's report replaced it (DAY1 had none). A report
    is dated by the night it belongs to: the run's scheduled time."""
    await night_one(ctx)
    fire = datetime(DAY1.year, DAY1.month, DAY1.day, 23, tzinfo=UTC)
    result = await nightly_job(ctx, steps=[("report", step_report)], fire_time=fire)
    assert result["counts"]["report"]["date"] == DAY1.isoformat()
    async with ctx.sessionmaker() as session:
        assert list(await session.scalars(select(Report.date))) == [DAY1.isoformat()]


async def test_report_times_end_in_z_as_every_other_json_time(ctx: Any) -> None:
    """`generated_at` and the snapshot's `created_at` were written by isoformat() ("+00:00"),
    every other time the tracker stores or serves as JSON ends in "Z"."""
    await night_one(ctx)
    data = await build_report(ctx, DAY1)
    assert data["generated_at"].endswith("Z"), data["generated_at"]
    stamps = [v["created_at"] for v in data["snapshot"].values() if v["created_at"]]
    assert stamps and all(s.endswith("Z") for s in stamps), stamps
    # and the next night still reads them (waits, failures opened that day)
    await run_report(ctx, DAY1)
    assert (await build_report(ctx, DAY1 + timedelta(days=1)))["frameworks"]["trl"]["waiting"]


async def test_a_deleted_threads_title_is_not_shown_on_an_old_report(ctx: Any) -> None:
    """A stored report keeps the title of every thread it names. A thread deleted on GitHub
    since (its row gone, its grave written) had its title shown on that night's page for
    good; the page now drops it (the thread's key and numbers stay)."""
    from bot.store.threads import bury, thread_grave

    await seed(ctx, V, 1, created=datetime(2026, 11, 20, tzinfo=UTC), title="Secret plan for X")
    await seed(ctx, V, 2, created=datetime(2026, 11, 20, tzinfo=UTC), title="Kept title")
    await run_report(ctx, DAY1)
    async with ctx.sessionmaker() as session:
        thread = await session.scalar(select(Thread).where(Thread.repo == V, Thread.number == 1))
        await bury(session, thread_grave(V, 1, "issue"), thread.created_at)
        await session.delete(thread)
        await session.commit()
    from aiohttp.test_utils import TestClient, TestServer

    from bot.app import create_app

    async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
        resp = await client.get(f"/reports/{DAY1}")
        html = await resp.text()
    assert resp.status == 200
    assert "Secret plan for X" not in html
    assert "Kept title" in html
    assert f"{V}#1" in html


async def test_a_night_killed_while_posting_is_posted_once_by_the_next_start(
        app_ctx: Any, fake_github: Any) -> None:
    """The process was killed (no time to record anything) right after GitHub created the
    night's comment: its run still says `running`, its heartbeat a minute old, its claim
    pending. The next start marks the run cancelled (close_interrupted_runs) and the catch-up
    run takes the claim over at once, adopting the comment by its marker."""
    from bot.scheduler import JOB_NAME, close_interrupted_runs, last_fire_time, nightly_trigger
    from bot.store.models import JobRun

    ctx = app_ctx
    report_issue(ctx, fake_github)
    await night_one(ctx)
    now = datetime.now(UTC)
    fire = last_fire_time(nightly_trigger(ctx), now)
    assert fire is not None
    night = fire.date().isoformat()
    async with ctx.sessionmaker() as session:
        killed = JobRun(name=JOB_NAME, started_at=now - timedelta(minutes=3), outcome="running",
                        heartbeat_at=now - timedelta(minutes=1), counts={})
        session.add(killed)
        await session.flush()
        session.add(Action(repo=ISSUE, number=1, kind="report", status="pending",
                           dedupe_key=f"report:{night}", details={"run": killed.id},
                           created_at=now - timedelta(minutes=2),
                           updated_at=now - timedelta(minutes=2)))
        await session.commit()
    fake_github.add_comment(ISSUE, 1, f"<!-- rltracker:report:{night} -->\nhalf",
                            user="rltracker[bot]", user_type="Bot")
    assert await close_interrupted_runs(ctx) == 1
    result = await nightly_job(ctx, steps=[("report", step_report)], fire_time=fire)
    assert result["counts"]["report"]["posted"] in ("posted", "edited"), result
    [comment] = fake_github.comments_of(ISSUE, 1)
    assert "Proposal status" in comment["body"]
    [action] = await report_actions(ctx)
    assert action.status == "posted" and action.comment_id == comment["id"]
