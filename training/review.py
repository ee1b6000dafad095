"""Trainer for the review analyzer (analyzers/review.py): the state of closed threads no
structural fact decides, and the concerns others raised.

- `review_state`: multiclass over the closed states (declined, redirected, lapsed,
  closed_by_author, closed_other), fitted on the closed threads whose state the rules cannot
  read from a fact (merged, open, closed_by, a bot closing, a stale label stay rules: exact).
  Features: the rules' own answer and reasons, the signals in what others and the proposer
  wrote (anywhere and in their last words), who spoke last, and the last words' n-grams.
- `review_concerns`: one binary model over rows (thread, concern kind): the kind's lexicon
  hits from people other than the proposer, and whether they stated another kind in strong
  words (shared across kinds and per kind, so rare kinds borrow strength) and, for kinds with enough positive threads in the data fitted, the
  review's shape crossed with the kind. A rare kind's row is its bias and its lexicon hits
  only: weights for its shape fitted on a handful of threads lowered grouped-CV F1 (they
  learn which repository the few positives came from). The others' hashed n-grams are not
  fitted either: crossed with eight kinds over a few hundred threads they lowered grouped-CV
  F1 at every regularisation tried (the analyzer still reads them if a model carries them).
  Thresholds per kind are chosen from pooled grouped-CV probabilities (F1), for kinds with
  enough positives; the rest use one threshold chosen on all kinds together.

Cross-validation scores every held-out thread through `analyzers.review.review_scores` with
the fold's models: what is measured is the analyzer as it runs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sklearn.metrics import average_precision_score

from analyzers.learned import LinearModel
from analyzers.review import (
    CONCERNS,
    OWN_FAMILIES,
    ReviewEvidence,
    ReviewModels,
    ReviewScores,
    concern_vector,
    review_evidence,
    review_scores,
    state_vector,
)
from training import SEED
from training.cv import cross_val_predict, grouped_folds
from training.data import Example
from training.fit import fit_linear, prf, write_models
from training.report import FieldReport, Measure, bootstrap_interval, interval_line

NAME = "review"
C_STATE = 3.0
C_CONCERNS = 1.0
MIN_DF = 2
# A kind gets its own threshold (from the pooled CV predictions) and its own weights for the
# review's shape (from the data fitted) only with this many positive threads; fewer, and they
# would be fitted to a handful of threads.
MIN_POSITIVES_FOR_OWN_THRESHOLD = 15
GRID = tuple(round(0.05 * i, 2) for i in range(2, 19))


def labelled(examples: list[Example]) -> list[Example]:
    return [e for e in examples if e.labels.get("review_state")]


def _gold_concerns(e: Example) -> set[str]:
    return set(e.labels.get("concerns") or [])


_EVIDENCE: dict[str, ReviewEvidence] = {}


def _evidence(e: Example) -> ReviewEvidence:
    ev = _EVIDENCE.get(e.id)
    if ev is None:
        ev = _EVIDENCE[e.id] = review_evidence(e.thread)
    return ev


def shaped_kinds(rows: list[Example]) -> frozenset[str]:
    """Kinds with enough positive threads to fit weights for the review's shape. Decided once
    on every labelled thread outside the sealed slice (as the per-kind thresholds are), not
    per fold: a fold that holds most of a kind's positives would otherwise fit a different
    model shape from the others."""
    positives = Counter(k for e in labelled(rows) if not e.sealed for k in _gold_concerns(e))
    return frozenset(k for k in CONCERNS if positives[k] >= MIN_POSITIVES_FOR_OWN_THRESHOLD)


def fit_models(train: list[Example], seed: int = SEED, shaped: frozenset[str] | None = None) -> ReviewModels:
    """`shaped`: the kinds whose rows carry the review's shape (default: `shaped_kinds(train)`)."""
    rows = labelled(train)
    hard = [e for e in rows if not _evidence(e).exact]
    state = fit_linear(
        [state_vector(_evidence(e)) for e in hard], [str(e.labels["review_state"]) for e in hard],
        "review_state", C=C_STATE, seed=seed, min_df=MIN_DF, class_weight=None,
    )  # fmt: skip
    shaped = shaped_kinds(rows) if shaped is None else shaped
    X: list[dict[str, float]] = []
    y: list[bool] = []
    for e in rows:
        ev, gold = _evidence(e), _gold_concerns(e)
        for kind in CONCERNS:
            X.append(concern_row(ev, kind, kind in shaped))
            y.append(kind in gold)
    concerns = fit_linear(X, y, "review_concerns", C=C_CONCERNS, seed=seed, min_df=MIN_DF, class_weight=None)
    concerns.threshold = 0.5
    return ReviewModels(state, concerns)


