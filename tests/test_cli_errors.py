"""A bad setting or argument, or a failure the user can act on, is one line on stderr and a
non-zero exit, never a traceback (issue 14). Each row of the issue's table runs `rltracker` as a
real process; the timeouts are hang guards, not speed assertions."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli.errors import explain, report_failure
from bot.config import (
    SettingError,
    Settings,
    UserError,
    check_env,
    describe_value,
    normalise_database_url,
    redact_url,
    sqlite_path,
)
from bot.store.migrate import head_revision
from tests.conftest import postgres_admin_urls
from tests.fakegithub import FakeGitHub, rsa_key_pair
from tests.test_crash_recovery import free_port

HANG_GUARD = 60  # seconds; each of these commands ends long before
CLEAN_ENV = {k: v for k, v in os.environ.items()
             if not k.startswith(("GITHUB_", "DATABASE_URL", "RLTRACKER_", "PORT"))}
PEM, _PUBLIC = rsa_key_pair()


def rltracker(*args: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], env={**CLEAN_ENV, **env},
                          cwd=cwd, text=True, capture_output=True, timeout=HANG_GUARD)


def prog(command: list[str]) -> str:
    """The command's name in its error lines, as argparse's prog (user72): `repos resume`,
    `papers import`, `deliveries retry`; `stats`, `preview`."""
    with_subcommands = ("papers", "deliveries", "verdicts", "repos")
    if command[0] in with_subcommands and len(command) > 1 and not command[1].startswith("-"):
        return " ".join(command[:2])
    return command[0]


def one_line(result: subprocess.CompletedProcess[str], command: str, status: int, *names: str) -> str:
    """The single stderr line of a failed command; it names every one of `names`."""
    assert result.returncode == status, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith(f"rltracker {command}: "), line
    for name in names:
        assert name in line, (name, line)
    return line


@pytest.fixture
def migrated_db(tmp_path: Path, sqlite_template: Path) -> str:
    db = tmp_path / "ok.db"
    shutil.copy(sqlite_template, db)
    return f"sqlite+aiosqlite:///{db}"


# ----------------------------------------------------------------- the issue's table
def test_replay_of_a_missing_path(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-payload.json"
    result = rltracker("replay", str(missing), "--url", "http://127.0.0.1:9/webhook",
                       "--secret", "s", env={})
    one_line(result, "replay", 2, str(missing), "No such file")


def test_unsupported_database_url_names_the_supported_forms() -> None:
    result = rltracker("migrate", env={"DATABASE_URL": "mysql://rl:hunter2-secret@db.example/rl"})
    line = one_line(result, "migrate", 2, "DATABASE_URL", "mysql://",
                    "sqlite+aiosqlite:///", "postgresql+asyncpg://")
    assert "hunter2-secret" not in result.stderr + result.stdout and "rl:***@" in line


def test_migrate_creates_a_missing_sqlite_folder(tmp_path: Path) -> None:
    db = tmp_path / "new" / "nested" / "rl.db"
    result = rltracker("migrate", env={"DATABASE_URL": f"sqlite:///{db}"})  # plain sqlite:/// too
    assert result.returncode == 0, result.stderr
    assert db.is_file()
    stats = rltracker("stats", "--json", env={"DATABASE_URL": f"sqlite+aiosqlite:///{db}"})
    assert stats.returncode == 0, stats.stderr


def test_migrate_says_one_line_and_nothing_on_stderr_twice(tmp_path: Path, db_url: str) -> None:
    """`rltracker migrate` (the first step of `make run` and of the image) on a new SQLite
    file printed SQLAlchemy's `SAWarning: Skipped unsupported reflection of expression-based
    index ix_threads_lower_repo_number` and the line of contextlib it came from: alembic's
    batch copy of `comments` (0013) reflects `threads`, whose expression index it leaves alone.
    A warning an operator cannot act on, at every first start. Run again (a restart), it is
    a no-op saying the same line. On PostgreSQL (db_url: migrated already) the second run."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'new.db'}" if db_url.startswith("sqlite") else db_url
    for _ in range(2):
        result = rltracker("migrate", env={"DATABASE_URL": url})
        assert result.returncode == 0, result.stderr
        assert result.stderr == "", result.stderr
        assert result.stdout.splitlines() == [f"database at {head_revision()}"], result.stdout


def test_sqlite_folder_that_cannot_be_created(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = rltracker("migrate", env={"DATABASE_URL": f"sqlite+aiosqlite:///{blocker}/sub/rl.db"})
    one_line(result, "migrate", 2, "DATABASE_URL", f"{blocker} is a file")
    assert not (tmp_path / "a-file" / "sub").exists()


def test_sqlite_folder_missing_for_a_command_that_only_reads(tmp_path: Path) -> None:
    folder = tmp_path / "not-yet"
    result = rltracker("stats", env={"DATABASE_URL": f"sqlite+aiosqlite:///{folder}/rl.db"})
    one_line(result, "stats", 2, "DATABASE_URL", str(folder), "rltracker migrate")
    assert not folder.exists()  # reading does not create it


def test_private_key_path_to_no_file(tmp_path: Path, migrated_db: str) -> None:
    missing = tmp_path / "app.pem"
    result = rltracker("serve", "--port", str(free_port()),
                       env={"DATABASE_URL": migrated_db, "GITHUB_WEBHOOK_SECRET": "whsecret-1",
                            "GITHUB_APP_ID": "4242", "GITHUB_PRIVATE_KEY_PATH": str(missing)})
    one_line(result, "serve", 2, "GITHUB_PRIVATE_KEY_PATH", str(missing), "No such file")


def test_private_key_that_is_not_a_pem_does_not_serve(migrated_db: str) -> None:
    not_a_key = "MIIEpAIBAAKCAQEA-this-is-no-key-but-looks-secret"
    result = rltracker("serve", "--port", str(free_port()),
                       env={"DATABASE_URL": migrated_db, "GITHUB_WEBHOOK_SECRET": "whsecret-1",
                            "GITHUB_APP_ID": "4242", "GITHUB_PRIVATE_KEY": not_a_key})
    one_line(result, "serve", 2, "GITHUB_PRIVATE_KEY", "PEM")
    assert "serving" not in result.stdout
    assert not_a_key not in result.stderr + result.stdout
    assert "MIIE" not in result.stderr


def test_a_valid_key_is_never_shown_when_something_else_is_wrong(tmp_path: Path) -> None:
    """The key is fine, the app id is not: the line names the id, the key text stays out."""
    result = rltracker("migrate", env={"DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/x.db",
                                       "GITHUB_APP_ID": "my-app", "GITHUB_PRIVATE_KEY": PEM,
                                       "GITHUB_TOKEN": "ghp_tokenvalue123456"})
    one_line(result, "migrate", 2, "GITHUB_APP_ID", "my-app", "numeric")
    body = PEM.splitlines()[1]
    assert body not in result.stderr + result.stdout
    assert "ghp_tokenvalue123456" not in result.stderr + result.stdout


@pytest.mark.parametrize("port", ["70000", "0", "http"])
def test_serve_port_out_of_range(port: str, migrated_db: str) -> None:
    result = rltracker("serve", "--port", port,
                       env={"DATABASE_URL": migrated_db, "GITHUB_WEBHOOK_SECRET": "whsecret-1"})
    one_line(result, "serve", 2, "--port", port, "1 to 65535")


@pytest.mark.parametrize("workers", ["-1", "two"])
def test_serve_workers_must_be_a_count(workers: str, migrated_db: str) -> None:
    result = rltracker("serve", "--workers", workers,
                       env={"DATABASE_URL": migrated_db, "GITHUB_WEBHOOK_SECRET": "whsecret-1"})
    one_line(result, "serve", 2, "--workers", workers, "0 or more")


def test_sqlite_takes_one_worker_process(migrated_db: str) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    result = rltracker("serve", "--dev", "--workers", "2", "--host", "127.0.0.1", "--port", port,
                       env={"DATABASE_URL": migrated_db})
    assert result.returncode != 0 and "SQLite takes one worker process" in result.stderr
    assert "Traceback" not in result.stderr


def test_port_variable_out_of_range(migrated_db: str) -> None:
    result = rltracker("serve", env={"DATABASE_URL": migrated_db, "PORT": "99999",
                                     "GITHUB_WEBHOOK_SECRET": "whsecret-1"})
    one_line(result, "serve", 2, "PORT=99999", "1 to 65535")


def test_serve_on_a_port_in_use(migrated_db: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = rltracker("serve", "--host", "127.0.0.1", "--port", str(port), "--no-scheduler",
                           env={"DATABASE_URL": migrated_db, "GITHUB_WEBHOOK_SECRET": "whsecret-1"})
    one_line(result, "serve", 1, f"127.0.0.1:{port}", "already in use", "--port")


def test_serve_dev_on_a_port_in_use_prints_no_secret(migrated_db: str) -> None:
    """user72: `serve --dev` printed "webhook secret for this run: ..." and then said the
    port was taken: a secret for a service that never ran. It is printed once the port is
    bound, beside "rltracker serving on"."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = rltracker("serve", "--dev", "--port", str(port), "--no-scheduler",
                           env={"DATABASE_URL": migrated_db})
    one_line(result, "serve", 1, f"127.0.0.1:{port}", "already in use", "--port")
    assert result.stdout == "", result.stdout


def test_nightly_cron_that_is_not_a_crontab_line(migrated_db: str) -> None:
    result = rltracker("serve", "--port", str(free_port()),
                       env={"DATABASE_URL": migrated_db, "GITHUB_WEBHOOK_SECRET": "whsecret-1",
                            "RLTRACKER_NIGHTLY_CRON": "99 * *"})
    one_line(result, "serve", 2, "RLTRACKER_NIGHTLY_CRON='99 * *'", "0 3 * * *")


def test_sync_with_github_unreachable(migrated_db: str) -> None:
    api = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    result = rltracker("sync", "--repo", "volcengine/verl",
                       env={"DATABASE_URL": migrated_db, "GITHUB_API_URL": api,
                            "GITHUB_TOKEN": "ghp_unreachable_token"})
    one_line(result, "sync", 1, "GITHUB_API_URL", api, "cannot connect")
    assert "ghp_unreachable_token" not in result.stderr


async def test_sync_with_github_answering_401(migrated_db: str, fake_github: FakeGitHub) -> None:
    token = "ghp_revoked_token_value"  # the fake knows only fake_github.user_token
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "sync", "--repo", "volcengine/verl",
        env={**CLEAN_ENV, "DATABASE_URL": migrated_db, "GITHUB_API_URL": fake_github.url,
             "GITHUB_TOKEN": token},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), HANG_GUARD)
    result = subprocess.CompletedProcess(["sync"], proc.returncode or 0, out.decode(), err.decode())
    one_line(result, "sync", 1, "401", "Bad credentials", "GITHUB_TOKEN")
    assert token not in result.stderr + result.stdout
    assert len(fake_github.calls) == 1  # one check, no retries, no GraphQL with a refused token


def test_sync_without_any_github_credentials(migrated_db: str) -> None:
    result = rltracker("sync", env={"DATABASE_URL": migrated_db})
    one_line(result, "sync", 2, "GITHUB_TOKEN", "GITHUB_APP_ID")


# ----------------------------------------------------------------- database at runtime
@pytest.mark.parametrize("command", ["migrate", "serve", "stats"])
def test_postgresql_refusing_connections(command: str) -> None:
    url = f"postgresql://rltracker:pw-not-shown@127.0.0.1:{free_port()}/rltracker"
    result = rltracker(command, env={"DATABASE_URL": url, "GITHUB_WEBHOOK_SECRET": "whsecret-1"})
    one_line(result, command, 1, "DATABASE_URL", "postgresql+asyncpg://rltracker:***@", "cannot connect")
    assert "pw-not-shown" not in result.stderr


@pytest.mark.postgres
def test_postgresql_refusing_the_password() -> None:
    urls = postgres_admin_urls()
    if not urls:
        pytest.skip("no TEST_DATABASE_URLS")
    head, _, host = urls[0].rpartition("@")
    user = head.split("://", 1)[1].split(":", 1)[0]
    url = f"postgresql+asyncpg://{user}:certainly-wrong-pw@{host}"
    result = rltracker("stats", env={"DATABASE_URL": url})
    one_line(result, "stats", 1, "DATABASE_URL", "password authentication failed")
    assert "certainly-wrong-pw" not in result.stderr


def test_a_url_with_an_unclosed_bracket_is_one_line_naming_it(migrated_db: str) -> None:
    """GITHUB_API_URL=http://[::1 (an IPv6 address with its bracket not closed): urlsplit's
    ValueError escaped the check, `rltracker stats` printed a traceback and "this is a bug",
    and `serve` a line "Invalid IPv6 URL" naming no variable."""
    for command in (["stats"], ["serve", "--dev", "--port", str(free_port())]):
        result = rltracker(*command, env={"DATABASE_URL": migrated_db,
                                          "GITHUB_API_URL": "http://[::1"})
        one_line(result, prog(command), 2, "GITHUB_API_URL='http://[::1'", "expected an http")


def test_sqlite_database_not_migrated(tmp_path: Path) -> None:
    # a SQLite database nothing migrated (a 0-byte file is said to be empty: the next tests)
    with contextlib.closing(sqlite3.connect(tmp_path / "unmigrated.db")) as conn:
        conn.execute("CREATE TABLE notes (text TEXT)")
    result = rltracker("stats", env={"DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/unmigrated.db"})
    one_line(result, "stats", 1, "DATABASE_URL", "rltracker migrate")


# Commands that read (or need) the database.
_DATABASE_COMMANDS = [
    ["stats"], ["stats", "--json"], ["deliveries"], ["deliveries", "--json"],
    ["deliveries", "retry", "--all"], ["verdicts", "export"], ["verdicts", "wanted"], ["study"],
    ["study", "--json"], ["report"], ["repos", "resume", "o/r"], ["preview", "o/r"],
    ["papers", "import", "-"], ["sync"]]


@pytest.mark.parametrize("command", _DATABASE_COMMANDS)
def test_a_missing_sqlite_database_is_said_to_be_missing_and_not_created(
        command: list[str], tmp_path: Path) -> None:
    """A command that reads (or needs) the database, with DATABASE_URL naming a SQLite file
    that does not exist (a typo, another folder, before the first `make run`): SQLite created
    an empty file there, then the command said the database had no tables. The empty file
    stayed, and looked like a database the next time. The command now says the database does
    not exist and how to create it, and creates nothing."""
    db = tmp_path / "typo.db"
    result = rltracker(*command, env={"DATABASE_URL": f"sqlite:///{db}", "GITHUB_TOKEN": "t",
                                      "GITHUB_API_URL": "http://127.0.0.1:9"})
    one_line(result, prog(command), 2, "DATABASE_URL", f"{db} does not exist", "rltracker migrate")
    assert list(tmp_path.iterdir()) == []  # not the file, nor its -wal or -shm


@pytest.mark.parametrize("command", _DATABASE_COMMANDS)
def test_an_empty_sqlite_file_is_said_to_be_empty_and_not_written(
        command: list[str], tmp_path: Path) -> None:
    """A 0-byte file at DATABASE_URL was said to be "at no revision" and the revision check
    wrote SQLite's header (and -wal, -shm files) into it. It is said to be an empty file, with
    `rltracker migrate` to make it a database, and stays as it was (left80)."""
    db = tmp_path / "empty.db"
    db.touch()
    result = rltracker(*command, env={"DATABASE_URL": f"sqlite:///{db}", "GITHUB_TOKEN": "t",
                                      "GITHUB_API_URL": "http://127.0.0.1:9"})
    one_line(result, prog(command), 2, "DATABASE_URL", f"{db} is an empty file",
             "rltracker migrate")
    assert db.stat().st_size == 0 and [p.name for p in tmp_path.iterdir()] == ["empty.db"]


@pytest.mark.postgres
def test_a_missing_postgresql_database_is_said_to_be_missing_with_the_remedy() -> None:
    urls = postgres_admin_urls()
    if not urls:
        pytest.skip("no TEST_DATABASE_URLS")
    url = urls[0].rsplit("/", 1)[0] + "/rlt_never_created"
    for command in (["stats"], ["verdicts", "wanted"]):
        result = rltracker(*command, env={"DATABASE_URL": url})
        one_line(result, prog(command), 1, "DATABASE_URL", '"rlt_never_created" does not exist',
                 "CREATE DATABASE", "rltracker migrate")


def test_sqlite_file_that_is_not_a_database(tmp_path: Path) -> None:
    db = tmp_path / "notes.db"
    db.write_text("these are notes, not a database\n" * 100)
    result = rltracker("stats", env={"DATABASE_URL": f"sqlite+aiosqlite:///{db}"})
    line = one_line(result, "stats", 1, "DATABASE_URL", "is not a SQLite database or is damaged",
                    "backup")
    assert "cannot open" not in line


def _sqlite_failure(db: Path, make: str) -> BaseException:
    """A real SQLite failure of each kind, raised through SQLAlchemy as the commands meet it
    (aiosqlite raises the sqlite3 module's errors; a synchronous engine raises the same)."""
    import sqlite3

    from sqlalchemy import create_engine, text

    url = f"sqlite:///{db}"
    if make == "locked":
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("CREATE TABLE IF NOT EXISTS t (x)")
        holder.execute("BEGIN EXCLUSIVE")
        engine = create_engine(url, connect_args={"timeout": 0})
    elif make == "readonly":
        sqlite3.connect(db).execute("CREATE TABLE t (x)").connection.close()
        engine = create_engine(f"sqlite:///file:{db}?mode=ro&uri=true")
    elif make == "full":
        engine = create_engine(url)
    elif make == "corrupt":
        db.write_bytes(b"SQLite format 3\x00" + b"\xff" * 8192)
        engine = create_engine(url)
    else:  # cannot open: its folder is gone
        engine = create_engine(f"sqlite:///{db.parent}/gone/x.db")
    try:
        with engine.begin() as conn:
            if make == "full":
                conn.execute(text("PRAGMA max_page_count = 2"))
                conn.execute(text("CREATE TABLE t (x)"))
                conn.execute(text("INSERT INTO t VALUES (randomblob(100000))"))
            conn.execute(text("INSERT INTO t VALUES (1)"))
    except Exception as exc:  # noqa: BLE001 - the failure is what this returns
        return exc
    finally:
        engine.dispose()
    raise AssertionError(f"no {make} failure")


@pytest.mark.parametrize(("make", "said"), [
    ("locked", "is locked by another process"),
    ("readonly", "is read-only"),
    ("full", "is full"),
    ("corrupt", "is not a SQLite database or is damaged"),
    ("cannot_open", "cannot open the SQLite database"),
])
def test_each_sqlite_failure_says_what_happened(make: str, said: str, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Any SQLite error was "cannot open the SQLite database (...)": a database another
    process had locked, a full disk, a read-only file or mount, a damaged file, all sent the
    operator to look for a file that was there and opened. Each now says what happened."""
    db = tmp_path / "db.sqlite"
    monkeypatch.setenv("DATABASE_URL", f"sqlite+aiosqlite:///{db}")
    exc = _sqlite_failure(db, make)
    known = explain(exc)
    assert known is not None, exc
    message, status = known
    assert status == 1 and "DATABASE_URL" in message and said in message, message
    if make != "cannot_open":
        assert "cannot open" not in message, message


# ----------------------------------------------------------------- --debug, usage errors
@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_adds_the_traceback(tmp_path: Path, where: str) -> None:
    missing = str(tmp_path / "gone.json")
    replay = ["replay", missing, "--url", "http://127.0.0.1:9/webhook", "--secret", "s"]
    args = ["--debug", *replay] if where == "before" else [*replay, "--debug"]
    result = rltracker(*args, env={})
    assert result.returncode == 2
    assert "Traceback" in result.stderr and "FileNotFoundError" in result.stderr
    assert result.stderr.splitlines()[-1] == f"rltracker replay: {missing}: No such file or directory"


def test_log_level_debug_adds_the_traceback(tmp_path: Path) -> None:
    result = rltracker("replay", str(tmp_path / "gone.json"), "--url", "http://127.0.0.1:9/",
                       "--secret", "s", env={"RLTRACKER_LOG_LEVEL": "DEBUG"})
    assert result.returncode == 2 and "Traceback" in result.stderr


@pytest.mark.parametrize("level", ["", "debug", " Debug "])
def test_log_level_is_read_as_the_other_variables_are(tmp_path: Path, migrated_db: str,
                                                       level: str) -> None:
    """RLTRACKER_LOG_LEVEL set but empty (a compose file's `${LOG_LEVEL}` with nothing behind
    it) stopped every command: "RLTRACKER_LOG_LEVEL is not set: expected DEBUG, ...", exit 2,
    where every other variable empty means its default (here INFO); `debug` was refused
    too, where RLTRACKER_DRY_RUN's and the others' words are read in any case. Now empty is
    INFO and the level is read in any case, with spaces around it: `debug` adds the
    traceback of a known failure as DEBUG does."""
    stats = rltracker("stats", env={"DATABASE_URL": migrated_db, "RLTRACKER_LOG_LEVEL": level})
    assert stats.returncode == 0, stats.stderr
    replay = rltracker("replay", str(tmp_path / "gone.json"), "--url", "http://127.0.0.1:9/",
                       "--secret", "s", env={"RLTRACKER_LOG_LEVEL": level})
    assert replay.returncode == 2, replay.stderr
    assert ("Traceback" in replay.stderr) == bool(level), replay.stderr


def test_usage_error_is_one_line() -> None:
    result = rltracker("replay", env={})
    one_line(result, "replay", 2, "--url", "rltracker replay --help")


# ----------------------------------------------------------------- the check, unit by unit
def _error(env: dict[str, str], **kwargs: bool) -> SettingError:
    with pytest.raises(SettingError) as caught:
        check_env(env, **kwargs)
    assert caught.value.exit_code == 2
    assert "\n" not in caught.value.message
    return caught.value


def test_defaults_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    check_env({})
    assert Settings.from_env({}).port == 8000


@pytest.mark.parametrize("url,normal", [
    ("sqlite:///rl.db", "sqlite+aiosqlite:///rl.db"),
    ("postgres://u:p@h/db", "postgresql+asyncpg://u:p@h/db"),
    ("postgresql://u:p@h:5432/db", "postgresql+asyncpg://u:p@h:5432/db"),
    ("postgresql+asyncpg://u:p@h/db", "postgresql+asyncpg://u:p@h/db"),
    ("mysql://u:p@h/db", "mysql://u:p@h/db"),
])
def test_database_url_forms(url: str, normal: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert normalise_database_url(url) == normal
    if normal.startswith("mysql"):
        assert _error({"DATABASE_URL": url}).name == "DATABASE_URL"
    else:
        assert Settings.from_env({"DATABASE_URL": url}).database_url == normal


@pytest.mark.parametrize("url", [
    "postgresql+psycopg://u:p@h/db", "sqlite+pysqlite:///x.db", "rltracker.db",
    "postgresql+asyncpg://u:p@h:port/db",
])
def test_database_urls_refused(url: str) -> None:
    assert _error({"DATABASE_URL": url}).name == "DATABASE_URL"


def test_a_database_url_with_an_unclosed_bracket_says_so_not_the_port() -> None:
    """postgresql://u:p@[::1/db (an IPv6 host with its bracket not closed) was refused as "the
    port is not a number": the operator looked at a port the URL does not have."""
    message = _error({"DATABASE_URL": "postgresql://u:p@[::1/db"}).message
    assert "Invalid IPv6 URL" in message and "port" not in message.partition(";")[0], message
    assert "u:***@" in message


def test_sqlite_paths(tmp_path: Path) -> None:
    assert sqlite_path("sqlite+aiosqlite:///rel/x.db") == Path("rel/x.db")
    assert sqlite_path("sqlite+aiosqlite:////abs/x.db?mode=rwc") == Path("/abs/x.db")
    assert sqlite_path("sqlite+aiosqlite:///:memory:") is None
    assert sqlite_path("sqlite+aiosqlite://") is None
    assert sqlite_path("postgresql+asyncpg://u@h/db") is None
    folder = tmp_path / "a-folder.db"
    folder.mkdir()
    assert "is a folder" in _error({"DATABASE_URL": f"sqlite:///{folder}"}).message
    missing = f"sqlite:///{tmp_path}/later/x.db"
    assert "rltracker migrate" in _error({"DATABASE_URL": missing}).message
    check_env({"DATABASE_URL": missing}, database_may_be_absent=True)


def test_private_key_checks(tmp_path: Path) -> None:
    one_line_key = PEM.replace("\n", "\\n")  # as pasted into a one-line variable
    check_env({"GITHUB_APP_ID": "4242", "GITHUB_PRIVATE_KEY": one_line_key})
    key_file = tmp_path / "app.pem"
    key_file.write_text(PEM)
    settings = Settings.from_env({"GITHUB_APP_ID": " 4242 ", "GITHUB_PRIVATE_KEY_PATH": str(key_file)})
    assert settings.has_app_credentials and settings.app_id == "4242"

    no_id = _error({"GITHUB_PRIVATE_KEY": PEM})
    assert no_id.name == "GITHUB_APP_ID" and "BEGIN" not in no_id.message
    assert _error({"GITHUB_APP_ID": "4242"}).name == "GITHUB_PRIVATE_KEY"
    truncated = PEM[: len(PEM) // 2]
    bad = _error({"GITHUB_APP_ID": "4242", "GITHUB_PRIVATE_KEY": truncated})
    assert "value not shown" in bad.message and truncated.splitlines()[1] not in bad.message
    key_file.write_text("hello")
    assert str(key_file) in _error({"GITHUB_APP_ID": "1", "GITHUB_PRIVATE_KEY_PATH": str(key_file)}).message


def test_a_key_that_is_not_rsa() -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    ec_pem = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()).decode()
    error = _error({"GITHUB_APP_ID": "1", "GITHUB_PRIVATE_KEY": ec_pem})
    assert "RSA" in error.message and "this key is EC" in error.message


@pytest.mark.parametrize("name,value", [
    ("RLTRACKER_NIGHTLY_CRON", "0 25 * * *"),
    ("RLTRACKER_NIGHTLY_CRON", "every night"),
    ("PORT", "0"),
    ("PORT", "eighty"),
    ("RLTRACKER_WORKER_LEASE", "-5"),
    ("RLTRACKER_WORKER_LEASE", "two minutes"),
    ("RLTRACKER_WORKER_LEASE", "nan"),
    ("RLTRACKER_STATEMENT_TIMEOUT", "0"),
    ("RLTRACKER_STATEMENT_TIMEOUT", "30s"),
    ("GITHUB_API_URL", "api.github.com"),
    ("GITHUB_API_URL", "http://[::1"),  # an unclosed bracket: was a ValueError traceback
    ("RLTRACKER_PUBLIC_URL", "ftp://tracker.example"),
    ("RLTRACKER_PUBLIC_URL", "https://[tracker.example"),
    ("RLTRACKER_ARXIV_API_URL", "http://[export.arxiv.org"),
    ("RLTRACKER_REPORT_ISSUE", "owner/repo"),
    ("RLTRACKER_DRY_RUN", "maybe"),
    ("RLTRACKER_FETCH_PAPERS", "yes please"),
    ("RLTRACKER_LOG_LEVEL", "verbose"),
])
def test_bad_values_name_the_variable_and_value(name: str, value: str) -> None:
    error = _error({name: value})
    assert error.name == name
    assert error.message.startswith(f"{name}=") and value.split()[0] in error.message


@pytest.mark.parametrize("name,value", [
    ("RLTRACKER_NIGHTLY_CRON", "30 2 * * 1-5"),
    ("PORT", "65535"),
    ("RLTRACKER_WORKER_LEASE", "2.5"),
    ("RLTRACKER_STATEMENT_TIMEOUT", "0.5"),
    ("GITHUB_API_URL", "https://ghe.example/api/v3"),
    ("RLTRACKER_REPORT_ISSUE", "owner/repo#12"),
    ("RLTRACKER_DRY_RUN", "TRUE"),
    ("RLTRACKER_FETCH_PAPERS", "1"),
    ("RLTRACKER_LOG_LEVEL", "WARNING"),
])
def test_good_values_pass(name: str, value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    check_env({name: value})


def test_settings_carry_the_checked_numbers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings = Settings.from_env({"PORT": "8123", "RLTRACKER_WORKER_LEASE": "7.5"})
    assert (settings.port, settings.worker_lease) == (8123, 7.5)


def test_values_are_shown_on_one_line_and_secrets_not_at_all() -> None:
    assert describe_value("X", "a\nb") == "X='a\\nb'"
    assert describe_value("--port", "70000") == "--port 70000"
    assert len(describe_value("X", "y" * 500)) < 100
    assert describe_value("GITHUB_PRIVATE_KEY", "secret", secret=True) == "GITHUB_PRIVATE_KEY (value not shown)"
    assert redact_url("postgresql+asyncpg://user:p%40ss@host:5432/db") == "postgresql+asyncpg://user:***@host:5432/db"
    assert redact_url("sqlite+aiosqlite:///x.db") == "sqlite+aiosqlite:///x.db"


def test_known_failures_and_bugs_are_told_apart() -> None:
    assert explain(UserError("x", 3)) == ("x", 3)
    err = io.StringIO()
    try:
        raise KeyError("a bug")
    except KeyError as exc:
        assert explain(exc) is None
        assert report_failure("stats", exc, debug=False, err=err) == 1
    text = err.getvalue()
    assert "Traceback" in text and "KeyError" in text
    assert text.splitlines()[-1].startswith("rltracker stats: unexpected KeyError: this is a bug")
    err = io.StringIO()
    assert report_failure("serve", UserError("two\nlines", 1), debug=False, err=err) == 1
    assert err.getvalue() == "rltracker serve: two lines\n"


def test_rules_takes_a_framework_in_any_case(tmp_path: Path, shared_dir: Path) -> None:
    """`rltracker rules VERL` (or NeMo-RL, as the pages write it) was "unknown framework";
    an unknown one is one line naming the command and the frameworks, exit 2 (a bad argument)."""
    env = {"DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/absent.db", "GITHUB_API_URL": "http://127.0.0.1:9"}
    for typed, repo in (("VERL", "verl-project/verl"), ("NeMo-RL", "NVIDIA-NeMo/RL")):
        result = rltracker("rules", typed, "--json", env=env, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert f'"repo": "{repo}"' in result.stdout
    one_line(rltracker("rules", "verlx", env=env, cwd=tmp_path), "rules", 2,
             "unknown framework or folder: verlx", "nemo-rl")


def test_rules_reads_no_cache_from_an_empty_sqlite_file_and_leaves_it_empty(
        tmp_path: Path, shared_dir: Path) -> None:
    """`rules` reads the database's cache when there is one, and an absent file is no cache;
    a 0-byte file was opened, said to be "behind the migrations" (exit 1) and given SQLite's
    header. It holds no cache either: the summary comes from the snapshot, the file stays
    empty (left80)."""
    db = tmp_path / "empty.db"
    db.touch()
    env = {"DATABASE_URL": f"sqlite+aiosqlite:///{db}", "GITHUB_API_URL": "http://127.0.0.1:9"}
    result = rltracker("rules", "verl", "--json", env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert '"source": "snapshot"' in result.stdout
    assert db.stat().st_size == 0 and [p.name for p in tmp_path.iterdir()] == ["empty.db"]


@pytest.mark.parametrize("command", [["sync", "--repo"], ["preview"]])
def test_a_repository_that_is_not_owner_name_is_refused(command: list[str], migrated_db: str) -> None:
    """`rltracker sync --repo notarepo` stored a Repository row and three sync cursors named
    "notarepo" and asked GitHub for a repository with no name."""
    env = {"DATABASE_URL": migrated_db, "GITHUB_TOKEN": "t", "GITHUB_API_URL": "http://127.0.0.1:9"}
    for bad in ("notarepo", "a/b/c", "owner/"):
        one_line(rltracker(*command, bad, env=env), prog(command), 2,
                 f"'{bad}': expected a repository as OWNER/NAME")


@pytest.mark.parametrize("url", ["notaurl", "ftp://host/webhook", "http://"])
def test_replay_url_that_is_not_http(url: str, tmp_path: Path) -> None:
    """Each payload file failed on its own ("error: InvalidUrlClientError") instead of one
    line saying what --url must be."""
    payload = tmp_path / "ping.json"
    payload.write_text('{"zen": "z"}')
    one_line(rltracker("replay", str(payload), "--url", url, "--secret", "s", env={}), "replay", 2,
             f"'{url}': expected an http(s) URL")


def test_report_out_that_cannot_be_a_folder_stops_before_the_report(tmp_path: Path, migrated_db: str) -> None:
    """`rltracker report --out FILE`: the report was built, stored (and posted) first, then
    the command failed writing it; now it stops before anything is done."""
    import sqlite3

    taken = tmp_path / "a-file"
    taken.write_text("")
    one_line(rltracker("report", "--out", str(taken), env={"DATABASE_URL": migrated_db}),
             "report", 2, str(taken))
    db = migrated_db.removeprefix("sqlite+aiosqlite:///")
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM reports").fetchone() == (0,)


async def test_report_github_refused_to_post_exits_1_naming_why(migrated_db: str,
                                                                fake_github: FakeGitHub) -> None:
    """The report was built and stored but GitHub refused the comment (the issue is locked):
    the command printed its summary and exited 0, so a cron job never knew the night's report
    was not posted. It exits 1 with one line naming the issue and GitHub's reason."""
    fake_github.add_installation(77, "tracker-org", repos=["tracker-org/tracker"])
    fake_github.add_issue("tracker-org/tracker", 1, title="Nightly reports")
    fake_github.fail_next("POST", r"/issues/1/comments$", 403, times=5,
                          body={"message": "Unable to create comment because issue is locked."})
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "report",
        env={**CLEAN_ENV, "DATABASE_URL": migrated_db, "GITHUB_API_URL": fake_github.url,
             "GITHUB_APP_ID": "4242", "GITHUB_PRIVATE_KEY": PEM,
             "RLTRACKER_REPORT_ISSUE": "tracker-org/tracker#1",
             "RLTRACKER_PUBLIC_URL": "https://rl.example.org"},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), HANG_GUARD)
    result = subprocess.CompletedProcess(["report"], proc.returncode or 0, out.decode(), err.decode())
    assert '"posted": "failed"' in result.stdout
    one_line(result, "report", 1, "stored but could not be posted", "tracker-org/tracker#1",
             "issue is locked")
    assert fake_github.comments_of("tracker-org/tracker", 1) == []



async def _report(fake_github: FakeGitHub, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "report", *args,
        env={**CLEAN_ENV, "GITHUB_API_URL": fake_github.url, **env},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), HANG_GUARD)
    return subprocess.CompletedProcess(["report"], proc.returncode or 0, out.decode(), err.decode())


async def test_report_posting_without_a_public_url_is_refused(tmp_path: Path, migrated_db: str,
                                                              fake_github: FakeGitHub) -> None:
    """`rltracker report` with the app's credentials and RLTRACKER_REPORT_ISSUE posted the
    night's report with every tracker link leading to http://localhost:8000 when
    RLTRACKER_PUBLIC_URL was unset; `serve` refuses that start. The command refuses it too
    (exit 2, one line), before building anything; a dry run or the files alone are not refused."""
    import sqlite3

    fake_github.add_installation(77, "tracker-org", repos=["tracker-org/tracker"])
    fake_github.add_issue("tracker-org/tracker", 1, title="Nightly reports")
    app = {"DATABASE_URL": migrated_db, "GITHUB_APP_ID": "4242", "GITHUB_PRIVATE_KEY": PEM,
           "RLTRACKER_REPORT_ISSUE": "tracker-org/tracker#1"}
    one_line(await _report(fake_github, app, "--out", str(tmp_path / "files")), "report", 2,
             "RLTRACKER_PUBLIC_URL is not set", "tracker-org/tracker#1", "http://localhost:8000",
             "RLTRACKER_DRY_RUN")
    assert fake_github.comments_of("tracker-org/tracker", 1) == []
    db = migrated_db.removeprefix("sqlite+aiosqlite:///")
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM reports").fetchone() == (0,)
    assert not (tmp_path / "files").exists()
    # Nothing posted (dry run; no issue to post on, files only): nothing to refuse.
    dry = await _report(fake_github, {**app, "RLTRACKER_DRY_RUN": "1"})
    assert dry.returncode == 0 and '"posted": "dry_run"' in dry.stdout, dry.stderr
    files = await _report(fake_github, {"DATABASE_URL": migrated_db}, "--out", str(tmp_path / "files"))
    assert files.returncode == 0 and list((tmp_path / "files").glob("report-*.md")), files.stderr
    assert fake_github.comments_of("tracker-org/tracker", 1) == []
    # With the address set, it posts.
    posted = await _report(fake_github, {**app, "RLTRACKER_PUBLIC_URL": "https://rl.example.org"})
    assert posted.returncode == 0 and '"posted": "posted"' in posted.stdout, posted.stderr
    assert len(fake_github.comments_of("tracker-org/tracker", 1)) == 1

def test_replay_to_a_url_nothing_listens_on_says_so_once(tmp_path: Path) -> None:
    """`rltracker replay examples/` with `serve` not running printed one
    "error: ClientConnectorError" line per file (the README's demo sends nine) and never
    said what was wrong; it stops at the first with one line naming the URL."""
    tmp_path = tmp_path / "ping"  # the folder names the event (one the app handles: user79)
    tmp_path.mkdir()
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.json").write_text('{"zen": "z"}')
    result = rltracker("replay", str(tmp_path), "--url", "http://127.0.0.1:9/webhook",
                       "--secret", "s", env={})
    one_line(result, "replay", 1, "cannot connect to http://127.0.0.1:9/webhook",
             "ConnectionRefusedError", "rltracker serve", "0 of 3 files sent")
    assert result.stdout == ""
    for name in ("b", "c"):
        (tmp_path / f"{name}.json").unlink()
    result = rltracker("replay", str(tmp_path), "--url", "http://127.0.0.1:9/webhook",
                       "--secret", "s", env={})
    one_line(result, "replay", 1, "0 of 1 file sent")  # it said "1 files" (left76)


@pytest.mark.parametrize(("closed", "command", "stream"), [
    ("<&-", ["analyze", "-"], "<stdin>"),
    ("<&-", ["analyze", "--papers", "-", "ONE"], "<stdin>"),
    (">&-", ["analyze", "ONE"], "<stdout>"),
    (">&-", ["rules", "verl"], "<stdout>"),
    ("<&-", ["papers", "import", "-"], "<stdin>"),
])
def test_a_standard_stream_closed_at_start_is_one_line_naming_it(
        closed: str, command: list[str], stream: str, tmp_path: Path, migrated_db: str) -> None:
    """Started with stdin or stdout closed (`<&-`, `>&-`, a daemon's spawn), `-` meant a stream
    Python sets to None: an AttributeError/TypeError traceback reported as a bug, exit 1."""
    one = tmp_path / "one.jsonl"
    one.write_text('{"id": "o/r#1", "repo": "o/r", "number": 1, "kind": "issue", "title": "t", '
                   '"body": null, "state": "open", "comments": []}\n', encoding="utf-8")
    args = [str(one) if a == "ONE" else a for a in command]
    result = subprocess.run(["sh", "-c", f'exec "$@" {closed}', "sh", sys.executable, "-m",
                             "bot.cli", *args], env={**CLEAN_ENV, "DATABASE_URL": migrated_db},
                            text=True, capture_output=True, timeout=HANG_GUARD)
    line = one_line(result, prog(command), 2, stream, "closed")
    assert "bug" not in line


@pytest.mark.parametrize("target", ["", "  "])
def test_rules_of_an_empty_name_is_refused_not_the_current_folder(target: str, tmp_path: Path) -> None:
    """`rltracker rules "$FRAMEWORK"` with the variable unset summarised the folder it ran in
    (Path("") is "."), exit 0: a folder nobody named."""
    (tmp_path / "CONTRIBUTING.md").write_text("Please add tests for every change.\n", encoding="utf-8")
    result = rltracker("rules", target, env={}, cwd=tmp_path)
    one_line(result, "rules", 2, "no framework or folder given", "verl")
    assert result.stdout == ""


def test_rules_json_is_utf8_whatever_the_locale(tmp_path: Path) -> None:
    """`rltracker rules PATH --json` holds each rule's Chinese statement (statement_zh): under a
    locale that is not UTF-8 (PYTHONIOENCODING=latin-1, a redirected Windows console) it
    stopped with a UnicodeEncodeError traceback reported as a bug, exit 1. JSON goes out as
    UTF-8 (RFC 8259), whatever the locale."""
    import json

    (tmp_path / "CONTRIBUTING.md").write_text(
        "Please sign off every commit (git commit -s).\nAdd tests for every change.\n",
        encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "bot.cli", "rules", str(tmp_path), "--json"],
                            env={**CLEAN_ENV, "PYTHONIOENCODING": "latin-1"},
                            capture_output=True, timeout=HANG_GUARD)
    assert result.returncode == 0, result.stderr.decode("utf-8", "replace")
    summary = json.loads(result.stdout.decode("utf-8"))
    assert any(f.get("statement_zh") for f in summary["facts"])


# ----------------------------------------------------------------- DATABASE_URL slips
def test_sqlite_url_with_two_slashes(tmp_path: Path) -> None:
    """`sqlite+aiosqlite://rl.db` (one slash short) read the file name as a host: SQLAlchemy's
    ArgumentError came out as "this is a bug" with a traceback, not the setting's one line."""
    for url in ("sqlite+aiosqlite://rl.db", "sqlite://rl.db"):
        result = rltracker("stats", env={"DATABASE_URL": url}, cwd=tmp_path)
        one_line(result, "stats", 2, "DATABASE_URL", "rl.db", "sqlite+aiosqlite:///")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("url", ["sqlite+aiosqlite:///", "sqlite:///", "sqlite+aiosqlite://",
                                 "sqlite+aiosqlite:///:memory:"])
