"""Measured, not asserted: contribution-rule extraction and tracker page latency.

    .venv/bin/python benchmarks/rules_site.py [--threads 5000] [--requests 20]

1. summarize_rules on the seven frameworks' snapshots (../shared, skipped when absent): first
   call (compiles the pattern table) and warm calls; a 64 KiB CONTRIBUTING.
2. The site on a SQLite database seeded with N analysed threads: per-page latency over real
   HTTP (aiohttp TestServer), median and worst of R requests.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PAGES = ["/", "/methods/clip-higher", "/failures/entropy_collapse", "/frameworks/verl",
         "/proposals", "/proposals?framework=trl&state=declined", "/api/proposals",
         "/api/export.csv"]


def bench_rules() -> None:
    from analyzers import rules
    from bot.speaking.contribution import SHARED_FRAMEWORKS, load_folder

    folders = sorted(p for p in SHARED_FRAMEWORKS.glob("*") if p.is_dir())
    if not folders:
        print("rules: ../shared absent, skipped")
        return
    loaded = {p.name: load_folder(p) for p in folders}
    t0 = time.perf_counter()
    rules.summarize_rules(loaded[folders[0].name])
    print(f"rules: first call (pattern table compiled) {1000 * (time.perf_counter() - t0):.0f} ms")
    for name, files in loaded.items():
        size = sum(len(t) for t in files.values())
        runs = []
        for _ in range(5):
            t0 = time.perf_counter()
            summary = rules.summarize_rules(files, framework=name)
            runs.append(time.perf_counter() - t0)
        print(f"rules: {name:9s} {len(files):2d} files {size / 1024:5.1f} KiB "
              f"{len(summary['facts']):3d} facts  median {1000 * statistics.median(runs):6.1f} ms")
    big = (loaded.get("trl") or next(iter(loaded.values()))).get("CONTRIBUTING.md", "x")
    big = (big * (65_536 // max(1, len(big)) + 1))[:65_536]
    t0 = time.perf_counter()
    rules.summarize_rules({"CONTRIBUTING.md": big})
    print(f"rules: 64 KiB CONTRIBUTING {1000 * (time.perf_counter() - t0):.0f} ms")


async def bench_site(n_threads: int, n_requests: int) -> None:
    from aiohttp.test_utils import TestClient, TestServer

    from bot.app import create_app
    from bot.config import Settings
    from bot.context import AppContext
    from bot.store import migrate
    from bot.store.models import Analysis, Thread

    repos = ["verl-project/verl", "huggingface/trl", "OpenRLHF/OpenRLHF", "NVIDIA-NeMo/RL",
             "alibaba/ROLL", "THUDM/slime", "areal-project/AReaL"]
    states = ["merged", "open_no_reply", "open_replied", "declined", "redirected", "lapsed"]
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite+aiosqlite:///{tmp}/bench.db"
        await asyncio.to_thread(migrate.upgrade, url)  # Alembic runs its own event loop
        ctx = AppContext.create(Settings.from_env({}, database_url=url))
        async with ctx.sessionmaker() as session, session.begin():
            for i in range(n_threads):
                repo = repos[i % len(repos)]
                thread = Thread(repo=repo, number=i + 1, kind="issue", title=f"Thread {i} <b>x</b>",
                                state="open")
                session.add(thread)
                await session.flush()
                proposal = i % 3 == 0
                failure = i % 5 == 0
                session.add(Analysis(
                    thread_id=thread.id, analyzer_version="bench", result={},
                    is_failure_report=failure,
                    failure_category="entropy_collapse" if failure else None,
                    is_proposal=proposal, review_state=states[i % len(states)],
                    methods=["clip-higher"] if i % 7 == 0 else [], arxiv_ids=[],
                ))
        app = create_app(ctx, worker=False)
        async with TestClient(TestServer(app)) as client:
            for path in PAGES:
                times = []
                for _ in range(n_requests):
                    t0 = time.perf_counter()
                    resp = await client.get(path)
                    await resp.read()
                    times.append(time.perf_counter() - t0)
                    assert resp.status == 200, (path, resp.status)
                print(f"site: {n_threads} threads {path:42s} median "
                      f"{1000 * statistics.median(times):7.1f} ms  max {1000 * max(times):7.1f} ms")
        await ctx.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=5000)
    parser.add_argument("--requests", type=int, default=10)
    args = parser.parse_args()
    bench_rules()
    asyncio.run(bench_site(args.threads, args.requests))


if __name__ == "__main__":
    main()
