"""Everything the analyzers compute, written down, so that a change meant to be faster can be
shown to change nothing.

    python benchmarks/analysis_snapshot.py OUT.jsonl [--compare BEFORE.jsonl] [--pool 20000]

Threads: the labelled ones in ../shared/eval/train and dev (when present), the example
deliveries in examples/ (as `thread_from_payload` reads them), the generated threads of
benchmarks/analyze_throughput.py, six 64 KiB hostile bodies, and threads of
benchmarks/matching.py against a generated pool of `--pool` titles. Per thread two lines:
the analysis record as `rltracker analyze` writes it, then what lies under it: the language,
the failure, proposal and review feature vectors (keys in order), every model probability
and the review evidence, floats as `repr` (every bit). Run it with PYTHONHASHSEED fixed: a
few values depend on set order, on main too.

`--compare` prints the first differing lines and exits 1 when the two snapshots differ.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
SHARED = ROOT.parent / "shared"


def _threads() -> Iterator[dict[str, Any]]:
    import analyze_throughput

    from bot.webhooks.normalize import thread_from_payload

    for split in ("train", "dev"):
        path = SHARED / "eval" / split / "threads.jsonl"
        if path.exists():
            yield from (json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip())
    for path in sorted((ROOT / "examples").glob("*/*.json")):
        payload = json.loads(path.read_text(encoding="utf-8"))
        yield thread_from_payload(path.parent.name, payload)
    yield from analyze_throughput.generated_threads()
    for name, body in (
        ("digits", "7" * 65536), ("dots", "." * 65536), ("brackets", "[" * 65536),
        ("cjk", "熵" * 65536), ("arxiv-like", "2503.14476 " * 5957), ("words", "entropy drop " * 5041),
    ):  # fmt: skip
        yield {"id": f"hostile/{name}", "kind": "issue", "title": "x", "body": body, "state": "open",
               "comments": [{"author": "u", "body": body}]}  # fmt: skip


def _record(thread: dict[str, Any], pool: Any = None) -> str:
    from analyzers import failures, proposals, review
    from analyzers.analyze import analyze_thread, normalise_thread
    from analyzers.language import detect_language

    result = analyze_thread(thread, pool)
    t = normalise_thread(thread)
    ff = failures.failure_features(t["title"], t["body"], t["kind"], t.get("author"), t["comments"])
    fm = failures.failure_models()
    pf = proposals.proposal_features(t, result["papers"])
    ev = review.review_evidence(t)
    rm = review.review_models()
    under = {
        "language": detect_language(thread.get("title"), thread.get("body")),
        "failure_vector": repr(list(ff.vector.items())),
        "failure_p": repr(fm.report.probability(ff.vector)),
        "failure_kinds": repr(failures.rank_kinds(ff, fm.kind)),
        "proposal_vector": repr(list(pf.vector.items())),
        "proposal_rule_score": repr(pf.rule_score),
        "proposal_p": repr(proposals.proposal_model().probability(pf.vector)),
        "review_evidence": repr(
            (ev.rule_state, ev.exact, ev.replied, sorted(ev.rule_concerns), ev.reasons,
             list(ev.concern_features.items()), list(ev.state_features.items()), ev.others_text)
        ),  # fmt: skip
        "review_text_vector": repr(list(review.text_vector(ev.others_text).items())),
        "concern_p": repr(review.concern_probabilities(ev, rm.concerns)),
        "state_p": repr(rm.state.probabilities(review.state_vector(ev))),
    }
    return json.dumps(result, ensure_ascii=False) + "\n" + json.dumps(under, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--compare", default=None, help="an earlier snapshot to compare with")
    ap.add_argument("--pool", type=int, default=20_000, help="generated titles for the matching threads")
    ap.add_argument("--matching-threads", type=int, default=600)
    args = ap.parse_args(argv)

    import matching

    from analyzers.papers import PaperIndex

    n = 0
    with open(args.out, "w", encoding="utf-8") as out:
        for thread in _threads():
            out.write(_record(thread))
            n += 1
        rng = random.Random(7)
        seen: set[str] = set()
        titles: list[str] = []
        while len(titles) < args.pool:
            title = matching.make_title(rng)
            if title.lower() not in seen:
                seen.add(title.lower())
                titles.append(title)
        pool = PaperIndex.build({"arxiv_id": None, "title": t, "aliases": [], "method": None} for t in titles)
        for thread, _cited in matching.make_threads(titles, args.matching_threads, rng):
            out.write(_record(thread, pool))
            n += 1
    print(f"{n} threads written to {args.out}")
    if args.compare:
        before = Path(args.compare).read_text(encoding="utf-8").splitlines()
        after = Path(args.out).read_text(encoding="utf-8").splitlines()
        differing = [i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b]
        if len(before) != len(after):
            print(f"different lengths: {len(before)} lines before, {len(after)} after")
        for i in differing[:5]:
            print(f"line {i + 1} differs:\n  before {before[i][:300]}\n  after  {after[i][:300]}")
        if differing or len(before) != len(after):
            print(f"{len(differing)} of {len(before)} lines differ")
            return 1
        print(f"identical: all {len(after)} lines")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