def concern_row(ev: ReviewEvidence, kind: str, shaped: bool) -> dict[str, float]:
    """The row fitted for one kind: `concern_vector` without text; without the review's
    shape unless `shaped` (the analyzer builds the full vector: features the model has no
    weight for add nothing)."""
    x = concern_vector(ev, kind, {})
    if shaped:
        return x
    return {k: v for k, v in x.items() if "|" not in k or k.partition("|")[2] in OWN_FAMILIES + ("bias",)}


def predict(models: ReviewModels, e: Example) -> ReviewScores:
    return review_scores(e.thread, models)


@dataclass
class Scores:
    n: int = 0
    state_ok: int = 0
    reply_n: int = 0
    reply_ok: int = 0
    tp: Counter[str] = field(default_factory=Counter)
    fp: Counter[str] = field(default_factory=Counter)
    fn: Counter[str] = field(default_factory=Counter)

    @property
    def state_accuracy(self) -> float:
        return self.state_ok / self.n if self.n else 1.0

    @property
    def reply_accuracy(self) -> float:
        return self.reply_ok / self.reply_n if self.reply_n else 1.0

    def concern_prf(self, kind: str | None = None) -> tuple[float, float, float]:
        if kind is None:
            return prf(sum(self.tp.values()), sum(self.fp.values()), sum(self.fn.values()))
        return prf(self.tp[kind], self.fp[kind], self.fn[kind])

    def counts(self, kind: str | None = None) -> str:
        tp, fp, fn = (
            (sum(self.tp.values()), sum(self.fp.values()), sum(self.fn.values()))
            if kind is None
            else (self.tp[kind], self.fp[kind], self.fn[kind])
        )
        p, r, _ = prf(tp, fp, fn)
        return f"P {p:.3f} R {r:.3f} (tp {tp}, fp {fp}, fn {fn})"


def concerns_at(p: ReviewScores, thresholds: dict[str, float]) -> set[str]:
    return {k for k in CONCERNS if p.concern_probabilities[k] >= thresholds[k]}


def score(rows: list[Example], preds: dict[str, ReviewScores], thresholds: dict[str, float]) -> Scores:
    s = Scores()
    for e in rows:
        p = preds[e.id]
        s.n += 1
        s.state_ok += p.state == e.labels["review_state"]
        if e.labels.get("replied_from_other") is not None:
            s.reply_n += 1
            s.reply_ok += p.replied == bool(e.labels["replied_from_other"])
        _count_concerns(s, _gold_concerns(e), concerns_at(p, thresholds))
    return s


def _count_concerns(s: Scores, gold: set[str], got: set[str]) -> None:
    for k in CONCERNS:
        s.tp[k] += k in gold and k in got
        s.fp[k] += k in got and k not in gold
        s.fn[k] += k in gold and k not in got


def _best_threshold(pairs: list[tuple[float, bool]]) -> float:
    """The grid threshold with the best F1 on (probability, gold) pairs; the higher one on ties
    (fewer claims for the same F1)."""
    best = (-1.0, 0.5)
    for t in GRID:
        tp = sum(1 for p, g in pairs if p >= t and g)
        fp = sum(1 for p, g in pairs if p >= t and not g)
        fn = sum(1 for p, g in pairs if p < t and g)
        f1 = prf(tp, fp, fn)[2]
        if f1 >= best[0]:
            best = (f1, t)
    return best[1]


