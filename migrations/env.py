"""Alembic environment: async, for SQLite (aiosqlite) and PostgreSQL (asyncpg)."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from logging.config import fileConfig
from typing import Any

from alembic import context
from sqlalchemy import event
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.config import DEFAULT_DATABASE_URL
from bot.store.db import is_lock_not_granted, make_engine, switch_to_wal, take_sqlite_write_lock
from bot.store.migrate import MIGRATION_LOCK_TIMEOUT, MIGRATION_WAIT
from bot.store.models import Base

config = context.config
if config.config_file_name is not None and config.attributes.get("configure_logging", True):
    fileConfig(config.config_file_name, disable_existing_loggers=False)

target_metadata = Base.metadata


def database_url() -> str:
    return (
        config.attributes.get("database_url")
        or os.environ.get("DATABASE_URL")
        or DEFAULT_DATABASE_URL
    )


# One upgrade at a time, whole or not at all (upgrade64). Two replicas starting together both
# run `rltracker migrate` (the image's command): both read the same revision and ran the same
# migration, and the second failed on what the first had made (PostgreSQL: a traceback;
# SQLite: "index ... already exists"). And on SQLite a migration that failed halfway kept its
# first statements (the sqlite3 driver runs DDL outside any transaction), alembic_version
# behind them: every rerun failed on what the failed run had made. Now the whole upgrade is
# one transaction on both databases, taken before the revision is read: PostgreSQL an
# advisory lock held to the transaction's end, SQLite BEGIN IMMEDIATE (the database's write
# lock; the driver's own transaction handling off). The second replica waits for the first
# (at most MIGRATION_WAIT), then finds the database at head. A failure leaves the database at
# the revision it was at.
MIGRATION_LOCK = 0x726C746D  # pg_advisory_xact_lock's key: "rltm"
# SQLite's write lock is also taken, for a moment, by the running app's writes: a migrate says
# it waits only once the lock has not come within this many seconds (ops64).
SQLITE_QUIET_WAIT = 2.0


def migration_wait() -> float:
    return float(config.attributes.get("wait", MIGRATION_WAIT))


def _waiting(what: str) -> None:
    """Said once when a migrate starts waiting (ops64): it said nothing for up to 10 minutes."""
    on_wait = config.attributes.get("on_wait")
    if on_wait is not None and not config.attributes.get("told_waiting"):
        config.attributes["told_waiting"] = True  # the WAL switch and BEGIN IMMEDIATE: once
        on_wait(f"waiting for another migrate ({what}) to finish, at most "
                f"{_seconds(migration_wait())}")


def _seconds(value: float) -> str:
    return f"{value:.0f} s" if value < 120 else f"{value / 60:.0f} minutes"


def _wait_ran_out(started: float, what: str) -> Exception:
    from bot.store.migrate import MigrationWaitRanOut

    waited = time.monotonic() - started
    return MigrationWaitRanOut(
        f"waited {_seconds(waited)} for another migrate ({what}) to finish, and it has not: "
        "nothing was changed; run `rltracker migrate` again once it is done (or with a "
        "longer --wait), or see what holds the database")


def serialised(engine: AsyncEngine) -> AsyncEngine:
    """The migrations' engine: on SQLite each transaction BEGIN IMMEDIATE, DDL inside it."""
    if engine.dialect.name != "sqlite":
        return engine

    what = "the database's write lock is taken"

    def _wait_for_the_write_lock(step: Callable[[], None]) -> None:
        from bot.store.db import is_sqlite_locked

        started = time.monotonic()
        try:
            step()
        except Exception as exc:
            if not is_sqlite_locked(exc):
                raise
            raise _wait_ran_out(started, what) from exc

    # Before make_engine's pragmas (insert): a new database's switch to WAL waits for another
    # migrate's write lock within --wait, saying so (ops71: SQLite answered it "database is
    # locked" at once, bot.store.db.switch_to_wal).
    @event.listens_for(engine.sync_engine, "connect", insert=True)
    def _wal_within_the_wait(dbapi_conn: Any, _record: object) -> None:
        cur = dbapi_conn.cursor()

        def execute(sql: str) -> None:
            cur.execute(sql)
            cur.fetchall()

        try:
            _wait_for_the_write_lock(lambda: switch_to_wal(
                execute, migration_wait(), quiet=SQLITE_QUIET_WAIT,
                on_wait=lambda: _waiting(what)))
        finally:
            cur.close()

    @event.listens_for(engine.sync_engine, "connect")
    def _driver_transactions_off(dbapi_conn: Any, _record: object) -> None:
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={int(migration_wait() * 1000)}")
        # A table copy (batch_alter_table) drops the old table: with foreign keys on, SQLite
        # deletes its rows first and ON DELETE CASCADE takes the children (a copy of `threads`
        # emptied comments, analyses, verdicts). Off for the migrations, as alembic advises;
        # what they leave pointing nowhere is checked before the commit (`_no_new_orphans`).
        cur.execute("PRAGMA foreign_keys=OFF")
        cur.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _begin_immediate(conn: Connection) -> None:
        _wait_for_the_write_lock(lambda: take_sqlite_write_lock(
            conn.exec_driver_sql, migration_wait(), quiet=SQLITE_QUIET_WAIT,
            on_wait=lambda: _waiting(what)))

    return engine


