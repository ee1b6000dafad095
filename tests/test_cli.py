"""The `rltracker` command: serve's start-up checks, --dev, replay and stats."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import io
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
from pathlib import Path

import aiohttp
import pytest
from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import select

from bot.app import create_app
from bot.cli import main
from bot.context import AppContext
from bot.store.models import Delivery
from tests.test_crash_recovery import RLTRACKER, free_port

CLEAN_ENV = {k: v for k, v in os.environ.items()
             if not k.startswith(("GITHUB_", "DATABASE_URL", "RLTRACKER_"))}


def run_cli(*args: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(RLTRACKER), *args], env={**CLEAN_ENV, **env}, text=True,
                          capture_output=True, timeout=timeout)


def test_help_says_what_the_command_is() -> None:
    result = run_cli("--help", env={})
    assert result.returncode == 0
    # the description is whole sentences (it was the first line of a docstring, cut mid-sentence)
    described = result.stdout.split("positional arguments")[0]
    assert "rltracker" in described and not described.rstrip().endswith(("this file", ";", ","))
    assert "GitHub App" in described


def test_serve_refuses_without_webhook_secret(tmp_path: Path, sqlite_template: Path) -> None:
    db = tmp_path / "x.db"
    shutil.copy(sqlite_template, db)
    result = run_cli("serve", "--port", str(free_port()),
                     env={"DATABASE_URL": f"sqlite+aiosqlite:///{db}"})
    assert result.returncode == 2
    assert "GITHUB_WEBHOOK_SECRET" in result.stderr and "--dev" in result.stderr


def test_serve_refuses_database_behind_migrations(tmp_path: Path) -> None:
    db = tmp_path / "unmigrated.db"
    # a SQLite database nothing migrated (a missing one is refused before: the next test; an
    # empty file too: test_an_empty_sqlite_file_is_said_to_be_empty_and_left_as_it_is)
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute("CREATE TABLE notes (text TEXT)")
    result = run_cli("serve", "--port", str(free_port()),
                     env={"DATABASE_URL": f"sqlite+aiosqlite:///{db}",
                          "GITHUB_WEBHOOK_SECRET": "s3cret-value"})
    # A failure to act on, not a bad setting: exit 1, as README says and as every other
    # command answers on the same database (`rltracker stats` exits 1).
    assert result.returncode == 1
    assert "behind the migrations" in result.stderr and "rltracker migrate" in result.stderr
    # after `rltracker migrate` the same database is accepted (checked by the --dev test)
    migrated = run_cli("migrate", env={"DATABASE_URL": f"sqlite+aiosqlite:///{db}"})
    assert migrated.returncode == 0, migrated.stderr


@pytest.mark.parametrize("dev", [False, True])
def test_serve_on_a_missing_sqlite_file_refuses_and_creates_nothing(tmp_path: Path, dev: bool) -> None:
    """An operator's typo in DATABASE_URL (or a folder not mounted): `serve` opened the path,
    SQLite created an empty file there, and the start failed with "the database is behind the
    migrations (it is at no revision)", sending the operator to `rltracker migrate`, which
    would have made the typo a fresh, empty tracker. The empty file stayed. Now `serve` says
    the database does not exist, as the reading commands do, exit 2, and creates nothing;
    `rltracker migrate` (which `make run` runs first) creates it, and then `serve` starts
    (tests/test_first_run.py)."""
    db = tmp_path / "typo.db"
    env = {"DATABASE_URL": f"sqlite+aiosqlite:///{db}"}
    result = run_cli("serve", "--port", str(free_port()), *(["--dev"] if dev else []),
                     env=env if dev else {**env, "GITHUB_WEBHOOK_SECRET": "s3cret-value"})
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("rltracker serve: DATABASE_URL="), result.stderr
    assert f"{db} does not exist" in lines[0] and "rltracker migrate" in lines[0]
    assert "behind" not in lines[0]
    assert list(tmp_path.iterdir()) == []  # not the file, nor its -wal or -shm


async def test_serve_dev_prints_secret_and_serves(tmp_path: Path, sqlite_template: Path) -> None:
    db = tmp_path / "dev.db"
    shutil.copy(sqlite_template, db)
    port = free_port()
    out = tmp_path / "stdout.txt"
    err = tmp_path / "stderr.txt"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        proc = subprocess.Popen(  # noqa: ASYNC220 - starting it does not block
            [str(RLTRACKER), "serve", "--dev", "--host", "127.0.0.1"],  # as `make run` does
            env={**CLEAN_ENV, "DATABASE_URL": f"sqlite+aiosqlite:///{db}", "PORT": str(port),
                 "GITHUB_API_URL": "http://127.0.0.1:9"},
            stdout=stdout, stderr=stderr)
    try:
        base = f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as session:
            for _ in range(600):  # bounded readiness poll
                assert proc.poll() is None, err.read_text()[-2000:]
                with contextlib.suppress(aiohttp.ClientError):
                    async with session.get(base + "/healthz") as resp:
                        if resp.status == 200:
                            assert await resp.json() == {"status": "ok", "database": "ok",
                                                         "deliveries_failed": 0}
                            break
                await asyncio.sleep(0.05)
            else:
                raise AssertionError("serve --dev never answered")
            match = re.search(r"webhook secret for this run: ([0-9a-f]{40})", out.read_text())
            assert match, out.read_text()
            secret = match.group(1)
            assert "dry-run" in out.read_text()
            body = b'{"zen": "Design for failure."}'
            signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
            headers = {"Content-Type": "application/json", "X-GitHub-Event": "ping",
                       "X-GitHub-Delivery": "dev-1", "X-Hub-Signature-256": signature}
            async with session.post(base + "/webhook", data=body, headers=headers) as resp:
                assert resp.status == 202
            for _ in range(600):  # the in-process worker takes it (bounded poll)
                async with session.get(base + "/api/stats") as resp:
                    stats = await resp.json()
                if stats["deliveries"]["done"] == 1:
                    break
                await asyncio.sleep(0.05)
            assert stats["deliveries"] == {"received": 1, "done": 1, "failed": 0, "pending": 0}
            async with session.get(base + "/") as resp:
                assert resp.status == 200
        assert secret not in err.read_text()  # printed once on stdout, never logged
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert proc.returncode == 0


async def test_replay_sends_signed_deliveries(ctx: AppContext, shared_dir: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    root = shared_dir / "fixtures" / "webhooks"
    async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
        url = str(client.make_url("/webhook"))
        code = await asyncio.to_thread(
            main, ["replay", str(root / "ping"), str(root / "issues" / "opened.json"),
                   "--url", url, "--secret", "test-secret"])
        out = capsys.readouterr().out
        assert code == 0, out
        assert "summary: 202: 4" in out
        # --event overrides the folder name (an event the app handles: user79); a wrong
        # secret is refused and reported
        code = await asyncio.to_thread(
            main, ["replay", str(root / "ping" / "ping.json"), "--url", url, "--secret", "nope",
                   "--event", "installation_target"])
        out = capsys.readouterr().out
        assert code == 1 and "summary: 401: 1" in out
        code = await asyncio.to_thread(
            main, ["replay", str(root / "ping" / "ping.json"), "--url", url,
                   "--secret", "test-secret", "--event", "installation_target"])
        assert code == 0
    async with ctx.sessionmaker() as s:
        rows = list(await s.scalars(select(Delivery).order_by(Delivery.id)))
    assert [r.event for r in rows] == ["ping", "ping", "ping", "issues", "installation_target"]
    assert rows[3].action == "opened"



EXAMPLE_ISSUES = Path(__file__).resolve().parent.parent / "examples" / "issues"


async def test_replay_refuses_an_event_the_app_does_not_handle(
        ctx: AppContext, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The event is `--event`, else the file's folder name: a payload saved to a folder of
    another name (`~/Downloads/x.json`: event "Downloads") or `--event issue` for `issues`
    was answered 202, stored and done with nothing done, exit 0: it read as replayed
    (user79; failed on main: exit 0, the deliveries stored). Now exit 2, one line saying
    what to do, nothing sent."""
    saved = tmp_path / "Downloads"
    saved.mkdir()
    (saved / "x.json").write_bytes((EXAMPLE_ISSUES / "opened.failure-en.json").read_bytes())
    async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
        url = str(client.make_url("/webhook"))
        code = await asyncio.to_thread(main, ["replay", str(EXAMPLE_ISSUES), str(saved), "--url",
                                              url, "--secret", "test-secret"])
        out, err = capsys.readouterr()
        assert code == 2 and out == "", out
        [line] = err.splitlines()
        assert line.startswith(f"rltracker replay: {saved / 'x.json'}: its folder's name "
                               "'Downloads' is taken for the event"), line
        assert "give --event (one of " in line and line.endswith("nothing was sent")
        code = await asyncio.to_thread(main, ["replay", str(saved / "x.json"), "--url", url,
                                              "--secret", "test-secret", "--event", "issue"])
        out, err = capsys.readouterr()
        assert code == 2 and out == ""
        [line] = err.splitlines()
        assert line.startswith("rltracker replay: --event issue: not an event the app handles "
                               "(did you mean issues? one of "), line
        # given right, it is sent
        code = await asyncio.to_thread(main, ["replay", str(saved / "x.json"), "--url", url,
                                              "--secret", "test-secret", "--event", "issues"])
        assert code == 0, capsys.readouterr()
    async with ctx.sessionmaker() as s:
        rows = list(await s.scalars(select(Delivery).order_by(Delivery.id)))
    assert [r.event for r in rows] == ["issues"]  # the refused replays sent nothing


