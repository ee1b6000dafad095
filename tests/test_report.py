"""The nightly proposal-status report: a night with known changes lists exactly those."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import sys
from datetime import UTC, date, datetime, timedelta
from typing import Any

from markdown_it import MarkdownIt
from sqlalchemy import select

from bot.site.report import build_report, render_html, render_markdown, run_report
from bot.store.models import Action, Analysis, Comment, Report, Repository, Thread

DAY1 = date(2026, 11, 30)
DAY2 = date(2026, 12, 1)


def at(day: date, hour: int = 12) -> datetime:
    return datetime(day.year, day.month, day.day, hour, tzinfo=UTC)


async def seed(ctx: Any, repo: str, number: int, *, created: datetime, proposal: bool = True,
               failure: str | None = None, state: str = "open_no_reply", concerns: list[str] | None = None,
               replied: bool = False, arxiv: list[str] | None = None, methods: list[str] | None = None,
               title: str = "A title") -> None:
    async with ctx.sessionmaker() as session:
        thread = await session.scalar(select(Thread).where(Thread.repo == repo, Thread.number == number))
        if thread is None:
            thread = Thread(repo=repo, number=number, kind="issue", title=title, author="proposer",
                            created_at=created, url=f"https://github.com/{repo}/issues/{number}")
            session.add(thread)
            await session.flush()
        analysis = await session.scalar(select(Analysis).where(Analysis.thread_id == thread.id))
        if analysis is None:
            analysis = Analysis(thread_id=thread.id, analyzer_version="test", result={})
            session.add(analysis)
        analysis.result = {"review": {"state": state, "replied_from_other": replied, "concerns": concerns or []}}
        analysis.is_proposal = proposal
        analysis.is_failure_report = failure is not None
        analysis.failure_category = failure
        analysis.review_state = state
        analysis.arxiv_ids = arxiv or []
        analysis.methods = methods or []
        await session.commit()


async def reply(ctx: Any, repo: str, number: int, when: datetime, gid: int) -> None:
    async with ctx.sessionmaker() as session:
        thread = await session.scalar(select(Thread).where(Thread.repo == repo, Thread.number == number))
        session.add(Comment(thread_id=thread.id, kind="comment", github_id=gid, author="maintainer",
                            body="…", created_at=when))
        await session.commit()


V, T, OR = "verl-project/verl", "huggingface/trl", "OpenRLHF/OpenRLHF"


async def night_one(ctx: Any) -> None:
    base = at(DAY1) - timedelta(days=10)
    await seed(ctx, V, 1, created=base)  # will get a first reply
    await seed(ctx, V, 2, created=base)  # will be declined
    await seed(ctx, V, 3, created=base, state="open_replied", replied=True)  # will get a concern
    await seed(ctx, T, 10, created=base)  # will be merged
    await seed(ctx, T, 11, created=base)  # will lapse
    await seed(ctx, T, 12, created=base - timedelta(days=5))  # stays waiting
    await seed(ctx, OR, 5, created=base, state="redirected", replied=True)  # unchanged
    await seed(ctx, OR, 6, created=at(DAY1, 3), proposal=False, failure="entropy_collapse")


async def night_two(ctx: Any) -> None:
    await reply(ctx, V, 1, at(DAY2, 9), 9001)
    await seed(ctx, V, 1, created=at(DAY1), state="open_replied", replied=True)
    await seed(ctx, V, 2, created=at(DAY1), state="declined", replied=True, concerns=["demand"])
    await seed(ctx, V, 3, created=at(DAY1), state="open_replied", replied=True, concerns=["evidence"])
    await seed(ctx, T, 10, created=at(DAY1), state="merged", replied=True)
    await seed(ctx, T, 11, created=at(DAY1), state="lapsed")
    await seed(ctx, T, 13, created=at(DAY2, 1), arxiv=["2503.14476"], methods=["clip-higher"],
               title="<script>alert(1)</script> add DAPO")  # new
    await seed(ctx, V, 20, created=at(DAY2, 5), proposal=False, failure="kl_growth")
    await seed(ctx, V, 21, created=at(DAY2, 6), proposal=False, failure="kl_growth")
    # opened during DAY1 but stored after DAY1's report was built: DAY1's did not count it,
    # so DAY2's does (review dates64: it was counted by no report)
    await seed(ctx, V, 22, created=at(DAY1, 6), proposal=False, failure="entropy_collapse")
    async with ctx.sessionmaker() as session:
        session.add(Repository(full_name="THUDM/slime", comments_paused=True,
                               paused_reason="2 of the app's last 10 comments were hidden or deleted"))
        await session.commit()


def keys(report: dict[str, Any], fw: str, kind: str) -> list[str]:
    return [c["key"] for c in report["frameworks"][fw]["changes"][kind]]


async def test_a_night_with_known_changes_lists_exactly_those(ctx: Any) -> None:
    await night_one(ctx)
    first = await run_report(ctx, DAY1)
    assert first["baseline"] is True and sum(first["totals"].values()) == 0
    await night_two(ctx)
    await run_report(ctx, DAY2)
    async with ctx.sessionmaker() as session:
        row = await session.scalar(select(Report).where(Report.date == DAY2.isoformat()))
    data = row.data
    assert data["previous"] == DAY1.isoformat() and not data["baseline"]
    # The decline of #2 was its first reply too; #10 was merged by the maintainer who replied.
    assert keys(data, "verl", "first_replies") == [f"{V}#1", f"{V}#2"]
    assert keys(data, "verl", "declined_or_redirected") == [f"{V}#2"]
    assert keys(data, "verl", "concerns_raised") == [f"{V}#2", f"{V}#3"]
    assert data["frameworks"]["verl"]["changes"]["concerns_raised"][1]["concerns"] == ["evidence"]
    assert keys(data, "trl", "merged") == [f"{T}#10"]
    assert keys(data, "trl", "lapsed") == [f"{T}#11"]
    assert keys(data, "trl", "new_proposals") == [f"{T}#13"]
    assert data["frameworks"]["trl"]["changes"]["new_proposals"][0]["arxiv_ids"] == ["2503.14476"]
    assert keys(data, "trl", "first_replies") == [f"{T}#10"]
    assert data["totals"] == {"new_proposals": 1, "first_replies": 3, "concerns_raised": 2,
                              "declined_or_redirected": 1, "lapsed": 1, "merged": 1}
    assert all(not any(fw["changes"].values()) for fid, fw in data["frameworks"].items() if fid not in ("verl", "trl"))
    # Waiting for any reply, longest first, with how long.
    waiting = data["frameworks"]["trl"]["waiting"]
    assert [w["key"] for w in waiting] == [f"{T}#12", f"{T}#13"] and waiting[0]["days"] == 16.5  # until the end of the report day
    assert data["frameworks"]["verl"]["failures_today"] == {
        "entropy_collapse": [f"{V}#22"], "kl_growth": [f"{V}#20", f"{V}#21"]}
    assert data["frameworks"]["verl"]["median_first_reply_days"] is not None
    assert data["paused"] == [{"repo": "THUDM/slime", "reason": "2 of the app's last 10 comments were hidden or deleted"}]

    markdown = row.markdown
    assert "<script>" not in markdown and "add DAPO" not in markdown  # no GitHub text posted
    assert "[arXiv:2503.14476](https://arxiv.org/abs/2503.14476)" in markdown
    tokens = MarkdownIt().parse(markdown)
    links = [t.attrGet("href") for tok in tokens if tok.children for t in tok.children if t.type == "link_open"]
    # Threads link to the tracker, in code spans: a github.com link or a bare owner/repo#N in
    # a comment writes "mentioned this" into each thread the report names, every night.
    assert f"{ctx.settings.public_url}/threads/{T}/13" in links
    assert f"{ctx.settings.public_url}/threads/{T}/12" in links  # waiting for a reply
    assert not [link for link in links if "github.com" in link]
    spans = [t.content for tok in tokens if tok.children for t in tok.children if t.type == "code_inline"]
    assert f"{T}#13" in spans
    html = render_html(data)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>" not in html
    # The HTML report links each thread to its tracker page, and to GitHub beside it.
    assert f'href="/threads/{T}/13"' in html and f'href="/threads/{T}/12"' in html
    assert f'href="/threads/{V}/20"' in html and f'href="https://github.com/{T}/issues/13"' in html


async def test_report_is_one_comment_per_night_edited_when_rebuilt(app_ctx: Any, fake_github: Any) -> None:
    fake_github.add_installation(77, "tracker-org", repos=["tracker-org/tracker"])
    fake_github.add_issue("tracker-org/tracker", 1, title="Nightly reports")
    ctx = app_ctx
    ctx.settings = dataclasses.replace(ctx.settings, report_issue="tracker-org/tracker#1")
    await night_one(ctx)
    assert (await run_report(ctx, DAY1))["posted"] == "posted"
    assert (await run_report(ctx, DAY1))["posted"] == "edited"
    assert (await run_report(ctx, DAY2))["posted"] == "posted"
    comments = fake_github.comments_of("tracker-org/tracker", 1)
    assert len(comments) == 2
    assert DAY1.isoformat() in comments[0]["body"] and DAY2.isoformat() in comments[1]["body"]
    assert len(fake_github.requests("PATCH", r"/issues/comments/\d+$")) == 1
    async with ctx.sessionmaker() as session:
        actions = list(await session.scalars(select(Action).where(Action.kind == "report")))
    assert sorted(a.dedupe_key for a in actions) == [f"report:{DAY1}", f"report:{DAY2}"]
    assert all(a.status == "posted" and a.comment_id for a in actions)


async def report_issue_with_night_one(ctx: Any, fake_github: Any) -> None:
    """The app installed on tracker-org/tracker, whose issue #1 takes the reports; night one stored."""
    fake_github.add_installation(77, "tracker-org", repos=["tracker-org/tracker"])
    fake_github.add_issue("tracker-org/tracker", 1, title="Nightly reports")
    ctx.settings = dataclasses.replace(ctx.settings, report_issue="tracker-org/tracker#1")
    await night_one(ctx)


