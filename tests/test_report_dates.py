"""Dates in the nightly report (review dates64): each failure report is counted by one night,
including one stored only after the report that should have counted it was built."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from bot.site.report import build_report, render_html, render_markdown
from bot.store.models import Report
from bot.store.types import format_datetime, utcnow
from tests.test_report import V, seed


async def _previous_report(ctx: Any, built: Any, snapshot: dict[str, Any]) -> None:
    """Last night's report as the nightly job stores it: its failure window ending when it
    was built, the 24 hours before."""
    async with ctx.sessionmaker() as session:
        session.add(Report(date=built.date().isoformat(), markdown="", created_at=built,
                           data={"generated_at": format_datetime(built), "snapshot": snapshot,
                                 "failures_window": {
                                     "from": format_datetime(built - timedelta(days=1)),
                                     "to": format_datetime(built)}}))
        await session.commit()


async def test_a_failure_report_stored_after_the_report_that_should_count_it_is_counted_next(
        ctx: Any) -> None:
    """A failure report opened a few minutes before last night's report was built, but stored
    only after it (its webhook late, the night's sync failed, or it was opened while the sync
    had already read its repository: with a token only, threads come with the nightly sync):
    last night's report did not know it, and tonight's counts from where last night's ended,
    after its opening. It was counted by no report. It is counted tonight; one last night's
    report counted is not counted again, and an old one stored for the first time (a
    repository backfilled) is not "opened since the previous report"."""
    now = utcnow()
    built = now - timedelta(hours=24)
    counted = f"{V}#61"
    await _previous_report(ctx, built, {counted: {
        "framework": "verl", "repo": V, "number": 61, "kind": "issue", "is_proposal": False,
        "is_failure": True, "category": "kl_growth", "set_by": None, "state": "open_no_reply",
        "replied": False, "concerns": [], "methods": [], "arxiv_ids": [],
        "created_at": format_datetime(built - timedelta(hours=2)), "first_reply_days": None}})
    await seed(ctx, V, 60, created=built - timedelta(minutes=5), proposal=False,
               failure="kl_growth")  # stored late: not in last night's snapshot
    await seed(ctx, V, 61, created=built - timedelta(hours=2), proposal=False,
               failure="kl_growth")  # counted last night
    await seed(ctx, V, 62, created=built - timedelta(days=3), proposal=False,
               failure="kl_growth")  # an old one, stored now
    await seed(ctx, V, 63, created=now - timedelta(hours=1), proposal=False,
               failure="entropy_collapse")  # tonight's
    report = await build_report(ctx, now.date())
    assert report["frameworks"]["verl"]["failures_today"] == {
        "entropy_collapse": [f"{V}#63"], "kl_growth": [f"{V}#60"]}
    # the page says why one opened before its window is there
    assert report["frameworks"]["verl"]["failures_today_late"] == [f"{V}#60"]
    html = render_html(report)
    assert (f'{V}#60</a> <span class="tag late">opened before, stored after the report of '
            f'{built.date().isoformat()}</span>') in html
    assert f'{V}#63</a> <span class="tag late">' not in html
    assert (f"KL keeps growing: 1 (1 opened before the report of {built.date().isoformat()} and "
            "stored after it)") in render_markdown(report)


async def test_a_proposal_opened_after_the_reports_day_ended_has_waited_no_negative_time(
        ctx: Any) -> None:
    """The report of a day that has ended (yesterday's night run late, or caught up at the
    next start this morning) counts waits to that day's end; a proposal opened this morning,
    after it, is in the report (its state is read when the report is built) and read
    "-0.4 d" waiting for a reply. It has waited nothing by then: 0 d."""
    now = utcnow()
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    await seed(ctx, V, 70, created=midnight - timedelta(hours=12))
    await seed(ctx, V, 71, created=now - (now - midnight) / 2)  # this morning, after midnight
    report = await build_report(ctx, midnight.date() - timedelta(days=1))
    waiting = {w["key"]: w["days"] for w in report["frameworks"]["verl"]["waiting"]}
    assert waiting == {f"{V}#70": 0.5, f"{V}#71": 0.0}


async def test_a_resume_while_the_previous_report_was_being_stored_is_in_the_next_one(
        ctx: Any) -> None:
    """A report lists the repositories resumed up to the moment it reads the store
    (`generated_at`), and the next one those resumed after the previous report's `created_at`:
    the moment it was stored, after its threads were read and its numbers counted (minutes on
    a large store). A repository resumed in between was in neither."""
    from bot.store.models import Repository

    now = utcnow()
    read = now - timedelta(hours=24)  # when last night's report read the store
    stored = read + timedelta(minutes=5)  # and when it was stored
    async with ctx.sessionmaker() as session:
        session.add(Report(date=read.date().isoformat(), markdown="", created_at=stored,
                           data={"generated_at": format_datetime(read), "snapshot": {}}))
        session.add(Repository(full_name="THUDM/slime", comments_paused=False,
                               resumed_by="operator", resumed_at=read + timedelta(minutes=2)))
        await session.commit()
    report = await build_report(ctx, now.date())
    assert [r["repo"] for r in report["resumed"]] == ["THUDM/slime"]
