"""The nightly report and people's verdicts at their edges (left65): a person changing their
verdict back and forth, a verdict given again after a report, a report built while `forget`
of a repository runs, and a report built at a given time. SQLite and PostgreSQL; the
`privatized` delivery through the webhook routers, as the worker handles it."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from bot.site.report import build_report, render_markdown, store_report
from bot.site.verdicts import verdicts_data
from bot.store.models import Analysis, Report, Thread, Verdict
from bot.store.verdicts import set_verdict
from tests.test_private_repos import _repository_event, dispatch_all
from tests.test_report import V, seed

FW = "OpenRLHF/OpenRLHF"  # a framework repository of the shipped catalog
ELSEWHERE = "someorg/elsewhere"  # no framework's: the report lists none of its threads
T0 = datetime(2026, 11, 20, 12, tzinfo=UTC)


async def analysed(ctx: Any, repo: str, number: int, kind: str | None = "kl_growth") -> None:
    """A thread whose analysis called it a failure report of `kind` (None: not one)."""
    await seed(ctx, repo, number, created=T0 - timedelta(days=2), proposal=False, failure=kind)


async def give(ctx: Any, repo: str, number: int, kind: str | None, at: datetime) -> None:
    """The verdict a `/rltracker kind` (None: `not-a-failure`) written at `at` stores."""
    async with ctx.sessionmaker() as s:
        thread = await s.scalar(select(Thread).where(Thread.repo == repo, Thread.number == number))
        await set_verdict(s, thread, is_failure_report=kind is not None, category=kind,
                          login="ana", role="author", comment_id=int(at.timestamp()), given_at=at)
        await s.commit()


def counted(figures: list[dict[str, Any]]) -> dict[str, int]:
    every = figures[-1]
    assert every["version"] == "all"
    return {k: every[k] for k in ("verdicts", "called", "kind_right", "kind_wrong",
                                  "not_failure_per_person")}


async def test_alternating_verdicts_leave_the_latest_counted_once(ctx: Any) -> None:
    """`kind`, `not-a-failure`, another `kind`, back to `not-a-failure`: one verdict, the
    latest, shown and counted once by /verdicts and the report; a report built between two
    of them and the next one each count it once, as it stood. A retried older command
    handled last does not replace the latest."""
    await analysed(ctx, V, 1)
    await give(ctx, V, 1, "kl_growth", T0)
    await give(ctx, V, 1, None, T0 + timedelta(minutes=1))
    await give(ctx, V, 1, "entropy_collapse", T0 + timedelta(minutes=2))
    night = await build_report(ctx, now=T0 + timedelta(hours=1))
    await store_report(ctx, night, render_markdown(night))
    assert counted(night["agreement"]) == {"verdicts": 1, "called": 1, "kind_right": 0,
                                           "kind_wrong": 1, "not_failure_per_person": 0}
    # given again after the report: back to not-a-failure, then a retry of the first
    await give(ctx, V, 1, None, T0 + timedelta(hours=2))
    await give(ctx, V, 1, "kl_growth", T0)
    async with ctx.sessionmaker() as s:
        assert await s.scalar(select(func.count()).select_from(Verdict)) == 1
        page = await verdicts_data(s)
    assert page["total"] == 1 and len(page["latest"]) == 1
    assert page["latest"][0]["is_failure_report"] is False
    assert counted(page["agreement"])["not_failure_per_person"] == 1
    second = await build_report(ctx, now=T0 + timedelta(days=1))
    assert counted(second["agreement"]) == {"verdicts": 1, "called": 1, "kind_right": 0,
                                            "kind_wrong": 0, "not_failure_per_person": 1}
    assert second["snapshot"].get(f"{V}#1") is None  # no failure report any more
    stored = await store_report(ctx, second, render_markdown(second))
    assert counted(stored.data["agreement"]) == counted(second["agreement"])


async def test_a_report_built_while_a_repository_is_forgotten_counts_none_of_its_verdicts(
        ctx: Any) -> None:
    """The report read the threads and the verdicts, then `privatized` was handled
    (`forget`: the repository's threads and verdicts deleted, its verdicts taken out of the
    reports stored so far), then the report was stored. Its keys were scrubbed as it was
    stored (privacy62), but its agreement figure still counted the forgotten repository's
    verdicts: the framework's, and those of a repository no framework's, which the report
    names nowhere. Stored, it counts only the verdicts still stored, in data and Markdown."""
    for repo in (V, FW, ELSEWHERE):
        await analysed(ctx, repo, 5)
        await give(ctx, repo, 5, "entropy_collapse", T0)
    data = await build_report(ctx, now=T0 + timedelta(hours=1))
    assert counted(data["agreement"])["verdicts"] == 3
    assert f"{FW}#5" in json.dumps(data)
    for rid, repo in ((4242, FW), (4343, ELSEWHERE)):
        await dispatch_all(ctx, "repository", _repository_event("privatized", repo,
                                                                is_private=True, rid=rid))
    row = await store_report(ctx, data, render_markdown(data))
    assert counted(row.data["agreement"]) == {"verdicts": 1, "called": 1, "kind_right": 0,
                                              "kind_wrong": 1, "not_failure_per_person": 0}
    assert "openrlhf/openrlhf#" not in json.dumps(row.data).lower()
    assert "- `test`: 1 verdict;" in row.markdown, row.markdown


async def test_a_report_stored_before_the_forget_has_the_verdicts_taken_out_after(
        ctx: Any) -> None:
    """The other order: stored first, then `forget` takes the verdicts out of it (edges62),
    so either order leaves the stored report counting the remaining verdict alone."""
    for repo in (V, ELSEWHERE):
        await analysed(ctx, repo, 5)
        await give(ctx, repo, 5, "entropy_collapse", T0)
    data = await build_report(ctx, now=T0 + timedelta(hours=1))
    await store_report(ctx, data, render_markdown(data))
    await dispatch_all(ctx, "repository", _repository_event("privatized", ELSEWHERE,
                                                            is_private=True, rid=4343))
    async with ctx.sessionmaker() as s:
        row = await s.scalar(select(Report))
    assert row is not None and counted(row.data["agreement"])["verdicts"] == 1


async def test_a_report_built_at_a_given_time_is_the_same_each_time(ctx: Any) -> None:
    """`build_report(..., now=)`: the report of a day built at a given time; twice on the same
    store it is the same report (before, it read the clock itself: `generated_at`, the waits,
    the failure window moved between two builds, and no test could build one at a time of
    its choosing)."""
    built = T0 + timedelta(hours=15)  # 03:00 the next night, as the nightly job builds it
    await seed(ctx, V, 7, created=T0 - timedelta(days=3))  # a proposal waiting 3.625 days
    await seed(ctx, V, 8, created=T0, proposal=False, failure="kl_growth")  # in the window
    await seed(ctx, V, 9, created=built + timedelta(hours=1), proposal=False,
               failure="kl_growth")  # opened after the report was built
    first = await build_report(ctx, T0.date(), now=built)
    again = await build_report(ctx, T0.date(), now=built.astimezone(UTC).replace(tzinfo=None))
    assert first == again
    assert first["generated_at"] == "2026-11-21T03:00:00Z"
    # the report of a day that had ended by then counts to that day's end
    assert first["failures_window"] == {"from": "2026-11-20T00:00:00Z", "to": "2026-11-21T00:00:00Z"}
    assert first["frameworks"]["verl"]["failures_today"] == {"kl_growth": [f"{V}#8"]}
    assert first["frameworks"]["verl"]["waiting"] == [{"key": f"{V}#7", "days": 3.5}]
    today = await build_report(ctx, now=built)
    assert today["date"] == "2026-11-21"
    assert today["failures_window"]["to"] == "2026-11-21T03:00:00Z"


async def test_a_verdicts_thread_without_analysis_is_counted_as_not_analysed(ctx: Any) -> None:
    """(The figure the store recounts keeps the rows the build counted: a verdict on a thread
    with no analysis then, and one given at the very second the report was built.)"""
    async with ctx.sessionmaker() as s:
        s.add(Thread(repo=V, number=11, kind="issue", title="x", created_at=T0))
        await s.commit()
    await give(ctx, V, 11, "kl_growth", T0)
    await analysed(ctx, V, 12)
    built = T0 + timedelta(hours=1)
    await give(ctx, V, 12, None, built + timedelta(microseconds=500_000))
    data = await build_report(ctx, now=built)
    row = await store_report(ctx, data, render_markdown(data))
    assert row.data["agreement"] == data["agreement"]
    assert counted(row.data["agreement"])["verdicts"] == 2
    async with ctx.sessionmaker() as s:
        assert await s.scalar(select(func.count()).select_from(Analysis)) == 1


async def test_a_report_stored_while_forget_is_in_progress_waits_for_it(ctx: Any) -> None:
    """PostgreSQL, two real connections: `forget` of a repository no framework's has deleted
    its verdicts and taken them out of the reports stored so far (none yet), uncommitted; the
    report, built before, is stored meanwhile. It waits for the forget (the verdicts'
    repositories' rows FOR SHARE: the row forget marked first), then counts without them.
    On main it did not wait, counted the verdict still visible, and forget had already passed
    over the reports: the stored report kept it."""
    from bot.store.models import Repository
    from bot.store.privacy import forget
    from tests.test_analysis_order import waiters

    if ctx.engine.dialect.name != "postgresql":
        pytest.skip("two transactions at once: PostgreSQL (SQLite has one writer)")
    async with ctx.sessionmaker() as s:
        s.add_all([Repository(full_name=V, github_id=4141),
                   Repository(full_name=ELSEWHERE, github_id=4343)])
        await s.commit()
    for repo in (V, ELSEWHERE):
        await analysed(ctx, repo, 5)
        await give(ctx, repo, 5, "entropy_collapse", T0)
    data = await build_report(ctx, now=T0 + timedelta(hours=1))
    assert counted(data["agreement"])["verdicts"] == 2
    async with ctx.engine.connect() as forgetting, ctx.engine.connect() as watcher:
        await forgetting.run_sync(lambda conn: forget(conn, ELSEWHERE, 4343))
        storing = asyncio.create_task(store_report(ctx, data, render_markdown(data)))
        for _ in range(100_000):
            if storing.done() or await waiters(watcher):
                break
            await asyncio.sleep(0)
        await forgetting.commit()
        row = await storing
    assert counted(row.data["agreement"])["verdicts"] == 1