async def test_replay_says_why_a_delivery_was_refused(ctx: AppContext, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A refused delivery was printed as its status alone ("401\tfile" for every file sent
    with the wrong secret, the README demo's likeliest slip; "400" for a file that is no JSON
    object): the app's answer says why, and the line now does, on one line; a 2xx line is
    unchanged."""
    examples = EXAMPLE_ISSUES
    (tmp_path / "issues").mkdir()
    (tmp_path / "issues" / "notes.json").write_text("not json\n")
    async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
        url = str(client.make_url("/webhook"))
        code = await asyncio.to_thread(
            main, ["replay", str(examples / "opened.failure-en.json"), "--url", url, "--secret", "nope"])
        out = capsys.readouterr().out
        assert code == 1
        assert f"401\t{examples / 'opened.failure-en.json'}\tsignature does not match\n" in out, out
        code = await asyncio.to_thread(
            main, ["replay", str(tmp_path / "issues"), str(examples / "opened.failure-en.json"),
                   "--url", url, "--secret", "test-secret"])
        out = capsys.readouterr().out
        assert code == 1
        assert re.search(rf"^400\t{re.escape(str(tmp_path / 'issues' / 'notes.json'))}\tbody is "
                         r"not a JSON payload\b.*$", out, re.M), out
        assert f"202\t{examples / 'opened.failure-en.json'}\n" in out, out

def test_stats_json(db_url: str) -> None:
    result = run_cli("stats", "--json", env={"DATABASE_URL": db_url})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "deliveries": {"received": 0, "done": 0, "failed": 0, "pending": 0},
        "threads": 0,
        "comments": 0,
    }
    text = run_cli("stats", env={"DATABASE_URL": db_url})
    assert "deliveries: 0 received" in text.stdout


def test_logs_are_json_and_scrub_secrets() -> None:
    import logging

    from bot.logs import JsonFormatter, log_delivery, register_secret

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("rltracker.delivery")
    logger.addHandler(handler)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    try:
        register_secret("ghs_supersecrettoken123")
        log_delivery(delivery_id="d1", event="issues", action="opened", repo="o/r",
                     outcome="done", token="ghs_x", note="used ghs_supersecrettoken123 here")
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    line = json.loads(stream.getvalue())
    assert {k: line[k] for k in ("delivery", "event", "action", "repo", "outcome")} == {
        "delivery": "d1", "event": "issues", "action": "opened", "repo": "o/r", "outcome": "done"}
    assert line["token"] == "[redacted]"
    assert "ghs_supersecrettoken123" not in stream.getvalue()


ROOT = Path(__file__).resolve().parent.parent


def test_app_manifest_is_least_privilege() -> None:
    import yaml

    manifest = yaml.safe_load((ROOT / "app.yaml").read_text())
    assert manifest["name"] and manifest["url"]
    assert manifest["hook_attributes"]["url"].endswith("/webhook")
    assert manifest["default_events"] == [
        "issues", "issue_comment", "pull_request", "pull_request_review",
        "pull_request_review_comment", "discussion", "discussion_comment", "repository"]
    assert manifest["default_permissions"] == {
        "metadata": "read", "contents": "read", "issues": "write",
        "pull_requests": "write", "discussions": "write"}


def test_dockerfile_runs_migrations_as_non_root_with_healthcheck() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim", text, re.M)
    users = re.findall(r"^USER (\S+)", text, re.M)
    assert users and users[-1] not in ("root", "0")
    assert re.search(r"^HEALTHCHECK .*\n?.*/healthz", text, re.M)
    assert "rltracker migrate && exec rltracker serve" in text


def test_readme_links_and_quick_start() -> None:
    text = (ROOT / "README.md").read_text()
    assert "make run" in text and "make test" in text
    for target in re.findall(r"\]\((docs/[^)]+)\)", text):
        assert (ROOT / target).is_file(), target
    assert "PyGithub" in text


@pytest.mark.parametrize("command", [["stats"], ["serve", "--dev", "--no-scheduler"]])
def test_an_empty_sqlite_file_is_said_to_be_empty_and_left_as_it_is(
        tmp_path: Path, command: list[str]) -> None:
    """A 0-byte file at DATABASE_URL (`touch rltracker.db`, a copy cut short, a volume mounted
    empty) was called "behind the migrations (it is at no revision)", and the check (which
    writes nothing, by its word) wrote SQLite's header into it: 4 KiB after a refusal. It is
    said to be an empty file, with what makes it a database (`rltracker migrate`), and stays
    0 bytes, nothing made beside it (left80)."""
    db = tmp_path / "empty.db"
    db.touch()
    extra = ["--port", str(free_port())] if command[0] == "serve" else []
    result = run_cli(*command, *extra, env={"DATABASE_URL": f"sqlite+aiosqlite:///{db}"})
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert f"{db} is an empty file" in lines[0] and "rltracker migrate" in lines[0]
    assert "no revision" not in lines[0]
    assert db.stat().st_size == 0
    assert [p.name for p in tmp_path.iterdir()] == ["empty.db"]  # no -wal, -shm
    migrated = run_cli("migrate", env={"DATABASE_URL": f"sqlite+aiosqlite:///{db}"})
    assert migrated.returncode == 0, migrated.stderr  # what the line says to do works
