"""The nightly report's nights (review study66), on SQLite and PostgreSQL: a quiet night, the
first night after install, a proposal whose state changed twice, a framework with no
proposals, a night whose only news is a landing, a report built at a time of its choosing
(`now=`), and the median time to first reply rounded once."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import select

from bot.site.report import build_report, render_html, render_markdown, store_report
from bot.store.models import JobRun, Thread
from bot.store.types import format_datetime, utcnow
from tests.test_report import DAY1, DAY2, OR, T, V, at, reply, seed

LANDING = {"method": "cispo", "framework": "openrlhf", "detected": True, "date": "2026-11-30",
           "days": 532, "before_paper": False, "pull_request": f"{OR}#77",
           "pull_requests": [f"{OR}#77"], "in_study": True}


async def record_study(ctx: Any, at_: datetime, *landings: dict[str, Any]) -> None:
    """A nightly `study` record first seeing `landings` at `at_` (what refresh_study stores)."""
    async with ctx.sessionmaker() as session:
        session.add(JobRun(name="study", outcome="ok", started_at=at_, finished_at=at_,
                           counts={"landings": [dict(x, detected_at=format_datetime(at_))
                                                for x in landings]}))
        await session.commit()


async def night(ctx: Any, day: date, hour: int = 3) -> dict[str, Any]:
    """The night's report built at `hour` that day (as the nightly job at 03:00) and stored."""
    data = await build_report(ctx, day, now=at(day, hour))
    row = await store_report(ctx, data, render_markdown(data))
    return {**row.data, "markdown": row.markdown}


async def pages(ctx: Any, day: str) -> tuple[str, str, str]:
    """The reports list, the reports feed and the night's page, as served."""
    from bot.app import create_app

    async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
        return (await (await client.get("/reports/")).text(),
                await (await client.get("/reports/feed.atom")).text(),
                await (await client.get(f"/reports/{day}")).text())


def listed(html: str, day: str) -> str:
    found = re.search(rf'<a href="/reports/{day}"[^>]*>{day}</a></td><td>(.*?)</td>', html)
    assert found is not None, day
    return found.group(1)


def summary_in_feed(atom: str, day: str) -> str:
    found = re.search(rf"<id>[^<]*/reports/{day}</id>.*?<summary[^>]*>(.*?)</summary>", atom, re.S)
    assert found is not None, day
    return found.group(1)


async def test_a_quiet_night_says_so_everywhere(ctx: Any) -> None:
    """Nothing changed since the night before: the Markdown's summary line counts none of each
    change, every framework says "No changes." (those with no proposals too: "Proposals: 0"),
    the page says it per framework, and the list and the feed say "none"."""
    await seed(ctx, V, 1, created=at(DAY1) - timedelta(days=3))
    await night(ctx, DAY1)
    data = await night(ctx, DAY2)
    markdown = data["markdown"]
    assert ("Changes since 2026-11-30: new proposals 0, first replies 0, concerns raised 0, "
            "declined or redirected 0, lapsed 0, merged 0, new landings 0.") in markdown
    assert markdown.count("- No changes.") == 7
    sections = markdown.split("### ")[1:]
    slime = next(s for s in sections if s.startswith("slime"))
    assert "- Proposals: 0." in slime and "median time to first reply" not in slime
    html = render_html(data)
    assert html.count('<p class="muted">No changes.</p>') == 7
    listing, feed, page = await pages(ctx, DAY2.isoformat())
    assert listed(listing, DAY2.isoformat()) == "none" == summary_in_feed(feed, DAY2.isoformat())
    assert page.count('<p class="muted">No changes.</p>') == 7


async def test_a_night_whose_only_news_is_a_landing_says_so_in_its_summary_line(ctx: Any) -> None:
    """The list of reports and the feed said "new landings 1" of such a night, the report's
    page listed it, but the posted Markdown's summary line counted six kinds of change, each 0:
    it read as a night with nothing new. It counts the landings too."""
    await seed(ctx, V, 1, created=at(DAY1) - timedelta(days=3))
    await night(ctx, DAY1)
    now = utcnow()  # (after the night before was stored, whichever time it was built at)
    await record_study(ctx, now + timedelta(seconds=30), LANDING)
    built = await build_report(ctx, DAY2, now=now + timedelta(minutes=1))
    row = await store_report(ctx, built, render_markdown(built))
    data = {**row.data, "markdown": row.markdown}
    assert data["new_landings"] == 1
    assert "lapsed 0, merged 0, new landings 1." in data["markdown"]
    listing, feed, _ = await pages(ctx, DAY2.isoformat())
    assert listed(listing, DAY2.isoformat()) == "new landings 1" == summary_in_feed(
        feed, DAY2.isoformat())