def test_sqlite_url_that_names_no_file(tmp_path: Path, url: str) -> None:
    """`DATABASE_URL=sqlite+aiosqlite:///$DB` with DB unset (or `:memory:`) names no file:
    SQLite opened an in-memory database, gone when the command ends. `migrate` said "database
    at 0017" (exit 0) and migrated nothing that stays; `serve` then said the database is
    behind the migrations, "run `rltracker migrate` first", which the operator had just done;
    `stats` said the database has no tables. Each is now the setting's one line, exit 2."""
    for args in (["migrate"], ["stats"], ["serve", "--dev", "--port", str(free_port())]):
        result = rltracker(*args, env={"DATABASE_URL": url}, cwd=tmp_path)
        line = one_line(result, args[0], 2, "DATABASE_URL", "names no file")
        assert "sqlite+aiosqlite:///rltracker.db" in line, line
    assert not list(tmp_path.iterdir())


def test_postgresql_url_query_parameters() -> None:
    """Hosting platforms give `postgres://...?sslmode=require` (libpq's name); asyncpg's is
    `ssl`, and every other query parameter went to asyncpg.connect as a keyword it refused
    with a TypeError ("this is a bug"). sslmode is read as ssl; a parameter the driver does
    not read is the setting's one line."""
    base = "postgres://rl:pw@db.example:5432/rl"
    for mode in ("disable", "require", "verify-full"):
        settings = Settings.from_env({"DATABASE_URL": f"{base}?sslmode={mode}"})
        assert settings.database_url == f"postgresql+asyncpg://rl:pw@db.example:5432/rl?ssl={mode}"
    with pytest.raises(SettingError, match="connect_timeout"):
        check_env({"DATABASE_URL": f"{base}?sslmode=require&connect_timeout=10"})
    with pytest.raises(SettingError, match="sslmode"):
        check_env({"DATABASE_URL": f"{base}?sslmode=sometimes"})


