"""Nonlinear models over the failure analyzer's named features, measured as the shipped ones are.

    python benchmarks/nonlinear_failure.py [--only NAME ...] [--cuts] [--sets b c e f g]

Every estimator fitted for the failure models so far is linear (docs/history/analyzers-journal.md, nb10). This
measures tree ensembles over the dense, NAMED features of `failure_features` (category cues,
symptom pairs, `about:*`, `ev:*`, `top:*`, negatives, observation cues: every feature whose name
has no `#`; the hashed n-grams are left out), where interactions could matter:

- `hgb`: scikit-learn HistGradientBoostingClassifier (depth 2-4, 200 iterations, learning rate
  0.05, min_samples_leaf 10, L2 1, no early stopping);
- `rf` / `et`: RandomForest / ExtraTrees (300 trees, depth 3-4, min_samples_leaf 3, sqrt features);
- each alone (`w1`) and blended with the shipped logistic regression: the probabilities averaged
  with the tree model's share w = 0.25 / 0.5 / 0.75 (the LR's probabilities are computed as the
  analyzer computes them, from the same fold's LR);
- `stack:SPEC:sV` (report model, by --only): the LR fitted with the tree's probability x V as one
  more feature, out of fold inside each fold (`out_of_fold_trees`: no leakage);
- `report:lrnamed` / `kind:lrnamed`: the LR over the named features only (same-feature reference);
- spec options: "hgb3-l20-i100" = min_samples_leaf 20, 100 iterations (or trees);
  `--kind-sure 0` switches off the lexicon fallback of `rank_kinds` (KIND_MODEL_SURE).

One model is changed at a time: `report:*` candidates replace the report model (the kind model
stays the LR), `kind:*` candidates the kind model (the report model stays the LR). Trees are
fitted on the rows the LR is fitted on (`training.failure.report_rows` / `kind_rows`), with the
features seen in fewer than MIN_DF rows dropped, with the LR's class weights ("balanced" for the
report model, none for the kind model), seeded. A candidate is scored by
`training.failure.run` itself (the trainer behind `evaluate.py --only failure`): the same folds,
the same `classify_failure` (kind rules, priors), the decision and comment thresholds chosen
from the candidate's own pooled grouped-CV confidences; `about:*` at the shipped scale (x5:
trees do not see a feature's scale). The written sets are scored with the candidate fitted on
every non-sealed labelled thread, as `evaluate_written.py` scores the shipped model. `--cuts`
also reruns the grouped CV with the related projects cut into 2-8 folds (`fold_cuts.py`) at the
candidate's thresholds. Sealed threads stay out. Figures only: nothing is written.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import evaluate_written  # noqa: E402

import analyzers.failures as failures  # noqa: E402
import training.failure as tf  # noqa: E402
from analyzers.failures import FailureModels  # noqa: E402
from training import SEED  # noqa: E402

SCALE = 5.0  # the shipped situation scale (chosen by `make train`); trees ignore it
BLENDS = (0.25, 0.5, 0.75, 1.0)  # the tree model's share of the probability


def named(vector: Mapping[str, float]) -> dict[str, float]:
    """The named (non-hashed) features of a vector."""
    return {k: v for k, v in vector.items() if "#" not in k}


def _estimator(spec: str, binary: bool) -> Any:
    from sklearn.ensemble import (
        ExtraTreesClassifier,
        HistGradientBoostingClassifier,
        RandomForestClassifier,
    )

    # "hgb3": family and depth; "-l20" min_samples_leaf, "-i100" iterations / trees (stronger
    # regularisation than the defaults: hgb leaf 10, 200 iterations; rf / et leaf 3, 300 trees).
    head, *opts = spec.split("-")
    family, depth = head[:-1], int(head[-1])
    opt = {o[0]: int(o[1:]) for o in opts}
    cw = "balanced" if binary else None
    if family == "hgb":
        return HistGradientBoostingClassifier(
            max_depth=depth, max_iter=opt.get("i", 200), learning_rate=0.05, min_samples_leaf=opt.get("l", 10),
            l2_regularization=1.0, early_stopping=False, class_weight=cw, random_state=SEED,
        )  # fmt: skip
    cls = RandomForestClassifier if family == "rf" else ExtraTreesClassifier
    return cls(n_estimators=opt.get("i", 300), max_depth=depth, min_samples_leaf=opt.get("l", 3), max_features="sqrt",
               class_weight=cw, random_state=SEED, n_jobs=1)  # fmt: skip


@dataclass
class Trees:
    """A fitted tree ensemble over named features, read through a dict vector."""

    estimator: Any
    names: list[str]
    classes: list[str]
    cache: dict[tuple[tuple[str, float], ...], list[float]] = field(default_factory=dict)

    @staticmethod
    def key(x: Mapping[str, float]) -> tuple[tuple[str, float], ...]:
        return tuple(sorted(named(x).items()))

    def _matrix(self, vectors: list[Mapping[str, float]]) -> Any:
        import numpy as np

        index = {n: i for i, n in enumerate(self.names)}
        m = np.zeros((len(vectors), len(self.names)))
        for r, x in enumerate(vectors):
            for k, v in x.items():
                if (i := index.get(k)) is not None:
                    m[r, i] = v
        return m

    def prefill(self, vectors: list[Mapping[str, float]]) -> None:
        """Predict many vectors in one call (the analyzer then asks one at a time)."""
        todo = {self.key(x): x for x in vectors}
        todo = {k: x for k, x in todo.items() if k not in self.cache}
        if todo:
            probs = self.estimator.predict_proba(self._matrix(list(todo.values())))
            self.cache.update(zip(todo, (list(map(float, p)) for p in probs), strict=True))

    def proba(self, x: Mapping[str, float]) -> dict[str, float]:
        k = self.key(x)
        if k not in self.cache:
            self.prefill([x])
        return dict(zip(self.classes, self.cache[k], strict=True))


def fit_trees(X: list[Mapping[str, float]], y: list[Any], spec: str) -> Trees:
    binary = all(isinstance(v, bool) for v in y)
    labels = [("1" if v else "0") if binary else str(v) for v in y]
    df: dict[str, int] = {}
    for x in X:
        for k in named(x):
            df[k] = df.get(k, 0) + 1
    names = sorted(k for k, n in df.items() if n >= tf.MIN_DF)
    trees = Trees(_estimator(spec, binary), names, [])
    trees.estimator.fit(trees._matrix([named(x) for x in X]), labels)
    trees.classes = [str(c) for c in trees.estimator.classes_]
    trees.prefill(list(_seen_vectors()))
    return trees


class Blend:
    """LinearModel's interface (as classify_failure reads it) over (1 - w) x LR + w x trees."""

    def __init__(self, lr: Any, trees: Trees, w: float) -> None:
        self.lr, self.trees, self.w = lr, trees, w
        self.name, self.classes, self.meta = lr.name, lr.classes, dict(lr.meta)
        self.threshold, self.thresholds = lr.threshold, dict(lr.thresholds)

    def probability(self, x: Mapping[str, float]) -> float:
        p = self.lr.probability(x) if self.w < 1 else 0.0
        return (1 - self.w) * p + self.w * self.trees.proba(x).get("1", 0.0)

    def probabilities(self, x: Mapping[str, float]) -> dict[str, float]:
        lr = self.lr.probabilities(x)
        t = self.trees.proba(x)
        return {c: (1 - self.w) * lr[c] + self.w * t.get(c, 0.0) for c in lr}


