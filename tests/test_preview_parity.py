"""The install preview decides as the live path does: the same threads, as they were when
opened, run through `bot.speaking.decide.act` (an `issues.opened` delivery, dry run) and
through `compute_preview`; what each would say, and its text, must be the same. On SQLite and
PostgreSQL (`ctx` behind `db_url`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import select
from sqlalchemy import update as sa_update

from bot.speaking.decide import act
from bot.speaking.preview import compute_preview
from bot.store.models import Action, Analysis, Installation, Repository, Thread, Verdict
from bot.store.threads import upsert_thread
from tests.test_actions_e2e import FAILURE, INST, NOT_FAILURE, PROPOSAL, VERL, iso
from tests.test_preview import _preview_app

LOW = {**FAILURE, "failure": {**FAILURE["failure"], "confidence": 0.3}}
OUTSIDE = "someone/rl-playground"  # installed, not one of the seven frameworks


async def installed(ctx: Any, repo: str = VERL, framework: str | None = "verl",
                    config: dict[str, Any] | None = None) -> None:
    async with ctx.sessionmaker() as s:
        if await s.get(Installation, INST) is None:
            s.add(Installation(id=INST, account=repo.split("/")[0]))
            await s.flush()
        # a budget that does not bind: the preview states it, the live path applies it
        s.add(Repository(full_name=repo, framework=framework, installation_id=INST,
                         config={"daily_budget": 50, **(config or {})},
                         config_fetched_at=datetime.now(UTC)))
        await s.commit()


async def opened(ctx: Any, number: int, analysis: dict[str, Any], *, repo: str = VERL,
                 author: str = "alice", bot: bool = False, association: str = "NONE",
                 title: str = "Entropy collapse in GRPO run") -> None:
    async with ctx.sessionmaker() as s:
        t = await upsert_thread(s, {
            "repo": repo, "number": number, "kind": "issue", "title": title,
            "body": "Entropy drops to 0.01 after 200 steps.", "author": author,
            "author_association": association, "author_is_bot": bot, "state": "open",
            "labels": [], "assignees": [],
            "created_at": iso(datetime.now(UTC) - timedelta(hours=1)),
        })
        s.add(Analysis(thread_id=t.id, analyzer_version="t", result=analysis,
                       is_failure_report=analysis["failure"]["is_failure_report"],
                       is_proposal=analysis["proposal"]["is_proposal"]))
        await s.commit()


async def live_says(ctx: Any, repo: str, numbers: list[int]) -> dict[int, dict[str, str]]:
    """{number: {kind: body}} of what the live path wrote (dry run) for each thread."""
    async with ctx.sessionmaker() as s:
        for n in numbers:
            analysis = await s.scalar(select(Analysis.result).join(
                Thread, Thread.id == Analysis.thread_id).where(Thread.repo == repo, Thread.number == n))
            await act(ctx, repo, n, trigger="issues.opened", analysis=analysis,
                      payload={"installation": {"id": INST}})
        out: dict[int, dict[str, str]] = {n: {} for n in numbers}
        for a in await s.scalars(select(Action).where(Action.status == "dry_run",
                                                      Action.kind != "preview")):
            out[a.number][a.kind] = a.body
    return out


def preview_says(preview: dict[str, Any], numbers: list[int]) -> dict[int, dict[str, str]]:
    out: dict[int, dict[str, str]] = {n: {} for n in numbers}
    for item in preview["comments"]:
        out[item["number"]][item.get("kind", "failure_comment")] = item["body"]
    return out


async def test_preview_and_live_path_say_the_same(ctx: Any) -> None:
    """On main the preview gave a failure comment to an issue opened by `ci-helper[bot]`
    (GitHub's type not recorded: the live path knows a bot by its login too) and said "not a
    training-failure report" (nothing) on a method proposal the live path replies to with
    the rule summary."""
    await installed(ctx)
    cases = {
        1: dict(analysis=FAILURE),
        2: dict(analysis=FAILURE, author="ci-helper[bot]"),
        3: dict(analysis=PROPOSAL, title="Support GSPO"),
        4: dict(analysis=PROPOSAL, title="Support GSPO", association="MEMBER"),
        5: dict(analysis=NOT_FAILURE, title="docs typo"),
        6: dict(analysis=LOW),
        7: dict(analysis=FAILURE, bot=True),
    }
    cases[8] = dict(analysis=FAILURE, title="muted before the worker ran")
    for n, kw in cases.items():
        await opened(ctx, n, **kw)
    async with ctx.sessionmaker() as s:  # /rltracker ignore on #8
        await s.execute(sa_update(Thread).where(Thread.number == 8).values(muted=True))
        await s.commit()
    preview = await compute_preview(ctx, VERL)
    live = await live_says(ctx, VERL, list(cases))
    assert not live[8]
    assert preview_says(preview, list(cases)) == live
    assert set(live[1]) == {"failure_comment"} and set(live[3]) == {"rule_summary"}
    assert not live[2] and not live[4]
    # the page counts what it lists and says which kind of comment each is
    async with TestClient(TestServer(_preview_app(ctx))) as client:
        html = await (await client.get(f"/repos/{VERL}/preview")).text()
    assert "2 comments would have been posted" in html and html.count('class="item"') == 2
    assert html.count('class="skip"') == 6 and "rule-summary reply to a method proposal (gspo)" in html
    assert "Dry run over the 8 issues" in html


async def test_preview_follows_config_and_verdicts_as_live(ctx: Any) -> None:
    """Comments off, rule summaries off, a person's verdict: the same on both paths."""
    await installed(ctx, config={"rule_summaries": False, "min_confidence": 0.95})
    await opened(ctx, 1, FAILURE)  # 0.92 < 0.95
    await opened(ctx, 2, PROPOSAL, title="Support GSPO")
    await opened(ctx, 3, NOT_FAILURE, title="entropy? maybe")
    async with ctx.sessionmaker() as s:
        t3 = await s.scalar(select(Thread.id).where(Thread.number == 3))
        s.add(Verdict(thread_id=t3, is_failure_report=True, category="entropy_collapse",
                      role="author", login="alice", comment_id=1, given_at=datetime.now(UTC)))
        await s.commit()
    preview = await compute_preview(ctx, VERL)
    live = await live_says(ctx, VERL, [1, 2, 3])
    assert preview_says(preview, [1, 2, 3]) == live
    assert set(live[3]) == {"failure_comment"} and not live[1] and not live[2]


async def test_preview_outside_the_seven_frameworks(ctx: Any) -> None:
    """A repository the catalog does not know (an organisation-wide installation): the live
    path says nothing there (unknown_framework), nor does the preview, and its page says why
    and counts what it lists."""
    await installed(ctx, repo=OUTSIDE, framework=None)
    await opened(ctx, 1, FAILURE, repo=OUTSIDE)
    await opened(ctx, 2, PROPOSAL, repo=OUTSIDE, title="Support GSPO")
    preview = await compute_preview(ctx, OUTSIDE)
    live = await live_says(ctx, OUTSIDE, [1, 2])
    assert preview_says(preview, [1, 2]) == live == {1: {}, 2: {}}
    assert {s["reason"] for s in preview["skipped"]} == {
        "the repository is not one of the tracked frameworks"}
    async with TestClient(TestServer(_preview_app(ctx))) as client:
        resp = await client.get(f"/repos/{OUTSIDE}/preview")
        assert resp.status == 200
        html = await resp.text()
    assert "framework not in the catalog" in html
    assert "0 comments would have been posted" in html and html.count('class="skip"') == 2


async def test_a_repeated_preview_is_not_recomputed_until_something_it_reads_changes(ctx: Any) -> None:
    """Every request of the page read every issue's comments one query each and composed
    every comment again (and ran the analyzer on issues without a stored analysis). A repeated
    request now asks a few questions whatever the number of issues, and what changes the
    preview (a verdict, a mute, the config, a new issue) is shown at once. Counted in SQL
    statements, not time."""
    from sqlalchemy import update

    from benchmarks.site_scale import counting

    await installed(ctx)
    for n in range(1, 13):
        await opened(ctx, n, FAILURE if n % 2 else PROPOSAL, title=f"issue {n}")
    with counting(ctx.engine) as computed:
        first = await compute_preview(ctx, VERL)
    with counting(ctx.engine) as statements:
        again = await compute_preview(ctx, VERL)
    assert again["comments"] == first["comments"] and again["skipped"] == first["skipped"]
    assert len(statements) <= 7 < len(computed), (len(statements), len(computed))

    def said(preview: dict[str, Any]) -> set[int]:
        return {c["number"] for c in preview["comments"]}

    assert said(first) == set(range(1, 13))
    async with ctx.sessionmaker() as s:  # /rltracker ignore on #1
        await s.execute(update(Thread).where(Thread.number == 1).values(muted=True))
        await s.commit()
    assert said(await compute_preview(ctx, VERL)) == set(range(2, 13))
    async with ctx.sessionmaker() as s:  # /rltracker not-a-failure on #3
        t3 = await s.scalar(select(Thread.id).where(Thread.number == 3))
        s.add(Verdict(thread_id=t3, is_failure_report=False, category=None, role="maintainer",
                      login="bob", comment_id=2, given_at=datetime.now(UTC)))
        await s.commit()
    assert said(await compute_preview(ctx, VERL)) == set(range(2, 13)) - {3}
    async with ctx.sessionmaker() as s:  # rule summaries turned off in the config
        await s.execute(update(Repository).values(config={"daily_budget": 50, "rule_summaries": False}))
        await s.commit()
    assert said(await compute_preview(ctx, VERL)) == {5, 7, 9, 11}
    await opened(ctx, 13, FAILURE)
    assert said(await compute_preview(ctx, VERL)) == {5, 7, 9, 11, 13}
    assert said(await compute_preview(ctx, VERL, days=30)) == {5, 7, 9, 11, 13}
