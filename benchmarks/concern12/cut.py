import os, sys
sys.path.insert(0, os.getcwd())
import training.cv as cv
k = int(sys.argv[1])
cv.grouped_folds.__defaults__ = (k,)
cv.cross_val_predict.__defaults__ = (k,)
from training import review as T
from training.data import load_examples
r = T.run(load_examples())
f = r.figures
print(k, "pooled", f["grouped_cv_frameworks"]["concern_f1"], f["grouped_cv_all"]["concern_f1"], "nested", f["nested_thresholds_concern_f1"], "AP", f["concern_average_precision"])
