"""Experiment: others' n-grams shared across kinds (a generic 'concern-ness' term)."""
import os, sys
sys.path.insert(0, os.getcwd())
from analyzers import review as R, learned
from analyzers.review import CONCERNS
from training import review as T
from training.data import load_examples
from training.fit import fit_linear
from training.cv import cross_val_predict

SCALE = float(os.environ.get("SH_SCALE", "1"))
WHAT = os.environ.get("SH_WHAT", "others")
_V = {}
def shared(e):
    v = _V.get(e.id)
    if v is None:
        ev = T._evidence(e)
        f = learned.Features(); f.add_text("g", ev.others_text)
        v = _V[e.id] = {k: x * SCALE for k, x in f.vector().items()}
    return v

def row(e, k, shaped):
    x = T.concern_row(T._evidence(e), k, shaped)
    if WHAT == "others":
        x.update(shared(e))
    elif WHAT == "others_if_any":
        if any(x.get(fam) for fam in R.OWN_FAMILIES if fam != "strong_elsewhere"):
            x.update(shared(e))
    elif WHAT == "others_shaped":
        if shaped:
            x.update(shared(e))
    elif WHAT == "others_hit_text":
        ev = T._evidence(e)
        if ev.hit_texts.get(k):
            f = learned.Features(); f.add_text("g", ev.hit_texts[k]); x.update({a: b * SCALE for a, b in f.vector().items()})
    elif WHAT == "others_if_hit":
        if any(x.get(fam) for fam in R.OWN_FAMILIES if fam != "strong_elsewhere"):
            x.update(shared(e))
    return x

class M: pass
def fit(train, shaped):
    rows = T.labelled(train)
    X, y = [], []
    for e in rows:
        g = T._gold_concerns(e)
        for k in CONCERNS:
            X.append(row(e, k, k in shaped)); y.append(k in g)
    m = M(); m.c = fit_linear(X, y, "c", C=T.C_CONCERNS, min_df=2, class_weight=None); m.shaped = shaped
    return m
def predict(m, e):
    ev = T._evidence(e)
    probs = {k: m.c.probability(row(e, k, True)) for k in CONCERNS}
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
