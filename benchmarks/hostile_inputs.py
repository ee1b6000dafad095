"""Time per hostile 64 KiB body through the whole analysis (`analyze_thread`) and its parts.

    python benchmarks/hostile_inputs.py [--papers POOL.jsonl] [--rounds N] [--profile CASE]

The cases are those of tests/test_hostile_inputs.py (repeated digits, dots, brackets, CJK,
thousands of arXiv ids in every form, endless words, method names and titles over and
over); each thread has the body as opening post and as one comment. The pool defaults to
../shared/eval/papers.jsonl when present (catalog only otherwise). Prints, per case, the
best of N rounds for the whole analysis and for paper linking alone. Goal: every case a few
tens of milliseconds at most.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SHARED = ROOT.parent / "shared"


def _best(fn: Any, rounds: int) -> float:
    from analyzers.nlp import split_markdown
    from analyzers.text import strip_code

    best = float("inf")
    for _ in range(rounds):
        # A real thread is new text: no help from the last round's caches.
        for cached in (strip_code, split_markdown):
            if hasattr(cached, "cache_clear"):
                cached.cache_clear()
        s = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - s)
    return best * 1000.0


def main(argv: list[str] | None = None) -> int:
    from analyzers.analyze import analyze_thread, normalise_thread
    from analyzers.papers import PaperIndex, link_papers
    from tests.test_hostile_inputs import hostile_cases, hostile_thread

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--papers", type=Path, default=SHARED / "eval" / "papers.jsonl")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--profile", help="cProfile one case (analyze_thread) and print the top")
    args = ap.parse_args(argv)

    papers: list[dict[str, Any]] = []
    if args.papers.exists():
        with args.papers.open(encoding="utf-8") as fh:
            papers = [json.loads(line) for line in fh if line.strip()]
    pool = PaperIndex.build(papers)
    analyze_thread(hostile_thread("warm up GRPO 2503.14476"), pool)  # catalog, spaCy
    cases = hostile_cases()
    print(f"pool: {len(pool)} papers; body 65,536 characters as opening post and one comment")

    if args.profile:
        thread = hostile_thread(cases[args.profile])
        prof = cProfile.Profile()
        prof.enable()
        analyze_thread(thread, pool)
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
        return 0

    print(f"{'case':<22} {'analyze ms':>10} {'papers ms':>10} {'links':>6}")
    worst = ("", 0.0)
    for name, body in cases.items():
        thread = hostile_thread(body)
        norm = normalise_thread(thread)
        total = _best(lambda t=thread: analyze_thread(t, pool), args.rounds)
        link = _best(lambda t=norm: link_papers(t, pool), args.rounds)
        n = len(link_papers(norm, pool))
        print(f"{name:<22} {total:10.1f} {link:10.1f} {n:6d}")
        if total > worst[1]:
            worst = (name, total)
    print(f"worst: {worst[0]} {worst[1]:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
