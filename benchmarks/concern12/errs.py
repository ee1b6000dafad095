import os, sys
sys.path.insert(0, os.getcwd())
from analyzers.review import CONCERNS
from training import review as T
from training.data import load_examples
from training.cv import cross_val_predict
ex = load_examples(); rows = T.labelled(ex); shaped = T.shaped_kinds(rows)
cv, fold_of = cross_val_predict(rows, lambda tr: T.fit_models(tr, shaped=shaped), T.predict)
cv_rows = [e for e in rows if e.id in cv]
common, own = T.choose_thresholds(cv_rows, cv); th = {k: own.get(k, common) for k in CONCERNS}
fams = ("strong", "weak", "pair", "req", "file", "topic")
for e in cv_rows:
    gold = T._gold_concerns(e); got = T.concerns_at(cv[e.id], th)
    if gold == got: continue
    ev = T._evidence(e)
    for k in sorted(gold ^ got):
        hits = [f for f in fams if ev.concern_features.get(f"{f}:{k}")]
        print(f"{'FN' if k in gold else 'FP'} {k:20} p={cv[e.id].concern_probabilities[k]:.2f} hits={hits} others_kinds_strong={sorted(ev.rule_concerns)} {e.id} {fold_of[e.id]}")
