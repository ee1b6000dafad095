"""Threads analysed per second on one core, after start-up (`make bench`).

    python benchmarks/analyze_throughput.py [THREADS.jsonl] [--rounds N] [--papers POOL.jsonl]

Input: ../shared/eval/dev/threads.jsonl when present (real threads), otherwise generated
threads of typical size. Prints start-up time, threads/s, per-thread median / p95 / max,
the time per analyzer (failure, papers, proposal, review), and 64 KiB hostile bodies.
Goal: a typical thread well under 2 ms after start-up, start-up under 2 s.

The machine is shared and its speed varies (30-50 % between hours on the same code), so each
figure comes with a baseline measured in the same run: start-up against a fresh interpreter
that only imports spaCy and builds its blank English pipeline, and the per-thread time against
that blank pipeline tokenising the same thread's texts (title, body, human comments), each
thread as often as the analysis reads it. Per-thread figures are printed as wall clock and as
CPU time of this process (a loaded machine makes the process wait for its core: the wall
figure then says more about the load than about the code), and the first round (every word met
for the first time, as `rltracker analyze` meets a thread) apart from the later rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SHARED = ROOT.parent / "shared"


def generated_threads(n: int = 60) -> list[dict[str, Any]]:
    bodies = [
        "During training with GRPO the entropy drops quickly after 100 steps and the reward "
        "stops improving. Config below.\n```yaml\nactor:\n  lr: 1e-6\n  clip_ratio: 0.2\n```\n",
        "This PR adds the CISPO loss (https://arxiv.org/abs/2506.13585) as a new loss_type, "
        "with tests and docs.",
        "请问会支持GSPO吗？训练过程中reward一直为0，是否和数据有关？",
        "Traceback (most recent call last):\n  File \"train.py\", line 3\nRuntimeError: boom",
    ]
    threads = []
    for i in range(n):
        body = bodies[i % len(bodies)] * (1 + i % 3)
        threads.append(
            {
                "id": f"o/r#{i}", "repo": "o/r", "number": i,
                "kind": "pull_request" if i % 4 == 1 else "issue",
                "title": ["Entropy collapse in GRPO", "feat: add CISPO", "reward一直为0",
                          "Crash at step 3"][i % 4],
                "body": body, "state": "open", "author": "a",
                "comments": [{"author": "m", "body": "Thanks, could you add a test?"}] * (i % 3),
            }
        )  # fmt: skip
    return threads


def spacy_startup() -> float:
    """Seconds a fresh interpreter takes to import spaCy and build a blank English pipeline."""
    code = (
        "import time; t = time.perf_counter(); import spacy; spacy.blank('en'); "
        "print(time.perf_counter() - t)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def median_ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.2f} ms"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("threads", nargs="?", default=str(SHARED / "eval" / "dev" / "threads.jsonl"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--papers", default=None)
    args = ap.parse_args(argv)

    # One core: the figure is per core, whatever the machine.
    if hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        except OSError:
            pass

    t0 = time.perf_counter()
    from analyzers import failures, proposals, review
    from analyzers.analyze import analyze_thread, normalise_thread
    from analyzers.papers import PaperIndex, catalog_index, link_papers, thread_texts

    pool = None
    if args.papers:
        with open(args.papers, encoding="utf-8") as fh:
            pool = PaperIndex.build(json.loads(x) for x in fh if x.strip())
    catalog_index()
    analyze_thread({"id": "warm", "title": "warm up", "body": "entropy drops", "comments": []}, pool)
    startup = time.perf_counter() - t0

    path = Path(args.threads)
    if path.exists():
        threads = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
        source = str(path)
    else:
        threads = generated_threads()
        source = "generated threads"
    chars = statistics.median(
        len(t.get("body") or "") + sum(len(c.get("body") or "") for c in t.get("comments") or [])
        for t in threads
    )
    print(f"input: {len(threads)} threads from {source}; median text {chars:.0f} chars")
    print(f"start-up (imports, catalog, spaCy, patterns): {startup * 1000:.0f} ms")

    baseline_startup = spacy_startup()
    print(
        f"  baseline, a fresh interpreter importing spaCy and building spacy.blank('en'): "
        f"{baseline_startup * 1000:.0f} ms (ratio {startup / baseline_startup:.2f})"
    )

    per_thread: list[float] = []
    cpu_rounds: list[list[float]] = []
    start = time.perf_counter()
    for _ in range(args.rounds):
        cpu_round: list[float] = []
        for t in threads:
            s, c = time.perf_counter(), time.process_time()
            analyze_thread(t, pool)
            per_thread.append(time.perf_counter() - s)
            cpu_round.append(time.process_time() - c)
        cpu_rounds.append(cpu_round)
    total = time.perf_counter() - start
    per_thread.sort()
    n = len(per_thread)
    cpu_all = [x for r in cpu_rounds for x in r]
    print(f"analyze_thread: {n / total:,.0f} threads/s per core")
    print(
        f"  per thread: median {per_thread[n // 2] * 1000:.2f} ms, "
        f"p95 {per_thread[int(n * 0.95)] * 1000:.2f} ms, max {per_thread[-1] * 1000:.2f} ms"
    )
    later = [x for r in cpu_rounds[1:] for x in r]
    print(
        f"  CPU time per thread: median {median_ms(cpu_all)}; first round {median_ms(cpu_rounds[0])}"
        + (f", later rounds {median_ms(later)}" if later else "")
    )

    # The baseline: spaCy's own blank pipeline over the same texts, the same rounds (its own
    # caches warm up the same way), in this process.
    import spacy

    blank = spacy.blank("en")
    base_cpu: list[float] = []
    for _ in range(args.rounds):
        for t in threads:
            texts = thread_texts(t)
            c = time.process_time()
            for text in texts:
                blank(text)
            base_cpu.append(time.process_time() - c)
    ratio = statistics.median(cpu_all) / statistics.median(base_cpu)
    print(
        f"  baseline, spacy.blank('en') over each thread's texts: CPU median {median_ms(base_cpu)} "
        f"(analysis / baseline: {ratio:.2f})"
    )

    parts: dict[str, float] = {"failure": 0.0, "papers": 0.0, "proposal": 0.0, "review": 0.0}
    for t in threads:
        nt = normalise_thread(t)
        s = time.perf_counter()
        failures.classify_failure(nt["title"], nt["body"], kind=nt["kind"], author=nt.get("author"), comments=nt["comments"])
        parts["failure"] += time.perf_counter() - s
        s = time.perf_counter()
        papers = link_papers(nt, pool)
        parts["papers"] += time.perf_counter() - s
        s = time.perf_counter()
        proposals.classify_proposal(nt, papers)
        parts["proposal"] += time.perf_counter() - s
        s = time.perf_counter()
        review.review_thread(nt)
        parts["review"] += time.perf_counter() - s
    print("  mean per analyzer: " + ", ".join(f"{k} {v / len(threads) * 1000:.2f} ms" for k, v in parts.items()))

    print("hostile 64 KiB bodies (opening post and one comment):")
    for name, body in (
        ("digits", "7" * 65536), ("dots", "." * 65536), ("brackets", "[" * 65536),
        ("cjk", "熵" * 65536), ("arxiv-like", "2503.14476 " * 5957), ("words", "entropy drop " * 5041),
    ):  # fmt: skip
        t = {"id": "h", "kind": "issue", "title": "x", "body": body, "state": "open",
             "comments": [{"author": "u", "body": body}]}  # fmt: skip
        s = time.perf_counter()
        analyze_thread(t, pool)
        print(f"  {name:<11} {(time.perf_counter() - s) * 1000:8.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
