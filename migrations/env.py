"""Alembic environment: async, for SQLite (aiosqlite) and PostgreSQL (asyncpg)."""

from __future__ import annotations

import asyncio
import os
from logging.config import fileConfig

from alembic import context
from sqlalchemy import event
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.config import DEFAULT_DATABASE_URL
from bot.store.db import make_engine
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
MIGRATION_WAIT = 600  # seconds a migrate waits for another one to finish


def serialised(engine: AsyncEngine) -> AsyncEngine:
    """The migrations' engine: on SQLite each transaction BEGIN IMMEDIATE, DDL inside it."""
    if engine.dialect.name != "sqlite":
        return engine

    @event.listens_for(engine.sync_engine, "connect")
    def _driver_transactions_off(dbapi_conn: object, _record: object) -> None:
        dbapi_conn.isolation_level = None  # type: ignore[attr-defined]
        cur = dbapi_conn.cursor()  # type: ignore[attr-defined]
        cur.execute(f"PRAGMA busy_timeout={MIGRATION_WAIT * 1000}")
        # A table copy (batch_alter_table) drops the old table: with foreign keys on, SQLite
        # deletes its rows first and ON DELETE CASCADE takes the children (a copy of `threads`
        # emptied comments, analyses, verdicts). Off for the migrations, as alembic advises;
        # what they leave pointing nowhere is checked before the commit (`_no_new_orphans`).
        cur.execute("PRAGMA foreign_keys=OFF")
        cur.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _begin_immediate(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def _take_the_lock(connection: Connection) -> None:
    if connection.dialect.name == "postgresql":
        timeout = connection.exec_driver_sql("SHOW lock_timeout").scalar()
        connection.exec_driver_sql(f"SET LOCAL lock_timeout = '{MIGRATION_WAIT}s'")
        connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
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