@pytest.mark.postgres
def test_postgresql_url_with_sslmode_connects(tmp_path: Path) -> None:
    urls = postgres_admin_urls()
    if not urls:
        pytest.skip("no TEST_DATABASE_URLS")
    url = urls[0].replace("postgresql+asyncpg://", "postgres://", 1) + "?sslmode=disable"
    # The admin database is not migrated: the command got through to the database.
    result = rltracker("stats", env={"DATABASE_URL": url})
    one_line(result, "stats", 1, "DATABASE_URL", "rltracker migrate")


# ----------------------------------------------------------------- links in posted comments
def test_serve_posting_without_a_public_url(migrated_db: str) -> None:
    """With the app's credentials and dry-run off, `serve` posts on GitHub; without
    RLTRACKER_PUBLIC_URL every link in those comments led to http://localhost:8000 on the
    maintainer's machine... or nowhere. It is refused at start, like any setting that cannot
    work (the port is taken here, so a `serve` that got past the settings stops on it)."""
    from bot.server import settings_for_serve

    app = {"GITHUB_APP_ID": "4242", "GITHUB_PRIVATE_KEY": PEM, "GITHUB_WEBHOOK_SECRET": "whsecret-1",
           "DATABASE_URL": migrated_db}
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = rltracker("serve", "--host", "127.0.0.1", "--port", str(port), "--no-scheduler", env=app)
    one_line(result, "serve", 2, "RLTRACKER_PUBLIC_URL is not set", f"http://localhost:{port}",
             "RLTRACKER_DRY_RUN")
    # Dry run (the variable, or --dev), or the URL set: nothing to refuse.
    assert settings_for_serve(False, {**app, "RLTRACKER_DRY_RUN": "1"})[0].dry_run
    assert settings_for_serve(True, app)[0].dry_run
    settings, _ = settings_for_serve(False, {**app, "RLTRACKER_PUBLIC_URL": "https://rl.example.org/"})
    assert settings.public_url == "https://rl.example.org" and not settings.dry_run


