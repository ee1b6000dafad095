"""Migration 0026's backfill does not stop a live app's writes to `threads` (ops77).

0026 made `review_transitions` with its foreign key to `threads` first, then backfilled one
row per proposal: on PostgreSQL making the foreign key takes SHARE ROW EXCLUSIVE on `threads`,
held to the upgrade's commit, so every webhook's INSERT/UPDATE of a thread waited for the
whole backfill (benchmarks/migration_0026.py: 0.75 s at 200 000 threads, growing with them).
Now the rows are copied first and the key made after, its lock held for the two short scans
that end the upgrade. The test pauses the backfill on a real lock another session holds on
`analyses` (what the backfill reads) and reads pg_locks while it waits."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from bot.store import migrate
from tests.test_migrations import _execute, downgrade, schema_differences

pytestmark = pytest.mark.postgres
POLLS = 2000  # bounded wait for the migration's session to queue behind the held lock
# the lock modes that conflict with ROW EXCLUSIVE (what INSERT, UPDATE and DELETE take)
BLOCKING_MODES = {"ShareLock", "ShareRowExclusiveLock", "ExclusiveLock", "AccessExclusiveLock"}

# one query, one snapshot of the lock table: the session waiting for `analyses` and what it
# holds on `threads` at that moment
WAITER = ("SELECT w.pid, array_remove(array_agg(t.mode::text), NULL) FROM pg_locks w "
          "LEFT JOIN pg_locks t ON t.pid = w.pid AND t.granted "
          "AND t.relation = 'threads'::regclass "
          "WHERE w.relation = 'analyses'::regclass AND NOT w.granted GROUP BY w.pid")


def _populate(url: str, n: int) -> None:
    rows = ", ".join(f"({i}, 'o/r', {i}, 'issue', 't', 'open', '[]', '[]', true, false, "
                     "CURRENT_TIMESTAMP)" for i in range(1, n + 1))
    asyncio.run(_execute(url, "INSERT INTO threads (id, repo, number, kind, title, state, "
                              f"labels, assignees, complete, muted, stored_at) VALUES {rows}"))
    analyses = ", ".join(f"({i}, {i}, 'v1', '{{}}', false, {'true' if i % 2 else 'false'}, "
                         "'open_no_reply', '[]', '[]', '2026-01-03 00:00:00+00:00', NULL)"
                         for i in range(1, n + 1))
    asyncio.run(_execute(url, "INSERT INTO analyses (id, thread_id, analyzer_version, result, "
                              "is_failure_report, is_proposal, review_state, methods, "
                              f"arxiv_ids, analyzed_at, review_state_changed_at) VALUES {analyses}"))


async def test_0026_backfill_holds_no_lock_that_stops_writes_to_threads(db_url: str) -> None:
    if not db_url.startswith("postgresql"):
        pytest.skip("table locks a live app's writes wait for: PostgreSQL")
    await asyncio.to_thread(downgrade, db_url, "0025")
    await asyncio.to_thread(_populate, db_url, 6)
    plain = db_url.replace("postgresql+asyncpg://", "postgresql://")
    holder, observer = await asyncpg.connect(plain), await asyncpg.connect(plain)
    try:
        pause = holder.transaction()
        await pause.start()
        await holder.execute("LOCK TABLE analyses IN ACCESS EXCLUSIVE MODE")
        upgrading = asyncio.create_task(asyncio.to_thread(migrate.upgrade, db_url, wait=120))
        seen = None
        for _ in range(POLLS):
            seen = await observer.fetchrow(WAITER)
            if seen is not None:
                break
            await asyncio.sleep(0.01)
        assert seen is not None, "the migration never waited for analyses"
        held_on_threads = set(seen[1])
        await pause.rollback()
        await upgrading
    finally:
        await holder.close()
        await observer.close()
    assert not held_on_threads & BLOCKING_MODES, held_on_threads
    assert await asyncio.to_thread(schema_differences, db_url) == []
    rows = await asyncio.to_thread(asyncio.run, _execute(
        db_url, "SELECT thread_id, from_state, to_state, source FROM review_transitions "
                "ORDER BY thread_id"))
    assert rows == [(i, None, "open_no_reply", "backfill") for i in (1, 3, 5)]
    # the key is made and enforced: a row for no thread is refused, a thread's rows go with it
    with pytest.raises(Exception, match="fk_review_transitions_thread_id_threads"):
        await asyncio.to_thread(asyncio.run, _execute(
            db_url, "INSERT INTO review_transitions (thread_id, to_state, observed_at, source) "
                    "VALUES (99, 'declined', CURRENT_TIMESTAMP, 'webhook')"))
    await asyncio.to_thread(asyncio.run, _execute(db_url, "DELETE FROM threads WHERE id = 1"))
    rows = await asyncio.to_thread(asyncio.run, _execute(
        db_url, "SELECT thread_id FROM review_transitions ORDER BY thread_id"))
    assert rows == [(3,), (5,)]
