"""Alembic from code: upgrade to head, and tell whether a database is behind."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from datetime import UTC
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.exc import SAWarning
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.config import ALEMBIC_INI, MIGRATIONS_DIR, UserError


def alembic_config(database_url: str) -> Config:
    cfg = Config(str(ALEMBIC_INI))
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["database_url"] = database_url
    cfg.attributes["configure_logging"] = False
    return cfg


class MigrationFailed(UserError):
    """A migration's statement failed (upgrade64): which migration, what the database said,
    and the revision the database stayed at (the upgrade is one transaction: nothing of it is
    kept)."""


class MigrationWaitRanOut(UserError):
    """Another migrate held the lock for longer than this one waits (`migrate --wait`): the
    time waited said, nothing changed (ops64)."""


class SchemaMismatch(UserError):
    """The database is not at this code's migration (ops64): behind it, or at a revision this
    code does not know. Every command using the store refuses it with this one line, exit 1
    (`check_revision`)."""


class UnknownRevision(SchemaMismatch):
    """The database is at a revision this code does not know: a newer version migrated it."""


class BehindMigrations(SchemaMismatch):
    """The database is at an older revision (or none): `rltracker migrate` brings it to head."""


def behind_message(current: str | None) -> str:
    return (f"the database is behind the migrations (it is at {current or 'no revision'}, "
            f"this code needs {head_revision()}); run `rltracker migrate` first")


def unknown_revision_message(current: str) -> str:
    return (f"the database is at migration {current}, which this version does not know (its "
            f"latest is {head_revision()}): a newer version has migrated it; run that version "
            "(a rolled-back deploy cannot use the database; nothing was changed)")


MIGRATION_WAIT = 600  # seconds a migrate waits for another one, or a table lock (`migrate --wait`)
# PostgreSQL: how long one statement of the migrations waits for a table lock another session
# holds before the upgrade is rolled back and tried again (leftc66). While an ALTER TABLE
# waits, every later query on its table queues behind it: with the app's 30 s lock_timeout a
# rolling deploy's migrate held the running replicas' requests on the table for 30 s (GitHub
# waits 10 s for a webhook's answer, and does not deliver it again by itself), then failed.
MIGRATION_LOCK_TIMEOUT = 3.0  # seconds
RETRY_FIRST, RETRY_MOST = 1.0, 30.0  # seconds between tries: doubling from the first, capped


def upgrade(database_url: str, revision: str = "head", *, wait: float | None = None,
            on_wait: Callable[[str], None] | None = None) -> None:
    """Run `alembic upgrade` (blocking: call from a thread inside an event loop). One upgrade
    at a time and all of it or nothing (migrations/env.py). A statement that fails raises
    MigrationFailed naming the migration; a database at a revision this code does not know
    raises UnknownRevision. On PostgreSQL a table lock not granted within
    MIGRATION_LOCK_TIMEOUT rolls the upgrade back and it is tried again, backing off, for at
    most `wait` seconds (default MIGRATION_WAIT) in all; `on_wait` is told once, naming the
    sessions holding locks; the wait running out raises MigrationWaitRanOut naming them."""
    import time

    from sqlalchemy.exc import DBAPIError

    from bot.store.db import is_lock_not_granted

    budget = MIGRATION_WAIT if wait is None else wait
    started = time.monotonic()
    deadline = started + budget
    pause = RETRY_FIRST
    told = False
    while True:
        cfg = alembic_config(database_url)
        # seconds left to wait for another migrate (migrations/env.py)
        cfg.attributes["wait"] = max(0.0, deadline - time.monotonic())
        # a table lock: waited for at most this long a try, never past the deadline
        cfg.attributes["lock_timeout"] = min(MIGRATION_LOCK_TIMEOUT, cfg.attributes["wait"])
        if on_wait is not None:  # told once when it starts waiting
            cfg.attributes["on_wait"] = on_wait
        try:
            _upgrade_once(cfg, revision)
            return
        except DBAPIError as exc:
            if not is_lock_not_granted(exc):
                raise
            holders = describe_lock_holders(database_url)
            if time.monotonic() >= deadline:
                raise MigrationWaitRanOut(
                    f"waited {time.monotonic() - started:.0f} s for a lock held by {holders}, trying again "
                    f"every {RETRY_FIRST:.0f} to {RETRY_MOST:.0f} s: nothing was changed, the "
                    f"database is still at {cfg.attributes.get('from') or 'no revision (empty)'}; "
                    "end that transaction (a session idle in transaction: "
                    "SELECT pg_terminate_backend(pid)), or run `rltracker migrate` again with a "
                    "longer --wait") from exc
            if on_wait is not None and not told:
                on_wait(f"a lock it needs (on a table or its rows) is held by {holders}: trying again, at most "
                        f"{budget:.0f} s in all")
                told = True
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * 2, RETRY_MOST)


def describe_lock_holders(database_url: str, most: int = 3) -> str:
    """The sessions other than this one that hold a lock on a table of this database, the
    longest in a transaction first: "pid 4242 (application 'rltracker', idle in transaction
    since 2026-01-02 03:04:05 UTC, on threads, comments)"; "a session that has let it go
    since" when none does any more."""
    import asyncio

    from sqlalchemy import text

    from bot.store.db import make_engine

    query = text(
        "SELECT a.pid, a.application_name, a.state, a.xact_start, "
        "string_agg(DISTINCT c.relname, ', ') FROM pg_locks l "
        "JOIN pg_stat_activity a ON a.pid = l.pid JOIN pg_class c ON c.oid = l.relation "
        "WHERE l.granted AND l.locktype = 'relation' AND c.relkind IN ('r', 'p') "
        "AND c.relnamespace = current_schema()::regnamespace AND l.pid <> pg_backend_pid() "
        "AND a.datname = current_database() "
        "GROUP BY a.pid, a.application_name, a.state, a.xact_start "
        "ORDER BY a.xact_start NULLS LAST, a.pid LIMIT :most")

    async def read() -> list[Any]:
        engine = make_engine(database_url)
        try:
            async with engine.connect() as conn:
                return list(await conn.execute(query, {"most": most}))
        finally:
            await engine.dispose()

    try:
        rows = asyncio.run(read())
    except Exception:  # noqa: BLE001 - the holders only name the cause; the failure is said anyway
        return "another session"
    if not rows:
        return "a session that has let it go since"
    return "; ".join(
        f"pid {pid} (application {name or '(none)'!r}, {state or 'unknown state'}"
        f"{f' since {since.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC' if since is not None else ''}"
        f", on {tables})"
        for pid, name, state, since, tables in rows)


