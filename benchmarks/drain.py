"""How fast the inbox worker drains a backlog of stored deliveries (`make bench`).

    .venv/bin/python benchmarks/drain.py [--deliveries 10000] [--workers 1 2]
        [--postgres ADMIN_URL] [--profile]

Stores `--deliveries` signed-and-accepted deliveries straight into the inbox table, in the
shapes GitHub sends (payloads from ../shared/fixtures/webhooks/, given distinct repositories,
numbers and texts): new issues (failure reports, questions, proposals citing an arXiv id),
issue edits, comments, pull-request reviews, discussions and discussion comments, spread
over seven installed repositories, in dry-run. Then starts worker processes (the analyzers
loaded before the clock starts) and times the drain until every row is done. Prints
deliveries/s per database and worker count, and the rows not done (must be 0).

SQLite runs one worker process only: it is the one-process deployment (rows left
`processing` are taken back at start, which only one process may do). PostgreSQL runs each
count in `--workers` (TEST_DATABASE_URLS or --postgres gives the admin URL; skipped without).
The machine may be shared: the CPU seconds the workers spent draining (all their threads,
start-up not counted) are printed beside the rates.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import multiprocessing
import os
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
FIXTURES = ROOT.parent / "shared" / "fixtures" / "webhooks"

REPOS = ["volcengine/verl", "huggingface/trl", "OpenRLHF/OpenRLHF", "inclusionAI/AReaL",
         "THUDM/slime", "NVIDIA/NeMo-RL", "PrimeIntellect-ai/prime-rl"]  # fmt: skip
FAILURE = ("During GRPO training the entropy drops to zero after {n} steps and the reward "
           "stays flat. We use clip_ratio 0.2 and lr 1e-6 on 8 GPUs. Any idea?")
QUESTION = "How do I set the rollout batch size for step {n}? The docs do not say."
PROPOSAL = ("Could you add support for the loss in https://arxiv.org/abs/2506.{n:05d}? It "
            "reports better stability than DAPO on math reasoning.")
COMMENT = "Same here with version 0.{n}; lowering the learning rate did not help."


def _fixture(path: str) -> dict[str, Any]:
    return json.loads((FIXTURES / path).read_text(encoding="utf-8"))


def make_backlog(n: int, seed: int = 5) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(event, action, repo, payload) in arrival order."""
    rng = random.Random(seed)
    shapes = {name: _fixture(name) for name in (
        "issues/opened.json", "issues/edited.json", "issue_comment/created.json",
        "pull_request_review/submitted.json", "discussion/created.json",
        "discussion_comment/created.json")}  # fmt: skip
    out: list[tuple[str, str, str, dict[str, Any]]] = []
    opened: list[tuple[int, int]] = []  # (repo index, number) of issues opened so far
    for i in range(n):
        r = rng.randrange(len(REPOS))
        repo = REPOS[r]
        roll = rng.random()
        if roll < 0.45 or not opened:
            name = "issues/opened.json"
        elif roll < 0.55:
            name = "issues/edited.json"
        elif roll < 0.75:
            name = "issue_comment/created.json"
        elif roll < 0.85:
            name = "pull_request_review/submitted.json"
        elif roll < 0.93:
            name = "discussion/created.json"
        else:
            name = "discussion_comment/created.json"
        p = copy.deepcopy(shapes[name])
        event, action = name.split("/")[0], p["action"]
        owner, short = repo.split("/")
        p["repository"].update(full_name=repo, name=short, id=1000 + r)
        p["repository"]["owner"]["login"] = owner
        p["installation"] = {"id": 500 + r}
        stamp = f"2026-11-{1 + i * 28 // n:02d}T{i % 24:02d}:{i % 60:02d}:00Z"
        text = [FAILURE, QUESTION, PROPOSAL][i % 3].format(n=i)
        if name in ("issues/opened.json",):
            number = 10_000 + i
            opened.append((r, number))
            p["issue"].update(number=number, id=10**9 + i, title=f"Issue {i}: " + text[:40],
                              body=text, created_at=stamp, updated_at=stamp)
        elif name in ("issues/edited.json", "issue_comment/created.json"):
            r, number = rng.choice(opened)
            repo = REPOS[r]
            owner, short = repo.split("/")
            p["repository"].update(full_name=repo, name=short, id=1000 + r)
            p["repository"]["owner"]["login"] = owner
            p["installation"] = {"id": 500 + r}
            p["issue"].update(number=number, id=10**9 + number, title=f"Issue {number}",
                              body=text, updated_at=stamp)
            if "comment" in p:
                p["comment"].update(id=2 * 10**9 + i, body=COMMENT.format(n=i),
                                    created_at=stamp, updated_at=stamp)
        elif event == "pull_request_review":
            p["pull_request"].update(number=50_000 + i, id=3 * 10**9 + i, updated_at=stamp)
            p["review"].update(id=4 * 10**9 + i, body="Please add a test for the new loss.",
                               submitted_at=stamp)
        else:
            # The shared discussion.created payload is a converted issue's (state
            # "converting"); a backlog's new discussions are started as discussions.
            if p["discussion"].get("state") == "converting":
                p["discussion"]["state"] = "open"
            p["discussion"].update(number=80_000 + i, id=5 * 10**9 + i, body=text,
                                   title=f"Discussion {i}", updated_at=stamp)
            if "comment" in p:
                p["comment"].update(id=6 * 10**9 + i, body=COMMENT.format(n=i),
                                    created_at=stamp, updated_at=stamp)
        out.append((event, action, repo, p))
    return out