def choose_thresholds(rows: list[Example], preds: dict[str, ReviewScores]) -> tuple[float, dict[str, float]]:
    """One threshold per kind with enough positives, and one common threshold chosen on the
    other kinds together (the kinds it applies to; every kind when all have their own)."""
    own: dict[str, float] = {}
    for k in CONCERNS:
        pairs = [(preds[e.id].concern_probabilities[k], k in _gold_concerns(e)) for e in rows]
        if sum(g for _, g in pairs) >= MIN_POSITIVES_FOR_OWN_THRESHOLD:
            own[k] = _best_threshold(pairs)
    rest = [k for k in CONCERNS if k not in own] or list(CONCERNS)
    pooled = [(preds[e.id].concern_probabilities[k], k in _gold_concerns(e)) for e in rows for k in rest]
    return _best_threshold(pooled), own


def nested_concern_sets(
    rows: list[Example], fit: Any, cv_preds: dict[str, ReviewScores]
) -> dict[str, set[str]]:
    """The concerns of each held-out thread at thresholds chosen inside its own fold: grouped
    CV over that fold's training threads only, thresholds picked on those predictions as
    `choose_thresholds` does, then applied to the fold's held-out threads (nested grouped CV).
    The pooled thresholds saw every held-out thread; these did not."""
    out: dict[str, set[str]] = {}
    for fold in grouped_folds(rows):
        inner, _ = cross_val_predict(fold.train, fit, predict)
        common, own = choose_thresholds([e for e in fold.train if e.id in inner], inner)
        limits = {k: own.get(k, common) for k in CONCERNS}
        for e in fold.test:
            out[e.id] = concerns_at(cv_preds[e.id], limits)
    return out


def average_precision(pairs: list[tuple[float, bool]]) -> float:
    """Average precision of (probability, gold) pairs ranked by probability (scikit-learn's:
    tied pairs enter together). Threshold-free: it moves when a change ranks positives higher
    even where no threshold is crossed, and does not move when only a threshold does."""
    if not any(g for _, g in pairs):
        return 1.0  # nothing to rank
    return float(average_precision_score([g for _, g in pairs], [p for p, _ in pairs]))


def _concern_pairs(rows: list[Example], preds: dict[str, ReviewScores]) -> list[tuple[float, bool]]:
    return [(preds[e.id].concern_probabilities[k], k in _gold_concerns(e)) for e in rows for k in CONCERNS]


def _score_sets(rows: list[Example], got: dict[str, set[str]]) -> Scores:
    """Concern counts of `rows` for the given concern sets (state and replies not scored)."""
    s = Scores()
    for e in rows:
        _count_concerns(s, _gold_concerns(e), got[e.id])
    return s


@dataclass
class Run:
    models: ReviewModels
    report: FieldReport
    figures: dict[str, Any]