# ----------------------------------------------------------------- output cut short
@pytest.mark.parametrize("command", ["rules", "rules --json", "stats --json", "deliveries",
                                     "analyze"])
def test_output_read_by_a_pipe_that_closed_is_no_traceback(command: str, tmp_path: Path,
                                                           migrated_db: str) -> None:
    """`rltracker ... | head -1`: the reader goes away, the next write fails with EPIPE. Each
    command printed a BrokenPipeError traceback "this is a bug" (exit 1; analyze one line
    '[Errno 32] Broken pipe', exit 2). Like any Unix tool whose reader left, the command now
    stops quietly with 141 (128 + SIGPIPE, what the shell shows for `cat big | head -1`)."""
    import json

    (tmp_path / "CONTRIBUTING.md").write_text("Add tests for every change.\n", encoding="utf-8")
    thread = {"id": "o/r#1", "repo": "o/r", "number": 1, "kind": "issue", "state": "open",
              "title": "Entropy collapses", "body": "entropy drops to zero", "comments": []}
    records = tmp_path / "in.jsonl"
    records.write_text((json.dumps(thread) + "\n") * 50, encoding="utf-8")
    args = {"rules": ["rules", str(tmp_path)], "rules --json": ["rules", str(tmp_path), "--json"],
            "analyze": ["analyze", str(records), "--jobs", "1"]}.get(command, command.split())
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line is written
    try:
        result = subprocess.run([sys.executable, "-m", "bot.cli", *args], stdout=write_end,
                                stderr=subprocess.PIPE, text=True, timeout=HANG_GUARD,
                                env={**CLEAN_ENV, "DATABASE_URL": migrated_db})
    finally:
        os.close(write_end)
    assert result.stderr == ""
    assert result.returncode == 141


