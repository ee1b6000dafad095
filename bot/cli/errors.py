"""What `rltracker` prints when a command fails.

A failure the user can act on is one line, `rltracker COMMAND: <what, where, what to do>`, and a
non-zero exit: a `UserError` (a bad setting or argument is a `SettingError`, exit 2) or one of
the library errors below that mean the same (the database refuses the connection, GitHub is
unreachable or refuses the credentials, a file cannot be read, the port is taken). Anything
else is a bug: its traceback is printed, with a line asking to report it. `--debug` (or
RLTRACKER_LOG_LEVEL=DEBUG) prints the traceback of the known failures too.
"""

from __future__ import annotations

import errno
import os
import sys
import traceback
from collections.abc import Iterator
from typing import Any, TextIO
from urllib.parse import urlsplit

from bot.config import (
    DEFAULT_API_URL,
    DEFAULT_DATABASE_URL,
    UserError,
    describe_value,
    normalise_database_url,
    redact_url,
    sqlite_path,
)

# Files of the libraries that talk to the database: an OSError raised inside them (asyncpg
# raises ConnectionRefusedError as it is) is the database being unreachable.
_DATABASE_LIBRARIES = ("/asyncpg/", "/sqlalchemy/", "/aiosqlite/", "/alembic/")
# PostgreSQL SQLSTATE classes of a refused session: connection exception, invalid
# authorization, unknown database, too many connections, server starting or shutting down.
_REFUSED_SQLSTATES = ("08", "28", "3D", "53", "57P")


def _first_line(text: object) -> str:
    lines = str(text).strip().splitlines()
    return lines[0].strip() if lines else ""


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _raised_in_database_library(exc: BaseException) -> bool:
    frames = traceback.extract_tb(exc.__traceback__)
    return any(part in frame.filename for frame in frames for part in _DATABASE_LIBRARIES)


def _database_url() -> str:
    return normalise_database_url(os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL)


def _database_subject() -> str:
    return describe_value("DATABASE_URL", redact_url(_database_url()))


def _sqlstate(exc: BaseException) -> str | None:
    for link in _chain(exc):
        state = getattr(link, "sqlstate", None)
        if isinstance(state, str):
            return state
    return None


# What a query says of a table or column the database does not have: SQLite's messages,
# PostgreSQL's undefined_table and undefined_column.
_SQLITE_MISSING = ("no such table", "no such column", "has no column named")
_MISSING_SQLSTATES = ("42P01", "42703")


def _current_revision() -> tuple[str | None] | None:
    """(the database's migration revision,), None when it cannot be read."""
    import asyncio

    from bot.store.db import make_engine
    from bot.store.migrate import current_revision

    async def read() -> str | None:
        engine = make_engine(_database_url())
        try:
            return await current_revision(engine)
        finally:
            await engine.dispose()

    try:
        return (asyncio.run(read()),)
    except Exception:  # noqa: BLE001 - only a better message is lost
        return None


def _schema_missing(subject: str, detail: str) -> str:
    """A table or column missing: no migrations run yet, or the database behind or ahead of
    the code (the commands and `serve` check the revision before they start,
    bot.store.migrate.check_revision; a migrate run meanwhile is told here, in its words)."""
    from bot.store.migrate import revision_mismatch

    read = _current_revision()
    if read is not None and read[0] is not None:
        problem = revision_mismatch(read[0], subject)
        if problem is not None:
            return f"{problem.message} ({detail})"
    return f"{subject}: the database has no tables ({detail}); run `rltracker migrate` first"


# SQLite's primary result codes (the sqlite3 module's `sqlite_errorname`, from Python 3.11)
# and the start of its messages, for a driver that does not name the code.
_SQLITE_KINDS = (
    (("SQLITE_READONLY",), ("attempt to write a readonly database",), "readonly"),
    (("SQLITE_FULL",), ("database or disk is full",), "full"),
    (("SQLITE_CORRUPT", "SQLITE_NOTADB"), ("database disk image is malformed",
                                           "file is not a database"), "damaged"),
    (("SQLITE_IOERR",), ("disk i/o error",), "io"),
    (("SQLITE_CANTOPEN",), ("unable to open database file",), "cannot_open"),
)


def _sqlite_kind(orig: BaseException, detail: str) -> str | None:
    from bot.store.db import is_sqlite_locked

    if is_sqlite_locked(orig):  # BUSY, LOCKED: the one judgement of it (bot.store.db)
        return "locked"
    name = str(getattr(orig, "sqlite_errorname", "") or "")
    lowered = detail.lower()
    for names, messages, kind in _SQLITE_KINDS:
        if any(name == n or name.startswith(n + "_") for n in names):
            return kind
        if lowered.startswith(messages):
            return kind
    return None


def _sqlite_failure(subject: str, path: Any, orig: BaseException, detail: str) -> str:
    """What happened to the SQLite database, said as what it is: a database another process
    holds, a full disk, a read-only file, a damaged file, one that cannot be opened."""
    where = os.path.abspath(path)
    kind = _sqlite_kind(orig, detail)
    if kind == "locked":
        return (f"{subject}: the SQLite database {where} is locked by another process ({detail}): "
                "one `rltracker serve` (or migrate) writes to it at a time; wait for the other "
                "command or stop it, and use PostgreSQL for several processes")
    if kind == "readonly":
        return (f"{subject}: the SQLite database {where} is read-only ({detail}): give this user "
                "write access to the file, its -wal and -shm files and its folder, or mount "
                "the volume read-write")
    if kind == "full":
        return (f"{subject}: the disk holding the SQLite database {where} is full ({detail}); "
                "free space there (nothing was written)")
    if kind == "damaged":
        return (f"{subject}: {where} is not a SQLite database or is damaged ({detail}): check "
                "DATABASE_URL names the tracker's database, or restore it from a backup")
    if kind == "io":
        return (f"{subject}: the disk under the SQLite database {where} failed to read or write "
                f"({detail}); check the disk and the mount")
    hint = ""
    if not path.parent.is_dir():
        hint = f"; its folder {os.path.abspath(path.parent)} does not exist: `rltracker migrate` creates it"
    if kind == "cannot_open":
        return f"{subject}: cannot open the SQLite database ({detail}){hint}"
    return f"{subject}: the SQLite database {where} failed ({detail}){hint}"


