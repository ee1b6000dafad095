"""Rows with no `created_at` (the contract allows null: a record imported without its time)
come in the same place on SQLite and PostgreSQL: last. SQLite sorts NULL before every value
and PostgreSQL after, so a thread's comments came in another order on each (and the review
analysis, which reads them in time order, could differ), and a thread with no creation time
headed the newest-first lists on PostgreSQL and ended them on SQLite."""

from __future__ import annotations

from typing import Any

from bot.context import AppContext
from bot.pipeline import sync_changed
from bot.site.data import rows_by_id, thread_rows, tracked_ids
from bot.store.models import Thread
from bot.store.threads import load_comments, load_thread_record, upsert_comment, upsert_thread

REPO = "huggingface/trl"


def _thread(number: int, created_at: str | None) -> dict[str, Any]:
    return {"repo": REPO, "number": number, "kind": "issue", "title": f"t{number}", "body": "b",
            "state": "open", "created_at": created_at, "updated_at": "2025-03-01T00:00:00Z"}


async def test_comments_without_a_time_come_last_on_both_databases(ctx: AppContext) -> None:
    async with ctx.sessionmaker() as session:
        thread = await upsert_thread(session, _thread(1, "2025-01-01T00:00:00Z"))
        for gid, when in ((11, "2025-01-03T00:00:00Z"), (12, None), (13, "2025-01-02T00:00:00Z")):
            await upsert_comment(session, thread, {"kind": "comment", "github_id": gid, "author": "a",
                                                   "body": f"c{gid}", "created_at": when})
        await session.commit()
    await sync_changed(ctx, REPO, 1)  # the pipeline's batch read of comments
    async with ctx.sessionmaker() as session:
        record = await load_thread_record(session, REPO, 1)
        thread = await session.get(Thread, thread.id)
        rows = await load_comments(session, thread)
    assert [c["body"] for c in record["comments"]] == ["c13", "c11", "c12"]
    assert [c.body for c in rows] == ["c13", "c11", "c12"]


async def test_threads_without_a_time_end_the_lists_on_both_databases(ctx: AppContext) -> None:
    async with ctx.sessionmaker() as session:
        for number, when in ((1, "2025-01-01T00:00:00Z"), (2, None), (3, "2025-02-01T00:00:00Z")):
            await upsert_thread(session, _thread(number, when))
        await session.commit()
    for number in (1, 2, 3):
        await sync_changed(ctx, REPO, number)
    async with ctx.sessionmaker() as session:
        newest = [r["number"] for r in await thread_rows(session)]
        # oldest first: the exports' order (thread_rows had a newest_first=False no page used)
        oldest = [r["number"] for r in await rows_by_id(session, await tracked_ids(session))]
        page = [r["number"] for r in await thread_rows(session, limit=2)]
    assert newest == [3, 1, 2]
    assert oldest == [1, 3, 2]
    assert page == [3, 1]