def run(examples: list[Example], seed: int = SEED, sealed: bool = False, intervals: bool = False) -> Run:
    rows = labelled(examples)
    shaped = shaped_kinds(rows)

    def fit(tr: list[Example]) -> ReviewModels:
        return fit_models(tr, seed, shaped)

    cv_preds, fold_of = cross_val_predict(rows, fit, predict)
    cv_rows = [e for e in rows if e.id in cv_preds]
    fw_rows = [e for e in cv_rows if not fold_of[e.id].startswith("related")]
    common, own = choose_thresholds(cv_rows, cv_preds)
    thresholds = {k: own.get(k, common) for k in CONCERNS}
    # The state model is used only if, on the threads the phrase lists were not written from
    # (the train file), its grouped-CV accuracy beats the rules' own answer.
    unseen = [e for e in cv_rows if e.split == "train"]
    model_ok = sum(cv_preds[e.id].state == e.labels["review_state"] for e in unseen)
    rules_ok = sum(_evidence(e).rule_state == e.labels["review_state"] for e in unseen)
    use_state_model = model_ok > rules_ok
    if not use_state_model:
        for e in cv_rows:
            cv_preds[e.id].state = _evidence(e).rule_state

    fit_rows = [e for e in rows if not e.sealed]
    models = fit_models(fit_rows, seed, shaped)
    models.state.meta["use"] = use_state_model
    models.concerns.threshold = common
    models.concerns.thresholds = dict(own)
    fit_preds = {e.id: predict(models, e) for e in fit_rows}
    cv7, cv_all, fitted = score(fw_rows, cv_preds, thresholds), score(cv_rows, cv_preds, thresholds), score(fit_rows, fit_preds, thresholds)
    sealed_scores = None
    sealed_rows: list[Example] = []
    sealed_preds: dict[str, ReviewScores] = {}
    if sealed:
        sealed_rows = [e for e in rows if e.sealed]
        sealed_preds = {e.id: predict(models, e) for e in sealed_rows}
        sealed_scores = score(sealed_rows, sealed_preds, thresholds)

    def measure(name: str, get: Any, note: str = "") -> Measure:
        return Measure(name, get(cv7), get(cv_all), get(fitted), get(sealed_scores) if sealed_scores else None, note)

    rep = FieldReport("review state and concerns (analyzers/review.py)")
    rep.measures.append(measure("review-state accuracy", lambda s: s.state_accuracy, f"cv7 {cv7.state_ok}/{cv7.n}, cv_all {cv_all.state_ok}/{cv_all.n}"))
    rep.measures.append(measure("reply detection", lambda s: s.reply_accuracy, "rules only (not fitted)"))
    rep.measures.append(measure("concern F1 (micro)", lambda s: s.concern_prf()[2], f"cv7 {cv7.counts()}; cv_all {cv_all.counts()}"))
    for k in CONCERNS:
        rep.measures.append(measure(f"  {k}", lambda s, k=k: s.concern_prf(k)[2], f"cv7 {cv7.counts(k)}"))
    if intervals:
        parts = [("cv7", fw_rows, cv_preds), ("cv_all", cv_rows, cv_preds)]
        parts += [("sealed", sealed_rows, sealed_preds)] if sealed else []
        rep.lines.append("95% intervals (seeded bootstrap over the threads scored, 1000 draws: the sampling "
                         "noise of a set that size, not its bias):")
        for name, get in (("review-state accuracy", lambda s: s.state_accuracy),
                          ("concern F1 (micro)", lambda s: s.concern_prf()[2])):
            rep.lines.append(interval_line(name, [
                (col, get(score(rs, preds, thresholds)),
                 bootstrap_interval(rs, lambda drawn, p=preds, g=get: g(score(drawn, p, thresholds)), seed=seed))
                for col, rs, preds in parts]))  # fmt: skip
    rep.lines.append(
        f"state model {'used' if use_state_model else 'NOT used (rules decide)'}: on the train file's "
        f"{len(unseen)} threads grouped CV gets {model_ok}, the rules alone {rules_ok} states right"
    )
    rep.lines.append(
        "concern thresholds from pooled grouped-CV probabilities: common "
        f"{common:.2f}; own " + ", ".join(f"{k} {v:.2f}" for k, v in sorted(own.items()))
    )
    nested = nested_concern_sets(cv_rows, fit, cv_preds)
    nested_scores = {name: _score_sets(part, nested) for name, part in (("cv7", fw_rows), ("cv_all", cv_rows), ("train-file", unseen))}
    rep.lines.append(
        "concern F1 at thresholds chosen inside each fold (nested grouped CV): "
        + "; ".join(f"{name} {s.concern_prf()[2]:.3f} ({s.counts()})" for name, s in nested_scores.items())
    )
    ranking = {
        name: round(average_precision(_concern_pairs(part, cv_preds)), 4)
        for name, part in (("cv7", fw_rows), ("cv_all", cv_rows), ("train-file", unseen))
    }
    rep.lines.append(
        "concern ranking before any threshold (average precision of the grouped-CV probabilities "
        "over (thread, kind) pairs): " + "; ".join(f"{name} {ap:.3f}" for name, ap in ranking.items())
    )
    rep.lines.append("kinds whose rows carry the review's shape: " + ", ".join(k for k in CONCERNS if k in shaped))
    # The phrase lists were written after reading the dev file: on its threads the rules are
    # tuned, so the fair comparison of rules and models is on the train file's threads.
    for name, part in (("cv7", fw_rows), ("cv_all", cv_rows), ("train-file", unseen)):
        rules = _rules_alone(part)
        model = score(part, cv_preds, thresholds)
        rep.lines.append(
            f"{name} threads ({len(part)}): rules alone state {rules.state_accuracy:.3f}, concern F1 "
            f"{rules.concern_prf()[2]:.3f} ({rules.counts()}); fitted (grouped CV) state "
            f"{model.state_accuracy:.3f}, concern F1 {model.concern_prf()[2]:.3f} ({model.counts()})"
        )
        rep.lines.append(
            "  per kind, rules alone / fitted: "
            + ", ".join(f"{k} {rules.concern_prf(k)[2]:.2f}/{model.concern_prf(k)[2]:.2f}" for k in CONCERNS)
        )
    hard = sum(not _evidence(e).exact for e in cv_rows)
    rep.lines.append(
        f"{len(cv_rows)} threads scored in CV ({len(fw_rows)} from the seven frameworks; {hard} closed "
        f"threads no structural fact decides), {len(rows) - len(fit_rows)} sealed"
    )
    confusion: Counter[tuple[str, str]] = Counter()
    for e in cv_rows:
        p = cv_preds[e.id]
        gold_state = e.labels["review_state"]
        confusion[(gold_state, p.state)] += 1
        gold, got = _gold_concerns(e), concerns_at(p, thresholds)
        if p.state != gold_state or gold != got:
            rep.wrong.append(
                f"{e.id} [{fold_of[e.id]}]: state gold {gold_state} got {p.state}; "
                f"concerns gold {sorted(gold)} got {sorted(got)}"
            )
    rep.lines.append("state confusion in grouped CV (gold -> got: n), errors only:")
    rep.lines.extend(f"  {g:<18} -> {p:<18} {n}" for (g, p), n in sorted(confusion.items()) if g != p)
    figures = {
        "concern_thresholds": {"common": common, "own": own},
        "state_model_used": use_state_model,
        "grouped_cv_frameworks": _figures(cv7),
        "grouped_cv_all": _figures(cv_all),
        "fitted": _figures(fitted),
        "nested_thresholds_concern_f1": {name: round(s.concern_prf()[2], 4) for name, s in nested_scores.items()},
        "concern_average_precision": ranking,
    }
    return Run(models, rep, figures)


