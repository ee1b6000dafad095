"""What a review comment's file is worth to the review analyzer, in grouped cross-validation.

    python benchmarks/review_path_forms.py

The labelled threads give a reviewer's remark on a changed file as a `path:line` first line
(then the diff hunk and the remark). The app stores the remark alone, with the file in a
`path` column, and gave the analyzers the remark alone until review 59. Models are fitted per
fold on the threads as labelled (as `make eval` fits them); each held-out thread is scored in
three forms: as labelled; its remarks without their first line and no file (what the app
gave); the same with the file as the comment's `path` key (what the app gives now).
Thresholds are the grouped-CV ones of the labelled form. Concern figures (the state does not
read the file) on every labelled thread scored in CV and on those holding such a remark. The
"before" form keeps the rest of the labelled rendering (the diff hunk, a fenced block the
analyzer drops; a review thread's replies as `**login**:` lines where the app stores each
reply as a comment): it differs from the app's input by the file only. Reads ../shared;
writes nothing.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    from analyzers.review import _PATH_LINE, CONCERNS, review_scores
    from training.cv import cross_val_predict
    from training.data import load_examples
    from training.review import SEED, choose_thresholds, fit_models, labelled, score, shaped_kinds

    def remark_path(body: str) -> str | None:
        first = body.partition("\n")[0].strip()
        return first.rsplit(":", 1)[0] if len(first) <= 400 and _PATH_LINE.fullmatch(first) else None

    def app_form(thread: dict[str, Any], with_path: bool) -> dict[str, Any]:
        thread = copy.deepcopy(thread)
        for comment in thread.get("comments") or []:
            path = remark_path(comment.get("body") or "")
            if path is not None:
                comment["body"] = comment["body"].partition("\n")[2]
                if with_path:
                    comment["path"] = path
        return thread

    rows = labelled(load_examples())
    shaped = shaped_kinds(rows)
    forms = {
        "as labelled (path:line first line)": lambda t: t,
        "remark alone, no file (the app before)": lambda t: app_form(t, False),
        "remark alone, path key (the app now)": lambda t: app_form(t, True),
    }

    def predict(models: Any, e: Any) -> dict[str, Any]:
        return {name: review_scores(form(e.thread), models) for name, form in forms.items()}

    preds, _ = cross_val_predict(rows, lambda tr: fit_models(tr, SEED, shaped), predict)
    cv_rows = [e for e in rows if e.id in preds]
    first = next(iter(forms))
    common, own = choose_thresholds(cv_rows, {i: p[first] for i, p in preds.items()})
    thresholds = {k: own.get(k, common) for k in CONCERNS}
    with_remarks = [e for e in cv_rows
                    if any(remark_path(c.get("body") or "") for c in e.thread.get("comments") or [])]
    for label, subset in (("every thread scored in CV", cv_rows),
                          ("threads with a remark on a file", with_remarks)):
        print(f"{label} ({len(subset)}):")
        for name in forms:
            s = score(subset, {i: p[name] for i, p in preds.items()}, thresholds)
            print(f"  {name:42s} concern F1 {s.concern_prf()[2]:.3f}  {s.counts()}")


if __name__ == "__main__":
    main()