async def test_a_first_report_says_its_landings_in_the_list_and_the_feed(ctx: Any) -> None:
    """The first night after install: a baseline (no change lists), which lists every landing
    the study recorded so far. The list of reports and the feed said "baseline" alone."""
    await seed(ctx, V, 1, created=at(DAY1) - timedelta(days=3))
    await record_study(ctx, at(DAY1, 2), LANDING)
    first = await night(ctx, DAY1)
    assert first["baseline"] and first["new_landings"] == 1
    assert "First report: a baseline" in first["markdown"] and "CISPO in [`" in first["markdown"]
    listing, feed, page = await pages(ctx, DAY1.isoformat())
    assert 'data-method="cispo"' in page
    assert listed(listing, DAY1.isoformat()) == "baseline, new landings 1" == summary_in_feed(
        feed, DAY1.isoformat())


async def test_a_decline_read_again_as_a_redirect_is_no_new_decline(ctx: Any) -> None:
    """"Declined or redirected" is one change: a proposal declined the night before and read
    as redirected tonight (the nightly re-analysis under a new analyzer version, a closing
    comment edited to point elsewhere) was listed as declined again, and counted in the
    night's total. A redirect of an open proposal is listed (a declined one reopened and
    declined again: `test_a_proposal_closed_again_since_the_previous_report_is_listed_again`)."""
    base = at(DAY1) - timedelta(days=5)
    await seed(ctx, V, 1, created=base, state="declined", replied=True)
    await seed(ctx, V, 2, created=base, state="open_replied", replied=True)
    await seed(ctx, V, 3, created=base, state="redirected", replied=True)
    await night(ctx, DAY1)
    await seed(ctx, V, 1, created=base, state="redirected", replied=True)
    await seed(ctx, V, 2, created=base, state="redirected", replied=True)
    await seed(ctx, V, 3, created=base, state="declined", replied=True)
    data = await build_report(ctx, DAY2, now=at(DAY2, 3))
    assert [c["key"] for c in data["frameworks"]["verl"]["changes"]["declined_or_redirected"]] == [
        f"{V}#2"]
    assert data["totals"]["declined_or_redirected"] == 1


async def test_a_proposal_whose_state_changed_twice_is_listed_by_where_it_ended(ctx: Any) -> None:
    """Declined, then reopened and answered within one night: the report lists what differs
    from the state the previous report stored (a first reply), not each step; merged after
    lapsing: merged."""
    base = at(DAY1) - timedelta(days=5)
    await seed(ctx, T, 1, created=base)
    await seed(ctx, T, 2, created=base, state="lapsed")
    await night(ctx, DAY1)
    await reply(ctx, T, 1, at(DAY2, 1), 7001)
    await seed(ctx, T, 1, created=base, state="open_replied", replied=True)
    await seed(ctx, T, 2, created=base, state="merged", replied=True)
    data = await build_report(ctx, DAY2, now=at(DAY2, 3))
    changes = {k: [c["key"] for c in v] for k, v in data["frameworks"]["trl"]["changes"].items() if v}
    assert changes == {"first_replies": [f"{T}#1", f"{T}#2"], "merged": [f"{T}#2"]}


