"""Score a project-written thread set (benchmarks/threads_written/<set>/) with the SHIPPED models.

    python benchmarks/evaluate_written.py a [b ...] [--quiet]

The sets were written for the project and labelled per ../shared/eval/GUIDELINES.md before the
analyzers were run on them: a set's first score is a held-out figure, like the sealed slice but
free to look at (the texts are the project's own). Prints, per set, failure-report precision /
recall / F1 at the decision threshold and at the comment threshold (`failures.threshold()`), the
same on opening posts alone, kind accuracy on detected reports, proposal F1 (where labelled), and
every miss with its title. The metrics are training.failure's (`predict`, `score`), so a written
set is scored exactly as a grouped-CV fold is.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WRITTEN = ROOT / "benchmarks" / "threads_written"
GRID = (0.45, 0.52, 0.6, 0.7)


def load_set(name: str) -> list[Any]:
    """The set's threads as training `Example`s (split "written")."""
    from training.data import make_example

    path = WRITTEN / name / "threads.jsonl"
    with path.open(encoding="utf-8") as fh:
        return [make_example(json.loads(line), "written") for line in fh if line.strip()]


def score_set(name: str, quiet: bool = False) -> dict[str, float]:
    return score_examples(f"set {name}", load_set(name), quiet=quiet)


def score_examples(label: str, examples: list[Any], quiet: bool = False) -> dict[str, float]:
    """Score labelled `Example`s with the shipped models and print the figures (and, unless
    `quiet`, every miss) under the heading `label`; returns the headline figures. One scoring
    for every labelled file: the written sets here, exported verdicts in evaluate_verdicts.py."""
    from analyzers.analyze import analyze_thread
    from analyzers.failures import failure_models, threshold
    from analyzers.version import ANALYZER_VERSION
    from training.failure import kind_comments, labelled, predict, score
    from training.fit import prf

    rows = labelled(examples)
    models = failure_models()
    decision, comment = models.report.threshold, threshold()
    preds = {e.id: predict(models, e) for e in rows}
    at_decision, at_comment = score(rows, preds, decision), score(rows, preds, comment)
    opened = score(rows, preds, comment, "opened")
    out = {
        "threads": len(rows),
        "failure_f1": at_decision.f1,
        "precision": prf(at_decision.tp, at_decision.fp, at_decision.fn)[0],
        "recall": prf(at_decision.tp, at_decision.fp, at_decision.fn)[1],
        "tp": at_decision.tp, "fp": at_decision.fp, "fn": at_decision.fn,
        "kind_accuracy": at_decision.kind_accuracy,
        "comment_precision": prf(at_comment.tp, at_comment.fp, at_comment.fn)[0],
    }
    gold_n = sum(bool(e.labels["is_failure_report"]) for e in rows)
    print(f"== {label}: {len(examples)} threads, {gold_n} reports; analyzer version {ANALYZER_VERSION}")
    print(f"  failure report (decision {decision:.2f})   F1 {at_decision.f1:.3f}  {at_decision.note()}")
    print(f"  at the comment threshold ({comment:.3f})  F1 {at_comment.f1:.3f}  {at_comment.note()}")
    print(f"  opening posts alone, comment threshold  F1 {opened.f1:.3f}  {opened.note()}")
    print(f"  kind accuracy on detected reports      {at_decision.kind_accuracy:.3f} ({at_decision.kind_ok}/{at_decision.tp})")
    # What the failure comment would get right: opening posts at the comment threshold whose gold
    # kind is the one named first (and among the two a comment names when the analysis is split).
    kc = kind_comments(rows, preds, comment)
    out["comment_right_on_kind"] = kc.share()
    out["comments"], out["comments_right"] = kc.n, kc.right
    print(f"  comments right on the kind             {kc.share():.3f} ({kc.right}/{kc.n}; the first two kinds {kc.among2}/{kc.n})")
    # Read from the same single scoring: how precision and recall would move with a stricter
    # comment threshold (e.g. the nested grouped-CV one). Not for choosing it on this set.
    grid = "  ".join(
        f"{t:.2f}: P {prf(s.tp, s.fp, s.fn)[0]:.3f} R {prf(s.tp, s.fp, s.fn)[1]:.3f}"
        for t in GRID for s in (score(rows, preds, t),)
    )
    print(f"  at other thresholds    {grid}")

    proposal_rows = [e for e in examples if "is_proposal" in e.labels]
    if proposal_rows:
        tp = fp = fn = 0
        proposal_wrong = []
        for e in proposal_rows:
            gold = bool(e.labels["is_proposal"])
            got = bool(analyze_thread(e.thread)["proposal"]["is_proposal"])
            tp, fp, fn = tp + (gold and got), fp + (got and not gold), fn + (gold and not got)
            if gold != got:
                proposal_wrong.append(f"    {e.id}: gold {gold} got {got}  {e.thread.get('title')!r}")
        p, r, f = prf(tp, fp, fn)
        out["proposal_f1"] = f
        print(f"  proposal                               F1 {f:.3f}  P {p:.3f} R {r:.3f} (tp {tp}, fp {fp}, fn {fn})")
    else:
        proposal_wrong = []

    if not quiet:
        print("  misses (gold -> got at the decision threshold, confidence):")
        for e in rows:
            gold = bool(e.labels["is_failure_report"])
            gcat = e.labels.get("category") if gold else None
            p = preds[e.id]
            got = p.category if p.confidence >= decision else None
            if gold != (got is not None) or (gold and got != gcat):
                g = gcat or f"no ({e.labels.get('other_kind')})"
                print(f"    {e.id}: {g} -> {got or 'no'} ({p.confidence:.3f})  {e.thread.get('title')!r}")
        if proposal_wrong:
            print("  proposal misses:")
            print("\n".join(proposal_wrong))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sets", nargs="+", help="set names under benchmarks/threads_written/")
    ap.add_argument("--quiet", action="store_true", help="figures only")
    args = ap.parse_args(argv)
    for name in args.sets:
        score_set(name, quiet=args.quiet)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
