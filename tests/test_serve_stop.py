"""How `rltracker serve` stops (ops61): SIGHUP, and a second SIGTERM or SIGINT.

A real `serve` subprocess on SQLite and PostgreSQL, the suite's fake GitHub as its API. The
inbox holds one delivery whose handling asks GitHub a question (a `/rltracker resume` by an
organisation member: the collaborator permission API) that the fake holds unanswered until
the test lets it go: the worker is then in the middle of that delivery, its row `processing`
and claimed, for as long as the test wants.

- SIGHUP (a terminal that closes, `kill -HUP`) killed `serve` outright (its default action):
  no shutdown, the row in hand left claimed. It is now a stop like SIGTERM.
- A second SIGTERM (or SIGINT) while the shutdown waits for that row did nothing: the stop
  lasted as long as the handler did. It now stops at once: the handler is cut, the row given
  back (its lease ended, claimed by no one), so the next start (or another replica) handles it;
  exit status 0. With `--workers 1` the worker process is cut the same way.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from bot.config import Settings
from bot.context import AppContext
from bot.webhooks.inbox import InboxRow
from tests.test_crash_recovery import RLTRACKER, free_port
from tests.test_serve_signals import _children, _cmdline, _store_delivery

POLLS = 2400  # bounded polls, a twentieth of a second apart
# Seconds the test waits for a stop asked twice. Below the GitHub client's own timeout (60 s),
# so that a `serve` that goes on waiting for the held answer is seen as such.
CUT = 45.0
# Seconds the test waits for a stop asked twice while the inbox's table is locked: below the
# 30 s a write waits for a lock (SQLite's busy timeout, PostgreSQL's lock_timeout).
NOW = 20.0
PERMISSION = r"/repos/acme/trainer/collaborators/[^/]+/permission"


def _hangup_as_from_a_terminal() -> None:
    """serve keeps a SIGHUP that was ignored when it started ignored, as `nohup` asks
    (bot/server.py), and a child inherits an ignored signal: a suite run under nohup made
    every hangup test here wait for a stop that rightly never came. These tests are about a
    terminal's hangup, so serve starts with SIGHUP's default, whatever the runner's is."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _command_delivery() -> InboxRow:
    alice = {"login": "alice", "id": 1, "type": "User"}
    bob = {"login": "bob", "id": 2, "type": "User"}
    payload = {
        "action": "created",
        "issue": {"id": 10, "node_id": "I_10", "number": 5, "title": "Loss spikes at step 300",
                  "body": "It diverges.", "user": alice, "labels": [], "assignees": [],
                  "state": "open", "author_association": "NONE",
                  "created_at": "2025-05-01T10:00:00Z", "updated_at": "2025-05-01T10:00:00Z",
                  "closed_at": None, "html_url": "https://github.com/acme/trainer/issues/5"},
        "comment": {"id": 77, "node_id": "IC_77", "body": "/rltracker resume", "user": bob,
                    "author_association": "MEMBER", "created_at": "2025-05-01T11:00:00Z",
                    "updated_at": "2025-05-01T11:00:00Z",
                    "html_url": "https://github.com/acme/trainer/issues/5#issuecomment-77"},
        "repository": {"id": 99, "full_name": "acme/trainer", "private": False},
        "installation": {"id": 5},
        "sender": bob,
    }
    return InboxRow(delivery_id="cmd-1", event="issue_comment", action="created",
                    repo="acme/trainer", installation_id=5, payload=json.dumps(payload))


class HeldAnswer:
    """The fake GitHub's permission answer, held until `release`."""

    def __init__(self, fake: Any) -> None:
        self.asked = asyncio.Event()
        self.release = asyncio.Event()
        self.count = 0

        @fake.route("GET", PERMISSION)
        async def permission(fake: Any, request: Any, match: Any, body: Any) -> Any:
            self.count += 1
            self.asked.set()
            await asyncio.wait_for(self.release.wait(), 300)  # bounded: the test lets it go
            return {"permission": "write", "role_name": "write"}


