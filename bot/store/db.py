"""Engines and sessions for SQLite (aiosqlite, WAL) and PostgreSQL (asyncpg)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

# How long a PostgreSQL statement of the app waits for a lock another session holds before
# it gives up (lock_not_available, 55P03: the worker retries the delivery later). Without it a
# row lock held by a stuck session (a psql left in a transaction, a hung replica) hung the
# worker that wanted the row for good: its heartbeat kept extending its lease, so no other
# worker took the row over either. Well inside the worker's lease (120 s by default); a wait
# this long is no ordinary contention (the app's transactions last milliseconds).
LOCK_TIMEOUT = "30s"


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def is_postgres(url: str) -> bool:
    return url.startswith("postgresql")


def dialect_insert(dialect: str) -> Any:
    """The INSERT construct of `dialect` ("postgresql" or "sqlite"), the one that knows
    ON CONFLICT: build a statement once per dialect with it and keep it."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    elif dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert
    else:  # pragma: no cover - only the two supported databases
        raise RuntimeError(f"unsupported database dialect {dialect!r}")
    return insert


def make_engine(url: str, **kwargs: Any) -> AsyncEngine:
    if is_sqlite(url):
        engine = create_async_engine(url, connect_args={"timeout": 30}, **kwargs)

        @event.listens_for(engine.sync_engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        return engine
    kwargs.setdefault("pool_size", 10)
    kwargs.setdefault("max_overflow", 10)
    kwargs.setdefault("pool_pre_ping", True)
    connect_args = dict(kwargs.pop("connect_args", None) or {})
    server_settings = dict(connect_args.get("server_settings") or {})
    server_settings.setdefault("lock_timeout", LOCK_TIMEOUT)
    connect_args["server_settings"] = server_settings
    return create_async_engine(url, connect_args=connect_args, **kwargs)


def make_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)