def _database_failure(exc: BaseException) -> str | None:
    from sqlalchemy import exc as sa

    subject = _database_subject()
    if isinstance(exc, sa.DBAPIError):
        detail = _first_line(exc.orig)
        if isinstance(exc, sa.OperationalError | sa.ProgrammingError) and any(
                missing in detail for missing in _SQLITE_MISSING):
            return _schema_missing(subject, detail)
        if _sqlstate(exc) in _MISSING_SQLSTATES:
            return _schema_missing(subject, detail)
        from bot.store.db import LOCK_TIMEOUT, is_lock_not_granted

        if is_lock_not_granted(exc):

            return (f"{subject}: a lock another session holds was not granted within "
                    f"{LOCK_TIMEOUT} ({detail}); a migration or a transaction left open (psql) "
                    "holds it: try again once it has finished (pg_locks shows who holds it)")
        path = sqlite_path(_database_url())
        if path is not None and isinstance(exc, sa.OperationalError | sa.DatabaseError):
            return _sqlite_failure(subject, path, exc.orig, detail)
        state = _sqlstate(exc)
        if isinstance(exc, sa.OperationalError | sa.InterfaceError) or (
            state is not None and state.startswith(_REFUSED_SQLSTATES)
        ):
            if state == "3D000":  # invalid_catalog_name: the database does not exist
                return (f"{subject}: PostgreSQL refused the connection ({detail}); create it "
                        "(CREATE DATABASE, or createdb) and run `rltracker migrate`")
            return f"{subject}: PostgreSQL refused the connection ({detail})"
        return None
    if isinstance(exc, OSError | TimeoutError) and _raised_in_database_library(exc):
        reason = _first_line(exc) or "timed out"
        return f"{subject}: cannot connect ({reason}); is the database server running there?"
    return None


def _github_subject() -> str:
    return describe_value("GITHUB_API_URL", os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL)


def _credentials_in_use() -> str:
    if os.environ.get("GITHUB_APP_ID"):
        return "check GITHUB_APP_ID and the app's private key"
    if os.environ.get("GITHUB_TOKEN"):
        return "check GITHUB_TOKEN (expired or revoked?)"
    return "set GITHUB_TOKEN or the app's credentials (GITHUB_APP_ID and GITHUB_PRIVATE_KEY)"


def _is_github_host(host: str | None, port: int | None) -> bool:
    api = urlsplit(os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL)
    api_port = api.port or (443 if api.scheme == "https" else 80)
    return host == api.hostname and (port is None or port == api_port)


def _http_failure(exc: BaseException) -> str | None:
    import aiohttp
    import gidgethub

    if isinstance(exc, gidgethub.GraphQLAuthorizationFailure):
        response = exc.response if isinstance(exc.response, dict) else {}
        detail = _first_line(response.get("message") or "Unauthorized")
        return f"GitHub ({_github_subject()}) answered 401 ({detail}); {_credentials_in_use()}"
    if isinstance(exc, gidgethub.RateLimitExceeded):
        return f"GitHub ({_github_subject()}) says the rate limit is used up ({_first_line(exc)}); try again later"
    if isinstance(exc, gidgethub.BadRequest) and int(exc.status_code) == 401:
        detail = _first_line(exc) or "Unauthorized"
        return f"GitHub ({_github_subject()}) answered 401 ({detail}); {_credentials_in_use()}"
    if isinstance(exc, aiohttp.ClientConnectorError):
        reason = _first_line(exc.os_error.strerror or exc.os_error) or "connection failed"
        if _is_github_host(exc.host, exc.port):
            return f"{_github_subject()}: cannot connect ({reason}); is GitHub reachable from here?"
        return f"cannot connect to {exc.host}:{exc.port} ({reason})"
    if isinstance(exc, aiohttp.ClientResponseError):
        return f"{exc.request_info.real_url} answered {exc.status} {exc.message}"
    return None


def _file_failure(exc: BaseException) -> str | None:
    if isinstance(exc, OSError) and exc.errno == errno.EADDRINUSE:
        return f"{_first_line(exc)}; stop the process using the port or choose another --port / PORT"
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or _first_line(exc)}"
    return None


def explain(exc: BaseException) -> tuple[str, int] | None:
    """(one line, exit status) for a failure the user can act on; None for anything else."""
    if isinstance(exc, UserError):
        return exc.message, exc.exit_code
    for describe, status in ((_http_failure, 1), (_database_failure, 1), (_file_failure, 2)):
        message = describe(exc)
        if message is not None:
            return message, status
    return None


def report_failure(command: str, exc: BaseException, *, debug: bool, err: TextIO | None = None) -> int:
    """Print the failure of `rltracker COMMAND` and return the exit status."""
    err = err or sys.stderr
    known = explain(exc)
    if known is None:
        traceback.print_exception(exc, file=err)
        print(f"rltracker {command}: unexpected {type(exc).__name__}: this is a bug; please report "
              "it with the traceback above", file=err, flush=True)
        return 1
    message, status = known
    if debug:
        traceback.print_exception(exc, file=err)
    print(f"rltracker {command}: " + " ".join(message.split()), file=err, flush=True)
    return status
