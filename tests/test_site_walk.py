"""What bounds79 found walking the site as a user with a store of a few hundred threads: a
thread of a tracked repository that is not stored, and one that left GitHub, as the page and
the JSON API answer them. Over HTTP, SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from bot.app import create_app
from bot.store.threads import bury, thread_grave, upsert_thread


@pytest.fixture
async def client(ctx: Any) -> AsyncIterator[TestClient]:
    async with ctx.sessionmaker() as session, session.begin():
        await upsert_thread(session, {"repo": "verl-project/verl", "number": 1, "kind": "issue",
                                      "title": "t", "body": "b", "state": "open"})
    async with TestClient(TestServer(create_app(ctx, worker=False))) as c:
        yield c


async def test_an_unstored_thread_of_a_tracked_repository_links_to_github(
        client: TestClient) -> None:
    """A user pasting a thread's address from GitHub (one newer than the last sync) got "No
    such thread" and nothing else (failed on main). A repository the catalog tracks gets the
    404 with a sentence on why it may be missing and a link to GitHub, its name spelt as the
    catalog spells it; any other name stays a bare 404 (no link built from a typed name)."""
    resp = await client.get("/threads/VERL-project/verl/99999")
    html = await resp.text()
    assert resp.status == 404
    assert 'href="https://github.com/verl-project/verl/issues/99999"' in html, html
    assert "verl-project/verl#99999 is not stored here" in html
    other = await (await client.get("/threads/someone/else/5")).text()
    assert "github.com" not in other.split("<main", 1)[1] and "No such thread" in other


async def test_the_api_says_a_thread_left_github_as_the_page_does(ctx: Any,
                                                                  client: TestClient) -> None:
    """The thread page answers 410 for a thread deleted on GitHub or transferred away; the API
    said only "no such thread", as for one never stored (failed on main). It keeps the
    contract's 404 and says so, with GitHub's address of it and when it was noticed."""
    async with ctx.sessionmaker() as session, session.begin():
        await bury(session, thread_grave("verl-project/verl", 301, "issue"), None)
    assert (await client.get("/threads/verl-project/verl/301")).status == 410
    resp = await client.get("/api/threads/verl-project/verl/301")
    assert resp.status == 404
    body = await resp.json()
    assert body["error"].startswith("no such thread: verl-project/verl#301 left GitHub"), body
    assert body["gone"]["url"] == "https://github.com/verl-project/verl/issues/301"
    assert body["gone"]["noticed_at"]
    never = await (await client.get("/api/threads/verl-project/verl/302")).json()
    assert never == {"error": "no such thread"}