async def store_backlog(url: str, backlog: list[tuple[str, str, str, dict[str, Any]]]) -> None:
    from sqlalchemy import insert

    from bot.store.db import make_engine
    from bot.store.models import Delivery

    engine = make_engine(url)
    rows = [{"delivery_id": str(uuid.uuid4()), "event": e, "action": a, "repo": r,
             "installation_id": p["installation"]["id"], "payload": json.dumps(p),
             "status": "pending", "attempts": 0} for e, a, r, p in backlog]
    async with engine.begin() as conn:
        for k in range(0, len(rows), 1000):
            await conn.execute(insert(Delivery.__table__), rows[k : k + 1000])
    await engine.dispose()


async def outcome_counts(url: str) -> dict[str, int]:
    from sqlalchemy import func, select

    from bot.store.db import make_engine
    from bot.store.models import Delivery

    t = Delivery.__table__
    engine = make_engine(url)
    async with engine.connect() as conn:
        rows = (await conn.execute(select(t.c.status, func.count()).group_by(t.c.status))).all()
    await engine.dispose()
    return {s: int(c) for s, c in rows}


async def analysis_alone(url: str) -> tuple[float, int]:
    """(CPU seconds per thread, threads) of analyze_thread over the threads the drain stored,
    in this process, the analyzers loaded first: the share of a delivery's cost that is the
    analysis itself (the drain analyses about one thread per delivery)."""
    from sqlalchemy import select

    from analyzers.analyze import analyze_thread
    from bot.store.db import make_engine, make_sessionmaker
    from bot.store.models import Thread
    from bot.store.threads import load_comments, thread_record

    engine = make_engine(url)
    async with make_sessionmaker(engine)() as session:
        records = [thread_record(t, await load_comments(session, t))
                   for t in await session.scalars(select(Thread))]
    await engine.dispose()
    analyze_thread(records[0])
    start = time.process_time()
    for record in records:
        analyze_thread(record)
    return (time.process_time() - start) / max(1, len(records)), len(records)


def work(url: str, ready: Any, go: Any, profile: str | None, cpu: Any) -> None:
    """One worker process: load everything, wait for the start, drain, report the CPU
    seconds the drain took (all its threads; start-up not counted) in `cpu`."""
    from bot.config import Settings
    from bot.context import AppContext
    from bot.logs import configure_logging
    from bot.webhooks.worker import PROCESS_BATCH, Worker

    configure_logging("ERROR")

    async def main() -> None:
        ctx = AppContext.create(Settings.from_env({}, database_url=url, dry_run=True))
        # as `serve --workers N` runs it (bot.webhooks.worker.run_worker)
        worker = Worker(ctx, lease_seconds=120, batch_size=PROCESS_BATCH)
        from bot.analysis import warm_up

        await warm_up()
        if ctx.engine.dialect.name == "sqlite":
            await worker.recover()
        ready.set()
        go.wait()
        start = time.process_time()
        if profile:
            import cProfile

            prof = cProfile.Profile()
            prof.enable()
        await worker.run_until_idle()
        cpu.value = time.process_time() - start
        if profile:
            prof.disable()
            prof.dump_stats(profile)
        await ctx.close()

    asyncio.run(main())