# ----------------------------------------------------------------- database behind the code
def _behind(url: str, revision: str | None = None) -> str:
    """A migrated database taken back one revision as it looked then: the last migration's
    column gone, alembic_version at the revision before (new code deployed before
    `rltracker migrate`), or at `revision`. The column dropped is one `repos resume` reads."""
    from alembic.script import ScriptDirectory
    from sqlalchemy import text

    from bot.store.db import make_engine
    from bot.store.migrate import alembic_config, head_revision

    head = head_revision()
    before = revision or ScriptDirectory.from_config(alembic_config(url)).get_revision(head).down_revision

    async def back() -> None:
        engine = make_engine(url)
        async with engine.begin() as conn:
            await conn.execute(text("ALTER TABLE repositories DROP COLUMN resumed_at"))
            await conn.execute(text("UPDATE alembic_version SET version_num = :v"), {"v": before})
        await engine.dispose()

    asyncio.run(back())
    return str(before)


def test_a_database_behind_the_migrations_says_run_migrate(db_url: str) -> None:
    """New code, database not migrated yet: a query reads a column the database does not have.
    On PostgreSQL (UndefinedColumnError) that was a traceback reported as a bug, exit 1; on
    SQLite 'cannot open the SQLite database (no such column ...)', which it could, without the
    remedy. Now one line saying the database is behind (its revision, the code's) and to run
    `rltracker migrate`, as `rltracker serve` says it."""
    from bot.store.migrate import head_revision

    before = _behind(db_url)
    result = rltracker("repos", "resume", "o/r", env={"DATABASE_URL": db_url})
    line = one_line(result, "repos resume", 1, "DATABASE_URL", "behind", "rltracker migrate")
    assert f"it is at {before}" in line and f"this code needs {head_revision()}" in line


