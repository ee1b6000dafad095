import os, sys
sys.path.insert(0, os.getcwd())
from analyzers import review as R
from training.data import load_examples
ex = {e.id: e for e in load_examples()}
rules = R._rules()
for arg in sys.argv[1:]:
    i, kind = arg.split("@")
    e = ex[i]
    segs = R._segments(e.thread, rules)
    print("==", i, kind, "gold", e.labels.get("concerns"))
    for s in segs:
        if s.is_author or s.is_bot: continue
        for text, kinds, asks in R._scan(s.prose, rules).hit_units:
            if kind in kinds:
                print(f"   ask={asks} file={s.path is not None} {text[:250]!r}")
