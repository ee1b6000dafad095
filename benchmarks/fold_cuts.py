"""How much the grouped-CV failure figures depend on how the related projects are cut into folds.

    python benchmarks/fold_cuts.py [CUTS ...]      (default: 2 3 4 5 6 8)

`make eval` scores the related projects (everything outside the seven frameworks) in
`training.cv.RELATED_FOLDS` folds (4), grouped by repository; the seven framework folds stay as
they are. Every pass has been measured on that one cut, so a figure can be fitted to it without
any thread being read. This prints, for each number of related folds, the pooled grouped-CV
failure-report F1 at the shipped decision threshold, kind accuracy on detected reports, and the
comments right on the kind at the comment threshold (opening posts): what the spread is, and
where the reference cut sits in it. Measured, not asserted; sealed threads stay out.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv: list[str]) -> int:
    from analyzers.failures import failure_models, threshold
    from training import SEED
    from training.cv import RELATED_FOLDS, cross_val_predict
    from training.data import load_examples
    from training.failure import fit_models, kind_comments, labelled, predict, score

    cuts = [int(a) for a in argv] or [2, 3, 4, 5, 6, 8]
    shipped = failure_models().report
    scale = float(shipped.meta.get("situation_scale", 1.0))
    decision, comment = shipped.threshold, threshold()
    rows = labelled(load_examples())
    print(f"failure model, situation scale x{scale:g}, decision {decision:.2f}, comment {comment:.3f}; "
          f"reference cut: {RELATED_FOLDS} related folds")
    for k in cuts:
        preds, _ = cross_val_predict(rows, lambda tr: fit_models(tr, SEED, scale), predict, related_folds=k)
        scored = [e for e in rows if e.id in preds]
        s = score(scored, preds, decision)
        right = kind_comments(scored, preds, comment)
        mark = "  (reference)" if k == RELATED_FOLDS else ""
        print(f"  {k} related folds: report F1 {s.f1:.3f}, kind {s.kind_ok}/{s.tp} ({s.kind_accuracy:.3f}), "
              f"comments right on the kind {right.right}/{right.n} ({right.share():.3f}){mark}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
