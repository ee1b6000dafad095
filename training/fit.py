"""Fit `analyzers.learned.LinearModel`s with scikit-learn and choose thresholds from data.

Used only by `make train` / `make eval` (scikit-learn is never imported at run time).
Everything is seeded and sorted, so the same data gives byte-identical model files.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from analyzers.learned import BUCKETS, LinearModel

# Weights smaller than this are dropped from the file (they cannot move a verdict).
PRUNE = 1e-4
DIGITS = 5


def fit_linear(
    X: Sequence[Mapping[str, float]],
    y: Sequence[Any],
    name: str,
    *,
    C: float = 1.0,
    seed: int = 0,
    min_df: int = 2,
    class_weight: str | dict[Any, float] | None = "balanced",
    buckets: int = BUCKETS,
) -> LinearModel:
    """L2-regularised logistic regression over sparse feature dicts.

    `y` of bools / 0-1 gives a binary model (classes ["0", "1"]); strings give a multiclass
    (softmax) model. Features seen in fewer than `min_df` training rows are dropped: a word
    that only one thread used is memorisation, not evidence."""
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression

    binary = all(isinstance(v, bool | int) and v in (0, 1) for v in y)
    labels = [("1" if v else "0") if binary else str(v) for v in y]
    classes = ["0", "1"] if binary else sorted(set(labels))
    vec = DictVectorizer(sort=True)
    matrix = vec.fit_transform(list(X)).tocsc()
    df = (matrix != 0).sum(axis=0).A1
    keep = [i for i, n in enumerate(df) if n >= min_df]
    matrix = matrix[:, keep].tocsr()
    names = [vec.feature_names_[i] for i in keep]

    present = sorted(set(labels))
    weights: dict[str, dict[str, float]] = {c: {} for c in classes}
    bias: dict[str, float] = {c: 0.0 for c in classes}
    if len(present) == 1:
        # One class only: a constant model (strong bias towards it).
        bias[present[0]] = 5.0 if not binary or present[0] == "1" else -5.0
        if binary:
            weights = {"1": {}}
            bias = {"1": 5.0 if present[0] == "1" else -5.0}
        return LinearModel(name, classes, weights, bias, buckets=buckets, meta={"seed": seed, "C": C})

    cw: Any = class_weight
    if isinstance(class_weight, dict):
        cw = {str(k): v for k, v in class_weight.items()}
    # liblinear: fast and deterministic on a few hundred sparse rows (one-vs-rest for several
    # classes; the run-time softmax over one-vs-rest scores ranks the classes the same way).
    clf: Any = LogisticRegression(C=C, class_weight=cw, solver="liblinear", max_iter=2000, random_state=seed)
    if len(present) > 2:
        from sklearn.multiclass import OneVsRestClassifier

        ovr = OneVsRestClassifier(clf).fit(matrix, labels)
        clf = _Stacked([str(c) for c in ovr.classes_], [e.coef_[0] for e in ovr.estimators_],
                       [e.intercept_[0] for e in ovr.estimators_])  # fmt: skip
    else:
        clf.fit(matrix, labels)

    def sparse(row: Any) -> dict[str, float]:
        return {n: round(float(w), DIGITS) for n, w in zip(names, row, strict=True) if abs(w) >= PRUNE}

    fitted = [str(c) for c in clf.classes_]
    if len(fitted) == 2:
        # sklearn keeps one weight row for two classes: score(second) - score(first).
        pos = fitted[1]
        weights = {pos: sparse(clf.coef_[0])}
        bias = {pos: round(float(clf.intercept_[0]), DIGITS)}
        if not binary:
            weights[fitted[0]] = {}
            bias[fitted[0]] = 0.0
            for c in classes:
                if c not in fitted:
                    weights[c], bias[c] = {}, -50.0
    else:
        weights = {c: {} for c in classes}
        bias = {c: -50.0 for c in classes}
        for i, c in enumerate(fitted):
            weights[c] = sparse(clf.coef_[i])
            bias[c] = round(float(clf.intercept_[i]), DIGITS)
    if binary:
        weights = {"1": weights["1"]}
        bias = {"1": bias["1"]}
    return LinearModel(name, classes, weights, bias, buckets=buckets, meta={"seed": seed, "C": C})


class _Stacked:
    """One-vs-rest estimators seen as one multiclass coef_ / intercept_."""

    def __init__(self, classes: list[str], coef: list[Any], intercept: list[float]) -> None:
        self.classes_, self.coef_, self.intercept_ = classes, coef, intercept


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def choose_threshold(
    scores: Sequence[float], gold: Sequence[bool], min_precision: float = 0.90, default: float = 0.5
) -> float:
    """The lowest score threshold at which the precision of "score >= threshold" is still
    >= `min_precision` (the most recall the precision goal allows). `default` when no
    threshold reaches it."""
    pairs = sorted(zip(scores, gold, strict=True), key=lambda p: -p[0])
    tp = fp = 0
    best: float | None = None
    i = 0
    while i < len(pairs):
        s = pairs[i][0]
        while i < len(pairs) and pairs[i][0] == s:  # ties go in together
            tp += pairs[i][1]
            fp += not pairs[i][1]
            i += 1
        if tp / (tp + fp) >= min_precision:
            best = s
    # Rounded down, so the example that set it stays above it.
    return math.floor(best * 1e4) / 1e4 if best is not None else default


def best_f1_threshold(
    scores: Sequence[float], gold: Sequence[bool], step: float = 0.05, smooth: bool = False
) -> float:
    """The threshold on a coarse grid (multiples of `step`: a fine one would fit the noise of
    a few hundred scores) with the highest F1 of "score >= threshold". `smooth`: the highest
    mean F1 over the grid point and its two neighbours, so that a flat optimum is not decided
    by one or two threads at its edge."""
    grid = [round(k * step, 4) for k in range(1, int(round(1 / step)))]
    f1s = []
    for t in grid:
        tp = sum(1 for s, g in zip(scores, gold, strict=True) if s >= t and g)
        fp = sum(1 for s, g in zip(scores, gold, strict=True) if s >= t and not g)
        fn = sum(1 for s, g in zip(scores, gold, strict=True) if s < t and g)
        f1s.append(prf(tp, fp, fn)[2])
    if smooth:
        f1s = [sum(f1s[max(i - 1, 0) : i + 2]) / len(f1s[max(i - 1, 0) : i + 2]) for i in range(len(f1s))]
    best_t, best_f = 0.5, -1.0
    for t, f in zip(grid, f1s, strict=True):
        if f > best_f:
            best_t, best_f = t, f
    return best_t


__all__ = ["best_f1_threshold", "choose_threshold", "fit_linear", "prf"]


def write_models(
    models: Sequence[tuple[LinearModel, Mapping[str, Any]]], *, data_hash: str, seed: int,
    min_df: int, figures: Mapping[str, Any], labelled_threads: int,
) -> list[Any]:
    """Save each fitted model beside the analyzers with what makes it reproducible and judged:
    the training data's hash, the analyzer version, seed and hyper-parameters, the figures.
    A model's own `use` switch and `kind_priors` (set by its trainer) are kept."""
    from analyzers.learned import MODELS_DIR
    from analyzers.version import ANALYZER_VERSION

    paths = []
    for model, hyper in models:
        model.meta = {
            **{k: v for k, v in model.meta.items() if k in ("use", "kind_priors")},
            "training_data_sha256": data_hash,
            "analyzer_version": ANALYZER_VERSION,
            "seed": seed,
            "min_df": min_df,
            **hyper,
            "figures": dict(figures),
            "labelled_threads": labelled_threads,
        }
        path = MODELS_DIR / f"{model.name}.json"
        model.save(path)
        paths.append(path)
    return paths