def _upgrade_once(cfg: Config, revision: str) -> None:
    from alembic.util import CommandError
    from sqlalchemy.exc import DBAPIError

    with warnings.catch_warnings():
        # On SQLite alembic's batch copy of a table (0013's `comments`) reflects the tables it
        # refers to, and SQLAlchemy warns that it skips `threads`' expression index, which
        # the copy leaves alone: two lines of stderr at every first `make run`, nothing to do.
        warnings.filterwarnings("ignore", category=SAWarning,
                                message="Skipped unsupported reflection of expression-based index")
        try:
            command.upgrade(cfg, revision)
        except CommandError as exc:
            current = cfg.attributes.get("from")
            if current is not None and current not in known_revisions():
                raise UnknownRevision(unknown_revision_message(current)) from exc
            raise
        except DBAPIError as exc:
            failed = _failed_migration(cfg.attributes)
            if failed is None or _not_the_migration(exc):
                raise
            raise MigrationFailed(_failure_message(failed, cfg.attributes.get("from"), exc)) from exc


def known_revisions() -> set[str]:
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    return {rev.revision for rev in script.walk_revisions()}


def _failed_migration(attributes: dict[str, Any]) -> Any:
    """The migration that was running when a statement failed: the one after the last
    applied (None when no migration had started: the failure was reaching the database)."""
    if "from" not in attributes:
        return None
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    path = list(reversed(list(script.iterate_revisions("head", attributes["from"]))))
    done = len(attributes.get("applied", []))
    return path[done] if done < len(path) else None