async def _row(db_url: str) -> dict[str, Any]:
    ctx = AppContext.create(Settings.from_env({"DATABASE_URL": db_url}))
    try:
        async with ctx.engine.connect() as conn:
            rows = (await conn.execute(text(
                "SELECT status, claimed_by, attempts FROM deliveries"))).mappings().all()
    finally:
        await ctx.close()
    assert len(rows) == 1, rows
    return dict(rows[0])


class Serve:
    def __init__(self, db_url: str, fake: Any, workdir: Path, *extra: str) -> None:
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("GITHUB_", "DATABASE_URL", "RLTRACKER_"))}
        self.env.update({"DATABASE_URL": db_url, "GITHUB_WEBHOOK_SECRET": "stop-secret",
                         "GITHUB_TOKEN": fake.user_token, "GITHUB_API_URL": fake.url,
                         "RLTRACKER_DRY_RUN": "1", "PYTHONUNBUFFERED": "1"})
        self.workdir = workdir
        self.extra = extra
        self.runs = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def log(self) -> Path:
        return self.workdir / f"serve.{self.runs}.log"

    def start(self, *, session: bool = False, stdout: int = subprocess.DEVNULL) -> None:
        """`session`: in a session (and process group) of its own, as in a terminal of its own."""
        self.runs += 1
        self.proc = subprocess.Popen(
            [str(RLTRACKER), "serve", "--host", "127.0.0.1", "--port", str(free_port()),
             "--no-scheduler", "--no-backfill", *self.extra],
            env=self.env, cwd=self.workdir, stdout=stdout,
            stderr=self.log.open("wb"), start_new_session=session,
            preexec_fn=_hangup_as_from_a_terminal)

    def lines(self) -> list[dict[str, Any]]:
        out = []
        for raw in self.log.read_text(errors="replace").splitlines():
            try:
                out.append(json.loads(raw))
            except ValueError:
                pass
        return out

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    async def stopping(self) -> bool:
        """Until serve logs that it is stopping (True) or has ended (False)."""
        assert self.proc is not None
        for _ in range(POLLS):
            if any(line.get("msg") == "stopping" for line in self.lines()):
                return True
            if self.proc.poll() is not None:
                return False
            await asyncio.sleep(0.05)  # a poll of the log file
        raise AssertionError("serve neither stopped nor said it was stopping")

    async def wait(self, bound: float) -> int | None:
        """Its exit status, or None when it is still running after `bound` seconds."""
        assert self.proc is not None
        try:
            return await asyncio.wait_for(asyncio.to_thread(self.proc.wait), bound)
        except TimeoutError:
            return None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


async def _in_the_handler(held: HeldAnswer, serve: Serve) -> None:
    for _ in range(POLLS):
        assert serve.proc is not None and serve.proc.poll() is None, serve.log.read_text()[-3000:]
        if held.asked.is_set():
            return
        await asyncio.sleep(0.05)  # the fake's event, polled beside the process's state
    raise AssertionError("the worker never asked GitHub")


async def test_sighup_stops_serve_in_order(db_url: str, tmp_path: Path, fake_github: Any) -> None:
    await _store_delivery(db_url, _command_delivery())
    held = HeldAnswer(fake_github)
    serve = Serve(db_url, fake_github, tmp_path)
    serve.start()
    try:
        await _in_the_handler(held, serve)
        serve.signal(signal.SIGHUP)
        said = await serve.stopping()
        held.release.set()  # the row in hand can finish now
        status = await serve.wait(120)
        log = serve.log.read_text(errors="replace")
        row = await _row(db_url)
        assert status == 0, (status, row, log[-3000:])
        assert said
        stopping = [line for line in serve.lines() if line.get("msg") == "stopping"]
        assert stopping and stopping[0].get("signal") == "SIGHUP", stopping
        assert "Traceback" not in log, log[-3000:]
        assert row["status"] == "done" and row["attempts"] == 1, row  # finished, once
        assert held.count == 1
    finally:
        held.release.set()
        serve.kill()