def _rules_alone(rows: list[Example]) -> Scores:
    """The lexicon and grammar without fitted weights (the rules' state and concern sets):
    the baseline the models must beat."""
    preds: dict[str, ReviewScores] = {}
    for e in rows:
        ev = _evidence(e)
        probs = {k: float(k in ev.rule_concerns) for k in CONCERNS}
        preds[e.id] = ReviewScores(ev.rule_state, ev.replied, probs, ev.reasons)
    return score(rows, preds, {k: 0.5 for k in CONCERNS})


def _figures(s: Scores) -> dict[str, Any]:
    return {
        "state_accuracy": round(s.state_accuracy, 4),
        "reply_accuracy": round(s.reply_accuracy, 4),
        "concern_f1": round(s.concern_prf()[2], 4),
        "concern_counts": s.counts(),
        "concern_f1_per_kind": {k: round(s.concern_prf(k)[2], 4) for k in CONCERNS},
    }


def evaluate(examples: list[Example], *, sealed: bool = False) -> FieldReport:
    return run(examples, sealed=sealed, intervals=True).report


def train(examples: list[Example], *, data_hash: str, seed: int = SEED) -> list[Path]:
    result = run(examples, seed=seed)
    return write_models(
        ((result.models.state, {"C": C_STATE}), (result.models.concerns, {"C": C_CONCERNS})),
        data_hash=data_hash, seed=seed, min_df=MIN_DF, figures=result.figures,
        labelled_threads=len(labelled(examples)),
    )


def load_shipped() -> tuple[LinearModel | None, LinearModel | None]:
    from analyzers.learned import load_model

    return load_model("review_state"), load_model("review_concerns")
