"""Preview: what the app would have said on a repository's last 30 days, never posted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import select

from bot.site.preview_pages import setup as preview_setup
from bot.speaking.preview import compute_preview, render_markdown, run_preview
from bot.store.models import Action, Analysis, Thread
from bot.store.threads import upsert_thread
from tests.test_actions_e2e import FAILURE, NOT_FAILURE, VERL, install, iso


async def store(ctx: Any, number: int, analysis: dict, *, title: str, days_ago: float = 1) -> None:
    async with ctx.sessionmaker() as s:
        t = await upsert_thread(s, {
            "repo": VERL, "number": number, "kind": "issue", "title": title,
            "body": "entropy falls", "state": "open",
            "created_at": iso(datetime.now(UTC) - timedelta(days=days_ago)),
        })
        s.add(Analysis(thread_id=t.id, analyzer_version="t", result=analysis,
                       is_failure_report=analysis["failure"]["is_failure_report"]))
        await s.commit()


def _preview_app(ctx: Any) -> web.Application:
    """An aiohttp app serving only the preview pages, on `ctx`."""
    from bot.context import CTX

    app = web.Application()
    app[CTX] = ctx
    preview_setup(app)
    return app


async def test_preview_page_and_command(ctx: Any, fake_github: Any) -> None:
    await install(ctx, fake_github)
    await store(ctx, 1, FAILURE, title="<script>alert(1)</script> entropy")
    await store(ctx, 2, NOT_FAILURE, title="docs typo")
    await store(ctx, 3, FAILURE, title="too old", days_ago=40)
    preview = await compute_preview(ctx, VERL)
    assert [c["number"] for c in preview["comments"]] == [1]
    assert [s["number"] for s in preview["skipped"]] == [2]
    assert "actor_rollout_ref.actor.clip_ratio_high" in render_markdown(preview)

    async with TestClient(TestServer(_preview_app(ctx))) as client:
        resp = await client.get(f"/repos/{VERL}/preview")
        assert resp.status == 200
        html = await resp.text()
        assert "default-src 'none'" in resp.headers["Content-Security-Policy"]
        # a days value that is not one was read as 30 without a word
        for days in ("7d", "-3", "0", "x"):
            bad = await client.get(f"/repos/{VERL}/preview", params={"days": days})
            assert bad.status == 400, days
            assert await bad.text() == "days must be a whole number from 1 to 90"
        longer = await (await client.get(f"/repos/{VERL}/preview?days=45")).text()
        assert "too old" in longer and "too old" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert" not in html
    assert "clip_ratio_high" in html and "not a training-failure report" in html

    await run_preview(ctx, VERL)
    await run_preview(ctx, VERL)
    async with ctx.sessionmaker() as s:
        rows = list(await s.scalars(select(Action).where(Action.kind == "preview")))
        assert len(rows) == 1 and rows[0].status == "dry_run" and rows[0].number == 1
        assert (await s.scalar(select(Thread).where(Thread.number == 1))) is not None
    assert not fake_github.requests("POST")


async def test_preview_names_the_second_kind(ctx: Any, fake_github: Any) -> None:
    """Two kinds listed: the preview line shows the leading kind and the second, and says whose
    confidence it is; the stored preview keeps the leading kind as its category."""
    await install(ctx, fake_github)
    two = {**FAILURE, "failure": {**FAILURE["failure"], "categories": ["entropy_collapse", "kl_growth"]}}
    await store(ctx, 1, two, title="entropy and KL")
    await store(ctx, 2, FAILURE, title="entropy only")
    async with TestClient(TestServer(_preview_app(ctx))) as client:
        html = await (await client.get(f"/repos/{VERL}/preview")).text()
    assert "entropy_collapse (or kl_growth) · failure-report confidence 0.92" in html
    assert "entropy_collapse · failure-report confidence 0.92" in html  # issue 2: one kind
    await run_preview(ctx, VERL)
    async with ctx.sessionmaker() as s:
        rows = {r.number: r for r in await s.scalars(select(Action).where(Action.kind == "preview"))}
    assert rows[1].details == {"category": "entropy_collapse", "runner_up": "kl_growth"}
    assert rows[2].details == {"category": "entropy_collapse", "runner_up": None}
    assert "/failures/kl_growth" in rows[1].body and "/failures/kl_growth" not in rows[2].body


async def _one_failure_stored(db_url: str) -> None:
    """VERL#7, a failure report opened a day ago, in the database at `db_url`."""
    from bot.config import Settings
    from bot.context import AppContext

    ctx = AppContext.create(Settings.from_env({}, database_url=db_url))
    try:
        await store(ctx, 7, FAILURE, title="entropy")
    finally:
        await ctx.close()


def test_preview_command_prints_and_stores(db_url: str, monkeypatch: Any, capsys: Any) -> None:
    import asyncio

    from bot.cli import main

    asyncio.run(_one_failure_stored(db_url))
    monkeypatch.setenv("DATABASE_URL", db_url)
    assert main(["preview", "volcengine/verl"]) == 0  # a former name resolves
    out = capsys.readouterr().out
    assert "verl-project/verl" in out and "## #7" in out and "clip_ratio_high" in out


def test_preview_command_stores_no_link_to_a_default_address(db_url: str, monkeypatch: Any,
                                                              capsys: Any) -> None:
    """user72: `rltracker preview` run in a shell without RLTRACKER_PUBLIC_URL stored its
    would-be comments with links to http://localhost:8000 (the default of a service that may
    listen elsewhere, or on another machine), and /api/actions listed them. As `report` and
    `serve` do with links they would post, the command keeps no such text: it prints the
    preview, says why nothing was stored and how to store it; with the address set it stores
    the comments linking there."""
    import asyncio

    from bot.cli import main
    from bot.config import Settings
    from bot.context import AppContext

    async def stored() -> list[str]:
        ctx = AppContext.create(Settings.from_env({}, database_url=db_url))
        try:
            async with ctx.sessionmaker() as s:
                return list(await s.scalars(select(Action.body).where(Action.kind == "preview")))
        finally:
            await ctx.close()

    asyncio.run(_one_failure_stored(db_url))
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.delenv("RLTRACKER_PUBLIC_URL", raising=False)
    monkeypatch.setenv("PORT", "8123")
    assert main(["preview", VERL]) == 0
    out, err = capsys.readouterr()
    assert "## #7" in out and "http://localhost:8123/methods/" in out
    assert err == ("rltracker preview: not stored: its links would lead to "
                   "http://localhost:8123, RLTRACKER_PUBLIC_URL being unset; set it to where "
                   "the tracker is reachable (https://...) to store the preview for "
                   "/api/actions\n")
    assert asyncio.run(stored()) == []
    monkeypatch.setenv("RLTRACKER_PUBLIC_URL", " https://tracker.example/ ")
    assert main(["preview", VERL]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "https://tracker.example/methods/" in out
    [body] = asyncio.run(stored())
    assert "https://tracker.example/methods/" in body and "localhost" not in body


def test_preview_command_says_when_nothing_is_stored(db_url: str, monkeypatch: Any, capsys: Any) -> None:
    """An installer's first `rltracker preview` (nothing synced yet) printed "0 of 0 issues
    would get a comment" and exit 0, which reads as "the app would stay quiet" when it looked
    at nothing; a name that is not OWNER/NAME did the same."""
    from bot.cli import main

    monkeypatch.setenv("DATABASE_URL", db_url)
    assert main(["preview", "verl-project/verl"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert ("rltracker preview: no thread of verl-project/verl is stored yet, so there is nothing "
            "to preview; fetch them first: rltracker sync --repo verl-project/verl") in err
    for bad in ("verl", "a/b/c", "/verl"):
        with pytest.raises(SystemExit) as exit_status:
            main(["preview", bad])
        assert exit_status.value.code == 2
        assert "expected a repository as OWNER/NAME" in capsys.readouterr().err


async def _stored(db_url: str, *threads: tuple[int, dict, float]) -> None:
    """VERL issues (number, analysis, days ago) in the database at `db_url`."""
    from bot.config import Settings
    from bot.context import AppContext

    ctx = AppContext.create(Settings.from_env({}, database_url=db_url))
    try:
        for number, analysis, days_ago in threads:
            await store(ctx, number, analysis, title="entropy", days_ago=days_ago)
    finally:
        await ctx.close()


def test_preview_command_says_what_the_window_left_out(db_url: str, monkeypatch: Any,
                                                       capsys: Any) -> None:
    """left76: with every stored issue older than the window the command printed "0 of 0
    issues would get a comment", true and no help: it says how many stored issues are older
    and the --days that reaches the newest (or that none does); its "not stored" line, said
    when there was nothing to store, is said only when there is a would-be comment."""
    import asyncio

    from bot.cli import main

    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.delenv("RLTRACKER_PUBLIC_URL", raising=False)
    asyncio.run(_stored(db_url, (3, FAILURE, 200.5)))
    assert main(["preview", VERL]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.endswith("0 of 0 issues would get a comment.\n\n1 stored issue of verl-project/verl "
                        "was opened before the last 30 days, the newest 201 days ago: beyond the "
                        "longest window (90 days).\n"), out
    asyncio.run(_stored(db_url, (4, FAILURE, 40.5), (5, NOT_FAILURE, 60.5)))
    assert main(["preview", VERL, "--days", "7"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.endswith("\n3 stored issues of verl-project/verl were opened before the last 7 "
                        "days, the newest 41 days ago: rltracker preview verl-project/verl "
                        "--days 41 includes it.\n"), out
    assert main(["preview", VERL, "--days", "61"]) == 0  # one would-be comment: not stored, said
    out, err = capsys.readouterr()
    assert "2 of 2 issues" not in out and "1 of 2 issues would get a comment." in out
    assert err.startswith("rltracker preview: not stored: ")
    assert "before the last" not in out


def test_preview_command_of_one_day_says_day(db_url: str, monkeypatch: Any, capsys: Any) -> None:
    """left76: `--days 1` printed "(last 1 days, dry run)"."""
    import asyncio

    from bot.cli import main

    monkeypatch.setenv("DATABASE_URL", db_url)
    asyncio.run(_stored(db_url, (6, FAILURE, 2.5)))
    assert main(["preview", VERL, "--days", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# rltracker preview: verl-project/verl (last 1 day, dry run)\n"), out
    assert out.endswith("\n1 stored issue of verl-project/verl was opened before the last 1 day, "
                        "the newest 3 days ago: rltracker preview verl-project/verl --days 3 "
                        "includes it.\n"), out


def test_preview_command_with_no_would_be_comment_says_nothing_unstored(
        db_url: str, monkeypatch: Any, capsys: Any) -> None:
    """left76: "not stored: its links would lead to ..." was printed when no issue would get
    a comment, so there were no links and nothing to store; one issue was "1 issues"."""
    import asyncio

    from bot.cli import main

    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.delenv("RLTRACKER_PUBLIC_URL", raising=False)
    asyncio.run(_stored(db_url, (8, NOT_FAILURE, 1)))
    assert main(["preview", VERL]) == 0
    out, err = capsys.readouterr()
    assert "0 of 1 issue would get a comment." in out and err == ""  # it said "1 issues"


@pytest.mark.parametrize("owner", ["nobody", "%C3%A9t%C3%A9", "x" * 2000, "%3Cscript%3E"])
async def test_preview_page_of_a_repository_with_nothing_stored_is_a_404(ctx: Any, owner: str) -> None:
    """/repos/{owner}/{name}/preview answered 200 "0 of 0 issues would get a comment" for any
    name at all (a typo, a repository never synced), the answer `rltracker preview` stopped
    giving: 404 saying nothing is stored, in plain text; a stored repository still previews."""
    await store(ctx, 1, FAILURE, title="entropy collapse")
    async with TestClient(TestServer(_preview_app(ctx))) as client:
        resp = await client.get(f"/repos/{owner}/verl/preview")
        assert resp.status == 404
        assert resp.content_type == "text/plain"
        text = await resp.text()
        assert text.startswith("no thread of ") and text.endswith(
            "/verl is stored, so there is nothing to preview")
        assert (await client.get(f"/repos/{VERL}/preview")).status == 200
        assert (await client.get(f"/repos/{VERL.upper()}/preview")).status == 200


async def test_preview_days_beyond_the_bound_is_refused(ctx: Any) -> None:
    """?days=365 answered 200 with the 90-day preview under a URL asking for a year, and
    `rltracker preview --days 0` printed "0 of 0 issues" (a huge one: a traceback)."""
    await store(ctx, 1, FAILURE, title="entropy")
    async with TestClient(TestServer(_preview_app(ctx))) as client:
        for days in ("91", "365", "999999999", "9" * 30):
            bad = await client.get(f"/repos/{VERL}/preview", params={"days": days})
            assert bad.status == 400, days
            assert await bad.text() == "days must be a whole number from 1 to 90"
        for days in ("1", "90", " 7 "):
            assert (await client.get(f"/repos/{VERL}/preview", params={"days": days})).status == 200


@pytest.mark.parametrize("days", ["0", "91", "100000000000", "-1", "x"])
def test_preview_command_days_bounds(db_url: str, monkeypatch: Any, capsys: Any, days: str) -> None:
    """One range, one message: `--days -1` and `--days x` said "a whole number, 0 or more",
    which 0 is not (user71)."""
    from bot.cli import main

    monkeypatch.setenv("DATABASE_URL", db_url)
    with pytest.raises(SystemExit) as exit_status:
        main(["preview", VERL, "--days", days])
    assert exit_status.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("rltracker preview: argument --days: ") and err.count("\n") == 1, err
    assert "expected a whole number from 1 to 90" in err, err


async def test_the_preview_page_says_what_its_window_left_out(ctx: Any) -> None:
    """left78: the page's window holding no issue said "Dry run over the 0 issues ... 0
    comments" and nothing of the stored issues older than it, which `rltracker preview` says
    (left76). Now the page says the same sentence, and links the `days` that includes the
    newest of them (or says none does). Failed on main."""
    await store(ctx, 7, FAILURE, title="older", days_ago=40.5)
    await store(ctx, 8, NOT_FAILURE, title="oldest", days_ago=60.5)
    async with TestClient(TestServer(_preview_app(ctx))) as client:
        html = await (await client.get(f"/repos/{VERL}/preview?days=7")).text()
        assert ("2 stored issues of verl-project/verl were opened before the last 7 days, the "
                "newest 41 days ago: ") in html, html
        assert '<a href="/repos/verl-project/verl/preview?days=41">the last 41 days</a> include it.' in html
        widened = await (await client.get(f"/repos/{VERL}/preview?days=41")).text()
        assert "older" in widened and "opened before the last" not in widened
        one_day = await (await client.get(f"/repos/{VERL}/preview?days=1")).text()
        assert "opened in the last 1 day " in one_day and "last 1 days" not in one_day
    async with ctx.sessionmaker() as s:
        for t in await s.scalars(select(Thread)):
            t.created_at = datetime.now(UTC) - timedelta(days=200.5)
        await s.commit()
    async with TestClient(TestServer(_preview_app(ctx))) as client:
        html = await (await client.get(f"/repos/{VERL}/preview")).text()
    assert ("2 stored issues of verl-project/verl were opened before the last 30 days, the "
            "newest 201 days ago: beyond the longest window (90 days).") in html, html