async def crashed_report_claim(ctx: Any) -> None:
    """A run of night one crashed after GitHub created its comment: its claim went stale."""
    crashed = datetime.now(UTC) - timedelta(minutes=20)
    async with ctx.sessionmaker() as session:
        session.add(Action(repo="tracker-org/tracker", number=1, kind="report", status="pending",
                           dedupe_key=f"report:{DAY1}", created_at=crashed, updated_at=crashed))
        await session.commit()


async def test_a_post_whose_answer_was_lost_is_adopted_not_repeated(app_ctx: Any, fake_github: Any) -> None:
    """GitHub created the night's comment but its answer never came back (the claim stayed
    pending, no comment id): the next run of that night finds the comment by its marker and
    edits it, as the failure comment does, instead of posting a second one."""
    ctx = app_ctx
    await report_issue_with_night_one(ctx, fake_github)
    fake_github.add_comment("tracker-org/tracker", 1, f"<!-- rltracker:report:{DAY1} -->\nhalf",
                            user="rltracker[bot]", user_type="Bot")
    await crashed_report_claim(ctx)
    assert (await run_report(ctx, DAY1))["posted"] in ("posted", "edited")
    [comment] = fake_github.comments_of("tracker-org/tracker", 1)
    assert "Proposal status" in comment["body"]
    async with ctx.sessionmaker() as session:
        [action] = list(await session.scalars(select(Action).where(Action.kind == "report")))
    assert action.status == "posted" and action.comment_id == comment["id"]


