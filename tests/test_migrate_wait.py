"""`rltracker migrate` waiting for another one (ops64). Two replicas starting together both run
`rltracker migrate && exec rltracker serve`: the second waits for the first's lock (PostgreSQL:
the migration's advisory lock; SQLite: the database's write lock). It said nothing while it
waited (up to 10 minutes): a deploy that seemed hung. It says one line when it starts waiting;
and should the wait run out, the line says how long it waited (PostgreSQL said "not granted
within 30s", the app's lock_timeout, after 10 minutes). The other migration is stood for by a
session holding the same lock; each `migrate` is a real process, the timeouts hang guards."""

from __future__ import annotations

import asyncio
import os
import re
import select
import sqlite3
import subprocess
import sys
import time
from typing import Any

from bot.store.migrate import head_revision
from tests.test_cli_errors import CLEAN_ENV, HANG_GUARD

MIGRATION_LOCK = 0x726C746D  # migrations/env.py's key


def _migrate(url: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "bot.cli", "migrate", *args],
                            env={**CLEAN_ENV, "DATABASE_URL": url}, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _first_stderr_line(proc: subprocess.Popen[str]) -> str:
    """The first line on stderr, waited for at most HANG_GUARD seconds ('' if none came)."""
    assert proc.stderr is not None
    fd = proc.stderr.fileno()
    deadline = time.monotonic() + HANG_GUARD
    buf = b""
    while b"\n" not in buf and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            buf += chunk
    return buf.decode().partition("\n")[0]


class _Held:
    """Another migration's lock, held until release()."""

    def __init__(self, url: str) -> None:
        self.url = url
        if url.startswith("sqlite"):
            self.conn: Any = sqlite3.connect(url.split("///", 1)[1], isolation_level=None)
            self.conn.execute("BEGIN IMMEDIATE")
            return
        import asyncpg

        self.loop = asyncio.new_event_loop()
        self.conn = self.loop.run_until_complete(asyncpg.connect(
            url.replace("postgresql+asyncpg://", "postgresql://")))
        self.loop.run_until_complete(self.conn.execute(f"SELECT pg_advisory_lock({MIGRATION_LOCK})"))

    def release(self) -> None:
        if self.url.startswith("sqlite"):
            self.conn.execute("ROLLBACK")
            self.conn.close()
            return
        self.loop.run_until_complete(self.conn.close())
        self.loop.close()


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=HANG_GUARD)
    return proc.returncode, out, err


def _waited_and_ran_out(status: int, out: str, err: str, *, seconds: int) -> None:
    """The waiting line, then one line saying it waited `seconds` for another migrate (not
    the app's 30 s lock_timeout), exit 1."""
    lines = err.splitlines()
    assert status == 1 and out == "" and "Traceback" not in err, err
    assert len(lines) == 2, err
    assert lines[0].startswith("rltracker migrate: waiting for another migrate"), lines
    assert lines[1].startswith("rltracker migrate: ") and f"waited {seconds} s" in lines[1], lines
    assert "30s" not in lines[1] and "30 s" not in lines[1], lines


def test_a_migrate_waiting_for_another_says_so(db_url: str) -> None:
    """Another migration holds the lock: one line says this one waits, then it goes on once
    the other is done (here: the database already at head), exit 0."""
    held = _Held(db_url)
    try:
        proc = _migrate(db_url)
        line = _first_stderr_line(proc)
    finally:
        held.release()
    status, out, rest = _finish(proc)
    assert line.startswith("rltracker migrate: waiting for another migrate"), line
    assert (status, out, rest) == (0, f"database at {head_revision()}\n", "")


def test_a_wait_that_runs_out_says_how_long_it_waited(db_url: str) -> None:
    """`migrate --wait 2` with the lock held past it: the waiting line, then one line saying
    it waited 2 s for another migrate (not the app's 30 s lock_timeout), exit 1, nothing
    changed."""
    held = _Held(db_url)
    try:
        proc = _migrate(db_url, "--wait", "2")
        status, out, err = _finish(proc)
    finally:
        held.release()
    _waited_and_ran_out(status, out, err, seconds=2)


class _TableReader:
    """A running replica's transaction left open on PostgreSQL (idle in transaction): it read
    `threads`, so it holds that table's ACCESS SHARE lock, which any ALTER TABLE waits for."""

    NAME = "stuck-replica"

    def __init__(self, url: str) -> None:
        import asyncpg

        self.loop = asyncio.new_event_loop()
        self.conn = self.loop.run_until_complete(asyncpg.connect(
            url.replace("postgresql+asyncpg://", "postgresql://"),
            server_settings={"application_name": self.NAME}))
        self.pid = self.loop.run_until_complete(self.conn.fetchval("SELECT pg_backend_pid()"))
        self.loop.run_until_complete(self.conn.execute("BEGIN; SELECT count(*) FROM threads"))

    def release(self) -> None:
        self.loop.run_until_complete(self.conn.close())
        self.loop.close()


