"""Measure analyzers.review on a labelled thread file (default ../shared/eval/dev/threads.jsonl).

    .venv/bin/python benchmarks/evaluate_review.py [FILE | SET_DIR] [--wrong]

Prints review-state accuracy with the confusion, reply-detection accuracy, concern precision /
recall / F1 (micro over (thread, concern) pairs, and per kind), the time per thread, and with
--wrong the threads it got wrong with the reasons behind each decision (ids and labels only,
never the texts). Threads without review labels are skipped.

The review analyzer is fitted on ../shared/eval/{train,dev} (training/review.py): on those
files this prints fitted figures, useful for reading reasons, NOT a result. The figures to
steer by are grouped cross-validated: `make eval` (benchmarks/evaluate.py --only review).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analyzers.review import CONCERNS, STATES, explain_review  # noqa: E402

DEFAULT = ROOT.parent / "shared" / "eval" / "dev" / "threads.jsonl"


def _prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument(
        "file", nargs="?", default=str(DEFAULT), help="a threads.jsonl file, or a set directory holding one"
    )
    ap.add_argument("--wrong", action="store_true", help="list the threads it got wrong")
    args = ap.parse_args(argv)

    path = Path(args.file)
    if path.is_dir():  # a written set's directory (benchmarks/review_written/<set>/)
        path = path / "threads.jsonl"
    if not path.is_file():
        ap.error(f"no thread file at {path}")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if "review_state" in (r.get("labels") or {})]
    for row in rows:  # warm-up: patterns loaded, spaCy's vocabulary filled, as in a server
        explain_review(row)

    confusion: Counter[tuple[str, str]] = Counter()
    state_ok = reply_ok = 0
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    wrong: list[str] = []
    elapsed = 0.0
    for row in rows:
        labels = row["labels"]
        t0 = time.perf_counter()
        got = explain_review(row)
        elapsed += time.perf_counter() - t0
        gold_state = labels["review_state"]
        confusion[(gold_state, got.state)] += 1
        state_ok += got.state == gold_state
        gold_reply = labels.get("replied_from_other")
        reply_ok += gold_reply is None or got.replied_from_other == gold_reply
        gold_c = set(labels.get("concerns") or [])
        got_c = set(got.concerns)
        for c in got_c & gold_c:
            tp[c] += 1
        for c in got_c - gold_c:
            fp[c] += 1
        for c in gold_c - got_c:
            fn[c] += 1
        if got.state != gold_state or got_c != gold_c or got.replied_from_other != gold_reply:
            wrong.append(
                f"{row['id']:<34} state {gold_state:>16} -> {got.state:<16} "
                f"reply {gold_reply!s:>5}->{got.replied_from_other!s:<5} "
                f"missed {sorted(gold_c - got_c)} extra {sorted(got_c - gold_c)} "
                f"[{' '.join(got.reasons)}]"
            )

    n = len(rows)
    print(f"threads with review labels: {n}")
    print(f"review-state accuracy: {state_ok / n:.3f} ({state_ok}/{n})")
    print(f"reply detection accuracy: {reply_ok / n:.3f} ({reply_ok}/{n})")
    p, r, f = _prf(sum(tp.values()), sum(fp.values()), sum(fn.values()))
    print(f"concerns micro P {p:.3f} R {r:.3f} F1 {f:.3f}")
    for c in CONCERNS:
        if tp[c] or fp[c] or fn[c]:
            cp, cr, cf = _prf(tp[c], fp[c], fn[c])
            print(
                f"  {c:<20} tp {tp[c]:>2} fp {fp[c]:>2} fn {fn[c]:>2}  P {cp:.2f} R {cr:.2f} F1 {cf:.2f}"
            )
    print("state confusion (rows gold, columns predicted):")
    short = [s[:8] for s in STATES]
    print(" " * 17 + " ".join(f"{s:>8}" for s in short))
    for g in STATES:
        print(f"{g:>16} " + " ".join(f"{confusion[(g, p_)]:>8}" for p_ in STATES))
    print(f"time per thread: {elapsed / n * 1000:.3f} ms ({n / elapsed:.0f} threads/s, one core)")
    per = []
    for row in rows:
        t0 = time.perf_counter()
        explain_review(row)
        per.append((time.perf_counter() - t0) * 1000)
    per.sort()
    print(f"  median {per[n // 2]:.3f} ms, p90 {per[int(n * 0.9)]:.3f} ms, max {per[-1]:.3f} ms")
    # Hostile input: one 64 KiB comment from someone else and one from the proposer.
    for chunk in ("[[((", "please add tests and docs. ", "测试文档已经支持", "1.2.3.4 "):
        body = (chunk * (65_536 // len(chunk) + 1))[:65_536]
        record = {
            "state": "closed",
            "author": "a",
            "body": body,
            "comments": [{"author": "b", "body": body}, {"author": "a", "body": body}],
        }
        t0 = time.perf_counter()
        explain_review(record)
        ms = (time.perf_counter() - t0) * 1000
        print(f"  hostile 64 KiB x3 of {chunk[:12]!r}: {ms:.0f} ms")
    if args.wrong:
        print("wrong:")
        for line in wrong:
            print("  " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
