"""What webhook event handling and the GitHub client cost. Measured, not asserted.

    .venv/bin/python benchmarks/github_events.py [--threads 150] [--comments 3] [--requests 300]

Prints:
1. normalisation: payloads per second through bot.webhooks.normalize.change_from_payload over every
   example in ../shared/fixtures/webhooks (thread and comment events);
2. event handling on a fresh migrated SQLite file, one delivery at a time as the worker does:
   deliveries per second and p50/p99 latency for storage only (events.apply_change + commit)
   and for the full handler (storage, then bot.pipeline.thread_changed with the analyzers);
3. the GitHub client against the in-process fake server (tests/fakegithub.py): GETs per second
   and p99 latency with an installation token and cold cache, then with ETag hits (304), next
   to bare aiohttp GETs of the same URL.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.config import Settings  # noqa: E402
from bot.context import AppContext  # noqa: E402
from bot.store import migrate  # noqa: E402
from bot.webhooks import events  # noqa: E402
from bot.webhooks.normalize import COMMENT_EVENTS, THREAD_EVENTS, change_from_payload  # noqa: E402

SHARED = ROOT.parent / "shared" / "fixtures" / "webhooks"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench_normalize(rounds: int = 50) -> None:
    names = sorted(set(THREAD_EVENTS) | set(COMMENT_EVENTS))
    items = [(e, json.loads(p.read_text())) for e in names for p in sorted((SHARED / e).glob("*.json"))]
    if not items:
        print("normalise: ../shared absent, skipped")
        return
    start = time.perf_counter()
    for _ in range(rounds):
        for event, payload in items:
            change_from_payload(event, payload)
    elapsed = time.perf_counter() - start
    n = rounds * len(items)
    print(f"normalise: {n / elapsed:,.0f} payloads/s ({len(items)} examples x {rounds})")


def synthetic_stream(threads: int, comments: int) -> list[tuple[str, dict[str, Any]]]:
    def user(login: str) -> dict[str, Any]:
        return {"login": login, "id": 1, "type": "User"}

    stream: list[tuple[str, dict[str, Any]]] = []
    repo = {"id": 1, "full_name": "verl-project/verl", "default_branch": "main", "owner": user("verl-project")}
    for n in range(1, threads + 1):
        issue = {
            "id": n, "node_id": f"I_{n}", "number": n,
            "title": f"Entropy collapse after step {n * 10} with GRPO",
            "body": "Entropy drops to 0.01 and reward stalls. " * 20, "user": user("alice"),
            "labels": [{"name": "bug"}], "assignees": [], "state": "open",
            "author_association": "NONE", "created_at": "2025-05-01T10:00:00Z",
            "updated_at": "2025-05-01T10:00:00Z", "closed_at": None, "comments": 0,
            "html_url": f"https://github.com/verl-project/verl/issues/{n}",
        }
        base = {"repository": repo, "sender": user("alice"), "installation": {"id": 5}}
        stream.append(("issues", {**base, "action": "opened", "issue": issue}))
        for c in range(comments):
            comment = {
                "id": n * 100 + c, "node_id": f"IC_{n}_{c}", "body": "Try clip-higher. " * 10,
                "user": user("bob"), "author_association": "MEMBER",
                "created_at": f"2025-05-01T10:{c + 1:02d}:00Z", "updated_at": f"2025-05-01T10:{c + 1:02d}:00Z",
            }
            stream.append(("issue_comment", {**base, "action": "created", "issue": issue, "comment": comment}))
    return stream


async def bench_events(threads: int, comments: int) -> None:
    from sqlalchemy import event as sa_event

    with tempfile.TemporaryDirectory() as tmp:
        stream = synthetic_stream(threads, comments)
        for label, full in (("storage only", False), ("full handler", True)):
            url = f"sqlite+aiosqlite:///{tmp}/{label.replace(' ', '_')}.db"
            await asyncio.to_thread(migrate.upgrade, url)
            ctx = AppContext.create(Settings.from_env({}, database_url=url, dry_run=True))
            statements = [0]

            def count(*_args: Any, _statements: list[int] = statements) -> None:
                _statements[0] += 1

            sa_event.listen(ctx.engine.sync_engine, "before_cursor_execute", count)
            latencies: list[float] = []
            seen: set[tuple[Any, ...]] = set()
            start = time.perf_counter()
            for event, payload in stream:
                t0 = time.perf_counter()
                if full:
                    await events.handle(event, payload, ctx)
                else:
                    change = change_from_payload(event, payload)
                    async with ctx.sessionmaker() as session:
                        await events.apply_change(session, change, payload, seen)
                        await session.commit()
                        seen.update(session.info.get("repository_keys", []))
                latencies.append(time.perf_counter() - t0)
            elapsed = time.perf_counter() - start
            await ctx.close()
            print(
                f"events, {label}: {len(stream) / elapsed:,.0f} deliveries/s, "
                f"p50 {statistics.median(latencies) * 1000:.1f} ms, p99 {pct(latencies, 0.99) * 1000:.1f} ms "
                f"{statements[0] / len(stream):.1f} SQL statements/delivery "
                f"({len(stream)} deliveries, {threads} threads, SQLite)"
            )


async def bench_client(requests: int) -> None:
    import aiohttp

    from bot.github.client import GitHubClient
    from tests.fakegithub import FakeGitHub, no_sleep, rsa_key_pair

    fake = FakeGitHub()
    await fake.start()
    pem, public = rsa_key_pair()
    fake.app_id, fake.public_key = "4242", public
    fake.add_installation(5, "verl-project", ["verl-project/verl"])
    fake.add_issue("verl-project/verl", 1, "x", "y" * 2000)
    settings = Settings.from_env({}, app_id="4242", private_key=pem, api_url=fake.url, dry_run=False)
    path = "/repos/verl-project/verl/issues/1"
    try:
        async with aiohttp.ClientSession() as session:
            latencies = []
            start = time.perf_counter()
            for _ in range(requests):
                t0 = time.perf_counter()
                async with session.get(fake.url + path, headers={"Authorization": f"token {fake.user_token}"}) as r:
                    await r.read()
                latencies.append(time.perf_counter() - t0)
            bare = requests / (time.perf_counter() - start)
            print(f"client: bare aiohttp GET {bare:,.0f}/s, p99 {pct(latencies, 0.99) * 1000:.1f} ms")
        client = GitHubClient(settings, sleep=no_sleep)
        gh = await client.api(5)
        for label, cached in (("no cache", False), ("ETag hits (304)", True)):
            latencies = []
            start = time.perf_counter()
            for _ in range(requests):
                if not cached:
                    client._caches.clear()  # measure the cold path: no If-None-Match
                    gh = await client.api(5)
                t0 = time.perf_counter()
                await gh.getitem(path)
                latencies.append(time.perf_counter() - t0)
            rate = requests / (time.perf_counter() - start)
            print(f"client: GitHubClient GET, {label}: {rate:,.0f}/s, p99 {pct(latencies, 0.99) * 1000:.1f} ms "
                  f"({rate / bare:.2f} of bare)")
        print(f"client: installation tokens fetched: {client.token_refreshes}")
        await client.close()
    finally:
        await fake.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=150)
    ap.add_argument("--comments", type=int, default=3)
    ap.add_argument("--requests", type=int, default=300)
    args = ap.parse_args(argv)
    bench_normalize()
    asyncio.run(bench_events(args.threads, args.comments))
    asyncio.run(bench_client(args.requests))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