# --- caches: features are computed once per thread, fitted models once per fold -----------------

_FEATURE_MEMO: dict[str, Any] = {}
_original_features = failures.failure_features


def _memo_features(title: Any, body: Any, kind: Any = None, author: Any = None, comments: Any = None) -> Any:
    key = json.dumps([title, body, kind, author, comments], sort_keys=True, default=str)
    if key not in _FEATURE_MEMO:
        _FEATURE_MEMO[key] = _original_features(title, body, kind, author, comments)
    return _FEATURE_MEMO[key]


def _seen_vectors() -> list[dict[str, float]]:
    return [f.vector for f in _FEATURE_MEMO.values()]


_LR: dict[frozenset[str], FailureModels] = {}
_fit_lr = tf.fit_models  # the shipped trainer's (run() is pointed at a candidate's below)
_TREES: dict[tuple[str, str, frozenset[str]], Trees] = {}


def lr_models(train: list[Any]) -> FailureModels:
    key = frozenset(e.id for e in train)
    if key not in _LR:
        _LR[key] = _fit_lr(train, SEED, SCALE)
    m = _LR[key]
    return FailureModels(copy.copy(m.report), copy.copy(m.kind))


def trees_for(train: list[Any], model: str, spec: str) -> Trees:
    key = (model, spec, frozenset(e.id for e in train))
    if key not in _TREES:
        rows = tf.report_rows(train)
        if model == "report":
            X, y = [tf._features(e).vector for e in rows], [tf._gold(e)[0] for e in rows]
        else:
            _, fitted = tf.kind_rows(rows)
            X, y = [tf.kind_view(tf._features(e).vector) for e in fitted], [tf._gold(e)[1] for e in fitted]
        _TREES[key] = fit_trees(X, y, spec)
    return _TREES[key]