def drain(url: str, workers: int, profile: str | None) -> tuple[float, float]:
    """(seconds to drain, CPU seconds of the workers)."""
    spawn = multiprocessing.get_context("spawn")
    go = spawn.Event()
    readies = [spawn.Event() for _ in range(workers)]
    cpus = [spawn.Value("d", 0.0) for _ in range(workers)]
    procs = [spawn.Process(target=work, args=(url, readies[k], go,
                                              f"{profile}.{k}" if profile else None, cpus[k]))
             for k in range(workers)]  # fmt: skip
    for p in procs:
        p.start()
    for r in readies:
        r.wait()
    t0 = time.perf_counter()
    go.set()
    for p in procs:
        p.join()
    return time.perf_counter() - t0, sum(c.value for c in cpus)


async def fresh_postgres(admin_url: str) -> str:
    import asyncpg

    name = f"rlt_drain_{uuid.uuid4().hex[:8]}"
    conn = await asyncpg.connect(admin_url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return admin_url.rpartition("/")[0] + "/" + name


async def drop_postgres(admin_url: str, url: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(admin_url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{url.rpartition("/")[2]}" WITH (FORCE)')
    finally:
        await conn.close()


def run_one(label: str, url: str, backlog: list[Any], workers: int, profile: str | None) -> None:
    from bot.store import migrate

    migrate.upgrade(url)
    asyncio.run(store_backlog(url, backlog))
    seconds, cpu = drain(url, workers, profile)
    counts = asyncio.run(outcome_counts(url))
    n = len(backlog)
    print(f"{label:<30} {workers} worker process{'es' if workers > 1 else ''}: "
          f"{n / seconds:6.0f} deliveries/s ({seconds:.1f} s; worker CPU {cpu * 1000 / n:.2f} ms "
          f"per delivery); done {counts.get('done', 0)}, not done "
          f"{n - counts.get('done', 0)} {dict((k, v) for k, v in counts.items() if k != 'done')}",
          flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--deliveries", type=int, default=10_000)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--postgres", default=None, help="admin URL (default: TEST_DATABASE_URLS)")
    ap.add_argument("--no-sqlite", action="store_true")
    ap.add_argument("--profile", default=None, help="cProfile each worker into PATH.<k>")
    args = ap.parse_args(argv)
    if not FIXTURES.is_dir():
        print(f"drain: {FIXTURES} not found (the shared fixtures); nothing measured")
        return 0
    os.environ.setdefault("RLTRACKER_CACHE_DIR", tempfile.mkdtemp(prefix="rlt-drain-cache-"))
    backlog = make_backlog(args.deliveries)
    print(f"backlog: {len(backlog):,} stored deliveries over {len(REPOS)} installed repositories, "
          f"dry-run; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    if not args.no_sqlite:
        tmp = Path(tempfile.mkdtemp(prefix="rlt-drain-"))
        url = f"sqlite+aiosqlite:///{tmp / 'drain.db'}"
        run_one("SQLite", url, backlog, 1, args.profile)
        per_thread, threads = asyncio.run(analysis_alone(url))
        print(f"{'analysis alone':<30} {per_thread * 1000:.2f} ms of CPU per thread "
              f"({threads:,} stored threads; about one analysis per delivery)", flush=True)
    admin = args.postgres or (os.environ.get("TEST_DATABASE_URLS", "").split(",")[0].strip() or None)
    if admin:
        for w in args.workers:
            url = asyncio.run(fresh_postgres(admin))
            try:
                run_one("PostgreSQL", url, backlog, w, args.profile)
            finally:
                asyncio.run(drop_postgres(admin, url))
    else:
        print("PostgreSQL: no admin URL (TEST_DATABASE_URLS or --postgres); not measured")
    return 0


if __name__ == "__main__":
    sys.exit(main())