@pytest.mark.parametrize("credentials", [{}, {"GITHUB_TOKEN": "ghp_a_user_token"}])
async def test_report_with_an_issue_to_post_on_but_no_app_credentials_says_why_not(
        migrated_db: str, fake_github: FakeGitHub, credentials: dict[str, str]) -> None:
    """RLTRACKER_REPORT_ISSUE set, but not the app's credentials (none, or a user token: the
    report is posted as the app): the app is in dry run, so `rltracker report` posted nothing
    and said so only as '"posted": "dry_run"' in its JSON, exit 0, not a word on stderr; an
    operator who set the issue could not tell why nothing came. One line on stderr now names
    the issue and the missing credentials (the report is still built, stored and exit 0). An
    explicit RLTRACKER_DRY_RUN=1 is the operator's choice: no line."""
    env = {"DATABASE_URL": migrated_db, "RLTRACKER_REPORT_ISSUE": "tracker-org/tracker#1",
           "RLTRACKER_PUBLIC_URL": "https://rl.example.org", **credentials}
    result = await _report(fake_github, env)
    assert '"posted": "dry_run"' in result.stdout
    line = one_line(result, "report", 0, "tracker-org/tracker#1", "GITHUB_APP_ID",
                    "GITHUB_PRIVATE_KEY", "not posted")
    assert "ghp_a_user_token" not in line
    chosen = await _report(fake_github, {**env, "RLTRACKER_DRY_RUN": "1"})
    assert chosen.returncode == 0 and chosen.stderr == "" and '"posted": "dry_run"' in chosen.stdout
    assert fake_github.comments_of("tracker-org/tracker", 1) == []


