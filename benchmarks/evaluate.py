"""How well the analyzers do, measured the honest way (`make eval`).

    python benchmarks/evaluate.py [THREADS.jsonl] [--papers POOL.jsonl] [--quiet] [--sealed]
                                  [--only NAME]

1. Every learned field (each trainer in `training.TRAINERS`): the grouped cross-validated
   figure we steer by (fit on six frameworks and the related projects, score the seventh;
   pooled), the same with the related projects' folds added, and the figure on the data the
   shipped model was fitted on; the threads each model gets wrong in grouped CV (ids and
   labels only). `--sealed` also scores the sealed slice: do that ONCE, at the end of a piece
   of work, and write the figure down.
2. The whole analysis on one labeled file (below). For fields with a fitted model this is not
   a result (the file was fitted on); it is kept for the fields that are not learned (papers,
   replies) and for a quick look.

Default input for 2: ../shared/eval/dev/threads.jsonl with ../shared/eval/papers.jsonl as pool.
Each line is a contract thread plus `labels`; a field is scored only on threads whose labels
carry it (failure labels: is_failure_report, category; proposal labels: is_proposal, papers,
review_state, replied_from_other, concerns).

Prints precision / recall / F1 per field, the failure-category confusion, review-state
accuracy, reply detection, concern F1, arXiv precision / recall, title / method-name recall,
and the threads it got wrong (ids and labels only: the texts are third-party).
Measured, not asserted: use it to understand failure modes, not to fit single threads.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SHARED = ROOT.parent / "shared"
DEFAULT_THREADS = SHARED / "eval" / "dev" / "threads.jsonl"
DEFAULT_PAPERS = SHARED / "eval" / "papers.jsonl"


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def line(name: str, tp: int, fp: int, fn: int) -> str:
    p, r, f = prf(tp, fp, fn)
    return f"{name:<28} P {p:.3f}  R {r:.3f}  F1 {f:.3f}   (tp {tp}, fp {fp}, fn {fn})"


def _norm(s: Any) -> str:
    return "".join(ch for ch in str(s or "").lower() if ch.isalnum())


def load(path: Path) -> list[dict[str, Any]]:
    rows = []
    with path.open(encoding="utf-8") as fh:
        for raw in fh:
            if raw.strip():
                rows.append(json.loads(raw))
    return rows


def evaluate(rows: list[dict[str, Any]], pool: Any, quiet: bool = False) -> dict[str, float]:
    from analyzers.analyze import analyze_thread
    from analyzers.version import ANALYZER_VERSION

    start = time.perf_counter()
    results = [analyze_thread(r, pool) for r in rows]
    elapsed = time.perf_counter() - start

    wrong: list[str] = []
    c = Counter()
    confusion: Counter[tuple[str, str]] = Counter()
    state_confusion: Counter[tuple[str, str]] = Counter()
    for row, res in zip(rows, results, strict=True):
        labels = row.get("labels") or {}
        tid = row.get("id")
        if "is_failure_report" in labels:
            gold = bool(labels["is_failure_report"])
            pred = bool(res["failure"]["is_failure_report"])
            gcat = labels.get("category") if gold else None
            pcat = res["failure"]["category"] if pred else None
            c["f_tp"] += gold and pred
            c["f_fp"] += pred and not gold
            c["f_fn"] += gold and not pred
            if gold:
                c["f_gold"] += 1
                c["f_kind_ok_all"] += pcat == gcat
            if gold and pred:
                c["f_kind_ok"] += pcat == gcat
            confusion[(gcat or f"no:{labels.get('other_kind')}", pcat or "-")] += 1
            if gold != pred or gcat != pcat:
                wrong.append(
                    f"failure  {tid}: gold {gcat or 'no (' + str(labels.get('other_kind')) + ')'}"
                    f" got {pcat or 'no'} (conf {res['failure']['confidence']})"
                )
        if "is_proposal" in labels:
            gold = bool(labels["is_proposal"])
            pred = bool(res["proposal"]["is_proposal"])
            c["p_tp"] += gold and pred
            c["p_fp"] += pred and not gold
            c["p_fn"] += gold and not pred
            if gold != pred:
                wrong.append(
                    f"proposal {tid}: gold {gold} got {pred} (conf {res['proposal']['confidence']})"
                )
        if labels.get("review_state"):
            c["r_n"] += 1
            ok = res["review"]["state"] == labels["review_state"]
            c["r_ok"] += ok
            state_confusion[(labels["review_state"], res["review"]["state"])] += 1
            if not ok:
                wrong.append(f"review   {tid}: gold {labels['review_state']} got {res['review']['state']}")
        if "replied_from_other" in labels and labels["replied_from_other"] is not None:
            c["rep_n"] += 1
            c["rep_ok"] += bool(res["review"]["replied_from_other"]) == bool(labels["replied_from_other"])
        if "concerns" in labels and labels.get("review_state"):
            gold_c = set(labels.get("concerns") or [])
            pred_c = set(res["review"].get("concerns") or [])
            c["c_tp"] += len(gold_c & pred_c)
            c["c_fp"] += len(pred_c - gold_c)
            c["c_fn"] += len(gold_c - pred_c)
        if "papers" in labels:
            gold_papers = labels.get("papers") or []
            got = res["papers"]
            got_ids = {p.get("arxiv_id") for p in got if p.get("how") == "arxiv_id" and p.get("arxiv_id")}
            gold_ids = {p.get("arxiv_id") for p in gold_papers if p.get("how") == "arxiv_id" and p.get("arxiv_id")}
            c["a_tp"] += len(got_ids & gold_ids)
            c["a_fp"] += len(got_ids - gold_ids)
            c["a_fn"] += len(gold_ids - got_ids)
            if got_ids != gold_ids:
                wrong.append(f"arxiv    {tid}: gold {sorted(gold_ids)} got {sorted(got_ids)}")
            all_got_ids = {p.get("arxiv_id") for p in got if p.get("arxiv_id")}
            got_names = {_norm(p.get("method")) for p in got} | {_norm(p.get("title")) for p in got}
            for gp in gold_papers:
                if gp.get("how") not in ("title", "method_name"):
                    continue
                c["t_n"] += 1
                hit = (gp.get("arxiv_id") and gp["arxiv_id"] in all_got_ids) or (
                    not gp.get("arxiv_id")
                    and (_norm(gp.get("method")) in got_names or _norm(gp.get("title")) in got_names)
                )
                c["t_ok"] += bool(hit)
                if not hit:
                    wrong.append(
                        f"paper    {tid}: missed {gp.get('how')} {gp.get('arxiv_id')} {gp.get('method') or ''}"
                    )

    out: dict[str, float] = {}
    print(f"analyzer version {ANALYZER_VERSION}; {len(rows)} threads in {elapsed:.2f} s")
    print(line("failure report", c["f_tp"], c["f_fp"], c["f_fn"]))
    out["failure_f1"] = prf(c["f_tp"], c["f_fp"], c["f_fn"])[2]
    tp = c["f_tp"]
    out["kind_accuracy"] = c["f_kind_ok"] / tp if tp else 1.0
    print(
        f"{'failure kind accuracy':<28} {out['kind_accuracy']:.3f} on detected reports ({c['f_kind_ok']}/{tp}); "
        f"{(c['f_kind_ok_all'] / c['f_gold'] if c['f_gold'] else 1.0):.3f} on all labeled reports"
    )
    print(line("proposal", c["p_tp"], c["p_fp"], c["p_fn"]))
    out["proposal_f1"] = prf(c["p_tp"], c["p_fp"], c["p_fn"])[2]
    out["review_accuracy"] = c["r_ok"] / c["r_n"] if c["r_n"] else 1.0
    print(f"{'review-state accuracy':<28} {out['review_accuracy']:.3f} ({c['r_ok']}/{c['r_n']})")
    out["reply_accuracy"] = c["rep_ok"] / c["rep_n"] if c["rep_n"] else 1.0
    print(f"{'reply detection':<28} {out['reply_accuracy']:.3f} ({c['rep_ok']}/{c['rep_n']})")
    print(line("concerns (micro)", c["c_tp"], c["c_fp"], c["c_fn"]))
    out["concern_f1"] = prf(c["c_tp"], c["c_fp"], c["c_fn"])[2]
    print(line("arXiv identifiers", c["a_tp"], c["a_fp"], c["a_fn"]))
    out["arxiv_precision"], out["arxiv_recall"], _ = prf(c["a_tp"], c["a_fp"], c["a_fn"])
    out["title_method_recall"] = c["t_ok"] / c["t_n"] if c["t_n"] else 1.0
    print(f"{'title / method-name recall':<28} {out['title_method_recall']:.3f} ({c['t_ok']}/{c['t_n']})")

    if not quiet:
        print("\nfailure category confusion (gold -> predicted: count)")
        for (g, p), n in sorted(confusion.items()):
            mark = "" if (g == p or (g.startswith("no:") and p == "-")) else "   <-"
            print(f"  {g:<28} -> {p:<28} {n}{mark}")
        print("\nreview-state confusion (gold -> predicted: count)")
        for (g, p), n in sorted(state_confusion.items()):
            print(f"  {g:<18} -> {p:<18} {n}{'' if g == p else '   <-'}")
        print(f"\nwrong ({len(wrong)}):")
        for w in wrong:
            print("  " + w)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("threads", nargs="?", default=str(DEFAULT_THREADS))
    ap.add_argument("--papers", default=None, help="paper pool (default: shared eval pool)")
    ap.add_argument("--quiet", action="store_true", help="figures only")
    ap.add_argument("--sealed", action="store_true", help="also score the sealed slice (once, at the end)")
    ap.add_argument("--only", default=None, help="only the learned field of this trainer NAME")
    args = ap.parse_args(argv)
    if not SHARED.is_dir():
        print(f"make eval needs the labelled threads in {SHARED} (not present here)", file=sys.stderr)
        return 2
    from training import trainers
    from training.data import load_examples
    from training.report import render

    examples = load_examples()
    for module in trainers():
        if args.only and module.NAME != args.only:
            continue
        print(render(module.evaluate(examples, sealed=args.sealed), show_wrong=not args.quiet, sealed=args.sealed))
        print()
    if args.only:
        return 0
    print("== the whole analysis on one labeled file (fitted fields: NOT a result, see above)")
    path = Path(args.threads)
    if not path.exists():
        print(f"no labeled threads at {path}", file=sys.stderr)
        return 2
    from analyzers.papers import PaperIndex

    papers_path = Path(args.papers) if args.papers else (DEFAULT_PAPERS if DEFAULT_PAPERS.exists() else None)
    pool = PaperIndex.build(load(papers_path)) if papers_path else None
    evaluate(load(path), pool, quiet=args.quiet)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
