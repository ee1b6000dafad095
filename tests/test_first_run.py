"""The first ten minutes, as a newcomer lives them, through the real `rltracker` command:

- without a token: `rltracker migrate`, `rltracker serve --dev`, the README's replay command
  on examples/, then the thread pages and /api/actions show the failure comments that would
  have been posted (English and Chinese), the rule summary, the proposal states and concerns;
- with a token pointing at the fake GitHub: serve's first start backfills the tracked
  repositories in the background and the front page shows its progress while it runs (the
  fake answers the first GraphQL request and holds the next one until the test lets it go);
- before anything is stored, every empty section says what fills it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import re
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import select

from bot.context import AppContext
from bot.store.jobs import FIRST_BACKFILL
from bot.store.models import JobRun, SyncCursor
from bot.store.threads import upsert_thread
from tests.test_cli import CLEAN_ENV
from tests.test_crash_recovery import RLTRACKER, ROOT, free_port

EXAMPLES = ROOT / "examples"
DEADLINE = 180.0  # seconds any poll below may take before the test fails (not a timing check)
README_REPLAY = ".venv/bin/rltracker replay examples/ --fresh --url http://localhost:8000/webhook --secret"


@dataclasses.dataclass
class Serve:
    """`rltracker serve --dev` as `make run` starts it, on a free port and a migrated SQLite file."""

    workdir: Path
    env: dict[str, str]
    args: tuple[str, ...] = ()
    port: int = dataclasses.field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def stdout(self) -> Path:
        return self.workdir / "serve.out"

    @property
    def stderr(self) -> Path:
        return self.workdir / "serve.err"

    async def start(self) -> None:
        migrate = await asyncio.create_subprocess_exec(
            str(RLTRACKER), "migrate", env={**CLEAN_ENV, **self.env},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await migrate.communicate()
        assert migrate.returncode == 0, err.decode()[-2000:]
        with self.stdout.open("wb") as stdout, self.stderr.open("wb") as stderr:
            self.proc = subprocess.Popen(  # noqa: ASYNC220 - starting it does not block
                [str(RLTRACKER), "serve", "--dev", "--host", "127.0.0.1", "--port", str(self.port),
                 *self.args], env={**CLEAN_ENV, **self.env}, stdout=stdout, stderr=stderr)
        await until(self._healthy, "serve never answered /healthz")

    async def _healthy(self) -> bool:
        assert self.proc is not None and self.proc.poll() is None, self.stderr.read_text()[-3000:]
        with contextlib.suppress(aiohttp.ClientError):
            async with aiohttp.ClientSession() as session, session.get(self.base + "/healthz") as resp:
                return resp.status == 200
        return False

    def secret(self) -> str:
        match = re.search(r"webhook secret for this run: ([0-9a-f]{40})", self.stdout.read_text())
        assert match, self.stdout.read_text()
        return match.group(1)

    async def get(self, path: str) -> tuple[int, str]:
        async with aiohttp.ClientSession() as session, session.get(self.base + path) as resp:
            return resp.status, await resp.text()

    async def get_json(self, path: str) -> Any:
        status, text = await self.get(path)
        assert status == 200, (path, status)
        return json.loads(text)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=60)


async def until(check: Any, message: str) -> None:
    """Polls `check()` (async, truthy when done) until it holds or the deadline passes."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE
    while not await check():
        if loop.time() > deadline:
            raise AssertionError(message)
        await asyncio.sleep(0.1)


@pytest.fixture
async def serve_factory(tmp_path: Path) -> AsyncIterator[Any]:
    started: list[Serve] = []

    async def make(env: dict[str, str], *args: str) -> Serve:
        db = tmp_path / f"first-run-{len(started)}.db"
        server = Serve(tmp_path, {"DATABASE_URL": f"sqlite+aiosqlite:///{db}", **env}, args)
        started.append(server)
        await server.start()
        return server

    yield make
    for server in started:
        server.stop()