def test_a_database_of_a_newer_version_is_not_said_to_be_behind(db_url: str) -> None:
    """The other way round: an older version run on a database a newer one migrated (a
    rollback), a query meeting a column the newer migration dropped. 'Behind, run `rltracker
    migrate`' would send the operator to a command that cannot help (this code has no such
    revision): the line says the database is at a revision this code does not know."""
    _behind(db_url, "9999_from_a_newer_version")
    result = rltracker("repos", "resume", "o/r", env={"DATABASE_URL": db_url})
    line = one_line(result, "repos resume", 1, "DATABASE_URL", "9999_from_a_newer_version",
                    "does not know")
    assert "behind" not in line and "run `rltracker migrate`" not in line


async def _a_lock_not_granted(db_url: str) -> BaseException:
    """The error a command's statement raises when a lock another session holds is not
    granted within lock_timeout (the app's is 30 s; here 50 ms), as the engine reports it."""
    import asyncpg
    from sqlalchemy import text

    from bot.store.db import make_engine

    holder = await asyncpg.connect(db_url.replace("postgresql+asyncpg://", "postgresql://"))
    engine = make_engine(db_url, connect_args={"server_settings": {"lock_timeout": "50ms"}})
    try:
        tx = holder.transaction()
        await tx.start()
        await holder.execute("LOCK TABLE deliveries IN ACCESS EXCLUSIVE MODE")
        try:
            async with engine.connect() as conn:
                await conn.execute(text("SELECT count(*) FROM deliveries"))
        except Exception as exc:  # noqa: BLE001 - the error under test
            return exc
        finally:
            await tx.rollback()
        raise AssertionError("the statement was not refused its lock")
    finally:
        await holder.close()
        await engine.dispose()