async def test_a_lost_post_is_adopted_after_the_app_was_renamed(app_ctx: Any, fake_github: Any) -> None:
    """The app's login was read once per process (GET /app). Renamed on GitHub (a new slug:
    its bot account and every comment it wrote show the new login), the night's comment whose
    answer was lost carries the new login: the report looked for the old one and posted a
    second comment. As for the failure comment (review40's `own_login`), a marker comment by
    a bot login the app does not know makes it read GET /app again and adopt its comment."""
    from bot.speaking.posting import app_login

    ctx = app_ctx
    await report_issue_with_night_one(ctx, fake_github)
    assert await app_login(ctx) == "rltracker[bot]"  # the running process knows its login
    fake_github.app_slug = "rltracker-ci"  # renamed on GitHub
    fake_github.add_comment("tracker-org/tracker", 1, f"<!-- rltracker:report:{DAY1} -->\nhalf",
                            user="rltracker-ci[bot]", user_type="Bot")
    await crashed_report_claim(ctx)
    assert (await run_report(ctx, DAY1))["posted"] in ("posted", "edited")
    [comment] = fake_github.comments_of("tracker-org/tracker", 1)
    assert "Proposal status" in comment["body"]


async def test_a_post_github_refuses_is_recorded_as_failed_and_posted_by_the_next_run(
        app_ctx: Any, fake_github: Any) -> None:
    """The app is not installed where RLTRACKER_REPORT_ISSUE points (GitHub answers 401):
    the night's action said "pending" (in progress) for good. Now it says failed, with the
    reason, and a run after the installation posts that night's comment."""
    fake_github.add_issue("tracker-org/tracker", 1, title="Nightly reports")
    ctx = app_ctx
    ctx.settings = dataclasses.replace(ctx.settings, report_issue="tracker-org/tracker#1")
    await night_one(ctx)
    assert (await run_report(ctx, DAY1))["posted"] == "failed"
    async with ctx.sessionmaker() as session:
        [action] = list(await session.scalars(select(Action).where(Action.kind == "report")))
    assert action.status == "failed" and action.reason.startswith(
        "NotInstalled: the app is not installed on tracker-org/tracker")  # (no request made)
    assert action.body and "Proposal status" in action.body
    fake_github.add_installation(77, "tracker-org", repos=["tracker-org/tracker"])
    assert (await run_report(ctx, DAY1))["posted"] == "posted"
    [comment] = fake_github.comments_of("tracker-org/tracker", 1)
    async with ctx.sessionmaker() as session:
        [action] = list(await session.scalars(select(Action).where(Action.kind == "report")))
    assert action.status == "posted" and action.comment_id == comment["id"]


async def test_dry_run_records_without_posting(ctx: Any, fake_github: Any) -> None:
    ctx.settings = dataclasses.replace(ctx.settings, report_issue="tracker-org/tracker#1")
    await night_one(ctx)
    assert (await run_report(ctx, DAY1))["posted"] == "dry_run"
    data = await build_report(ctx, DAY1)
    assert render_markdown(data).startswith("<!-- rltracker:report:")
    assert not fake_github.requests("POST")