async def test_a_report_built_at_a_time_lists_the_landings_seen_by_then(ctx: Any) -> None:
    """`build_report(now=)` builds the report as at that time: its failure window, waits and
    resumed repositories end there, and so do its new landings. A landing the nightly study
    step first saw after `now` was listed, so a report built for 03:00 named one found at 05:00;
    and they started where the previous report was stored, not where it read the store, as
    its resumed repositories and failure window do (review dates64)."""
    await seed(ctx, V, 1, created=at(DAY1) - timedelta(days=3))
    await record_study(ctx, at(DAY1, 5), LANDING)
    first = await build_report(ctx, DAY1, now=at(DAY1, 3))  # a first report lists all: by 03:00
    assert first["baseline"] and first["new_landings"] == 0
    await night(ctx, DAY1)
    await record_study(ctx, at(DAY2, 5), LANDING)
    early = await build_report(ctx, DAY2, now=at(DAY2, 3))
    assert early["new_landings"] == 0 and early["frameworks"]["openrlhf"]["new_landings"] == []
    later = await build_report(ctx, DAY2, now=at(DAY2, 6))
    assert [x["method"] for x in later["frameworks"]["openrlhf"]["new_landings"]] == ["cispo"]
    # built twice at one time on one store: the same report
    again = await build_report(ctx, DAY2, now=at(DAY2, 6))
    assert again == later


async def test_the_median_time_to_first_reply_is_rounded_once(ctx: Any) -> None:
    """Each first reply's wait was rounded to a tenth of a day, then the median of those
    rounded again: replies after 1.04 and 1.05 days (median 1.045) read 1.1 d, a tenth of a day
    more than the median. The median is taken of the waits and rounded once; each reply's own
    wait is still shown to a tenth."""
    created = at(DAY1, 0)
    await seed(ctx, V, 1, created=created, state="open_replied", replied=True)
    await seed(ctx, V, 2, created=created, state="open_replied", replied=True)
    await reply(ctx, V, 1, created + timedelta(hours=24.96), 8001)  # 1.04 d
    await reply(ctx, V, 2, created + timedelta(hours=25.2), 8002)   # 1.05 d
    data = await build_report(ctx, DAY2, now=at(DAY2, 3))
    verl = data["frameworks"]["verl"]
    assert sorted(v["first_reply_days"] for v in data["snapshot"].values()
                  if v["framework"] == "verl") == [1.0, 1.1]
    assert verl["median_first_reply_days"] == 1.0


async def closed(ctx: Any, repo: str, number: int, when: datetime) -> None:
    """GitHub's `closed_at` as the store keeps it: the time of the thread's latest close."""
    async with ctx.sessionmaker() as session:
        thread = await session.scalar(select(Thread).where(Thread.repo == repo,
                                                           Thread.number == number))
        thread.closed_at = when
        await session.commit()


async def test_a_proposal_closed_again_since_the_previous_report_is_listed_again(
        ctx: Any) -> None:
    """Declined (or lapsed) at the previous report and again tonight, but closed anew since
    that report read the store (GitHub sets `closed_at` at each close, so it was reopened in
    between): a decline (a lapse) of this night, listed and counted, marked "again". Only the
    two closes are known: the store keeps no history of states (review study71). On main the
    report diffed the two states alone and called it no change. One closed before the
    previous report and read again, or read again as a redirect, is still no change."""
    base = at(DAY1) - timedelta(days=5)
    for number, state in ((1, "declined"), (2, "lapsed"), (3, "declined"), (4, "declined")):
        await seed(ctx, V, number, created=base, state=state, replied=True)
        await closed(ctx, V, number, base + timedelta(days=1))
    await night(ctx, DAY1)
    # reopened and closed again after the report of DAY1 (built at 03:00 DAY1)
    await closed(ctx, V, 1, at(DAY1, 20))
    await closed(ctx, V, 2, at(DAY2, 1))
    await seed(ctx, V, 3, created=base, state="redirected", replied=True)  # only read again
    data = await night(ctx, DAY2)
    verl = data["frameworks"]["verl"]["changes"]
    assert [(c["key"], c.get("again")) for c in verl["declined_or_redirected"]] == [
        (f"{V}#1", True)]
    assert [(c["key"], c.get("again")) for c in verl["lapsed"]] == [(f"{V}#2", True)]
    assert data["totals"]["declined_or_redirected"] == 1 and data["totals"]["lapsed"] == 1
    assert (f"[`{V}#1`](/threads/{V}/1) (again: reopened and closed since the previous "
            "report)") in data["markdown"]
    html = render_html(data)
    assert html.count("again: reopened and closed since the previous report") == 2
    # the night after: the same closes are behind the previous report, no change
    quiet = await night(ctx, DAY2 + timedelta(days=1))
    assert quiet["totals"]["declined_or_redirected"] == 0 == quiet["totals"]["lapsed"]
