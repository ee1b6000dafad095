"""A thread title holding control characters (C0, DEL, C1: GitHub strips them from a title, but
one stored by an older version, an imported record or a delivery replayed from a file holds
them): no page, export or report carries them, and a title stored from now on has none, on
SQLite and PostgreSQL. Before, they reached the HTML as they were (a parse error in every
browser, an invalid character for every XML reader), the CSV and JSON exports and the report."""

from __future__ import annotations

import csv
import io
import re
from datetime import date

from sqlalchemy import select, text

from tests.test_thread_page import _client

CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
DIRTY = "Entropy\x07 collapses\x1b[31m after\x00 200\x7f steps\x85\tnow"


async def _store_dirty_title(ctx) -> None:
    """trl#8's title as an older version left it (plain SQL: no code of the app on the way)."""
    async with ctx.engine.begin() as conn:
        # PostgreSQL text cannot hold U+0000: older versions stored U+FFFD in its place
        await conn.execute(text("UPDATE threads SET title = :t WHERE repo = 'huggingface/trl' "
                                "AND number = 8"), {"t": DIRTY.replace("\x00", "\ufffd")})


async def test_no_page_or_export_carries_a_control_character_of_a_stored_title(ctx) -> None:
    client = await _client(ctx)
    await _store_dirty_title(ctx)
    try:
        for path in ("/", "/failures/entropy_collapse", "/threads/huggingface/trl/8",
                     "/api/threads/huggingface/trl/8", "/api/export.csv", "/api/export.json"):
            resp = await client.get(path)
            assert resp.status == 200, path
            body = await resp.text()
            assert "Entropy" in body, path
            assert not CONTROLS.search(body), (path, CONTROLS.findall(body))
            assert "\\u0007" not in body and "\\u001b" not in body, path  # JSON's escapes
        rows = list(csv.DictReader(io.StringIO(await (await client.get("/api/export.csv")).text())))
        title = next(r["title"] for r in rows if r["repo"] == "huggingface/trl" and r["number"] == "8")
        assert title == "Entropy collapses[31m after\ufffd 200 steps now"
    finally:
        await client.close()


async def test_the_report_carries_no_control_character_of_a_title(ctx) -> None:
    from bot.site.report import build_report, render_html, render_markdown

    client = await _client(ctx)
    await client.close()
    await _store_dirty_title(ctx)
    data = await build_report(ctx, date(2026, 11, 21))
    assert data["titles"]["huggingface/trl#8"].startswith("Entropy collapses")
    for out in (render_html(data), render_markdown(data)):
        assert not CONTROLS.search(out), CONTROLS.findall(out)
    # a report stored by an older version: its page shows the title without them
    data["titles"]["huggingface/trl#8"] = DIRTY
    assert not CONTROLS.search(render_html(data))


async def test_a_title_is_stored_without_control_characters(ctx) -> None:
    from bot.store.models import Thread
    from bot.store.threads import upsert_thread

    async with ctx.sessionmaker() as session, session.begin():
        await upsert_thread(session, {"repo": "huggingface/trl", "number": 77, "kind": "issue",
                                      "title": DIRTY})
    async with ctx.engine.connect() as conn:  # as stored, read without the app's types
        stored = (await conn.execute(text(
            "SELECT title FROM threads WHERE number = 77"))).scalar_one()
    # (a U+0000 stored as U+FFFD, as the sync stores it on both databases)
    assert stored == "Entropy collapses[31m after\ufffd 200 steps now"
    async with ctx.sessionmaker() as session:
        assert await session.scalar(select(Thread.title).where(Thread.number == 77)) == stored


def test_shown_and_plain_titles_drop_control_characters() -> None:
    from bot.templating import plain_title, shown_title

    assert shown_title("GSPO\x07 loss") == "GSPO loss"
    assert shown_title("\x07\x1b") == "(no title)"
    assert plain_title("GSPO\x07 loss") == "\u2068GSPO loss\u2069"


async def test_the_thread_page_carries_no_control_character_of_other_github_text(ctx) -> None:
    """Labels, a discussion's category and the app's comments (quoting the reporter's setup)
    are GitHub's text as well: a control character in them reached the thread page as is."""
    from sqlalchemy import update

    from bot.store.models import Action, Thread

    client = await _client(ctx)
    async with ctx.sessionmaker() as session, session.begin():
        await session.execute(update(Thread).where(Thread.repo == "huggingface/trl",
                                                   Thread.number == 8)
                              .values(labels=["bug\x07", "kind\x1b[1m"], category="Q\x08A"))
        await session.execute(update(Action).where(Action.dedupe_key == "t8").values(
            body="Your setup: `lr\x07 = 1e-6`\n\n> clip\x1b[0m 0.2\n"))
    try:
        body = await (await client.get("/threads/huggingface/trl/8")).text()
        assert "bug" in body and "lr" in body and "clip" in body
        assert not CONTROLS.search(body), CONTROLS.findall(body)
    finally:
        await client.close()
