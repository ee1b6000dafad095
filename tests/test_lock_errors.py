"""One judgement of "a lock another session holds was not granted in time" (ops71), on both
databases: bot.store.db.lock_waited_out (PostgreSQL's lock_timeout, 55P03; SQLite's
"database is locked") and its two halves. The inbox (a batch answered 503 at once rather than
row by row), the commands' one-line failure (bot.cli.errors), the migrations and /healthz
all ask it; they walked the exception chain for the codes each by itself. The errors here
are real ones: another connection holds the lock."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError

from bot.cli.errors import explain
from bot.store.db import (
    LOCK_TIMEOUT,
    is_lock_not_granted,
    is_sqlite_locked,
    lock_waited_out,
    make_engine,
)
from bot.webhooks.inbox import _waited_out

INSERT = sa.text("INSERT INTO deletions (key, deleted_at) VALUES (:key, CURRENT_TIMESTAMP)")


async def _refused_by_a_held_lock(url: str) -> DBAPIError:
    """The error of a write while another connection holds what it needs, waited for briefly
    (SQLite: busy_timeout 0, the write lock; PostgreSQL: lock_timeout 1 ms, a table lock)."""
    engine = make_engine(url)
    try:
        if url.startswith("sqlite"):
            holder = sqlite3.connect(url.split("///", 1)[1], isolation_level=None)
            holder.execute("BEGIN IMMEDIATE")
            try:
                async with engine.connect() as conn:
                    await conn.exec_driver_sql("PRAGMA busy_timeout=0")
                    with pytest.raises(DBAPIError) as refused:
                        await conn.execute(INSERT, {"key": "held"})
            finally:
                holder.execute("ROLLBACK")
                holder.close()
            return refused.value
        async with engine.connect() as holder, engine.connect() as conn:
            await holder.exec_driver_sql("LOCK TABLE deletions IN ACCESS EXCLUSIVE MODE")
            await conn.exec_driver_sql("SET lock_timeout = '1ms'")
            with pytest.raises(DBAPIError) as refused:
                await conn.execute(INSERT, {"key": "held"})
            await holder.rollback()
        return refused.value
    finally:
        await engine.dispose()


async def _refused_for_the_row(url: str) -> DBAPIError:
    """A row the database refuses (a duplicate key): no lock in it."""
    engine = make_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(INSERT, {"key": "twice"})
        with pytest.raises(DBAPIError) as refused:
            async with engine.begin() as conn:
                await conn.execute(INSERT, {"key": "twice"})
        return refused.value
    finally:
        await engine.dispose()


async def test_a_lock_held_by_another_session_is_told_as_one(db_url: str,
                                                             monkeypatch: Any) -> None:
    exc = await _refused_by_a_held_lock(db_url)
    sqlite = db_url.startswith("sqlite")
    assert lock_waited_out(exc)
    assert (is_sqlite_locked(exc), is_lock_not_granted(exc)) == (sqlite, not sqlite)
    assert _waited_out(exc)  # the inbox: the whole batch answered 503, not row by row
    # wrapped (raised from, as a caller re-raises it): still told
    try:
        raise RuntimeError("storing the batch failed") from exc
    except RuntimeError as wrapped:
        assert lock_waited_out(wrapped)
    monkeypatch.setenv("DATABASE_URL", db_url)
    explained = explain(exc)
    assert explained is not None
    line = explained[0]
    if sqlite:
        assert "is locked by another process" in line, line
    else:
        assert f"not granted within {LOCK_TIMEOUT}" in line, line


async def test_a_refused_row_is_no_lock(db_url: str) -> None:
    exc = await _refused_for_the_row(db_url)
    assert not lock_waited_out(exc)
    assert not is_sqlite_locked(exc) and not is_lock_not_granted(exc)
    assert not _waited_out(exc)