STACKED = "tree:report"  # the extra feature of a stacked report model


class Stacked:
    """The report LR fitted with the tree model's probability as one more feature (x `value`)."""

    def __init__(self, lr: Any, trees: Trees, value: float) -> None:
        self.lr, self.trees, self.value = lr, trees, value
        self.name, self.classes, self.meta = lr.name, lr.classes, dict(lr.meta)
        self.threshold, self.thresholds = lr.threshold, dict(lr.thresholds)

    def probability(self, x: Mapping[str, float]) -> float:
        return self.lr.probability({**x, STACKED: self.value * self.trees.proba(x).get("1", 0.0)})


def _tree_report_xy(rows: list[Any]) -> tuple[list[dict[str, float]], list[bool]]:
    return [tf._features(e).vector for e in rows], [tf._gold(e)[0] for e in rows]


def out_of_fold_trees(train: list[Any], spec: str) -> dict[str, float]:
    """The tree report model's probability for every report row of `train`, each from a tree
    fitted without it: labelled threads by grouped CV inside `train` (the same folds as the
    outer CV), the always-fitted project-written rows by a tree fitted on the labelled threads
    alone. No thread's feature is read from a tree fitted on it."""
    from training.cv import grouped_folds

    out: dict[str, float] = {}
    for fold in grouped_folds(train):
        trees = fit_trees(*_tree_report_xy(tf.report_rows(fold.train)), spec)
        out.update((e.id, trees.proba(tf._features(e).vector).get("1", 0.0)) for e in fold.test)
    labelled_ids = {e.id for e in train}
    real = [e for e in tf.report_rows(train) if e.id in labelled_ids]
    trees = fit_trees(*_tree_report_xy(real), spec)
    for e in tf.report_rows(train):
        if e.id not in out:
            out[e.id] = trees.proba(tf._features(e).vector).get("1", 0.0)
    return out


def stacked_models(train: list[Any], spec: str, value: float) -> FailureModels:
    oof = out_of_fold_trees(train, spec)
    plain = tf._features

    def with_tree(e: Any) -> Any:
        f = plain(e)
        return dataclasses.replace(f, vector={**f.vector, STACKED: value * oof[e.id]}) if e.id in oof else f

    tf._features = with_tree
    try:
        m = _fit_lr(train, SEED, SCALE)
    finally:
        tf._features = plain
    return FailureModels(Stacked(m.report, trees_for(train, "report", spec), value), m.kind)  # type: ignore[arg-type]


def candidate_fit(name: str) -> Callable[..., FailureModels]:
    """`fit_models` for a candidate "report:hgb3:w0.5" / "kind:rf4:w1" / "stack:hgb3:s5" / "lr"."""

    def fit(train: list[Any], seed: int = SEED, scale: float = SCALE) -> FailureModels:
        if name.startswith("stack:"):
            _, spec, value = name.split(":")
            return stacked_models(train, spec, float(value[1:]))
        m = lr_models(train)
        if name == "lr":
            return m
        if name.endswith(":lrnamed"):  # the same-feature linear reference: LR over named features only
            plain = tf._features
            tf._features = lambda e: dataclasses.replace(plain(e), vector=named(plain(e).vector))
            try:
                n = _fit_lr(train, SEED, SCALE)
            finally:
                tf._features = plain
            return FailureModels(n.report, m.kind) if name.startswith("report:") else FailureModels(m.report, n.kind)
        model, spec, w = name.split(":")
        blend = Blend(getattr(m, model), trees_for(train, model, spec), float(w[1:]))
        return FailureModels(blend, m.kind) if model == "report" else FailureModels(m.report, blend)  # type: ignore[arg-type]

    return fit


# --- scoring -------------------------------------------------------------------------------------


def _measure(run: Any, title: str) -> tuple[float, float, str]:
    m = next(m for m in run.report.measures if m.name == title)
    return m.cv7, m.cv_all, m.note


