"""Engines and sessions for SQLite (aiosqlite, WAL) and PostgreSQL (asyncpg)."""

from __future__ import annotations

import sqlite3
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
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
LOCK_NOT_AVAILABLE = "55P03"  # the SQLSTATE of a lock not granted within lock_timeout
# The statement timeout of the code running inside `bounded_statements` (the web requests and
# the webhook's inbox writer, bot.app), in seconds; None outside it (the inbox worker, the
# nightly job, the export, commands, migrations: their statements run to their end). Applied
# with SET LOCAL when a transaction begins on PostgreSQL; SQLite has no statement timeout.
_STATEMENT_TIMEOUT: ContextVar[float | None] = ContextVar("statement_timeout", default=None)
QUERY_CANCELED = "57014"  # PostgreSQL's SQLSTATE for a statement cut by statement_timeout
SQLITE_BUSY_TIMEOUT = 30.0  # seconds a SQLite statement waits for another connection's lock


@contextmanager
def bounded_statements(seconds: float | None) -> Iterator[None]:
    """Statements begun inside this block (and in tasks created inside it) are cut by
    PostgreSQL after `seconds`; None: unbounded."""
    token = _STATEMENT_TIMEOUT.set(seconds)
    try:
        yield
    finally:
        _STATEMENT_TIMEOUT.reset(token)


def _links(exc: BaseException) -> Iterator[BaseException]:
    """`exc`, what it wraps (SQLAlchemy's `.orig`: the driver's error) and what it was raised
    from, each once: where a driver's code is looked for."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        orig = getattr(current, "orig", None)
        if isinstance(orig, BaseException):
            yield orig
        current = current.__cause__ or current.__context__


def _carries_sqlstate(exc: BaseException, sqlstate: str) -> bool:
    """`exc`, or anything it wraps or was raised from, carries PostgreSQL's `sqlstate`."""
    return any(getattr(link, "sqlstate", None) == sqlstate for link in _links(exc))


def is_statement_timeout(exc: BaseException) -> bool:
    """`exc` (or what it wraps) is PostgreSQL cutting a statement at statement_timeout."""
    return _carries_sqlstate(exc, QUERY_CANCELED)


def is_lock_not_granted(exc: BaseException) -> bool:
    """`exc` (or what it wraps) is PostgreSQL's lock_timeout: a lock another session holds."""
    return _carries_sqlstate(exc, LOCK_NOT_AVAILABLE)


# SQLite's primary result codes for a lock another connection holds (the write lock: BUSY; a
# table of a shared cache: LOCKED), and the start of their messages for an error without code.
_SQLITE_LOCKED_CODES = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
SQLITE_LOCKED_MESSAGES = ("database is locked", "database table is locked")


def is_sqlite_locked(exc: BaseException) -> bool:
    """`exc` (or what it wraps) is SQLite's "database is locked": another connection held the
    lock for longer than this one's busy_timeout (or SQLite did not wait, see `switch_to_wal`)."""
    for link in _links(exc):
        code = getattr(link, "sqlite_errorcode", None)
        if isinstance(code, int):
            if code & 0xFF in _SQLITE_LOCKED_CODES:
                return True
        elif isinstance(link, sqlite3.OperationalError) and str(link).lower().startswith(
                SQLITE_LOCKED_MESSAGES):
            return True
    return False


def lock_waited_out(exc: BaseException) -> bool:
    """`exc` says a lock another session holds was not granted within the wait, on either
    database: PostgreSQL's lock_timeout (55P03), SQLite's "database is locked"."""
    return is_lock_not_granted(exc) or is_sqlite_locked(exc)


def take_sqlite_write_lock(execute: Callable[[str], object], wait: float, *,
                           quiet: float | None = None,
                           on_wait: Callable[[], None] | None = None) -> None:
    """BEGIN IMMEDIATE on a connection without a transaction open, waiting at most `wait`
    seconds for another connection's write lock (SQLite's busy handler, in the driver's
    thread: no event loop is held). With `on_wait`: it is told once the lock has not come
    within `quiet` seconds (the running app takes the lock too, for a moment). The lock
    not come raises the driver's "database is locked"; busy_timeout is left at `wait`."""
    started = time.monotonic()
    if on_wait is not None and quiet is not None:
        execute(f"PRAGMA busy_timeout={int(min(quiet, wait) * 1000)}")
        try:
            execute("BEGIN IMMEDIATE")
            return
        except Exception as exc:
            if not is_sqlite_locked(exc):
                raise
        on_wait()
    remaining = max(0.0, wait - (time.monotonic() - started))
    execute(f"PRAGMA busy_timeout={int(remaining * 1000)}")
    try:
        execute("BEGIN IMMEDIATE")
    finally:
        execute(f"PRAGMA busy_timeout={int(wait * 1000)}")


