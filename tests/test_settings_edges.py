"""Settings as an operator writes them: values read from files and .env lines (a newline or a
space at the end), and values the start-up check passed that failed later, at run time."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from bot.app import create_app
from bot.cli import main
from bot.config import SettingError, Settings
from bot.context import AppContext


async def test_replay_signs_with_the_secret_serve_verifies_with(
        db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """GITHUB_WEBHOOK_SECRET filled from a file (`echo secret > file`) ends in a newline:
    `serve` drops it (GitHub's secret field is one line), `rltracker replay` signed with it,
    so every delivery replayed to the server it was meant for was refused (401)."""
    monkeypatch.setenv("GITHUB_WEBHOOK_SECRET", "s3cret\n")
    settings = Settings.from_env({"GITHUB_WEBHOOK_SECRET": "s3cret\n"}, database_url=db_url)
    assert settings.webhook_secret == "s3cret"
    ping = tmp_path / "ping" / "ping.json"
    ping.parent.mkdir()
    ping.write_text(json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}))
    ctx = AppContext.create(settings)
    try:
        async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
            url = str(client.make_url("/webhook"))
            code = await asyncio.to_thread(main, ["replay", str(ping), "--url", url])
    finally:
        await ctx.close()
    out = capsys.readouterr().out
    assert code == 0 and "summary: 202: 1" in out, out


def _refused(env: dict[str, str]) -> SettingError:
    with pytest.raises(SettingError) as caught:
        Settings.from_env(env)
    return caught.value


@pytest.mark.parametrize(("name", "value", "read"), [
    # `.env` lines and files keep what follows the value: the public URL went into every link
    # the app posts ("https://tracker.example/ /methods/..."), the API URL into every request.
    ("RLTRACKER_PUBLIC_URL", "https://tracker.example/ ", "https://tracker.example"),
    ("RLTRACKER_PUBLIC_URL", "https://tracker.example\n", "https://tracker.example"),
    ("GITHUB_API_URL", "https://ghe.example/api/v3\n", "https://ghe.example/api/v3"),
    ("GITHUB_API_URL", " https://ghe.example/api/v3/ ", "https://ghe.example/api/v3"),
])
def test_a_url_read_with_spaces_around_it(name: str, value: str, read: str, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings = Settings.from_env({name: value})
    assert (settings.public_url if name == "RLTRACKER_PUBLIC_URL" else settings.api_url) == read
    if name == "GITHUB_API_URL":
        assert settings.graphql_url == "https://ghe.example/api/graphql"


@pytest.mark.parametrize(("name", "value"), [
    # paths are appended to both: a query or a fragment swallowed them (gidgethub's
    # urljoin of "https://ghe.example/api/v3?x=1" and "repos/o/r" is https://ghe.example/api/repos/o/r)
    ("GITHUB_API_URL", "https://ghe.example/api/v3?per_page=100"),
    ("GITHUB_API_URL", "https://ghe.example/api/v3#x"),
    ("RLTRACKER_PUBLIC_URL", "https://tracker.example/#top"),
    ("RLTRACKER_PUBLIC_URL", "https://tracker.example/?ref=github"),
    ("RLTRACKER_PUBLIC_URL", "https://tracker.example/rl tracker"),
    ("GITHUB_API_URL", "https://ghe.example/api/v3\n/extra"),
    # read as it is by the papers fetch (not stripped): a space asked arXiv for /api/query%20
    ("RLTRACKER_ARXIV_API_URL", "http://export.arxiv.org/api/query "),
])
def test_a_base_url_that_paths_cannot_follow_is_refused(name: str, value: str, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    error = _refused({name: value})
    assert error.name == name and error.exit_code == 2 and "\n" not in error.message


@pytest.mark.parametrize(("name", "value"), [
    # PostgreSQL's statement_timeout is an int of milliseconds: past 2147483647 every
    # bounded transaction (every page, the webhook's inbox write) failed at SET LOCAL.
    ("RLTRACKER_STATEMENT_TIMEOUT", "3000000"),
    ("RLTRACKER_STATEMENT_TIMEOUT", "1e10"),
    # the lease end is now + lease: past year 9999 every claim raised OverflowError
    ("RLTRACKER_WORKER_LEASE", "1e12"),
    ("RLTRACKER_WORKER_LEASE", "1e300"),
])
def test_a_number_the_check_passed_and_the_run_could_not_use(
        name: str, value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    error = _refused({name: value})
    assert error.name == name and error.message.startswith(f"{name}={value}:")
    assert error.message.endswith(("at most 2147483", "at most 86400"))  # not 2.14748e+06


def test_the_largest_statement_timeout_postgresql_takes_is_taken(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert Settings.from_env({"RLTRACKER_STATEMENT_TIMEOUT": "2147483"}).statement_timeout == 2147483
    assert Settings.from_env({"RLTRACKER_WORKER_LEASE": "86400"}).worker_lease == 86400


async def test_the_largest_statement_timeout_bounds_a_request(db_url: str) -> None:
    """What the check lets through is what PostgreSQL takes: a request's transaction under
    the largest bound runs (on SQLite, where nothing is bounded, too)."""
    from sqlalchemy import text

    from bot.store import db as store_db

    settings = Settings.from_env({"RLTRACKER_STATEMENT_TIMEOUT": "2147483"}, database_url=db_url)
    ctx = AppContext.create(settings)
    try:
        with store_db.bounded_statements(settings.statement_timeout):
            async with ctx.sessionmaker() as session:
                assert await session.scalar(text("SELECT 1")) == 1
        if db_url.startswith("postgresql"):  # a second more: what every request met on main
            with pytest.raises(Exception, match="statement_timeout"), \
                    store_db.bounded_statements(settings.statement_timeout + 1):
                async with ctx.sessionmaker() as session:
                    await session.scalar(text("SELECT 1"))
    finally:
        await ctx.close()


@pytest.mark.parametrize("cache_size", ["abc", "1.5", ""])
def test_a_postgresql_statement_cache_size_that_is_no_count(cache_size: str) -> None:
    """`?prepared_statement_cache_size=` reaches the driver as a whole number: anything else
    passed the check and ended `rltracker migrate` (and serve) in a ValueError traceback
    saying "this is a bug"."""
    url = f"postgresql+asyncpg://u:p@db.example/rl?prepared_statement_cache_size={cache_size}"
    error = _refused({"DATABASE_URL": url})
    assert error.name == "DATABASE_URL" and "prepared_statement_cache_size" in error.message
    assert ":p@" not in error.message  # the password is not shown


def test_a_postgresql_statement_cache_size_that_is_a_count_is_taken() -> None:
    url = "postgresql+asyncpg://u:p@db.example/rl?prepared_statement_cache_size=0"
    assert Settings.from_env({"DATABASE_URL": url}).database_url == url


@pytest.mark.parametrize("app_id", ["4242", None])
@pytest.mark.parametrize("content", ["", "\n  \n"])
def test_a_private_key_file_that_is_empty(app_id: str | None, content: str,
                                          tmp_path: Path) -> None:
    """The .pem file named by GITHUB_PRIVATE_KEY_PATH is empty (a download cut short, `touch`):
    with GITHUB_APP_ID the message said GITHUB_PRIVATE_KEY is not set, and to set it or the
    path (which is set); without it the app ran without credentials, in dry run, silently."""
    key = tmp_path / "app.pem"
    key.write_text(content)
    env = {"GITHUB_PRIVATE_KEY_PATH": str(key), "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/x.db"}
    if app_id:
        env["GITHUB_APP_ID"] = app_id
    error = _refused(env)
    assert error.name == "GITHUB_PRIVATE_KEY_PATH" and str(key) in error.message
    assert "empty" in error.message


def test_a_key_file_path_given_as_the_key_itself(tmp_path: Path) -> None:
    """GITHUB_PRIVATE_KEY=/secrets/app.pem (the path where the key text goes, a usual slip):
    the message said only that a PEM key was expected, the value not shown; the path is no
    secret and the variable for it is GITHUB_PRIVATE_KEY_PATH."""
    from tests.fakegithub import rsa_key_pair

    key = tmp_path / "app.pem"
    key.write_text(rsa_key_pair()[0])
    error = _refused({"GITHUB_APP_ID": "4242", "GITHUB_PRIVATE_KEY": f"{key}\n",
                      "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/x.db"})
    assert error.name == "GITHUB_PRIVATE_KEY" and "GITHUB_PRIVATE_KEY_PATH" in error.message
    assert str(key) in error.message


@pytest.mark.parametrize("app_id", ["４２４２", "٤٢", "4²"])
def test_an_app_id_of_digits_that_are_not_ascii(app_id: str, tmp_path: Path) -> None:
    """str.isdigit() takes full-width, Arabic-Indic and superscript digits: the check passed
    and every JWT's `iss` was refused by GitHub (401)."""
    from tests.fakegithub import rsa_key_pair

    error = _refused({"GITHUB_APP_ID": app_id, "GITHUB_PRIVATE_KEY": rsa_key_pair()[0],
                      "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/x.db"})
    assert error.name == "GITHUB_APP_ID" and "numeric id" in error.message
