"""Why the failure kind fails on threads nobody tuned on (kind66): a diagnosis, then variants.

    python benchmarks/kind_diagnosis.py [--variants] [--nested] [--sets h i j]

Diagnosis (default): the grouped-CV predictions of the failure models (the report model of each
fold fitted once at the shipped `about:*` scale and decision threshold, read from the shipped
model file; the kind read through `rank_kinds`, exactly as `classify_failure` reads it, so the
kind figures reproduce `evaluate.py`'s) and the shipped models on the held-out written sets
(default h, i, j; never the sealed slice, which is in no fold and is not read here). Printed:
- the confusion matrix of the kind (gold rows, predicted columns) on detected reports, cv_all
  and the written sets pooled;
- per gold kind: reports fitted (labelled, non-sealed; and the synthetic kind reports), right
  in cv_all and in the written sets;
- which step of `rank_kinds` named the kind (the model's own top, the lexicon's lead when the
  model is unsure, a named cause, groups without signal, train vs eval, a context prior), right
  per step;
- where the kind comes from: the kind read from the title alone and from the body alone (the
  same models), and whether the final kind agrees with either;
- misses whose predicted kind is among the gold `secondary` kinds (two kinds plausible).

Variants (`--variants`): the kind model refitted per fold (report model and detected set held
fixed), scored on cv7 / cv_all, and fitted on every non-sealed labelled thread (as `make train`
does) for the written sets. `--nested`: the variant chosen inside each fold by an inner grouped
CV over the fold's training threads (ties to the simpler variant), then scored on the held-out
fold: the honest figure for a choice among variants.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analyzers import failures as fl  # noqa: E402
from analyzers import learned  # noqa: E402
from training import SEED  # noqa: E402
from training import failure as tf  # noqa: E402
from training.cv import grouped_folds  # noqa: E402
from training.data import Example, load_examples, make_example  # noqa: E402
from training.fit import fit_linear  # noqa: E402

WRITTEN = ROOT / "benchmarks" / "threads_written"
KINDS = tuple(fl.CATEGORIES)
SHORT = {
    "entropy_collapse": "ent_col", "entropy_explosion": "ent_exp", "collapse_or_divergence": "collapse",
    "rollout_training_mismatch": "mismatch", "response_length_drift": "length", "stale_rollout_data": "stale",
    "kl_growth": "kl", "moe_instability": "moe", "groups_without_signal": "groups", "other_failure": "other",
}  # fmt: skip


@dataclass(frozen=True)
class Tweak:
    """What a variant changes at run time. `prior`: re-weighs the model's probabilities first.
    `specific_ratio`: when the model's top kind is collapse_or_divergence (GUIDELINES: "cause
    not named") and the most probable specific kind (not collapse, not other) has at least this
    share of its probability, the specific kind is first (0 = off)."""

    prior: Callable[[dict[str, float]], dict[str, float]] | None = None
    specific_ratio: float = 0.0


NO_TWEAK = Tweak()


def trace_rank(features: fl.FailureFeatures, model: learned.LinearModel,
               tweak: Tweak = NO_TWEAK) -> tuple[list[tuple[str, float]], str, str]:
    """`rank_kinds` step by step: (ranked, the step that put the first kind first, the model's
    own top kind). Mirrors analyzers.failures.rank_kinds; `prior` re-weighs the model's
    probabilities first (a variant; None = as shipped). Checked against rank_kinds in main()."""
    probs = model.probabilities(features.vector)
    if tweak.prior is not None:
        probs = tweak.prior(probs)
    if features.moe_context and "rollout_training_mismatch" in probs:
        probs["moe_instability"] = max(probs.get("moe_instability", 0.0), probs["rollout_training_mismatch"] * 1.1)
    ranked = sorted(probs.items(), key=lambda kv: (-kv[1], fl._PRIORITY.get(kv[0], 99)))
    model_top = ranked[0][0]
    step = "model"

    def put(kind: str, name: str) -> None:
        nonlocal ranked, step
        if ranked[0][0] != kind:
            step = name
        ranked = fl._first(kind, ranked)

    if tweak.specific_ratio and ranked[0][0] == "collapse_or_divergence":
        specific = next((kp for kp in ranked[1:] if kp[0] not in fl._GENERIC_KINDS), None)
        if specific and specific[1] >= tweak.specific_ratio * ranked[0][1]:
            put(specific[0], "specific over generic")
    lead = fl._lead(features.vector)
    if lead in probs and ranked[0][1] < fl.KIND_MODEL_SURE:
        put(lead, "lexicon lead (model unsure)")
    if ranked[0][0] == "collapse_or_divergence":
        before = ranked[0][0]
        ranked2 = fl._named_cause_first(features, probs, ranked)
        if ranked2[0][0] != before:
            put(ranked2[0][0], "named cause")
    titled = fl._title_kind(features.vector)
    no_signal = ("about:group_same_score", "tsym:loss|zero", "tsym:advantage|zero", "groups_without_signal|log")
    if "groups_without_signal" in probs and any(f in features.vector for f in no_signal) and titled in (None, "groups_without_signal"):
        put("groups_without_signal", "groups rule")
    if "about:train_vs_eval" in features.vector and "other_failure" in probs and titled in (None, "other_failure"):
        put("other_failure", "train-vs-eval rule")
    for family, kprior in model.meta.get("kind_priors", {}).items():
        if family in features.vector and kprior in probs:
            put(kprior, "context prior")
            break
    return ranked, step, model_top


@dataclass
class Row:
    id: str
    fold: str  # fold name, or "set-<x>" for a written set
    gold: str
    secondary: tuple[str, ...]
    detected: bool
    got: str | None = None
    step: str = ""
    model_top: str = ""
    top_p: float = 0.0
    second: str | None = None
    from_title: str | None = None
    from_body: str | None = None


def _features(e: Example) -> fl.FailureFeatures:
    return tf._features(e)


def _part_features(e: Example, part: str) -> fl.FailureFeatures:
    t = e.thread
    title, body = (t.get("title"), "") if part == "title" else ("", t.get("body"))
    return fl.failure_features(title, body, t.get("kind"), t.get("author"), t.get("comments"))


def _secondary(e: Example) -> tuple[str, ...]:
    s = e.labels.get("secondary") or ()
    return tuple(s) if isinstance(s, list | tuple) else (str(s),)


def read_row(e: Example, fold: str, models: fl.FailureModels, threshold: float, parts: bool = True) -> Row:
    gold = e.labels.get("category") or "?"
    f = _features(e)
    conf = models.report.probability(f.vector)
    row = Row(e.id, fold, gold, _secondary(e), conf >= threshold and e.thread.get("kind") != "pull_request")
    if not row.detected:
        return row
    ranked, row.step, row.model_top = trace_rank(f, models.kind)
    assert ranked[0][0] == fl.rank_kinds(f, models.kind)[0][0], e.id
    row.got, row.top_p = ranked[0]
    row.second = ranked[1][0] if len(ranked) > 1 else None
    if parts:
        row.from_title = fl.rank_kinds(_part_features(e, "title"), models.kind)[0][0] if e.thread.get("title") else None
        row.from_body = fl.rank_kinds(_part_features(e, "body"), models.kind)[0][0] if e.thread.get("body") else None
    return row


def load_written(names: list[str]) -> list[Example]:
    out = []
    for name in names:
        with (WRITTEN / name / "threads.jsonl").open(encoding="utf-8") as fh:
            out += [make_example(json.loads(line), "written") for line in fh if line.strip()]
    return out


def gold_reports(examples: list[Example]) -> list[Example]:
    return [e for e in tf.labelled(examples) if tf._gold(e)[0] and tf._gold(e)[1]]


# ---------------------------------------------------------------- printing


def confusion(rows: list[Row], title: str) -> list[str]:
    det = [r for r in rows if r.detected]
    cells = Counter((r.gold, r.got) for r in det)
    cols = [k for k in KINDS if any(r.got == k for r in det)]
    out = [f"#### {title}: {sum(r.gold == r.got for r in det)}/{len(det)} detected reports right", "",
           "| gold \\ predicted | " + " | ".join(SHORT[c] for c in cols) + " | right | n |",
           "|---|" + "---|" * (len(cols) + 2)]  # fmt: skip
    for g in KINDS:
        n = sum(1 for r in det if r.gold == g)
        if not n:
            continue
        out.append(f"| {SHORT[g]} | " + " | ".join(str(cells[(g, c)] or ".") for c in cols)
                   + f" | {cells[(g, g)]} | {n} |")  # fmt: skip
    return out + [""]


def per_kind(cv: list[Row], held: list[Row], fitted: Counter[str], synthetic: Counter[str]) -> list[str]:
    out = ["| gold kind | labelled reports fitted | synthetic kind reports | cv_all right/detected | held-out right/detected |",
           "|---|---|---|---|---|"]  # fmt: skip
    for g in sorted(KINDS, key=lambda k: -fitted[k]):
        c = [r for r in cv if r.detected and r.gold == g]
        h = [r for r in held if r.detected and r.gold == g]
        out.append(f"| {g} | {fitted[g]} | {synthetic[g]} | {sum(r.got == g for r in c)}/{len(c)} | {sum(r.got == g for r in h)}/{len(h)} |")
    return out + [""]


def by_step(rows: list[Row], title: str) -> list[str]:
    det = [r for r in rows if r.detected]
    steps: dict[str, list[Row]] = defaultdict(list)
    for r in det:
        steps[r.step].append(r)
    out = [f"{title}: " + "; ".join(f"{s} {sum(r.got == r.gold for r in rs)}/{len(rs)}" for s, rs in sorted(steps.items(), key=lambda kv: -len(kv[1])))]
    model_right = sum(r.model_top == r.gold for r in det)
    out.append(f"  the model's own top kind would be right on {model_right}/{len(det)}; "
               f"gold is the second kind on {sum(r.second == r.gold for r in det if r.got != r.gold)} of the "
               f"{sum(r.got != r.gold for r in det)} misses; top probability of the misses "
               f"{_median([r.top_p for r in det if r.got != r.gold]):.2f} (median) against "
               f"{_median([r.top_p for r in det if r.got == r.gold]):.2f} for the right ones")  # fmt: skip
    return out


def by_source(rows: list[Row], title: str) -> list[str]:
    det = [r for r in rows if r.detected]
    groups: dict[str, list[Row]] = defaultdict(list)
    for r in det:
        t, b = r.from_title == r.got, r.from_body == r.got
        key = "title and body agree" if t and b else "title alone" if t else "body alone" if b else "neither alone"
        groups[key].append(r)
    out = [f"{title}: " + "; ".join(f"{k} {sum(r.got == r.gold for r in rs)}/{len(rs)} right"
                                   for k, rs in sorted(groups.items(), key=lambda kv: -len(kv[1])))]  # fmt: skip
    miss = [r for r in det if r.got != r.gold]
    out.append(f"  of the {len(miss)} misses the title alone names the gold kind in "
               f"{sum(r.from_title == r.gold for r in miss)}, the body alone in {sum(r.from_body == r.gold for r in miss)}")
    return out


def disagreement(rows: list[Row], title: str) -> list[str]:
    det = [r for r in rows if r.detected and r.from_title and r.from_body and r.from_title != r.from_body]
    pairs = Counter((SHORT[r.got] if r.got else "-", SHORT[r.gold], SHORT[r.second] if r.second else "-")
                    for r in rows if r.detected and r.got != r.gold)
    return [f"{title}: title alone and body alone name different kinds on {len(det)} detected reports: the title's "
            f"is gold on {sum(r.from_title == r.gold for r in det)}, the body's on {sum(r.from_body == r.gold for r in det)}, "
            f"the final kind on {sum(r.got == r.gold for r in det)}",
            "  misses (got, gold, second): " + "; ".join(f"{g}/{t}/{s} {n}" for (g, t, s), n in pairs.most_common())]


def kind_mix(cv: list[Row], held: list[Row]) -> str:
    """How much of the gap the held-out sets' kind mix explains: cv_all's accuracy per gold kind
    weighted by the held-out count of that kind (a kind cv_all never detected counts at
    cv_all's overall accuracy)."""
    cv_det, held_det = [r for r in cv if r.detected], [r for r in held if r.detected]
    overall = sum(r.got == r.gold for r in cv_det) / len(cv_det)
    expected = 0.0
    for g, n in Counter(r.gold for r in held_det).items():
        rs = [r for r in cv_det if r.gold == g]
        expected += n * (sum(r.got == r.gold for r in rs) / len(rs) if rs else overall)
    return (f"kind mix: cv_all's per-kind accuracy at the held-out sets' mix of kinds gives {expected:.1f}/{len(held_det)} "
            f"({expected / len(held_det):.3f}); cv_all {overall:.3f}, held-out read "
            f"{sum(r.got == r.gold for r in held_det)}/{len(held_det)}")


def by_confidence(rows: list[Row], title: str) -> str:
    det = [r for r in rows if r.detected]
    bins = ((0.8, 9.0, ">= 0.8"), (0.6, 0.8, "0.6-0.8"), (0.0, 0.6, "< 0.6"))
    return f"{title}, right by the leading kind's probability: " + "; ".join(
        f"{name} {sum(r.got == r.gold for r in rs)}/{len(rs)}"
        for lo, hi, name in bins for rs in ([r for r in det if lo <= r.top_p < hi],)) + "; below 0.6 named " + ", ".join(
        f"{SHORT[k]} {sum(r.gold == k for r in rs)}/{len(rs)}"
        for k, _ in Counter(r.got for r in det if r.top_p < 0.6).most_common(3)
        for rs in ([r for r in det if r.top_p < 0.6 and r.got == k],))


def ambiguity(rows: list[Row], title: str) -> str:
    miss = [r for r in rows if r.detected and r.got != r.gold]
    sec = [r for r in miss if r.got in r.secondary]
    labelled2 = sum(1 for r in rows if r.detected and r.secondary)
    return (f"{title}: {len(sec)} of {len(miss)} misses name a kind the label lists as `secondary` "
            f"(detected reports with any secondary kind: {labelled2})")


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else math.nan


# ---------------------------------------------------------------- grouped CV, fixed report models


@dataclass
class FoldModels:
    name: str
    train: list[Example]
    test: list[Example]
    models: fl.FailureModels


def fold_models(examples: list[Example], scale: float) -> list[FoldModels]:
    rows = tf.labelled(examples)
    out = []
    for fold in grouped_folds(rows):
        out.append(FoldModels(fold.name, fold.train, fold.test, tf.fit_models(fold.train, SEED, scale)))
        print(f"  fold {fold.name}: fitted", file=sys.stderr, flush=True)
    return out


# ---------------------------------------------------------------- variants of the kind


KindFit = Callable[[list[Example]], tuple[learned.LinearModel, Tweak]]


def _kind_fit_rows(train: list[Example]) -> tuple[list[Example], list[Example]]:
    return tf.kind_rows(tf.report_rows(train))


def shipped_fit(train: list[Example]) -> tuple[learned.LinearModel, Tweak]:
    reports, fitted = _kind_fit_rows(train)
    model = fit_linear([tf.kind_view(_features(e).vector) for e in fitted], [tf._gold(e)[1] for e in fitted],
                       "failure_kind", C=tf.C_KIND, seed=SEED, min_df=tf.MIN_DF, class_weight=None)  # fmt: skip
    model.meta["kind_priors"] = tf.kind_priors(reports)
    return model, NO_TWEAK


def prior_correction(tau: float) -> KindFit:
    """Logit adjustment at prediction time: p(k) / prior(k)^tau, prior = the share of kind k in
    the rows the kind model was fitted on (add-one smoothed). tau 0 = shipped."""
    def fit(train: list[Example]) -> tuple[learned.LinearModel, Tweak]:
        model, _ = shipped_fit(train)
        _, fitted = _kind_fit_rows(train)
        counts = Counter(tf._gold(e)[1] for e in fitted)
        n = sum(counts.values()) + len(KINDS)
        share = {k: (counts[k] + 1) / n for k in KINDS}

        def adjust(probs: dict[str, float]) -> dict[str, float]:
            raw = {k: p / share.get(k, 1.0 / len(KINDS)) ** tau for k, p in probs.items()}
            z = sum(raw.values())
            return {k: v / z for k, v in raw.items()}
        return model, Tweak(prior=adjust)
    return fit


def specific_over_generic(ratio: float) -> KindFit:
    def fit(train: list[Example]) -> tuple[learned.LinearModel, Tweak]:
        model, _ = shipped_fit(train)
        return model, Tweak(specific_ratio=ratio)
    return fit


def score_kind(fit: KindFit, folds: list[FoldModels], detected: dict[str, bool]) -> dict[str, tuple[str, str]]:
    """id -> (gold, got) on the detected reports of every fold, the kind model refitted by `fit`."""
    out = {}
    for fm in folds:
        model, tweak = fit(fm.train)
        for e in gold_reports(fm.test):
            if not detected[e.id]:
                continue
            ranked, _, _ = trace_rank(_features(e), model, tweak)
            out[e.id] = (tf._gold(e)[1], ranked[0][0])
    return out


def inner_choice(variants: dict[str, KindFit], train: list[Example]) -> tuple[str, dict[str, int]]:
    """The variant with the most right kinds in an inner grouped CV on `train` (gold reports,
    read as if detected: the inner report models are not refitted), ties to the first listed."""
    rows = tf.labelled(train)
    inner = grouped_folds(rows)
    right = {name: 0 for name in variants}
    for fold in inner:
        tests = gold_reports(fold.test)
        if not tests:
            continue
        for name, fit in variants.items():
            model, tweak = fit(fold.train)
            right[name] += sum(trace_rank(_features(e), model, tweak)[0][0][0] == tf._gold(e)[1] for e in tests)
    best = max(right.values())
    return next(name for name in variants if right[name] == best), right


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", nargs="+", default=["h", "i", "j"])
    ap.add_argument("--variants", action="store_true")
    ap.add_argument("--nested", action="store_true")
    ap.add_argument("--idea", choices=("prior", "specific", "all"), default="all")
    args = ap.parse_args(argv)

    examples = load_examples()
    shipped = fl.failure_models()
    scale = float(shipped.report.meta.get("situation_scale", 5.0))
    threshold = shipped.report.threshold
    folds = fold_models(examples, scale)
    fw = {fm.name for fm in folds if not fm.name.startswith("related")}

    cv_rows: list[Row] = []
    for fm in folds:
        for e in gold_reports(fm.test):
            cv_rows.append(read_row(e, fm.name, fm.models, threshold, parts=not args.variants))
    written = load_written(args.sets)
    held_rows = [read_row(e, "set-" + e.id.split("-")[1], shipped, threshold, parts=not args.variants) for e in gold_reports(written)]
    detected = {r.id: r.detected for r in cv_rows + held_rows}

    cv7 = [r for r in cv_rows if r.fold in fw]
    for name, rs in (("cv7", cv7), ("cv_all", cv_rows), ("held-out " + "+".join(args.sets), held_rows)):
        det = [r for r in rs if r.detected]
        print(f"{name}: kind {sum(r.got == r.gold for r in det)}/{len(det)} detected reports right")
    for s in args.sets:
        det = [r for r in held_rows if r.fold == f"set-{s}" and r.detected]
        print(f"  set {s}: {sum(r.got == r.gold for r in det)}/{len(det)}")

    if not args.variants:
        fitted = Counter(tf._gold(e)[1] for e in gold_reports([e for e in examples if not e.sealed]))
        synthetic = Counter(tf._gold(e)[1] for e in tf.synthetic_kind_examples())
        lines = confusion(cv_rows, "grouped CV, all folds") + confusion(held_rows, "held-out written sets " + "+".join(args.sets))
        lines += per_kind(cv_rows, held_rows, fitted, synthetic)
        lines += by_step(cv_rows, "step that named the kind, cv_all") + by_step(held_rows, "step that named the kind, held-out")
        lines += by_source(cv_rows, "where the kind comes from, cv_all") + by_source(held_rows, "where the kind comes from, held-out")
        lines += disagreement(cv_rows, "cv_all") + disagreement(held_rows, "held-out")
        lines += [f"  {r.id} [{r.fold}] gold {r.gold} got {r.got} second {r.second} step {r.step} p {r.top_p:.2f} "
                  f"title {r.from_title} body {r.from_body} secondary {list(r.secondary)}" for r in cv_rows if r.detected and r.got != r.gold]
        lines += [kind_mix(cv_rows, held_rows), by_confidence(cv_rows, "cv_all"), by_confidence(held_rows, "held-out")]
        lines += [ambiguity(cv_rows, "cv_all"), ambiguity(held_rows, "held-out")]
        print("\n".join(lines))
        return 0

    variants: dict[str, KindFit] = {"shipped": shipped_fit}
    if args.idea in ("prior", "all"):
        for tau in (0.25, 0.5, 0.75, 1.0):
            variants[f"prior tau {tau:g}"] = prior_correction(tau)
    if args.idea in ("specific", "all"):
        for ratio in (0.9, 0.75, 0.5, 0.3):
            variants[f"specific >= {ratio:g} x top"] = specific_over_generic(ratio)
    fitted_all = [e for e in examples if not e.sealed]
    for name, fit in variants.items():
        got = score_kind(fit, folds, detected)
        model, tweak = fit(fitted_all)
        held = {e.id: trace_rank(_features(e), model, tweak)[0][0][0] for e in gold_reports(written) if detected[e.id]}
        c7 = [v for k, v in got.items() if any(r.id == k and r.fold in fw for r in cv_rows)]
        print(f"{name:<22} cv7 {sum(g == p for g, p in c7)}/{len(c7)}  cv_all {sum(g == p for g, p in got.values())}/{len(got)}  "
              f"held-out {sum(held[e.id] == tf._gold(e)[1] for e in gold_reports(written) if e.id in held)}/{len(held)}", flush=True)
    if args.nested:
        right = total = right7 = total7 = 0
        for fm in folds:
            choice, counts = inner_choice(variants, fm.train)
            model, tweak = variants[choice](fm.train)
            for e in gold_reports(fm.test):
                if detected[e.id]:
                    ok = trace_rank(_features(e), model, tweak)[0][0][0] == tf._gold(e)[1]
                    right, total = right + ok, total + 1
                    if fm.name in fw:
                        right7, total7 = right7 + ok, total7 + 1
            print(f"  fold {fm.name}: chose {choice} ({counts})", flush=True)
        print(f"nested: cv7 {right7}/{total7}  cv_all {right}/{total}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