def switch_to_wal(execute: Callable[[str], object], wait: float, *, quiet: float | None = None,
                  on_wait: Callable[[], None] | None = None) -> None:
    """PRAGMA journal_mode=WAL, waiting at most `wait` seconds for another connection's
    write lock. A database still in rollback mode (a new one) whose write lock another
    connection holds answers the switch "database is locked" AT ONCE: SQLite calls no busy
    handler for it (the switch reads the database first, then asks for the write lock, and
    waiting then could deadlock). Two first `rltracker migrate` of one new database met so,
    the second failing at its connection's first pragma (ops71). Here the write lock is
    waited for with BEGIN IMMEDIATE (which does wait), let go, and the switch tried again.
    A database already in WAL answers at once. `quiet`, `on_wait`: `take_sqlite_write_lock`."""
    deadline = time.monotonic() + wait
    while True:
        try:
            execute("PRAGMA journal_mode=WAL")
            return
        except Exception as exc:
            if not is_sqlite_locked(exc) or time.monotonic() >= deadline:
                raise
        take_sqlite_write_lock(execute, max(0.0, deadline - time.monotonic()), quiet=quiet,
                               on_wait=on_wait)
        execute("ROLLBACK")
        on_wait = None  # told once


# SQLite result codes (primary) and PostgreSQL SQLSTATEs saying the database takes no writes
# at all, whatever the row: read-only, disk full, an I/O error.
_NO_WRITES_SQLITE = frozenset({sqlite3.SQLITE_READONLY, sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR,
                               sqlite3.SQLITE_CANTOPEN})
_NO_WRITES_SQLSTATE_PREFIXES = ("25006", "53", "58")  # read-only transaction, resources, system


def refuses_writes(exc: BaseException) -> bool:
    """`exc` says the database takes no writes now (read-only, disk full, I/O error)."""
    for link in _links(exc):
        code = getattr(link, "sqlite_errorcode", None)
        if isinstance(code, int) and code & 0xFF in _NO_WRITES_SQLITE:
            return True
        state = getattr(link, "sqlstate", None)
        if isinstance(state, str) and state.startswith(_NO_WRITES_SQLSTATE_PREFIXES):
            return True
    return False


# Files of the libraries that talk to the database: an OSError raised inside them
# (asyncpg's ConnectionRefusedError, a timeout) is the database not answering.
_DATABASE_LIBRARIES = ("/asyncpg/", "/sqlalchemy/", "/aiosqlite/")
# SQLite reports a schema it lacks as an OperationalError, as it does a locked or missing
# file: those are a bug or an unmigrated database (a 500 and a traceback), not "try later".
_SQLITE_SCHEMA_ERRORS = ("no such table", "no such column")


def database_unreachable(exc: BaseException) -> bool:
    """`exc` says the database did not answer (down, restarting, locked, unreadable): a web
    request answers 503 "try again later" for it; anything else is a bug."""
    from sqlalchemy.exc import InterfaceError, OperationalError

    if isinstance(exc, OperationalError | InterfaceError):
        return not str(getattr(exc, "orig", exc)).startswith(_SQLITE_SCHEMA_ERRORS)
    if isinstance(exc, OSError | TimeoutError):
        frames = traceback.extract_tb(exc.__traceback__)
        return any(part in frame.filename for frame in frames for part in _DATABASE_LIBRARIES)
    return False


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
        engine = create_async_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT},
                                     **kwargs)

        @event.listens_for(engine.sync_engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            def execute(sql: str) -> None:
                cur.execute(sql)
                cur.fetchall()  # the statement run to its end: it holds no lock after

            try:
                switch_to_wal(execute, SQLITE_BUSY_TIMEOUT)
                cur.execute("PRAGMA synchronous=NORMAL")
                cur.execute("PRAGMA foreign_keys=ON")
                cur.execute(f"PRAGMA busy_timeout={int(SQLITE_BUSY_TIMEOUT * 1000)}")
            finally:
                cur.close()

        return engine
    kwargs.setdefault("pool_size", 10)
    kwargs.setdefault("max_overflow", 10)
    kwargs.setdefault("pool_pre_ping", True)
    connect_args = dict(kwargs.pop("connect_args", None) or {})
    server_settings = dict(connect_args.get("server_settings") or {})
    server_settings.setdefault("lock_timeout", LOCK_TIMEOUT)
    connect_args["server_settings"] = server_settings
    engine = create_async_engine(url, connect_args=connect_args, **kwargs)

    @event.listens_for(engine.sync_engine, "begin")
    def _bound_statements(conn: Any) -> None:
        seconds = _STATEMENT_TIMEOUT.get()
        if seconds is None:
            return
        # On the DBAPI cursor: the Connection's transaction is not set up yet (executing on
        # it would begin another). asyncpg's adapter opens the transaction with this statement.
        cursor = conn.connection.cursor()
        try:
            cursor.execute(f"SET LOCAL statement_timeout = {max(1, round(seconds * 1000))}")
        finally:
            cursor.close()

    return engine


def make_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)
