"""security75: the nightly report page links each thread to GitHub by an address the tracker
builds from the thread's stored name, number and kind (`bot.site.data.thread_url`), as every
other page does, never by the URL a payload or a GraphQL answer carried: `thread.url` went
into the report's stored data and straight into an `href` (a `javascript:` address was a
link; a pull request's was `/issues/N` when the stored one was missing). Served over HTTP by
the app, SQLite and PostgreSQL (the `ctx` fixture)."""

from __future__ import annotations

import re
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import select

from bot.store.models import Thread
from tests.test_report import DAY1, DAY2, T, night_one, night_two, run_report


async def test_the_report_links_threads_by_the_address_it_builds(ctx: Any) -> None:
    from bot.app import create_app

    await night_one(ctx)
    await run_report(ctx, DAY1)
    await night_two(ctx)
    async with ctx.sessionmaker() as session:
        waiting = await session.scalar(select(Thread).where(Thread.repo == T, Thread.number == 12))
        waiting.url = "javascript:alert(document.cookie)//https://github.com/"
        merged = await session.scalar(select(Thread).where(Thread.repo == T, Thread.number == 10))
        merged.kind, merged.url = "pull_request", None  # a PR synced without its address
        await session.commit()
    await run_report(ctx, DAY2)
    async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
        resp = await client.get(f"/reports/{DAY2.isoformat()}")
        html = await resp.text()
    assert resp.status == 200
    links = re.findall(r'href="([^"]*)"[^>]*>GitHub<', html)
    assert links and all(link.startswith("https://github.com/") for link in links), links
    assert "javascript:" not in html
    assert f"https://github.com/{T}/issues/12" in links
    assert f"https://github.com/{T}/pull/10" in links