async def _report_cli(db_url: str, *args: str) -> tuple[int, str, str]:
    """`rltracker report ARGS` in a subprocess on `db_url`, with no GitHub credentials and no
    report issue set (exit status, stdout, stderr)."""
    env = {**os.environ, "DATABASE_URL": db_url}
    for key in ("GITHUB_APP_ID", "GITHUB_TOKEN", "RLTRACKER_REPORT_ISSUE"):
        env.pop(key, None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "report", *args,
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    return proc.returncode or 0, out.decode(), err.decode()


async def test_report_command_writes_markdown_and_html(db_url: str, ctx: Any, tmp_path: Any) -> None:
    await night_one(ctx)
    today = datetime.now(UTC).date()
    code, out, err = await _report_cli(db_url, "--out", str(tmp_path))
    assert code == 0, err[-2000:]
    assert json.loads(out)["date"] == today.isoformat()
    assert (tmp_path / f"report-{today}.md").read_text().startswith("<!-- rltracker:report:")
    assert "<svg" in (tmp_path / f"report-{today}.html").read_text()


async def test_a_past_date_writes_and_posts_that_nights_report_not_todays(
        db_url: str, ctx: Any, tmp_path: Any) -> None:
    """`rltracker report --date` of an earlier night (to post again a report GitHub refused)
    rebuilt it from today's state under that night's date, over what was stored that night,
    and would have edited that night's comment with it. It writes and posts the stored one;
    a night with no report, or a day after today, cannot be built and says so."""
    await night_one(ctx)
    await run_report(ctx, DAY1)
    async with ctx.sessionmaker() as session:
        that_night = await session.scalar(select(Report).where(Report.date == DAY1.isoformat()))
    await night_two(ctx)  # the state changed since
    code, out, err = await _report_cli(db_url, "--date", DAY1.isoformat(), "--out", str(tmp_path))
    assert code == 0, err[-2000:]
    assert json.loads(out)["date"] == DAY1.isoformat()
    assert (tmp_path / f"report-{DAY1}.md").read_text() == that_night.markdown
    async with ctx.sessionmaker() as session:
        now_stored = await session.scalar(select(Report).where(Report.date == DAY1.isoformat()))
    assert (now_stored.markdown, now_stored.data) == (that_night.markdown, that_night.data)
    assert f"{T}#13" not in json.dumps(now_stored.data)  # opened on night two

    code, _, err = await _report_cli(db_url, "--date", DAY2.isoformat())
    assert code == 2 and err.startswith(f"rltracker report: --date {DAY2}: no report was built")
    tomorrow = datetime.now(UTC).date() + timedelta(days=1)
    code, _, err = await _report_cli(db_url, "--date", tomorrow.isoformat())
    assert code == 2 and "cannot be built" in err and len(err.splitlines()) == 1
    async with ctx.sessionmaker() as session:
        assert [r.date for r in await session.scalars(select(Report))] == [DAY1.isoformat()]


async def test_the_nightly_report_counts_the_failures_opened_since_the_night_before(ctx: Any) -> None:
    """The nightly job builds the report dated today at 03:00 UTC (RLTRACKER_NIGHTLY_CRON's
    default), and "failure reports of the day" were those opened on that calendar day: the
    three hours since midnight. One opened later in the day was in no report (the next
    night's counts its own day). Today's report counts the 24 hours up to it; a report of
    a day that has ended counts that day (above: #20 and #21; #22, opened the day before,
    because that day's report was built before it was stored)."""
    from bot.store.types import utcnow

    now = utcnow()
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    # opened yesterday, less than a day before the report: halfway between now - 24 h and midnight
    yesterday = midnight - (timedelta(days=1) - (now - midnight)) / 2
    await seed(ctx, V, 40, created=yesterday, proposal=False, failure="kl_growth")
    await seed(ctx, V, 41, created=now - timedelta(days=2), proposal=False, failure="kl_growth")
    report = await build_report(ctx, now.date())
    assert report["frameworks"]["verl"]["failures_today"] == {"kl_growth": [f"{V}#40"]}


async def test_a_failure_report_is_counted_by_one_night_when_the_night_before_ran_late(
        ctx: Any) -> None:
    """Yesterday's report built this morning (its run went past midnight, or the catch-up run
    at the next start) counted the failure reports of yesterday, to midnight; today's counted
    the 24 hours up to now again: one opened yesterday was in both reports. Today's counts
    from where yesterday's stopped."""
    from bot.store.types import format_datetime, utcnow

    now = utcnow()
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    yesterday = midnight - (timedelta(days=1) - (now - midnight)) / 2  # after now - 24 h
    await seed(ctx, V, 43, created=yesterday, proposal=False, failure="kl_growth")
    await seed(ctx, V, 44, created=midnight + (now - midnight) / 2, proposal=False,
               failure="entropy_collapse")
    await run_report(ctx, midnight.date() - timedelta(days=1))
    await run_report(ctx, now.date())
    async with ctx.sessionmaker() as session:
        reports = list(await session.scalars(select(Report).order_by(Report.date)))
    assert [r.data["frameworks"]["verl"]["failures_today"] for r in reports] == [
        {"kl_growth": [f"{V}#43"]}, {"entropy_collapse": [f"{V}#44"]}]
    assert reports[1].data["failures_window"] == {
        "from": format_datetime(midnight), "to": reports[1].data["generated_at"]}
    assert f"Opened from {format_datetime(midnight)[:19].replace('T', ' ')} to " in render_html(
        reports[1].data)


async def test_a_failure_report_opened_after_the_last_report_is_in_the_next_one(
        ctx: Any) -> None:
    """The night before, the report was built six hours later in the night than tonight's
    (a long sync): tonight's counted the 24 hours up to now, and a failure report opened in
    the six hours after the previous report was built was in neither. Tonight's counts from
    where the previous report's count stopped (the time it was built, as a report stored
    before this rule says)."""
    from bot.store.types import format_datetime, utcnow

    now = utcnow()
    built = now - timedelta(hours=30)
    async with ctx.sessionmaker() as session:
        session.add(Report(date=built.date().isoformat(), markdown="",
                           data={"generated_at": format_datetime(built), "snapshot": {}},
                           created_at=built))
        await session.commit()
    await seed(ctx, V, 45, created=built - timedelta(hours=1), proposal=False, failure="kl_growth")
    await seed(ctx, V, 46, created=now - timedelta(hours=27), proposal=False, failure="kl_growth")
    report = await build_report(ctx, now.date())
    assert report["frameworks"]["verl"]["failures_today"] == {"kl_growth": [f"{V}#46"]}


async def test_todays_report_says_how_long_a_proposal_has_waited_until_now(ctx: Any) -> None:
    """'Waiting for any reply' counted the days until the end of the report's day, so the
    report the nightly job builds at 03:00 UTC added 21 hours to every wait: a proposal opened
    an hour before read 0.9 d. Today's report counts until it is built (as the failures of
    the day do); a report of a day that has ended still counts to its end (16.5 d above)."""
    from bot.store.types import utcnow

    now = utcnow()
    await seed(ctx, V, 42, created=now - timedelta(hours=12))
    report = await build_report(ctx, now.date())
    [waiting] = report["frameworks"]["verl"]["waiting"]
    assert waiting["key"] == f"{V}#42" and waiting["days"] == 0.5


async def test_a_busy_night_is_cut_to_fit_one_github_comment_and_says_what_was_cut(
        app_ctx: Any, fake_github: Any) -> None:
    """A night with a thousand new proposals (a repository synced after the baseline, an
    analyzer upgrade) made a comment of about 150 KB: GitHub refuses a body over 65,536
    characters (422), and the post failed on every retry. The posted comment keeps the first
    of each list and says how many more there are, with a link to the whole report on the
    tracker; the stored report (and its page) keeps every change."""
    fake_github.add_installation(77, "tracker-org", repos=["tracker-org/tracker"])
    fake_github.add_issue("tracker-org/tracker", 1, title="Nightly reports")
    ctx = app_ctx
    ctx.settings = dataclasses.replace(ctx.settings, report_issue="tracker-org/tracker#1")
    await night_one(ctx)
    assert (await run_report(ctx, DAY1))["posted"] == "posted"
    async with ctx.sessionmaker() as session:
        for n in range(1000, 2000):
            thread = Thread(repo=V, number=n, kind="issue", title="t", author="proposer",
                            created_at=at(DAY2, 1), url=f"https://github.com/{V}/issues/{n}")
            session.add(thread)
            await session.flush()
            session.add(Analysis(
                thread_id=thread.id, analyzer_version="test", is_proposal=True,
                is_failure_report=False, review_state="open_no_reply",
                arxiv_ids=["2503.14476"], methods=["clip-higher"],
                result={"review": {"state": "open_no_reply", "concerns": []}}))
        await session.commit()
    summary = await run_report(ctx, DAY2)
    assert summary["posted"] == "posted", summary
    assert summary["totals"]["new_proposals"] == 1000
    [_, comment] = fake_github.comments_of("tracker-org/tracker", 1)
    body = comment["body"]
    assert len(body) <= 65536 and body.startswith(f"<!-- rltracker:report:{DAY2} -->")
    full = f"{ctx.settings.public_url}/reports/{DAY2}"
    tokens = MarkdownIt().parse(body)
    links = [t.attrGet("href") for tok in tokens if tok.children for t in tok.children if t.type == "link_open"]
    assert full in links
    shown = [n for n in range(1000, 2000) if f"{V}/{n})" in body]
    assert shown and shown == list(range(1000, 1000 + len(shown)))  # the first ones, in order
    assert f"and {1000 - len(shown)} more" in body
    async with ctx.sessionmaker() as session:
        row = await session.scalar(select(Report).where(Report.date == DAY2.isoformat()))
        [action] = list(await session.scalars(select(Action).where(
            Action.dedupe_key == f"report:{DAY2}")))
    assert all(f"{V}/{n})" in row.markdown for n in range(1000, 2000))  # the page keeps all
    assert action.status == "posted" and action.body == body


async def test_each_kind_of_change_is_its_own_list_item(ctx: Any) -> None:
    """The template's lines of changes ended in a block tag, which ate their newline: verl's
    first replies, concerns, declines and its proposal count ran into one bullet on GitHub
    ("- **First replies**: …- **Concerns raised**: …- Proposals: 4")."""
    await night_one(ctx)
    await run_report(ctx, DAY1)
    await night_two(ctx)
    await run_report(ctx, DAY2)
    async with ctx.sessionmaker() as session:
        row = await session.scalar(select(Report).where(Report.date == DAY2.isoformat()))
    tokens = MarkdownIt().parse(row.markdown)
    items = []
    for i, tok in enumerate(tokens):
        if tok.type == "list_item_open":
            items.append(tokens[i + 2].content)  # list_item_open, paragraph_open, inline
    verl = [text.split(":")[0] for text in items[:5]]
    assert verl == ["**First replies**", "**Concerns raised**", "**Declined or redirected**",
                    "Proposals", "Failure reports of the day"], items[:6]
    assert any(text.startswith("**Merged**") for text in items)
    assert any(text.startswith("**New proposals**") for text in items)


async def test_a_nights_comment_deleted_on_github_is_posted_anew_when_posted_again(
        app_ctx: Any, fake_github: Any) -> None:
    """Someone deleted the night's report comment on GitHub: the next run of that night
    PATCHed the recorded comment id, GitHub answered 404, and the action became `failed`
    with the id kept, so every later run PATCHed it again and failed the same way, for good.
    A comment that is gone is posted anew (the night's run asked for it to be posted)."""
    fake_github.add_installation(77, "tracker-org", repos=["tracker-org/tracker"])
    fake_github.add_issue("tracker-org/tracker", 1, title="Nightly reports")
    ctx = app_ctx
    ctx.settings = dataclasses.replace(ctx.settings, report_issue="tracker-org/tracker#1")
    await night_one(ctx)
    assert (await run_report(ctx, DAY1))["posted"] == "posted"
    [gone] = fake_github.comments_of("tracker-org/tracker", 1)
    del fake_github.comments[gone["id"]]  # deleted on GitHub
    summary = await run_report(ctx, DAY1)
    assert summary["posted"] == "posted", summary
    [comment] = fake_github.comments_of("tracker-org/tracker", 1)
    assert comment["id"] != gone["id"] and DAY1.isoformat() in comment["body"]
    async with ctx.sessionmaker() as session:
        [action] = list(await session.scalars(select(Action).where(Action.kind == "report")))
    assert action.status == "posted" and action.comment_id == comment["id"]
    assert (await run_report(ctx, DAY1))["posted"] == "edited"
    assert len(fake_github.comments_of("tracker-org/tracker", 1)) == 1



async def test_two_runs_of_one_night_at_once_post_one_comment(app_ctx: Any, fake_github: Any) -> None:
    """`rltracker report` run by hand while the nightly job posts the same night: the second
    found the night's action `pending` (the first still posting) and posted as well, since
    only a missing row stopped it; the first's comment not yet there, the night got two
    comments. A run that finds the night being posted leaves it to the one posting."""
    fake_github.add_installation(77, "tracker-org", repos=["tracker-org/tracker"])
    fake_github.add_issue("tracker-org/tracker", 1, title="Nightly reports")
    ctx = app_ctx
    ctx.settings = dataclasses.replace(ctx.settings, report_issue="tracker-org/tracker#1")
    await night_one(ctx)
    reached, release = asyncio.Event(), asyncio.Event()
    held: list[int] = []

    @fake_github.route("POST", r"/repos/tracker-org/tracker/issues/1/comments")
    async def post(fake: Any, request: Any, match: Any, body: Any) -> Any:
        if not held:  # the nightly job's POST: GitHub takes its time
            held.append(1)
            reached.set()
            await release.wait()
        comment = fake.add_comment("tracker-org/tracker", 1, body["body"], "rltracker[bot]", "Bot")
        return 201, {k: v for k, v in comment.items() if not k.startswith("_")}

    nightly = asyncio.create_task(run_report(ctx, DAY1))
    await reached.wait()
    by_hand = await run_report(ctx, DAY1)
    release.set()
    assert (await nightly)["posted"] == "posted"
    assert by_hand is not None and by_hand["posted"] == "owned"
    assert len(fake_github.comments_of("tracker-org/tracker", 1)) == 1
    async with ctx.sessionmaker() as session:
        [action] = list(await session.scalars(select(Action).where(Action.kind == "report")))
    [comment] = fake_github.comments_of("tracker-org/tracker", 1)
    assert action.status == "posted" and action.comment_id == comment["id"]


async def test_a_slow_run_whose_night_was_taken_over_does_not_post_it_again(
        app_ctx: Any, fake_github: Any) -> None:
    """A pending night older than ten minutes is taken over as a crashed run's. The run was
    alive but slow: GitHub had read it the issue's comments (none) and answered late. The run
    that took the night over posted; the slow one then posted with what it had read: two
    comments. It now checks, right before posting, that the night is still its own. Time is
    the claim's: its updated_at is moved back past STALE_PENDING while the slow run waits."""
    fake_github.add_installation(77, "tracker-org", repos=["tracker-org/tracker"])
    fake_github.add_issue("tracker-org/tracker", 1, title="Nightly reports")
    ctx = app_ctx
    ctx.settings = dataclasses.replace(ctx.settings, report_issue="tracker-org/tracker#1")
    await night_one(ctx)
    reached, release = asyncio.Event(), asyncio.Event()
    waited: list[int] = []

    @fake_github.route("GET", r"/repos/tracker-org/tracker/issues/1/comments")
    async def comments(fake: Any, request: Any, match: Any, body: Any) -> Any:
        read = [{k: v for k, v in c.items() if not k.startswith("_")}
                for c in fake.comments_of("tracker-org/tracker", 1)]
        if not waited:
            waited.append(1)
            reached.set()
            await release.wait()
        return read

    slow = asyncio.create_task(run_report(ctx, DAY1))
    await reached.wait()
    async with ctx.sessionmaker() as session:  # ten minutes pass for the night's claim
        [action] = list(await session.scalars(select(Action).where(Action.kind == "report")))
        assert action.status == "pending"
        action.updated_at = action.updated_at - timedelta(minutes=11)
        await session.commit()
    assert (await run_report(ctx, DAY1))["posted"] == "posted"
    release.set()
    assert (await slow)["posted"] == "owned"
    [comment] = fake_github.comments_of("tracker-org/tracker", 1)
    async with ctx.sessionmaker() as session:
        [action] = list(await session.scalars(select(Action).where(Action.kind == "report")))
    assert action.status == "posted" and action.comment_id == comment["id"]


async def test_the_report_says_which_repositories_were_resumed_that_night(ctx: Any) -> None:
    """Beside the paused repositories, the night's report lists those whose pause was lifted
    since the previous report (Repository.resumed_at / resumed_by, migration 0010): by whom
    on the page (escaped as all GitHub text) and in the stored data, on which day, and
    whether paused again since. The Markdown post names no login ("@login" would notify
    them): a maintainer, or the operator. A resume before the previous report is not that
    night's."""
    from bot.store.types import utcnow

    await night_one(ctx)
    await run_report(ctx, DAY1)
    async with ctx.sessionmaker() as session:
        session.add_all([
            Repository(full_name="THUDM/slime", comments_paused=False, resumed_by="@<b>maya</b>",
                       resumed_at=utcnow()),
            Repository(full_name="OpenRLHF/OpenRLHF", comments_paused=True, resumed_by="operator",
                       resumed_at=utcnow(), paused_reason="2 of the app's last 2 comments were hidden"),
            Repository(full_name="huggingface/trl", resumed_by="@old", resumed_at=utcnow() - timedelta(days=3)),
        ])
        await session.commit()
    await run_report(ctx, DAY2)
    async with ctx.sessionmaker() as session:
        row = await session.scalar(select(Report).where(Report.date == DAY2.isoformat()))
    resumed = row.data["resumed"]
    assert [(r["repo"], r["by"], r["paused_again"]) for r in resumed] == [
        ("OpenRLHF/OpenRLHF", "operator", True), ("THUDM/slime", "@<b>maya</b>", False)]
    today = utcnow().date().isoformat()
    assert all(r["at"][:10] == today for r in resumed)

    markdown = row.markdown
    assert "### Resumed repositories" in markdown
    assert (f"- `THUDM/slime`: the app's comments were resumed by a maintainer on {today}.\n"
            in markdown)
    assert (f"- `OpenRLHF/OpenRLHF`: the app's comments were resumed by the operator on {today}, "
            "and are paused again.\n" in markdown)
    assert "maya" not in markdown and "@old" not in markdown and "huggingface/trl`: the app" not in markdown

    html = render_html(row.data)
    assert 'id="resumed"' in html
    assert "resumed by <code>@&lt;b&gt;maya&lt;/b&gt;</code> on " + today in html
    assert "<b>maya" not in html and "@old" not in html
    assert "resumed by the operator on " + today + ", and paused again since" in html

    # A report stored before the list existed still renders.
    old = {k: v for k, v in row.data.items() if k != "resumed"}
    assert 'id="resumed"' not in render_html(old) and "Resumed" not in render_markdown(old)


async def test_the_list_of_reports_reads_no_nights_snapshot(ctx: Any) -> None:
    """GET /reports/ loaded every stored report whole (`reports.data`: the snapshot of every
    tracked thread with its title, a night's report of a few thousand threads is a megabyte
    or more) to show each night's date and totals: a year of nights was read and parsed on
    every visit, the page slower each night. It reads the date, baseline and totals only."""
    from aiohttp.test_utils import TestClient, TestServer
    from sqlalchemy import event

    from bot.app import create_app

    async with ctx.sessionmaker() as session:
        big = {f"o/r#{n}": {"state": "open_no_reply", "title": "x" * 200} for n in range(300)}
        session.add(Report(date="2026-11-30", markdown="", data={
            "baseline": True, "totals": {}, "snapshot": big}))
        session.add(Report(date="2026-12-01", markdown="", data={
            "baseline": False, "totals": {"new_proposals": 2, "merged": 1, "lapsed": 0},
            "snapshot": big}))
        session.add(Report(date="2026-12-02", markdown="", data={}))  # no keys: still listed
        await session.commit()
    columns: list[str] = []

    def seen(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        columns.extend(d[0] for d in cursor.description or ())

    event.listen(ctx.engine.sync_engine, "after_cursor_execute", seen)
    try:
        async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
            resp = await client.get("/reports/")
            html = await resp.text()
    finally:
        event.remove(ctx.engine.sync_engine, "after_cursor_execute", seen)
    assert resp.status == 200
    rows = re.findall(r'<tr><td><a href="/reports/([\d-]+)"[^>]*>[\d-]+</a></td><td>(.*?)</td></tr>', html)
    assert rows == [("2026-12-02", "none"), ("2026-12-01", "new proposals 2, merged 1"),
                    ("2026-11-30", "baseline")]
    assert "data" not in columns and "snapshot" not in columns, columns


async def test_the_list_of_reports_counts_a_nights_new_landings(ctx: Any) -> None:
    """A night whose only news was a new landing (a merged method pull request the study
    detected, listed under 'New landings' in the report) read 'none' on /reports/: the list
    summed the six kinds of change and left the landings out."""
    from aiohttp.test_utils import TestClient, TestServer

    from bot.app import create_app

    zero = dict.fromkeys(["new_proposals", "first_replies", "concerns_raised",
                          "declined_or_redirected", "lapsed", "merged"], 0)
    async with ctx.sessionmaker() as session:
        session.add(Report(date="2026-12-01", markdown="", data={
            "baseline": False, "totals": zero, "new_landings": 2}))
        session.add(Report(date="2026-12-02", markdown="", data={
            "baseline": False, "totals": {**zero, "merged": 1}, "new_landings": 0}))
        await session.commit()
    async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
        html = await (await client.get("/reports/")).text()
    rows = re.findall(r'<tr><td><a href="/reports/([\d-]+)"[^>]*>[\d-]+</a></td><td>(.*?)</td></tr>', html)
    assert rows == [("2026-12-02", "merged 1"), ("2026-12-01", "new landings 2")]


async def test_a_landing_merged_before_the_paper_says_so(ctx: Any) -> None:
    """A detected landing merged before the method's first public version (negative days:
    the study page marks it 'code before the paper') read '-12 d after the method's first
    public version' in the posted report and on its page. It says '12 d before' now."""
    from bot.store.models import JobRun
    from bot.store.types import utcnow

    now = utcnow()
    landing = {"method": "gspo", "framework": "trl", "detected": True, "date": "2025-07-12",
               "days": -12, "before_paper": True, "pull_request": f"{T}#900",
               "pull_requests": [f"{T}#900"], "detected_at": now.strftime("%Y-%m-%dT%H:%M:%SZ")}
    after = dict(landing, method="cispo", days=3, pull_request=f"{T}#901",
                 pull_requests=[f"{T}#901"])
    async with ctx.sessionmaker() as session:
        session.add(JobRun(name="study", outcome="ok", started_at=now, finished_at=now,
                           counts={"landings": [landing, after]}))
        await session.commit()
    data = await build_report(ctx, now.date())
    markdown = render_markdown(data, "https://tracker.example")
    html = render_html(data)
    for text in (markdown, html):
        assert "-12 d" not in text
        assert "12 d before the method's first public version" in text
        assert "3 d after the method's first public version" in text


async def test_a_renamed_repository_brings_no_new_proposals(ctx: Any) -> None:
    """Each night's snapshot is keyed by owner/repo#N. When a framework's repository is
    renamed (volcengine/verl became verl-project/verl; its rows follow the new name), the next
    report listed every proposal of it as a new proposal, and a concern or a decline of one
    of them that night was not seen as a change. A thread is the same under its former name."""
    from bot.store.repositories import follow_rename

    old = "volcengine/verl"
    await seed(ctx, old, 1, created=at(DAY1) - timedelta(days=3))
    await seed(ctx, old, 2, created=at(DAY1) - timedelta(days=3))
    await run_report(ctx, DAY1)
    async with ctx.sessionmaker() as session:
        await follow_rename(session, old, V)
        await session.commit()
    await seed(ctx, V, 2, created=at(DAY1) - timedelta(days=3), state="declined", replied=True,
               concerns=["demand"])
    report = await build_report(ctx, DAY2)
    assert keys(report, "verl", "new_proposals") == []
    assert keys(report, "verl", "declined_or_redirected") == [f"{V}#2"]
    assert keys(report, "verl", "concerns_raised") == [f"{V}#2"]


async def test_the_report_is_posted_after_the_app_is_installed_again(app_ctx: Any, fake_github: Any) -> None:
    """The report repository's app uninstalled and installed again (GitHub gives the new
    installation a new id and revokes the old one's tokens) while the process runs: the
    repository -> installation mapping the client read on the first night is stale. It is
    dropped on GitHub's refusal and read again, instead of every night failing until a restart.
    (The report repository is not tracked here: no stored row says where the app is.)"""
    fake_github.add_installation(77, "tracker-org", repos=["tracker-org/tracker"])
    fake_github.add_issue("tracker-org/tracker", 1, title="Nightly reports")
    ctx = app_ctx
    ctx.settings = dataclasses.replace(ctx.settings, report_issue="tracker-org/tracker#1")
    await night_one(ctx)
    assert (await run_report(ctx, DAY1))["posted"] == "posted"
    fake_github.remove_installation(77)
    fake_github.add_installation(78, "tracker-org", repos=["tracker-org/tracker"])
    assert (await run_report(ctx, DAY2))["posted"] == "posted"
    assert (await run_report(ctx, DAY1))["posted"] == "edited"  # the first night's comment too
    comments = fake_github.comments_of("tracker-org/tracker", 1)
    assert len(comments) == 2
    writes = [c for c in fake_github.calls if c.method in ("POST", "PATCH") and "/comments" in c.path]
    assert [(c.method, c.installation_id) for c in writes if c.status < 300] == [
        ("POST", 77), ("POST", 78), ("PATCH", 78)]


async def test_the_report_goes_through_the_installation_the_stored_repository_names(
        app_ctx: Any, fake_github: Any) -> None:
    """A tracked report repository: its row (kept by the installation events, shared by every
    process) names the installation, so after a reinstall the night posts through the new
    one at once, without a refused request first."""
    from bot.store.models import Installation
    from tests.fakegithub import install_app

    ctx = app_ctx
    await install_app(ctx, fake_github, 77, "tracker-org", ["tracker-org/tracker"])
    fake_github.add_issue("tracker-org/tracker", 1, title="Nightly reports")
    ctx.settings = dataclasses.replace(ctx.settings, report_issue="tracker-org/tracker#1")
    await night_one(ctx)
    assert (await run_report(ctx, DAY1))["posted"] == "posted"
    # Uninstalled and installed again, as the `deleted` and `created` events leave the rows.
    fake_github.remove_installation(77)
    fake_github.add_installation(78, "tracker-org", repos=["tracker-org/tracker"])
    async with ctx.sessionmaker() as session:
        (await session.get(Installation, 77)).deleted = True
        session.add(Installation(id=78, account="tracker-org"))
        await session.flush()
        row = await session.scalar(select(Repository).where(Repository.full_name == "tracker-org/tracker"))
        row.installation_id = 78
        await session.commit()
    before = len(fake_github.calls)
    assert (await run_report(ctx, DAY2))["posted"] == "posted"
    night = fake_github.calls[before:]
    assert [c.status for c in night if c.status in (401, 404)] == []
    assert [c.installation_id for c in night if c.auth == "installation"] == [78, 78]


async def test_the_report_is_not_posted_under_github_token_where_the_app_is_not_installed(
        app_ctx: Any, fake_github: Any) -> None:
    """The report is posted as the app. With GITHUB_TOKEN set as well (for the sync) and the
    app not installed on the report repository, the client's fallback posted it under the
    token's person instead: their name on the nightly comment, and a lost answer's comment
    not found as the app's own (`{slug}[bot]`), so posted again. It fails, saying why."""
    fake_github.add_issue("tracker-org/tracker", 1, title="Nightly reports")
    ctx = app_ctx
    ctx.settings = dataclasses.replace(ctx.settings, report_issue="tracker-org/tracker#1",
                                       token=fake_github.user_token)
    from bot.github.client import GitHubClient
    from tests.fakegithub import no_sleep

    app_client, ctx.github = ctx.github, GitHubClient(ctx.settings, sleep=no_sleep)
    try:
        await night_one(ctx)
        summary = await run_report(ctx, DAY1)
    finally:
        await ctx.github.close()
        ctx.github = app_client
    assert summary["posted"] == "failed" and "not installed" in summary["error"]
    assert fake_github.comments_of("tracker-org/tracker", 1) == []


async def test_a_comment_github_hid_as_spam_is_no_first_reply(ctx: Any) -> None:
    """The report's first reply reads hidden comments as the analyzers and the quiet rules do:
    spam, abuse and off-topic are no part of the discussion; outdated ones were a reply."""
    created = at(DAY1) - timedelta(days=3)
    await seed(ctx, V, 30, created=created)
    await seed(ctx, V, 31, created=created)
    async with ctx.sessionmaker() as session:
        threads = {t.number: t for t in await session.scalars(
            select(Thread).where(Thread.repo == V, Thread.number.in_([30, 31])))}
        session.add(Comment(thread_id=threads[30].id, kind="comment", github_id=9301, author="spammer",
                            body="…", created_at=at(DAY1, 9), minimized_reason="spam"))
        session.add(Comment(thread_id=threads[31].id, kind="comment", github_id=9311, author="maintainer",
                            body="…", created_at=at(DAY1, 9), minimized_reason="outdated"))
        await session.commit()
    data = await build_report(ctx, DAY1)
    waiting = [w["key"] for w in data["frameworks"]["verl"]["waiting"]]
    assert f"{V}#30" in waiting and f"{V}#31" not in waiting


async def test_a_paper_pools_method_label_is_not_posted_as_markdown(ctx: Any) -> None:
    """A paper pool (`rltracker papers import`, third-party metadata) may name a paper's
    method with any text up to 64 characters; a proposal citing that paper carried the label
    into its analysis' methods, and the posted report wrote it between backticks: a label
    with a backtick closed the code span and its `@login` notified that person. The report
    names catalog methods only (the pool's label has no page on the tracker either); the
    arXiv id stays."""
    from analyzers.analyze import analyze_thread
    from analyzers.papers import PaperIndex

    label = "x` @someone `y"
    pool = PaperIndex.build([{"arxiv_id": "2601.00001", "title": "A New Policy Optimisation",
                              "aliases": [], "method": label, "first_public": "2026-01-01"}])
    record = {"id": f"{T}#70", "repo": T, "number": 70, "kind": "issue", "state": "open",
              "title": "Add the policy optimisation of arXiv:2601.00001 with clip-higher",
              "body": "We propose adding the method from https://arxiv.org/abs/2601.00001 as a new "
                      "trainer option, on top of DAPO's clip-higher (arXiv:2503.14476).",
              "author": "proposer", "created_at": "2026-11-30T10:00:00Z", "comments": [],
              "labels": []}
    analysis = analyze_thread(record, pool)
    methods = sorted({p["method"] for p in analysis["papers"] if p.get("method")})
    assert label in methods and analysis["proposal"]["is_proposal"]
    await night_one(ctx)
    await run_report(ctx, DAY1)
    await seed(ctx, T, 70, created=at(DAY2, 1), methods=methods,
               arxiv=sorted({p["arxiv_id"] for p in analysis["papers"] if p.get("arxiv_id")}))
    await run_report(ctx, DAY2)
    async with ctx.sessionmaker() as session:
        row = await session.scalar(select(Report).where(Report.date == DAY2.isoformat()))
    [item] = [c for c in row.data["frameworks"]["trl"]["changes"]["new_proposals"]
              if c["key"] == f"{T}#70"]
    assert item["methods"] == ["clip-higher"] and "2601.00001" in item["arxiv_ids"]
    assert "@someone" not in row.markdown and "@someone" not in render_html(row.data)
