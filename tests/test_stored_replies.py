"""Replies and rule summaries the app stored before security66 cite a template's file name
with its raw `<!--` (`.github/ISSUE_TEMPLATE/<!-- a.md`). Such a stored text is never posted
again (a retry renders the reply anew), but the tracker's thread page shows it, and dropped
every HTML comment of it, from that `<!--` to the end of the reply (the rules after it and the
footer) when nothing closed it, or the name up to a later `-->`. The page now drops the app's
own marker lines alone; any other `<!--` is text (security71). Over HTTP to the app's site,
on SQLite and PostgreSQL."""

from __future__ import annotations

import html
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from bot.site.threads import comment_html
from bot.speaking.render import FAILURE_MARKER, REPLY_MARKER, rules_reply
from bot.store.models import Action
from bot.store.threads import upsert_thread

VERL = "verl-project/verl"
# File names as a repository may hold them (git allows `<`, `!`, `:` and spaces in a name)
NAMES = ("<!-- a.md", f"{FAILURE_MARKER}.md", "<!-- x --> y.md")


def stored_before_security66(name: str) -> str:
    """The `/rltracker rules` reply as the app wrote it before security66: the name verbatim
    in a code span, its `<!--` unbroken, and the reply's own marker on its last line."""
    rules = (f"- Please add tests for the fix (`.github/ISSUE_TEMPLATE/{name}`).\n"
             "- Every commit must be signed off (`CONTRIBUTING.md`).")
    body = rules_reply(rules, "verl", "en", "https://tracker.example")
    return f"{body.rstrip()}\n<!-- rltracker:reply-to:770001 -->\n"


@pytest.mark.parametrize("name", NAMES)
async def test_a_stored_reply_with_a_raw_comment_opener_is_shown_whole(ctx: Any, name: str) -> None:
    """Failed on main for each name: the page cut the reply at the name's `<!--`."""
    from bot.app import create_app

    body = stored_before_security66(name)
    assert f"ISSUE_TEMPLATE/{name}" in body and "\u200b" not in body
    async with ctx.sessionmaker() as session, session.begin():
        await upsert_thread(session, {"repo": VERL, "number": 6, "kind": "issue", "title": "t",
                                      "body": "b", "author": "alice", "state": "open",
                                      "labels": [], "assignees": [],
                                      "created_at": "2026-12-01T00:00:00Z"})
        session.add(Action(repo=VERL, number=6, kind="command", status="posted",
                           dedupe_key=f"{VERL}#6:command:770001", body=body))
    async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
        resp = await client.get(f"/threads/{VERL}/6")
        assert resp.status == 200
        page = html.unescape(await resp.text())
    assert f"ISSUE_TEMPLATE/{name}" in page, page
    assert "signed off" in page and "To hide it" in page  # what followed the name
    assert REPLY_MARKER not in page and "reply-to:770001" not in page  # the app's markers go


def test_the_apps_marker_lines_go_and_nothing_else() -> None:
    shown = html.unescape(str(comment_html(
        f"{FAILURE_MARKER}\nA `<!--` in code, a <!-- in text --> and\n<!-- rltracker:report:2026-12-01 -->\n")))
    assert "rltracker:" not in shown
    assert "A <!-- in code, a <!-- in text --> and" in shown.replace("<code>", "").replace("</code>", "")