# ------------------------------------------------------------------------ without a token
async def test_readme_demo_replays_the_examples(serve_factory: Any, fake_github: Any) -> None:
    readme = (ROOT / "README.md").read_text()
    assert README_REPLAY + " <printed secret>" in readme
    # No token: nothing to backfill. The fake GitHub only stands in for the contents API the
    # rule summary reads (a fresh clone reads github.com anonymously).
    server = await serve_factory({"GITHUB_API_URL": fake_github.url})
    replay = await asyncio.create_subprocess_exec(
        str(RLTRACKER), "replay", "examples/", "--fresh", "--url", server.base + "/webhook",
        "--secret", server.secret(), cwd=ROOT, env=CLEAN_ENV,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await replay.communicate()
    assert replay.returncode == 0, (out.decode(), err.decode())
    files = sorted(EXAMPLES.rglob("*.json"))
    assert out.decode().count("202\t") == len(files) == 6

    async def drained() -> bool:
        stats = await server.get_json("/api/stats")
        return stats["deliveries"]["done"] == len(files)

    await until(drained, "the worker did not finish the example deliveries")
    stats = await server.get_json("/api/stats")
    assert stats["deliveries"] == {"received": 6, "done": 6, "failed": 0, "pending": 0}

    actions = await server.get_json("/api/actions")
    by_thread = {(a["repo"], a["number"], a["kind"]): a for a in actions}
    en = by_thread[("verl-project/verl", 4187, "failure_comment")]
    zh = by_thread[("THUDM/slime", 1032, "failure_comment")]
    assert en["status"] == zh["status"] == "dry_run"
    assert "Entropy collapse" in en["body"] and "actor_rollout_ref.actor.clip_ratio_high" in en["body"]
    assert "熵坍塌" in zh["body"] and "--eps-clip-high" in zh["body"]
    # links in what it would post lead to this server (RLTRACKER_PUBLIC_URL unset: --port)
    assert f"(http://localhost:{server.port}/failures/entropy_collapse)" in en["body"]
    summary = by_thread[("huggingface/trl", 4630, "rule_summary")]
    assert summary["status"] == "dry_run" and "TRL" in summary["body"]
    quiet = by_thread[("huggingface/trl", 4630, "failure_comment")]
    assert quiet["status"] == "skipped" and quiet["reason"] == "not a training-failure report"

    status, page = await server.get("/threads/verl-project/verl/4187")
    assert status == 200
    assert "Failure comment: would have posted (dry run)" in page
    assert 'href="/failures/entropy_collapse"' in page and "Cue words:" in page
    assert 'href="https://github.com/verl-project/verl/issues/4187"' in page
    assert 'href="/frameworks/verl"' in page
    assert "<code>actor_rollout_ref.actor.clip_ratio_high=0.28</code>" in page  # Markdown rendered
    assert "rltracker:failure-comment" not in page  # the hidden marker is not shown
    status, page = await server.get("/threads/THUDM/slime/1032")
    assert status == 200 and "would have posted (dry run)" in page and "熵坍塌" in page
    status, page = await server.get("/threads/huggingface/trl/4630")
    assert "Contribution-rule summary: would have posted (dry run)" in page
    assert "Why: not a training-failure report" in page and "open, replied" in page
    status, page = await server.get("/threads/OpenRLHF/OpenRLHF/1288")
    assert "open, replied" in page and ">Tests or docs<" in page and "/methods/cispo" in page
    status, page = await server.get("/threads/areal-project/AReaL/512")
    assert "lapsed (stale / inactive)" in page
    status, page = await server.get("/")
    assert 'href="/threads/verl-project/verl/4187"' in page
    assert 'href="/threads/THUDM/slime/1032"' in page
    status, page = await server.get("/threads/verl-project/verl/999999")
    assert status == 404 and "No such thread" in page


# ------------------------------------------------------------------------ with a token
class GatedGraphQL:
    """Answers the first `free` requests at once; later ones wait until `gate` is set."""

    def __init__(self, responder: Any, free: int = 1) -> None:
        self.responder = responder
        self.free = free
        self.calls = 0
        self.gate = asyncio.Event()

    async def __call__(self, query: str, variables: dict[str, Any]) -> Any:
        self.calls += 1
        if self.calls > self.free:
            await self.gate.wait()
        return self.responder(query, variables)


async def test_first_start_with_a_token_backfills_and_shows_progress(
        serve_factory: Any, fake_github: Any, shared_dir: Path, tmp_path: Path) -> None:
    from tests.fake_graphql import FakeData, FakeGraphQL

    data = FakeData.generate(20, seed=3, long_every=0)
    gated = GatedGraphQL(FakeGraphQL(data, shared_dir / "fixtures" / "github-api" / "schema.graphql"))
    fake_github.graphql_handler = gated
    server = await serve_factory({"GITHUB_TOKEN": fake_github.user_token,
                                  "GITHUB_API_URL": fake_github.url})

    async def second_request_waiting() -> bool:
        return gated.calls >= 2

    # The first answer is stored before the second request goes out; that one now waits.
    await until(second_request_waiting, "the backfill never asked GitHub twice")
    stats = await server.get_json("/api/stats")
    total = len(data.all_threads())
    assert 0 < stats["threads"] < total
    status, page = await server.get("/")
    assert status == 200
    assert "First backfill: running" in page and '<meta http-equiv="refresh"' in page
    stored = re.search(r"<p>(\d+)(?: of about (\d+))? threads stored", page)
    assert stored and int(stored.group(1)) == stats["threads"], page
    assert stored.group(2) in (None, str(total))  # GitHub's total, once the progress is written
    rows = dict(re.findall(r'<tr data-repo="([^"]+)">.*?</td><td>(\d+)</td>', page))
    assert len(rows) == 7 and sum(int(n) for n in rows.values()) == stats["threads"]
    assert "Left: " in page and ("in progress" in page or "waiting" in page)
    # An empty list elsewhere points at the running backfill instead of asking for a token.
    # With threads stored, an empty list is plainly empty.
    status, page = await server.get("/proposals?paper=9999.99999")
    assert "No tracked proposal matches." in page and "GITHUB_TOKEN" not in page

    gated.gate.set()

    async def finished() -> bool:
        status, page = await server.get("/")
        return "First backfill" not in page

    await until(finished, "the first backfill did not finish")
    stats = await server.get_json("/api/stats")
    assert stats["threads"] == total
    server.stop()
    from bot.store.db import make_engine

    engine = make_engine(server.env["DATABASE_URL"])
    try:
        async with engine.connect() as conn:
            runs = (await conn.execute(select(JobRun.name, JobRun.outcome, JobRun.counts))).all()
            cursors = (await conn.execute(select(SyncCursor.full_done))).all()
    finally:
        await engine.dispose()
    assert [(n, o) for n, o, _ in runs] == [(FIRST_BACKFILL, "ok")]
    assert runs[0][2]["threads"] == total
    assert len(cursors) == 21 and all(done for (done,) in cursors)


async def test_no_backfill_flag(serve_factory: Any, fake_github: Any) -> None:
    """`--no-backfill` leaves an empty tracker alone (tests and operators who sync by hand)."""
    server = await serve_factory({"GITHUB_TOKEN": fake_github.user_token,
                                  "GITHUB_API_URL": fake_github.url}, "--no-backfill")
    status, page = await server.get("/")
    assert "First backfill" not in page and "A GitHub token is set" in page
    assert not fake_github.requests("POST", r"^/graphql$")


# ------------------------------------------------------------------------ when it starts
async def _needs(ctx: AppContext, **settings: Any) -> bool:
    from bot.scheduler import needs_first_backfill

    ctx.settings = dataclasses.replace(ctx.settings, **settings)
    return await needs_first_backfill(ctx)


async def test_backfill_starts_only_with_a_token_on_an_empty_or_unfinished_tracker(
        ctx: AppContext, fake_github: Any) -> None:
    from bot.github.client import GitHubClient

    ctx.github = GitHubClient(dataclasses.replace(ctx.settings, api_url=fake_github.url))
    assert not await _needs(ctx, token=None)
    assert await _needs(ctx, token="t")
    async with ctx.sessionmaker() as session, session.begin():
        await upsert_thread(session, {"repo": "huggingface/trl", "number": 1, "kind": "issue",
                                      "title": "x", "state": "open"})
    assert not await _needs(ctx, token="t")  # filled already (by webhooks or an earlier sync)
    async with ctx.sessionmaker() as session, session.begin():
        session.add(JobRun(name=FIRST_BACKFILL, outcome="cancelled"))
        session.add(SyncCursor(repo="huggingface/trl", kind="issue", cursor="abc", full_done=False))
    assert await _needs(ctx, token="t")  # interrupted: the next start resumes it
    assert not await _needs(ctx, token=None)


# ------------------------------------------------------------------------ empty sections
EMPTY_PAGES = ("/", "/proposals", "/methods/clip-higher", "/failures/entropy_collapse",
               "/frameworks/verl")


@pytest.mark.parametrize("token", [None, "t"], ids=["no-token", "token"])
async def test_every_empty_section_says_what_fills_it(ctx: AppContext, token: str | None) -> None:
    from bot.app import create_app

    ctx.settings = dataclasses.replace(ctx.settings, token=token)
    async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
        for path in (*EMPTY_PAGES, "/repos/"):
            resp = await client.get(path)
            assert resp.status == 200, path
            html = await resp.text()
            assert "None tracked yet" not in html and "none yet" not in html, path
            if path == "/repos/":
                assert "Register the GitHub App and install it" in html
                continue
            if token is None:
                assert "set <code>GITHUB_TOKEN</code>" in html, path
                assert "<code>rltracker sync</code>" in html and "examples/" in html, path
            else:
                assert "A GitHub token is set: run <code>rltracker sync</code>" in html, path
        html = await (await client.get("/frameworks/verl")).text()
        assert "The app is not installed on verl-project/verl. Once the GitHub App is installed" in html
        html = await (await client.get("/reports/")).text()
        assert "<code>rltracker report</code> builds today's at once" in html and "rltracker sync" in html


async def test_the_empty_sections_replay_line_names_this_services_webhook(ctx: AppContext) -> None:
    """The empty tracker's "replay the examples" line is a command to copy: it named
    http://localhost:8000/webhook whatever port or address served the page (`serve --port
    8771` answered a copied command with "cannot connect"). It names this service's own
    webhook, at RLTRACKER_PUBLIC_URL (the default: localhost at the port served)."""
    from bot.app import create_app

    ctx.settings = dataclasses.replace(ctx.settings, token=None,
                                       public_url="https://tracker.example.org/rl")
    async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
        html = await (await client.get("/")).text()
    assert "--url https://tracker.example.org/rl/webhook --secret" in html
    assert "localhost:8000" not in html


def test_fresh_moves_every_timestamp_by_one_offset() -> None:
    from datetime import UTC, datetime

    from bot.webhooks.replay import freshened

    bodies = [p.read_bytes() for p in sorted(EXAMPLES.rglob("*.json"))] + [b"not json"]
    now = datetime(2031, 5, 1, 12, 0, tzinfo=UTC)
    moved = freshened(bodies, now)
    assert moved[-1] == b"not json"
    review = json.loads(moved[-2])  # pull_request_review/submitted.concern.json: the newest
    assert review["review"]["submitted_at"] == "2031-05-01T12:00:00Z"
    before, after = json.loads(bodies[2]), json.loads(moved[2])  # issues/opened.failure-en.json
    assert after["issue"]["created_at"] == "2031-05-01T05:09:47Z"  # 6 h 50 min 13 s earlier, as written
    assert before["issue"]["created_at"] == "2026-11-30T09:12:44Z"
    assert after["issue"]["body"] == before["issue"]["body"] and after["installation"] == before["installation"]