def _take_the_lock(connection: Connection) -> None:
    if connection.dialect.name != "postgresql":
        return
    if connection.exec_driver_sql(f"SELECT pg_try_advisory_xact_lock({MIGRATION_LOCK})").scalar():
        return
    from sqlalchemy.exc import DBAPIError

    what = "it holds the migration lock"
    _waiting(what)
    started = time.monotonic()
    if migration_wait() <= 0:  # --wait 0: PostgreSQL's lock_timeout 0 would wait for ever
        raise _wait_ran_out(started, what)
    timeout = connection.exec_driver_sql("SHOW lock_timeout").scalar()
    connection.exec_driver_sql(f"SET LOCAL lock_timeout = '{int(migration_wait() * 1000)}ms'")
    try:
        connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
    except DBAPIError as exc:
        # lock_not_available after the wait: its message said "not granted within 30s"
        # (the app's lock_timeout, bot.cli.errors), not the wait it was
        if not is_lock_not_granted(exc):
            raise
        raise _wait_ran_out(started, what) from exc
    connection.exec_driver_sql(f"SET LOCAL lock_timeout = '{timeout}'")


def _applied(ctx: object, step: object, heads: object, run_args: object) -> None:
    config.attributes.setdefault("applied", []).append(step.up_revision_id)  # type: ignore[attr-defined]


def do_run_migrations(connection: Connection) -> None:
    sqlite = connection.dialect.name == "sqlite"
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=sqlite,
        compare_type=True,
        transactional_ddl=True,  # SQLite too: its DDL is transactional (see `serialised`)
        on_version_apply=_applied,
    )
    with context.begin_transaction():
        _take_the_lock(connection)
        if not sqlite:  # a table lock: waited for briefly, then tried again (bot.store.migrate)
            wait_ms = max(1, int(1000 * config.attributes.get("lock_timeout", MIGRATION_LOCK_TIMEOUT)))
            connection.exec_driver_sql(f"SET LOCAL lock_timeout = '{wait_ms}ms'")  # 0: for ever
        config.attributes["from"] = context.get_context().get_current_revision()
        orphans = _orphans(connection) if sqlite else set()
        context.run_migrations()
        if sqlite:
            _no_new_orphans(connection, orphans)


def _orphans(connection: Connection) -> set[tuple[object, ...]]:
    """SQLite's rows whose foreign key points nowhere: (table, rowid, parent table)."""
    return {tuple(row[:3]) for row in connection.exec_driver_sql("PRAGMA foreign_key_check")}


def _no_new_orphans(connection: Connection, before: set[tuple[object, ...]]) -> None:
    """The migrations (run with foreign keys off on SQLite) left no row pointing nowhere that
    was not so before: else the upgrade fails whole, naming the first such row."""
    new = sorted(_orphans(connection) - before, key=str)
    if new:
        from bot.store.migrate import MigrationFailed

        table, rowid, parent = new[0]
        start = config.attributes.get("from") or "no revision (empty)"
        raise MigrationFailed(
            f"the migrations left {len(new)} row(s) pointing nowhere, e.g. {table} rowid "
            f"{rowid} (its {parent} row is gone); nothing of this upgrade was kept, the "
            f"database is still at {start}")


async def run_async_migrations() -> None:
    engine = serialised(make_engine(database_url()))
    async with engine.connect() as connection:
        await connection.run_sync(do_run_migrations)
        await connection.commit()
    await engine.dispose()


def run_migrations_offline() -> None:
    context.configure(url=database_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    connection = config.attributes.get("connection")
    if connection is not None:
        do_run_migrations(connection)
    else:
        asyncio.run(run_async_migrations())