def test_a_lock_not_granted_in_time_is_one_line_not_a_bug(
        db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A command (or `serve`'s start-up) whose statement waits out lock_timeout behind
    another session's lock (a migration's ALTER TABLE on another replica, a psql left in a
    transaction): "unexpected DBAPIError: this is a bug" and a traceback."""
    if not db_url.startswith("postgresql"):
        pytest.skip("lock_timeout: PostgreSQL (SQLite's busy database has its own line)")
    monkeypatch.setenv("DATABASE_URL", db_url)
    exc = asyncio.run(_a_lock_not_granted(db_url))
    known = explain(exc)
    assert known is not None, exc
    message, status = known
    assert status == 1
    assert "lock" in message and "another session" in message and "try again" in message, message
    err = io.StringIO()
    assert report_failure("stats", exc, debug=False, err=err) == 1
    assert len(err.getvalue().splitlines()) == 1 and "Traceback" not in err.getvalue()


async def test_a_sync_stopped_by_github_says_so_as_the_command(migrated_db: str,
                                                                fake_github: FakeGitHub) -> None:
    """GitHub answering every GraphQL request with errors and no data: the sync stops (exit
    1). Its line was `sync stopped: ...`, the one message of the command without the
    `rltracker sync:` prefix (ops61)."""
    fake_github.graphql_handler = lambda query, variables: {
        "errors": [{"message": "Something went wrong while executing your query."}]}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "sync", "--repo", "volcengine/verl",
        env={**CLEAN_ENV, "DATABASE_URL": migrated_db, "GITHUB_API_URL": fake_github.url,
             "GITHUB_TOKEN": fake_github.user_token},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), HANG_GUARD)
    lines = err.decode().splitlines()
    assert proc.returncode == 1, err.decode()[-2000:]
    assert "Traceback" not in err.decode()
    stopped = [line for line in lines if "stopped" in line]
    assert len(stopped) == 1, lines
    assert stopped[0].startswith("rltracker sync: stopped: GraphQL request failed"), stopped
    assert "cursors are stored; run again to resume" in stopped[0]


def test_serve_workers_past_what_a_machine_runs_is_refused_before_anything_starts() -> None:
    """`serve --workers N` took any count: a key held down (`--workers 1000000`) made serve
    allocate a shared counter and spawn a process (each holding the analyzers) per worker,
    until the machine ran out of memory. It is bounded as analyze's --jobs is (1024), refused
    by the parser before anything starts (ops61). Here the database cannot be reached
    (nothing listens on port 9): on main the count was taken and the start-up failed there."""
    env = {"DATABASE_URL": "postgresql+asyncpg://u:p@127.0.0.1:9/none",
           "GITHUB_WEBHOOK_SECRET": "workers-secret", "RLTRACKER_DRY_RUN": "1"}
    line = one_line(rltracker("serve", "--workers", "1000000", "--port", "18999", env=env),
                    "serve", 2, "--workers", "1000000", "1024")
    assert "argument --workers" in line


@pytest.mark.parametrize("host", ["999.1.1.1", "", "1.2.3", "[::1]"])
def test_serve_on_a_host_that_is_no_address_is_a_usage_error(migrated_db: str, host: str) -> None:
    """`serve --host 999.1.1.1` (no address: a dotted quad past 255, three numbers, an empty
    value, an IPv6 address in a URL's brackets) went on to bind, asked the resolver and
    stopped with exit 1, a failure while running, where every other bad argument (--port
    99999, --workers -1) exits 2 at parse time, one line."""
    result = rltracker("serve", "--host", host, "--port", str(free_port()), "--no-scheduler",
                       env={"DATABASE_URL": migrated_db, "GITHUB_WEBHOOK_SECRET": "whsecret-1"})
    one_line(result, "serve", 2, "--host")


def test_papers_fetch_of_an_empty_category_is_a_usage_error(migrated_db: str) -> None:
    """`papers fetch --category ""` (an unset shell variable) was sent to arXiv as `cat:`,
    and counted the stored papers of every category (`LIKE '%%'`) for where to start."""
    api = f"http://127.0.0.1:{free_port()}/api/query"  # nothing listens there
    for category in ("", " ", "cs.LG OR all"):
        result = rltracker("papers", "fetch", "--category", category,
                           env={"DATABASE_URL": migrated_db, "RLTRACKER_ARXIV_API_URL": api})
        one_line(result, "papers fetch", 2, "--category")


def test_papers_fetch_of_a_category_arxiv_does_not_have_is_a_usage_error(migrated_db: str) -> None:
    """`--category banana` (any word) was accepted and sent to arXiv, which answers an unknown
    category with no papers: the fetch "succeeded" with nothing. Only arXiv's categories are
    taken, named in one line with where to find them, exit 2 (left80)."""
    api = f"http://127.0.0.1:{free_port()}/api/query"  # nothing listens there
    for category in ("banana", "cs.XX", "cs", "hep-th.LG", "physics", "cs.LG.x"):
        result = rltracker("papers", "fetch", "--category", category,
                           env={"DATABASE_URL": migrated_db, "RLTRACKER_ARXIV_API_URL": api})
        one_line(result, "papers fetch", 2, "--category", category, "arxiv.org")


def test_arxiv_categories_are_taken_in_their_own_spelling() -> None:
    from bot.cli import _category

    assert [_category(c) for c in ("cs.LG", "cs.lg", " stat.ML ", "hep-th", "physics.comp-ph",
                                   "cond-mat.stat-mech", "q-bio.QM", "eess.SY", "math.OC")] == [
        "cs.LG", "cs.LG", "stat.ML", "hep-th", "physics.comp-ph", "cond-mat.stat-mech",
        "q-bio.QM", "eess.SY", "math.OC"]


# ----------------------------------------------------------------- warnings of a command
async def test_a_commands_warning_quoting_github_is_printed_on_one_escaped_line(
        migrated_db: str, fake_github: FakeGitHub) -> None:
    """`rltracker report` edits a posted report that named a repository made private; GitHub
    refuses the edit with a message carrying a line feed and an escape sequence. Only `sync`
    set up its log (security71): this warning went through Python's last-resort handler as
    GitHub wrote it, a line of its own (reading as the command's) and a terminal control.
    `main` now sets the plain handler for every command (left74)."""
    from bot.config import Settings
    from bot.context import AppContext
    from bot.store.models import Action
    from bot.store.privacy import REDACT

    repo = "tracker-org/tracker"
    fake_github.add_installation(77, "tracker-org", repos=[repo])
    pem, public = rsa_key_pair()
    fake_github.app_id, fake_github.public_key = "4242", public
    ctx = AppContext.create(Settings.from_env({}, database_url=migrated_db))
    try:
        async with ctx.sessionmaker() as session:
            session.add(Action(repo=repo, number=1, kind="report", status="posted",
                               dedupe_key="report:2026-12-01", comment_id=555,
                               body="# Report", details={REDACT: True}))
            await session.commit()
    finally:
        await ctx.close()
    hostile = "Validation Failed\nrltracker report: all fine\x1b[2J"
    fake_github.fail_next("PATCH", r"/issues/comments/555$", 422, body={"message": hostile})
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "report",
        env={**CLEAN_ENV, "DATABASE_URL": migrated_db, "GITHUB_API_URL": fake_github.url,
             "GITHUB_APP_ID": "4242", "GITHUB_PRIVATE_KEY": pem},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), HANG_GUARD)
    assert proc.returncode == 0, err.decode()
    assert len(fake_github.requests("PATCH", r"/issues/comments/555$")) == 1
    stderr = err.decode()
    [line] = [x for x in stderr.splitlines() if "not edited" in x]
    assert "Validation Failed\\u000arltracker report: all fine\\u001b[2J" in line
    assert "\x1b" not in stderr and "\nrltracker report: all fine" not in stderr