def written(models: FailureModels, sets: list[str]) -> dict[str, tuple[int, int, int, int, int, int]]:
    """Per set: (tp, fp, fn, kind right, comment tp, comment fp) as evaluate_written.py scores."""
    out = {}
    for s in sets:
        rows = tf.labelled(evaluate_written.load_set(s))
        preds = {e.id: tf.predict(models, e) for e in rows}
        d = tf.score(rows, preds, models.report.threshold)
        c = tf.score(rows, preds, models.report.thresholds.get("comment", models.report.threshold))
        out[s] = (d.tp, d.fp, d.fn, d.kind_ok, c.tp, c.fp)
    return out


def cuts(fit: Callable[..., FailureModels], models: FailureModels, rows: list[Any]) -> list[str]:
    from training.cv import cross_val_predict

    out = []
    for k in (2, 3, 5, 6, 8):
        preds, _ = cross_val_predict(rows, fit, tf.predict, related_folds=k)
        scored = [e for e in rows if e.id in preds]
        s = tf.score(scored, preds, models.report.threshold)
        right = tf.kind_comments(scored, preds, models.report.thresholds["comment"])
        out.append(f"{k}: F1 {s.f1:.3f} kind {s.kind_ok}/{s.tp} right {right.right}/{right.n}")
    return out


def candidates() -> list[str]:
    specs = ("hgb2", "hgb3", "hgb4", "rf3", "rf4", "et3", "et4")
    return ["lr"] + [f"{model}:{spec}:w{w:g}" for model in ("report", "kind") for spec in specs for w in BLENDS]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None, help="candidate names (default: the whole grid)")
    ap.add_argument("--cuts", action="store_true", help="also the other cuts of the related folds")
    ap.add_argument("--sets", nargs="*", default=["a", "b", "c", "e", "f", "g"])
    ap.add_argument("--kind-sure", type=float, default=None,
                    help="override failures.KIND_MODEL_SURE (0: the model's leading kind always, no lexicon fallback)")
    args = ap.parse_args(argv)
    if args.kind_sure is not None:
        failures.KIND_MODEL_SURE = args.kind_sure

    from training.data import load_examples

    failures.failure_features = _memo_features  # classify_failure reads it by name
    tf.failure_features = _memo_features
    tf.SITUATION_SCALES = (SCALE,)
    examples = load_examples()
    rows = tf.labelled(examples)
    for s in args.sets:  # the written sets' features into the memo, for the trees' prefill
        for e in tf.labelled(evaluate_written.load_set(s)):
            for a in ((e.thread.get("author"), e.thread.get("comments")), (None, None)):
                _memo_features(e.thread.get("title"), e.thread.get("body"), e.thread.get("kind"), *a)
    for e in rows:
        t = e.thread
        for a in ((t.get("author"), t.get("comments")), (None, None)):
            _memo_features(t.get("title"), t.get("body"), t.get("kind"), *a)

    print("candidate | F1 cv7 / all | kind cv7 / all | comment P cv7 / all | right on kind cv7 / all | "
          "thresholds | written sets (F1 tp/fp/fn, kind ok/tp, comment tp/fp)")
    for name in args.only or candidates():
        fit = candidate_fit(name)
        tf.fit_models = fit  # run() fits every fold and the final model through this name
        run = tf.run(examples, seed=SEED)
        f7, fa, _ = _measure(run, "failure report F1")
        k7, ka, knote = _measure(run, "failure kind accuracy")
        c7, ca, _ = _measure(run, "comment precision")
        r7, ra, rnote = _measure(run, "comment right on kind")
        fig = run.figures
        w = written(run.models, args.sets)
        tot = [sum(v[i] for v in w.values()) for i in range(6)]
        held = [sum(v[i] for s, v in w.items() if s != "a") for i in range(6)]

        def fmt(v: tuple[int, ...] | list[int]) -> str:
            tp, fp, fn, kok, ctp, cfp = v
            f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
            return f"{f1:.3f} {tp}/{fp}/{fn} k{kok}/{tp} c{ctp}/{cfp}"

        print(f"{name} | {f7:.3f} / {fa:.3f} | {k7:.3f} / {ka:.3f} ({knote.split(': ', 1)[1]}) | {c7:.3f} / {ca:.3f} | "
              f"{r7:.3f} / {ra:.3f} ({rnote.split(': ', 1)[1]}) | {fig['threshold']:.2f} {fig['comment_threshold']:.3f} | "
              + "; ".join(f"{s} {fmt(v)}" for s, v in w.items())
              + f"; held-out total (no a) {fmt(held)}; all {fmt(tot)}", flush=True)  # fmt: skip
        if args.cuts:
            rest = [e for e in rows if not e.sealed]
            print(f"  cuts of the related folds: {'; '.join(cuts(fit, run.models, rest))}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
