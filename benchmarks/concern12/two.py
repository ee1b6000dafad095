"""Experiment: two stages, P(kind) = P(any concern | thread) * P(kind | a concern, thread)."""
import os, sys
sys.path.insert(0, os.getcwd())
from analyzers import review as R, learned
from analyzers.review import CONCERNS
from training import review as T
from training.data import load_examples
from training.fit import fit_linear
from training.cv import cross_val_predict

TEXT = os.environ.get("TW_TEXT", "1") == "1"
C1 = float(os.environ.get("TW_C1", "1"))
_V = {}
def thread_x(e):
    v = _V.get(e.id)
    if v is None:
        ev = T._evidence(e)
        v = {}
        if TEXT:
            f = learned.Features(); f.add_text("g", ev.others_text); v.update(f.vector())
        for name, val in ev.concern_features.items():
            fam, _, kind = name.partition(":")
            if kind in CONCERNS:
                if val: v["any_" + fam] = max(v.get("any_" + fam, 0.0), val)
            elif val:
                v[name] = val
        _V[e.id] = v
    return v

class M: pass
def fit(train, shaped):
    rows = T.labelled(train)
    m = M()
    m.one = fit_linear([thread_x(e) for e in rows], [bool(T._gold_concerns(e)) for e in rows], "one", C=C1, min_df=2, class_weight=None)
    X, y = [], []
    for e in rows:
        g = T._gold_concerns(e)
        if not g: continue
        for k in CONCERNS:
            X.append(T.concern_row(T._evidence(e), k, k in shaped)); y.append(k in g)
    m.two = fit_linear(X, y, "two", C=T.C_CONCERNS, min_df=2, class_weight=None)
    return m
def predict(m, e):
    ev = T._evidence(e)
    p1 = m.one.probability(thread_x(e))
    probs = {k: p1 * m.two.probability(T.concern_row(ev, k, True)) for k in CONCERNS}
    return R.ReviewScores(ev.rule_state, ev.replied, probs, ev.reasons)

ex = load_examples(); rows = T.labelled(ex); shaped = T.shaped_kinds(rows)
f = lambda tr: fit(tr, shaped)
T.predict = predict
cv, fold_of = cross_val_predict(rows, f, predict)
cv_rows = [e for e in rows if e.id in cv]
fw = [e for e in cv_rows if not fold_of[e.id].startswith("related")]
unseen = [e for e in cv_rows if e.split == "train"]
common, own = T.choose_thresholds(cv_rows, cv); th = {k: own.get(k, common) for k in CONCERNS}
parts = (("cv7", fw), ("all", cv_rows), ("train", unseen))
print("pooled", *(f"{n} {T.score(p, cv, th).concern_prf()[2]:.3f} {T.score(p, cv, th).counts()}" for n, p in parts))
nested = T.nested_concern_sets(cv_rows, f, cv)
print("nested", *(f"{n} {T._score_sets(p, nested).concern_prf()[2]:.3f} {T._score_sets(p, nested).counts()}" for n, p in parts))
print("AP", *(f"{n} {T.average_precision(T._concern_pairs(p, cv)):.3f}" for n, p in parts))

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
