"""Experiment (concern12): sentence-level shared model, max-pooled into the thread model."""
import os, sys, math
sys.path.insert(0, os.getcwd())
from analyzers import review as R, learned
from analyzers.review import CONCERNS
from training import review as T
from training.data import load_examples
from training.fit import fit_linear
from training.cv import cross_val_predict, grouped_folds

MODE = os.environ.get("MI_MODE", "max")
SC = float(os.environ.get("MI_C", "1"))
_UNITS = {}
def units(e):
    u = _UNITS.get(e.id)
    if u is None:
        rules = R._rules()
        segs = R._segments(e.thread, rules)
        others = [s for s in segs if not s.is_author and not s.is_bot]
        last_author = max((s.index for s in segs if s.is_author and not s.is_bot), default=-1)
        u = []
        for pos, seg in enumerate(others):
            for text, kinds, asks in R._scan(seg.prose[:R._SCAN_CHARS], rules).hit_units:
                f = learned.Features(); f.add_text("s", text[:300]); x = f.vector()
                marks = {"ask": asks, "q": "?" in text, "onfile": seg.path is not None,
                         "answered": last_author > seg.index, "alone": len(kinds) == 1, "first": pos == 0}
                for m, v in marks.items():
                    if v: x["m:" + m] = 1.0
                for k in kinds:
                    u.append((k, x))
        _UNITS[e.id] = u
    return u

def sent_rows(rows):
    X, y = [], []
    for e in rows:
        gold = T._gold_concerns(e)
        for k, x in units(e):
            X.append({**x, "kb:" + k: 1.0}); y.append(k in gold)
    return X, y

def sent_scores(model, e):
    out = {}
    for k, x in units(e):
        p = model.probability({**x, "kb:" + k: 1.0})
        if MODE == "max":
            out[k] = max(out.get(k, 0.0), p)
        else:  # noisy-or
            out[k] = 1 - (1 - out.get(k, 0.0)) * (1 - p)
    return out

def with_mi(ev, kind, scores, shaped):
    x = T.concern_row(ev, kind, shaped)
    s = scores.get(kind)
    if s is not None:
        x["mi"] = s
        x["mi_logit"] = math.log(max(s, 1e-4) / max(1 - s, 1e-4)) / 4
    return x

class M:
    def __init__(self, base, sent, thread, shaped):
        self.base, self.sent, self.thread, self.shaped = base, sent, thread, shaped

def fit(train, shaped):
    base = T.fit_models(train, shaped=shaped)
    rows = T.labelled(train)
    # out-of-fold sentence scores for the thread model's rows (inner grouped folds)
    oof = {}
    for fold in grouped_folds(rows):
        X, y = sent_rows(fold.train)
        sm = fit_linear(X, y, "sent", C=SC, min_df=2, class_weight=None)
        for e in fold.test:
            oof[e.id] = sent_scores(sm, e)
    X, y = sent_rows(rows)
    sent = fit_linear(X, y, "sent", C=SC, min_df=2, class_weight=None)
    TX, Ty = [], []
    for e in rows:
        ev, gold = T._evidence(e), T._gold_concerns(e)
        sc = oof.get(e.id) or sent_scores(sent, e)
        for k in CONCERNS:
            TX.append(with_mi(ev, k, sc, k in shaped)); Ty.append(k in gold)
    thread = fit_linear(TX, Ty, "th", C=T.C_CONCERNS, min_df=2, class_weight=None)
    return M(base, sent, thread, shaped)

def predict(m, e):
    ev = T._evidence(e)
    sc = sent_scores(m.sent, e)
    probs = {k: m.thread.probability(with_mi(ev, k, sc, True)) for k in CONCERNS}
    return R.ReviewScores(ev.rule_state, ev.replied, probs, ev.reasons)

ex = load_examples()
rows = T.labelled(ex)
shaped = T.shaped_kinds(rows)
f = lambda tr: fit(tr, shaped)
T.predict = predict
cv, fold_of = cross_val_predict(rows, f, predict)
cv_rows = [e for e in rows if e.id in cv]
fw = [e for e in cv_rows if not fold_of[e.id].startswith("related")]
unseen = [e for e in cv_rows if e.split == "train"]
common, own = T.choose_thresholds(cv_rows, cv)
th = {k: own.get(k, common) for k in CONCERNS}
print("pooled", *(f"{n} {T.score(p, cv, th).concern_prf()[2]:.3f} {T.score(p, cv, th).counts()}" for n, p in (("cv7", fw), ("all", cv_rows), ("train", unseen))), sep="\n  ")
nested = T.nested_concern_sets(cv_rows, f, cv)
print("nested", *(f"{n} {T._score_sets(p, nested).concern_prf()[2]:.3f} {T._score_sets(p, nested).counts()}" for n, p in (("cv7", fw), ("all", cv_rows), ("train", unseen))), sep="\n  ")
print("AP", *(f"{n} {T.average_precision(T._concern_pairs(p, cv)):.3f}" for n, p in (("cv7", fw), ("all", cv_rows), ("train", unseen))))

if os.environ.get("WRITTEN") == "1":
    import json
    from training.data import make_example
    full = f([e for e in rows if not e.sealed])
    tot = [0, 0, 0]
    out = []
    for s in "abc":
        c = [0, 0, 0]
        for line in open(f"benchmarks/review_written/{s}/threads.jsonl"):
            r = json.loads(line)
            ex_ = make_example(r, "written")
            if not ex_.labels.get("review_state"):
                continue
            gold = set(ex_.labels.get("concerns") or [])
            got = T.concerns_at(predict(full, ex_), th)
            c[0] += len(gold & got); c[1] += len(got - gold); c[2] += len(gold - got)
        out.append(f"{s} F1 {T.prf(*c)[2]:.3f} (tp {c[0]}, fp {c[1]}, fn {c[2]})")
        tot = [a + b for a, b in zip(tot, c)]
    print("written", "; ".join(out), f"; a+b+c F1 {T.prf(*tot)[2]:.3f} (tp {tot[0]}, fp {tot[1]}, fn {tot[2]})")