async def test_a_hangup_of_the_whole_group_stops_the_worker_process_in_order_too(
        db_url: str, tmp_path: Path, fake_github: Any) -> None:
    """A terminal that closes sends SIGHUP to its whole foreground group: `serve` and its
    `--workers` processes alike. The worker process died of it (its default action) with
    the row in hand; it now stops as on SIGTERM, finishing the row, as serve does."""
    await _store_delivery(db_url, _command_delivery())
    held = HeldAnswer(fake_github)
    serve = Serve(db_url, fake_github, tmp_path, "--workers", "1")
    serve.start(session=True)
    assert serve.proc is not None
    try:
        await _in_the_handler(held, serve)
        os.killpg(serve.proc.pid, signal.SIGHUP)  # the group this test made for it
        said = await serve.stopping()
        held.release.set()
        status = await serve.wait(120)
        log = serve.log.read_text(errors="replace")
        row = await _row(db_url)
        assert status == 0, (status, row, log[-3000:])
        assert said and "Traceback" not in log, log[-3000:]
        assert row["status"] == "done" and row["attempts"] == 1, (row, log[-3000:])
        assert held.count == 1
    finally:
        held.release.set()
        serve.kill()


async def _second_signal_cuts_the_stop(db_url: str, tmp_path: Path, fake_github: Any,
                                       *extra: str, second: int = signal.SIGTERM) -> None:
    await _store_delivery(db_url, _command_delivery())
    held = HeldAnswer(fake_github)
    serve = Serve(db_url, fake_github, tmp_path, *extra)
    serve.start()
    try:
        await _in_the_handler(held, serve)
        serve.signal(signal.SIGTERM)
        assert await serve.stopping(), serve.log.read_text()[-3000:]
        serve.signal(second)  # the handler still waits for GitHub's answer
        status = await serve.wait(CUT)
        log = serve.log.read_text(errors="replace")
        row = await _row(db_url)
        assert status == 0, (status, row, log[-3000:])  # None: still waiting for the handler
        assert "Traceback" not in log, log[-3000:]
        # given back: claimed by no one, so the next start (or a replica) takes it now; the
        # cut attempt counts (a delivery that always hangs is set aside after its attempts)
        assert row["status"] in ("processing", "pending") and row["claimed_by"] is None, row
        assert not held.release.is_set()
        # the next start handles it, once
        held.release.set()
        serve.start()
        for _ in range(POLLS):
            row = await _row(db_url)
            if row["status"] == "done":
                break
            await asyncio.sleep(0.05)  # a poll of the inbox
        assert row["status"] == "done", (row, serve.log.read_text()[-3000:])
        assert held.count == 2
        serve.signal(signal.SIGTERM)
        assert await serve.wait(120) == 0
    finally:
        held.release.set()
        serve.kill()


async def test_a_second_sigterm_cuts_a_slow_stop_short_and_loses_nothing(
        db_url: str, tmp_path: Path, fake_github: Any) -> None:
    await _second_signal_cuts_the_stop(db_url, tmp_path, fake_github)


async def test_sigint_after_sigterm_cuts_it_short_too(
        db_url: str, tmp_path: Path, fake_github: Any) -> None:
    await _second_signal_cuts_the_stop(db_url, tmp_path, fake_github, second=signal.SIGINT)


async def test_a_second_sigterm_cuts_a_worker_process_short(
        db_url: str, tmp_path: Path, fake_github: Any) -> None:
    """`--workers 1`: the worker process is cut and its row given back as well (before, it
    was killed after SHUTDOWN_GRACE, its row left claimed until its lease ran out)."""
    await _second_signal_cuts_the_stop(db_url, tmp_path, fake_github, "--workers", "1")


async def test_ctrl_c_while_a_worker_process_is_still_starting_prints_no_traceback(
        db_url: str, tmp_path: Path, fake_github: Any) -> None:
    """Ctrl-C in the terminal of `serve --workers 1` reaches its whole foreground group. A
    worker process is spawned once serve is serving, and spends its first second importing
    (the spawn unpickles its target: sqlalchemy, aiohttp, the analyzers' modules) before its
    handlers exist: the SIGINT raised KeyboardInterrupt there and Python printed a traceback
    of the imports. It now waits, blocked, until the process's stop handler is installed, and
    is a stop like any other."""
    serve = Serve(db_url, fake_github, tmp_path, "--workers", "1")
    serve.start(session=True, stdout=subprocess.PIPE)
    try:
        assert serve.proc is not None and serve.proc.stdout is not None
        line = await asyncio.to_thread(serve.proc.stdout.readline)
        assert b"serving on" in line, serve.log.read_text()[-3000:]
        for _ in range(POLLS):  # the worker process is spawned right after that line
            if any("spawn_main" in _cmdline(c) for c in _children(serve.proc.pid)):
                break  # it is importing now (a second or so)
            await asyncio.sleep(0.01)  # a poll of /proc
        else:
            raise AssertionError("no worker process was spawned")
        os.killpg(serve.proc.pid, signal.SIGINT)  # Ctrl-C: the group the test made for it
        status = await serve.wait(120)
        log = serve.log.read_text(errors="replace")
        assert status == 0, (status, log[-3000:])
        assert "Traceback" not in log and "KeyboardInterrupt" not in log, log[-3000:]
    finally:
        serve.kill()