def _revision(url: str) -> str:
    from tests.test_migrations import _execute

    [(revision,)] = asyncio.run(_execute(url, "SELECT version_num FROM alembic_version"))
    return revision


def test_a_table_lock_a_running_replica_holds_is_waited_for_naming_its_session(db_url: str) -> None:
    """PostgreSQL, a rolling deploy: the running replica holds a lock on a table the new
    migration alters (here a transaction left open after reading `threads`). The migration's
    ALTER waited the app's lock_timeout (30 s), every query on the table queued behind it
    meanwhile, then migrate failed with "not granted within 30s", naming nobody. Now each
    try waits 3 s (bot.store.migrate.MIGRATION_LOCK_TIMEOUT), the upgrade is rolled back and
    tried again with backoff within --wait, and the lines name the session holding the lock
    (pid, application, state); once it lets go, the upgrade goes through."""
    if db_url.startswith("sqlite"):
        import pytest

        pytest.skip("PostgreSQL's table locks: SQLite has one write lock, waited for as "
                    "another migrate's (the tests above)")
    from tests.test_migrations import downgrade

    downgrade(db_url, "0021")  # 0022 alters threads
    reader = _TableReader(db_url)
    try:
        status, out, err = _finish(_migrate(db_url, "--wait", "5"))
        assert _revision(db_url) == "0021"
        waiting = _migrate(db_url, "--wait", "120")
        line = _first_stderr_line(waiting)
    finally:
        reader.release()
    lines = err.splitlines()
    assert status == 1 and out == "" and "Traceback" not in err, err
    named = f"pid {reader.pid} (application '{_TableReader.NAME}', idle in transaction since "
    # Under load a first try (3 s of lock wait plus start-up) can outlast --wait 5 before its
    # "trying again" line: then the last line alone says it; every line names the session.
    assert 1 <= len(lines) <= 2 and all(named in ln for ln in lines), lines
    if len(lines) == 2:
        assert lines[0].startswith("rltracker migrate: a lock it needs (on a table or its rows) is held by"), lines
    assert re.search(r"waited \d+ s for a lock", lines[-1]) and "still at 0021" in lines[-1], lines
    assert "30s" not in err, err
    assert named in line, line
    assert _finish(waiting) == (0, f"database at {head_revision()}\n", "")
    assert _revision(db_url) == head_revision()


def _new_database_write_locked(path: Any) -> sqlite3.Connection:
    """A new SQLite database (still in rollback mode: no connection switched it to WAL yet)
    whose write lock another connection holds: what a second first `migrate` meets while the
    first one switches the new database to WAL (ops71)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    return conn


def test_a_new_database_s_switch_to_wal_waits_for_the_write_lock(tmp_path: Any) -> None:
    """Two first `rltracker migrate` of one new SQLite database: the second failed now and
    then with "database is locked" and no waiting line, from its connection's first pragma:
    SQLite answers PRAGMA journal_mode=WAL at once, without waiting, while another connection
    holds the write lock of a database still in rollback mode. Now it waits within --wait,
    saying so, and migrates once the lock is let go."""
    path = tmp_path / "new.db"
    held = _new_database_write_locked(path)
    try:
        proc = _migrate(f"sqlite+aiosqlite:///{path}")
        line = _first_stderr_line(proc)
    finally:
        held.execute("ROLLBACK")
        held.close()
    status, out, rest = _finish(proc)
    assert line.startswith("rltracker migrate: waiting for another migrate"), line
    assert (status, out, rest) == (0, f"database at {head_revision()}\n", "")
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_a_new_database_s_wal_switch_wait_runs_out_says_how_long(tmp_path: Any) -> None:
    """The same with `--wait 2` and the lock held past it: the waiting line, then the line
    saying it waited 2 s for another migrate, exit 1, the database not migrated."""
    path = tmp_path / "new.db"
    held = _new_database_write_locked(path)
    try:
        status, out, err = _finish(_migrate(f"sqlite+aiosqlite:///{path}", "--wait", "2"))
    finally:
        held.execute("ROLLBACK")
        held.close()
    _waited_and_ran_out(status, out, err, seconds=2)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == []
