"""The report pages render in headless Chromium: list, report page, and its SVG chart."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from bot.site import report_pages as report_web
from bot.site.report import run_report
from tests.browser import chromium  # noqa: F401 - the fixture
from tests.test_report import DAY1, DAY2, night_one, night_two


@pytest.fixture
async def served(sqlite_ctx: Any) -> AsyncIterator[str]:
    from bot.context import CTX

    app = web.Application()
    app[CTX] = sqlite_ctx
    report_web.setup(app)
    server = TestServer(app, host="127.0.0.1", port=0)
    await server.start_server()
    try:
        yield str(server.make_url("")).rstrip("/")
    finally:
        await server.close()


async def seed_two_nights(ctx: Any) -> None:
    await night_one(ctx)
    await run_report(ctx, DAY1)
    await night_two(ctx)
    await run_report(ctx, DAY2)


async def test_report_routes(ctx: Any) -> None:
    from bot.context import CTX

    await seed_two_nights(ctx)
    app = web.Application()
    app[CTX] = ctx
    report_web.setup(app)
    async with TestClient(TestServer(app)) as client:
        listing = await client.get("/reports/")
        assert listing.status == 200
        body = await listing.text()
        assert body.index(DAY2.isoformat()) < body.index(DAY1.isoformat())  # newest first
        page = await client.get(f"/reports/{DAY2.isoformat()}")
        assert page.status == 200 and "<svg" in await page.text()
        md = await client.get(f"/reports/{DAY2.isoformat()}.md")
        assert md.status == 200 and "Proposal status" in await md.text()
        assert (await client.get("/reports/2020-01-01")).status == 404
        assert (await client.get("/reports/nonsense")).status == 404
        # thread titles are shown: the pages allow no script, like every tracker page
        for response in (listing, page, md, await client.get("/reports/2020-01-01")):
            policy = response.headers.get("Content-Security-Policy", "")
            assert "default-src 'none'" in policy and "script-src" not in policy, response.url
            assert response.headers.get("X-Content-Type-Options") == "nosniff"


async def test_report_page_and_chart_render_in_chromium(served: str, sqlite_ctx: Any, chromium: Any, tmp_path: Path) -> None:  # noqa: F811
    await seed_two_nights(sqlite_ctx)
    dom = await chromium.dump_dom(f"{served}/reports/{DAY2.isoformat()}")
    # The chart: one row per framework, bars per state, reply bars where replies exist.
    assert re.search(r'<svg[^>]*id="chart"', dom)
    assert len(re.findall(r'<g class="row"', dom)) == 7
    assert 'data-state="merged"' in dom and 'data-state="open_no_reply"' in dom
    assert '<rect class="reply"' in dom
    # The changes, and a hostile title kept as text.
    assert 'data-key="huggingface/trl#13"' in dom
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom and "<script>alert" not in dom
    assert 'id="paused"' in dom
    listing = await chromium.dump_dom(f"{served}/reports/")
    assert f'href="/reports/{DAY2.isoformat()}"' in listing
    shot = await chromium.screenshot(f"{served}/reports/{DAY2.isoformat()}", tmp_path / "report.png", width=800, height=1600)
    assert shot.stat().st_size > 10_000


async def test_a_title_with_a_direction_override_does_not_reverse_what_follows(ctx: Any) -> None:
    """A thread title holding U+202E (right-to-left override) that it never closes reversed
    the rest of its line on the report page: in Chromium the proposal's waiting days
    '12.5 d' read 'd 5.21', and a first reply's 'after N d' likewise. Each title is
    isolated (<bdi>) where the report lists it."""
    from bot.context import CTX
    from tests.test_report import V, at, seed

    title = "Add a loss \u202e"
    await seed(ctx, V, 30, created=at(DAY1) - timedelta(days=12),
               title=title)
    await run_report(ctx, DAY1)
    app = web.Application()
    app[CTX] = ctx
    report_web.setup(app)
    async with TestClient(TestServer(app)) as client:
        page = await client.get(f"/reports/{DAY1.isoformat()}")
        html = await page.text()
    assert page.status == 200 and 'class="waiting"' in html
    assert f"<bdi>{title}</bdi>" in html
    assert html.count(title) == html.count(f"<bdi>{title}</bdi>")


async def test_a_report_stored_by_the_first_release_still_shows(ctx: Any, tmp_path: Path) -> None:
    """A night's report is stored once and shown for good; the first release stored no
    `new_landings` (the study's, added later), so its page answered 500 (the template's
    StrictUndefined) and `rltracker report --date` for that night stopped with a KeyError."""
    from bot.context import CTX
    from bot.site.report import build_report
    from bot.store.models import Report

    await night_one(ctx)
    data = await build_report(ctx, DAY1)
    for key in ("new_landings", "agreement"):  # what the first release did not store
        data.pop(key)
    for fw in data["frameworks"].values():
        fw.pop("new_landings")
        fw.pop("failures_today_set_by")
    async with ctx.sessionmaker() as session:
        session.add(Report(date=DAY1.isoformat(), data=data, markdown="## Proposal status\n"))
        await session.commit()
    app = web.Application()
    app[CTX] = ctx
    report_web.setup(app)
    async with TestClient(TestServer(app)) as client:
        page = await client.get(f"/reports/{DAY1.isoformat()}")
        assert page.status == 200 and "Proposal status" in await page.text()
    summary = await run_report(ctx, DAY1, tmp_path / "out", stored=True)
    assert summary is not None and summary["date"] == DAY1.isoformat()
    assert (tmp_path / "out" / f"report-{DAY1.isoformat()}.html").is_file()


async def test_the_chart_key_words_do_not_run_into_the_next_key(served: str, sqlite_ctx: Any, chromium: Any) -> None:  # noqa: F811
    """The key names each state by the site's label (report72): "lapsed (stale / inactive)" is
    longer than "lapsed", and a word drawn over the next swatch reads as neither. Measured in
    Chromium: each word ends 10 px before the next swatch of its line (7 px with the keys 150 px
    apart, a font a little wider from overlap: they are 160 apart, the chart 640 wide)."""
    await seed_two_nights(sqlite_ctx)
    url = f"{served}/reports/{DAY2.isoformat()}"
    script = """
      const keys = [...document.querySelectorAll('#chart rect.key')];
      return keys.map(k => {
        const word = k.nextElementSibling.getBBox();
        return [k.getBBox().x, k.getBBox().y, word.x + word.width, word.y];
      });"""
    boxes = (await chromium.evaluate([url], script, width=1000))[url]
    assert len(boxes) == 8
    for (x, y, word_end, _), (next_x, next_y, _, _) in zip(boxes, boxes[1:], strict=False):
        if next_y == y:  # the next swatch on the same line
            assert word_end + 10 < next_x, (x, word_end, next_x)
