"""SIGTERM while `rltracker serve` is still starting: its signal handlers were installed only
once it was serving, so a SIGTERM during the start-up work (the migrations check, the
scheduler's start, the first-backfill check, the inbox worker's warm-up) killed the process
outright: no orderly shutdown, the inbox worker's claim left `processing` (on PostgreSQL no
replica takes it before its lease ends), and a request in flight reset. Now the handlers come
first: a stop asked for during start-up ends the start-up and runs the same shutdown as a
stop while serving, exit status 0.

`rltracker serve` runs as a real subprocess on PostgreSQL. The test holds an ACCESS EXCLUSIVE
lock on `threads` (what a migration's ALTER TABLE holds): the start-up's first-backfill check
and the inbox worker's handling of a stored delivery both queue behind it. The test waits for
the process's "serving on" line and, through pg_locks and the delivery's row, for both waits;
then SIGTERM, then it releases the lock once the process says it is stopping (or has died)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy import text

from bot.config import Settings
from bot.context import AppContext
from bot.webhooks.inbox import Inbox, InboxRow
from tests.test_crash_recovery import RLTRACKER, free_port

pytestmark = pytest.mark.postgres
POLLS = 3000  # bounded polls of pg_locks (each a query, a hundredth of a second apart)
BOUND = 120.0  # seconds: only keeps a process that never answers from hanging the test


def _plain(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://")


def _issue_opened() -> str:
    user = {"login": "alice", "id": 1, "type": "User"}
    return json.dumps({
        "action": "opened",
        "issue": {"id": 10, "node_id": "I_10", "number": 5, "title": "Loss spikes at step 300",
                  "body": "It diverges.", "user": user, "labels": [], "assignees": [],
                  "state": "open", "author_association": "NONE",
                  "created_at": "2025-05-01T10:00:00Z", "updated_at": "2025-05-01T10:00:00Z",
                  "closed_at": None, "html_url": "https://github.com/acme/trainer/issues/5"},
        "repository": {"id": 99, "full_name": "acme/trainer", "private": False},
        "sender": user,
    })


async def _store_delivery(db_url: str, row: InboxRow | None = None) -> None:
    ctx = AppContext.create(Settings.from_env({"DATABASE_URL": db_url}))
    inbox = Inbox(ctx.engine)
    inbox.start()
    try:
        await inbox.submit(row or InboxRow(
            delivery_id="start-1", event="issues", action="opened", repo="acme/trainer",
            installation_id=None, payload=_issue_opened()))
    finally:
        await inbox.close()
        await ctx.close()


async def _statuses(db_url: str) -> list[str]:
    ctx = AppContext.create(Settings.from_env({"DATABASE_URL": db_url}))
    try:
        async with ctx.engine.connect() as conn:
            return list((await conn.execute(text("SELECT status FROM deliveries"))).scalars())
    finally:
        await ctx.close()


async def _read_until(stream: asyncio.StreamReader, needle: str, seen: list[str]) -> bool:
    """Lines of `stream` into `seen` until one holds `needle` (True) or the stream ends."""
    while True:
        line = await stream.readline()
        if not line:
            return False
        seen.append(line.decode(errors="replace"))
        if needle in seen[-1]:
            return True


async def _wait_for_both_waits(observer: asyncpg.Connection, proc: asyncio.subprocess.Process,
                               err: list[str]) -> None:
    for _ in range(POLLS):
        assert proc.returncode is None, "".join(err)[-3000:]
        waiting = await observer.fetchval(
            "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE NOT l.granted AND l.relation = 'threads'::regclass "
            "AND a.datname = current_database()")
        claimed = await observer.fetchval(
            "SELECT count(*) FROM deliveries WHERE status = 'processing' AND claimed_by IS NOT NULL")
        if waiting >= 2 and claimed == 1:
            return
        await asyncio.sleep(0.01)  # a poll of pg_locks, not a guess at a duration
    raise AssertionError("the start-up and the worker never both queued behind the lock")


async def test_sigterm_during_start_up_stops_in_order(db_url: str, tmp_path: Path) -> None:
    if not db_url.startswith("postgresql"):
        pytest.skip("the start-up is held at a known point by a PostgreSQL table lock")
    await _store_delivery(db_url)
    holder = await asyncpg.connect(_plain(db_url))
    # pg_locks read outside the holder's transaction (pg_stat_activity is a snapshot taken
    # once per transaction)
    observer = await asyncpg.connect(_plain(db_url))
    lock = holder.transaction()
    await lock.start()
    await holder.execute("LOCK TABLE threads IN ACCESS EXCLUSIVE MODE")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_", "DATABASE_URL", "RLTRACKER_"))}
    env.update({
        "DATABASE_URL": db_url, "GITHUB_WEBHOOK_SECRET": "start-secret",
        # a token: the start-up asks whether a first backfill is needed (it reads `threads`)
        "GITHUB_TOKEN": "start-token", "GITHUB_API_URL": "http://127.0.0.1:9",
        "RLTRACKER_DRY_RUN": "1", "PYTHONUNBUFFERED": "1",
    })
    proc = await asyncio.create_subprocess_exec(
        str(RLTRACKER), "serve", "--host", "127.0.0.1", "--port", str(free_port()),
        env=env, cwd=tmp_path, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    out: list[str] = []
    err: list[str] = []
    stderr_reader = asyncio.ensure_future(_read_until(proc.stderr, "\"stopping", err))
    released = False
    try:
        assert await asyncio.wait_for(_read_until(proc.stdout, "rltracker serving on", out),
                                      BOUND), "".join(err)[-3000:]
        await _wait_for_both_waits(observer, proc, err)
        proc.terminate()  # SIGTERM, the start-up still waiting for its check
        # the process says it is stopping (or it died): then the lock goes
        await asyncio.wait_for(asyncio.shield(stderr_reader), BOUND)
        await lock.rollback()
        released = True
        await asyncio.wait_for(proc.wait(), BOUND)
        await asyncio.wait_for(stderr_reader, BOUND)
        rest = await proc.stderr.read()
        err.append(rest.decode(errors="replace"))
        log = "".join(err)
        rows = await holder.fetch("SELECT status, claimed_by FROM deliveries")
        assert proc.returncode == 0, (proc.returncode, [dict(r) for r in rows], log[-2000:])
        assert "Traceback" not in log, log[-3000:]
        # the row in hand was finished (or given back), not left claimed
        assert [r["status"] for r in rows] in (["done"], ["pending"]), rows
        # the first backfill was not started after the stop, nor left "running"
        assert await holder.fetchval(
            "SELECT count(*) FROM job_runs WHERE outcome = 'running'") == 0
        assert await holder.fetchval(
            "SELECT count(*) FROM job_runs WHERE name = 'first_backfill'") == 0
    finally:
        if not released:
            await lock.rollback()
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        stderr_reader.cancel()
        await holder.close()
        await observer.close()


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(c) for c in text.split()]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's exit is reaped by whatever PID 1 is, or not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


async def test_a_worker_process_ends_with_a_serve_that_was_killed(db_url: str,
                                                                   tmp_path: Path) -> None:
    """`serve --workers 1` SIGKILLed (out of memory, a supervisor's hard stop): its worker
    process went on working the inbox, an orphan of PID 1, for good. On SQLite the restarted
    `serve` takes back every row left `processing` at once (one process is assumed), so the
    orphan and the new worker could handle the same delivery twice. Now the worker process
    watches its parent and stops as on SIGTERM (the row in hand finished). The kill comes
    once the worker process has handled a delivery (it is past its start)."""
    await _store_delivery(db_url, InboxRow(delivery_id="ping-1", event="ping", action=None,
                                           repo=None, installation_id=None,
                                           payload='{"zen": "Keep it simple."}'))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_", "DATABASE_URL", "RLTRACKER_"))}
    env.update({"DATABASE_URL": db_url, "GITHUB_WEBHOOK_SECRET": "kill-secret",
                "GITHUB_API_URL": "http://127.0.0.1:9", "RLTRACKER_DRY_RUN": "1",
                "PYTHONUNBUFFERED": "1"})
    # (subprocess.Popen: asyncio's wait() would wait for the pipe, which an orphan holds)
    proc = subprocess.Popen(  # noqa: ASYNC220 - starting it does not block
        [str(RLTRACKER), "serve", "--host", "127.0.0.1", "--port", str(free_port()),
         "--no-scheduler", "--workers", "1"], env=env, cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    worker: int | None = None
    try:
        line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), BOUND)
        assert b"rltracker serving on" in line, line
        for _ in range(POLLS):  # the worker process is spawned right after that line
            spawned = [c for c in _children(proc.pid) if "spawn_main" in _cmdline(c)]
            if spawned:
                worker = spawned[0]
                break
            await asyncio.sleep(0.01)  # a poll of /proc
        assert worker is not None, "no worker process was spawned"
        for _ in range(POLLS * 2):
            if await _statuses(db_url) == ["done"]:
                break
            await asyncio.sleep(0.01)  # a poll of the inbox
        assert await _statuses(db_url) == ["done"], "the worker process handled nothing"
        proc.kill()
        proc.wait()
        for _ in range(POLLS * 2):  # bounded: 60 s of polls; it ends within a second or two
            if not _running(worker):
                break
            await asyncio.sleep(0.01)  # a poll of /proc
        assert not _running(worker), "the worker process outlived its serve"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        if worker is not None and _running(worker):
            os.kill(worker, 9)  # the orphan this test made (its pid, not a name)
