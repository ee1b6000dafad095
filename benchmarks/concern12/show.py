import os, sys
sys.path.insert(0, os.getcwd())
from analyzers import review as R
from training.data import load_examples
ids = sys.argv[1:]
ex = {e.id: e for e in load_examples()}
rules = R._rules()
for i in ids:
    e = ex[i]
    segs = R._segments(e.thread, rules)
    print("=" * 30, i, e.labels.get("concerns"), e.labels.get("review_state"), e.thread.get("title"))
    for s in segs:
        if s.is_author or s.is_bot: continue
        print(f"  [{s.login} path={s.path}] {s.prose[:700]!r}")