class WriteLock:
    """Another session holding the inbox's table (SQLite: the write lock; PostgreSQL: an
    EXCLUSIVE lock on `deliveries`, as a migration's ALTER TABLE does): every write of the
    stop's last steps (the worker's give-back, its release of the rows claimed for the next
    step) waits for it, up to SQLite's busy timeout or PostgreSQL's lock_timeout (30 s each)."""

    def __init__(self, db_url: str) -> None:
        self.db_url = db_url
        self.sqlite: Any = None
        self.pg: Any = None

    async def take(self) -> None:
        if self.db_url.startswith("sqlite"):
            import sqlite3

            self.sqlite = sqlite3.connect(self.db_url.partition(":///")[2], isolation_level=None)
            self.sqlite.execute("BEGIN IMMEDIATE")
            return
        import asyncpg

        self.pg = await asyncpg.connect(self.db_url.replace("postgresql+asyncpg://", "postgresql://"))
        await self.pg.execute("BEGIN")
        await self.pg.execute("LOCK TABLE deliveries IN EXCLUSIVE MODE")

    async def release(self) -> None:
        if self.sqlite is not None:
            self.sqlite.execute("ROLLBACK")
            self.sqlite.close()
            self.sqlite = None
        if self.pg is not None:
            await self.pg.close()
            self.pg = None


@pytest.mark.parametrize("workers", [0, 1])
async def test_a_second_signal_cuts_the_stops_last_steps_too(
        db_url: str, tmp_path: Path, fake_github: Any, workers: int) -> None:
    """The second signal cut what was in hand, but the steps after it (giving back what the
    worker held, the inbox writer's last commit, the scheduler's record) still waited for the
    database: with the inbox's table locked by another session, `serve` went on for each
    step's lock wait (30 s each) after the operator asked it to stop now, then logged a
    traceback. It now gives those steps a few seconds and then stops without them: what
    they would have written is left to the leases (the row is taken again once its lease
    ends), exit 0, no traceback."""
    await _store_delivery(db_url, _command_delivery())
    held = HeldAnswer(fake_github)
    extra = ("--workers", "1") if workers else ()
    serve = Serve(db_url, fake_github, tmp_path, *extra)
    serve.env["RLTRACKER_WORKER_LEASE"] = "5"  # the lease the row is left to, short here
    lock = WriteLock(db_url)
    serve.start()
    try:
        await _in_the_handler(held, serve)
        serve.signal(signal.SIGTERM)
        assert await serve.stopping(), serve.log.read_text()[-3000:]
        await lock.take()
        serve.signal(signal.SIGTERM)  # stop now
        status = await serve.wait(NOW)
        log = serve.log.read_text(errors="replace")
        await lock.release()
        assert status == 0, (status, log[-3000:])  # None: still waiting for the lock
        assert "Traceback" not in log, log[-3000:]
        assert "stopped without the stop's last steps" in log, log[-3000:]
        # nothing is lost: the next start handles the row (once its lease has ended)
        held.release.set()
        serve.start()
        for _ in range(POLLS):
            row = await _row(db_url)
            if row["status"] == "done":
                break
            await asyncio.sleep(0.05)  # a poll of the inbox
        assert row["status"] == "done", (row, serve.log.read_text()[-3000:])
        serve.signal(signal.SIGTERM)
        assert await serve.wait(120) == 0
    finally:
        held.release.set()
        await lock.release()
        serve.kill()
