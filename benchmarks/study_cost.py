"""Measured, not asserted: what one recompute of the study costs on a store of N proposals.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/study_cost.py [--sizes 3000 20000]
        [--body-bytes 2048] [--database-url postgresql+asyncpg://.../postgres]

Stores N proposals of the seven frameworks (an opening post of about --body-bytes naming and
citing catalog methods, an analysis linking them) through the store's own `insert_new`, then
times `bot.site.study.build_study`: from scratch (every opening post loaded and read by
analyzers.proposed, what each recompute cost before studyperf68), then with the process's
memo warm after one thread's opening post was edited (what a recompute costs once a thread is
stored: the rule runs on that thread only), then the nightly step leaving the memo in the
store and a new process's first recompute reading it (site71). Prints wall and CPU seconds
and the rule's runs.
Run against a tree without the memo (PYTHONPATH=/work/main) it prints the from-scratch row
only. tests/test_study_memo.py holds the assertions (on the rule's runs and the numbers).

`--database-url` (a PostgreSQL admin URL): each store is a database created there and dropped
after; without it, SQLite files in a temporary folder (benchmarks/site_scale.py's `store_at`).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.site_scale import store_at  # noqa: E402

STATES = ("open_no_reply", "open_replied", "declined", "redirected", "lapsed", "merged")
PARAGRAPH = ("We propose a new advantage estimator for RL fine-tuning of language models. "
             "Unlike GRPO (arXiv:2402.03300), it keeps a learned baseline; compared with PPO it "
             "needs no critic. DAPO's clip-higher and dynamic sampling are orthogonal and can "
             "stay on. Results on math reasoning: +2.1 on AIME with Qwen2.5-7B. ")


def _body(i: int, size: int) -> str:
    head = f"Proposal {i}: please add it to the trainer.\n\n"
    return (head + PARAGRAPH * (size // len(PARAGRAPH) + 1))[:size]


async def build(ctx: Any, n: int, body_bytes: int) -> None:
    from sqlalchemy import insert, select

    from analyzers.catalog import load_catalog
    from bot.store.models import Analysis, Thread
    from bot.store.threads import insert_new

    repos = [fw.repo for fw in load_catalog().frameworks.values()]
    links = (["grpo"], ["grpo", "ppo"], ["gspo"], [], ["rloo", "ppo"])
    rows = [{"repo": repos[i % len(repos)], "number": i + 1, "kind": ("issue", "pull_request")[i % 2],
             "state": "open", "title": ("[Feature] a new estimator", f"Support method {i}")[i % 2],
             "body": _body(i, body_bytes), "complete": True,
             "created_at": datetime(2026, 1, 1, tzinfo=UTC)} for i in range(n)]
    async with ctx.sessionmaker() as session, session.begin():
        for at in range(0, n, 2000):
            await insert_new(session, Thread, rows[at:at + 2000])
    async with ctx.sessionmaker() as session, session.begin():
        ids = (await session.execute(select(Thread.id).order_by(Thread.id))).scalars().all()
        analyses = [{"thread_id": tid, "analyzer_version": "bench", "is_proposal": True,
                     "review_state": STATES[i % len(STATES)], "methods": links[i % len(links)],
                     "result": {"review": {"state": STATES[i % len(STATES)],
                                           "replied_from_other": i % 2 == 0, "concerns": []}}}
                    for i, tid in enumerate(ids)]
        for at in range(0, n, 2000):
            await session.execute(insert(Analysis), analyses[at:at + 2000])


async def _timed(ctx: Any, memo: Any) -> tuple[float, float, dict[str, Any]]:
    from bot.site.study import build_study

    async with ctx.sessionmaker() as session:
        wall, cpu = time.perf_counter(), time.process_time()
        study, _ = await (build_study(session) if memo is None else build_study(session, memo))
        return time.perf_counter() - wall, time.process_time() - cpu, study


async def run_size(admin_url: str | None, n: int, body_bytes: int, folder: str
                   ) -> list[tuple[str, float, float, int | None]]:
    """(what, wall s, CPU s, the rule's runs or None) for a store of n proposals."""
    from bot.config import Settings
    from bot.context import AppContext
    from bot.site import study as study_module

    async with store_at(admin_url, folder) as url:
        ctx = AppContext.create(Settings.from_env({}, database_url=url, dry_run=True))
        try:
            await build(ctx, n, body_bytes)
            await _timed(ctx, None)  # warm the catalog index and the connection pool
            wall, cpu, scratch = await _timed(ctx, None)
            out: list[tuple[str, float, float, int | None]] = [("from scratch", wall, cpu, None)]
            if "memo" not in inspect.signature(study_module.build_study).parameters:
                return out
            memo = study_module.ProposedMemo()
            wall, cpu, _ = await _timed(ctx, memo)
            out.append(("memo cold (first recompute)", wall, cpu, memo.runs))
            from bot.store.threads import upsert_thread

            async with ctx.sessionmaker() as session:
                await upsert_thread(session, {"repo": scratch_repo(), "number": 1,
                                              "body": "Now it outperforms RLOO."})
                await session.commit()
            runs = memo.runs
            wall, cpu, warm = await _timed(ctx, memo)
            out.append(("memo warm, one thread edited", wall, cpu, memo.runs - runs))
            _, _, again = await _timed(ctx, None)
            assert {k: v for k, v in warm.items() if k != "computed_at"} == \
                {k: v for k, v in again.items() if k != "computed_at"}, "memo differs from scratch"
            if not hasattr(study_module, "keep_proposed"):
                return out
            wall, cpu = time.perf_counter(), time.process_time()
            await study_module.keep_proposed(ctx, memo)  # the nightly step's part (site71)
            out.append(("nightly step keeps the memo", time.perf_counter() - wall,
                        time.process_time() - cpu, None))
            fresh = study_module.ProposedMemo(from_store=True)  # a new process's memo
            wall, cpu, kept = await _timed(ctx, fresh)
            out.append(("new process, memo kept", wall, cpu, fresh.runs))
            assert {k: v for k, v in kept.items() if k != "computed_at"} == \
                {k: v for k, v in again.items() if k != "computed_at"}, "kept memo differs"
            return out
        finally:
            await ctx.close()


def scratch_repo() -> str:
    from analyzers.catalog import load_catalog

    return next(iter(load_catalog().frameworks.values())).repo


async def main_async(args: argparse.Namespace) -> None:
    backend = "PostgreSQL" if args.database_url else "SQLite"
    print(f"{backend}: one recompute of the study (build_study), opening posts of "
          f"{args.body_bytes} bytes")
    print(f"{'proposals':>9}  {'recompute':30} {'wall s':>7} {'CPU s':>7} {'rule runs':>9}")
    with tempfile.TemporaryDirectory() as folder:
        for n in args.sizes:
            for what, wall, cpu, runs in await run_size(args.database_url, n, args.body_bytes,
                                                        folder):
                shown = "-" if runs is None and what.startswith("nightly") else \
                    "all" if runs is None else runs
                print(f"{n:9}  {what:30} {wall:7.3f} {cpu:7.3f} {shown!s:>9}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[3000, 20000])
    parser.add_argument("--body-bytes", type=int, default=2048)
    parser.add_argument("--database-url", default=None,
                        help="a PostgreSQL admin URL (postgresql+asyncpg://...); default SQLite")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