def _not_the_migration(exc: BaseException) -> bool:
    """A failure of the database itself, which bot.cli.errors tells as such: locked, a lock
    not granted in time, read-only, full, damaged, unreachable."""
    from bot.store.db import lock_waited_out, refuses_writes

    orig = getattr(exc, "orig", None)
    state = getattr(orig, "sqlstate", None) or ""
    text = str(orig or exc).lower()
    return refuses_writes(exc) or lock_waited_out(exc) or state.startswith(("08", "57P")) or (
        text.startswith(("database disk image is malformed", "file is not a database")))


def _failure_message(failed: Any, start: str | None, exc: BaseException) -> str:
    orig = getattr(exc, "orig", exc)
    lines = str(orig).strip().splitlines()
    detail = lines[0].strip() if lines else type(orig).__name__
    cause: BaseException | None = orig
    seen = 0
    while cause is not None and seen < 5:  # asyncpg's DETAIL: the row a constraint refused
        extra = getattr(cause, "detail", None)
        if isinstance(extra, str) and extra and extra not in detail:
            detail = f"{detail}; {extra}"
            break
        cause = cause.__cause__ or cause.__context__
        seen += 1
    title = (failed.doc or "").strip().splitlines()[0] if failed.doc else ""
    return (f"migration {failed.revision} ({title}) failed: {detail}; nothing of this upgrade "
            f"was kept, the database is still at {start or 'no revision (empty)'}: fix what "
            "the error names, then run `rltracker migrate` again")


def head_revision() -> str | None:
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    return script.get_current_head()


async def current_revision(engine: AsyncEngine) -> str | None:
    async with engine.connect() as conn:
        return await conn.run_sync(
            lambda sync_conn: MigrationContext.configure(sync_conn).get_current_revision()
        )


async def is_up_to_date(engine: AsyncEngine) -> bool:
    return await current_revision(engine) == head_revision()


def revision_mismatch(current: str | None, subject: str = "") -> SchemaMismatch | None:
    """The error for a database at `current` (None: no revision), None at head. `subject`
    (`DATABASE_URL=...`) starts the message when given. The one judgement of a revision:
    `check_revision` (serve, the commands) and /healthz, /metrics (bot.site.api) use it."""
    if current == head_revision():
        return None
    prefix = f"{subject}: " if subject else ""
    if current is not None and current not in known_revisions():
        return UnknownRevision(prefix + unknown_revision_message(current))
    return BehindMigrations(prefix + behind_message(current))


def _subject(engine: AsyncEngine) -> str:
    from bot.config import describe_value, redact_url

    return describe_value("DATABASE_URL",
                          redact_url(engine.url.render_as_string(hide_password=False)))


async def check_revision(engine: AsyncEngine) -> None:
    """The one check of the database's revision before anything uses the store (ops64):
    `serve`, every command that reads or writes it (bot.cli), `rules` when it reads the
    cache. Raises SchemaMismatch (one line, exit 1) for a database behind this code (not
    migrated yet: queries would fail deep inside) or ahead of it (a newer version migrated
    it: an older version's cron job would write into the newer schema as the older code
    did). Nothing is written. A database that does not answer raises the driver's error."""
    problem = revision_mismatch(await current_revision(engine), _subject(engine))
    if problem is not None:
        raise problem


def require_revision(database_url: str) -> None:
    """`check_revision` on an engine of its own (blocking: for the commands, before they run)."""
    import asyncio

    from bot.store.db import make_engine

    async def check() -> None:
        engine = make_engine(database_url)
        try:
            await check_revision(engine)
        finally:
            await engine.dispose()

    asyncio.run(check())


def migrate_command(args: object) -> int:
    from bot.config import Settings, sqlite_path

    settings = Settings.from_env(database_may_be_absent=True)
    path = sqlite_path(settings.database_url)
    if path is not None:  # checked: it can be created (SQLite itself creates only the file)
        path.parent.mkdir(parents=True, exist_ok=True)
    def say_waiting(line: str) -> None:
        import sys

        print(f"rltracker migrate: {line}", file=sys.stderr, flush=True)

    try:
        upgrade(settings.database_url, wait=getattr(args, "wait", None), on_wait=say_waiting)
    except UserError as exc:  # one line (bot.cli.errors), the database named
        from bot.config import describe_value, redact_url

        exc.message = f"{describe_value('DATABASE_URL', redact_url(settings.database_url))}: {exc.message}"
        raise
    print(f"database at {head_revision()}")
    return 0
