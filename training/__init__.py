"""Fitting and honest measurement of the analyzers' learned models (`make train`, `make eval`).

Not imported by `analyzers/` or `bot/`; it imports `analyzers` and scikit-learn.

- `training.data`: the labelled threads (../shared/eval/{train,dev}), canonical repositories,
  CV groups and the sealed slice.
- `training.cv`: folds grouped by repository and out-of-fold predictions.
- `training.fit`: fit a `LinearModel` (scikit-learn logistic regression) and choose
  thresholds from cross-validated scores.
- `training.report`: the figures a trainer returns (grouped CV / fitted / sealed).

A trainer is a module listed in `TRAINERS` that exposes

    NAME: str
    def train(examples: list[Example], *, data_hash: str, seed: int) -> list[Path]
        # cross-validate, fit on every non-sealed example, write analyzers/models/<name>.json
    def evaluate(examples: list[Example], *, sealed: bool = False) -> FieldReport
        # grouped-CV figures next to fitted ones (+ the sealed slice when asked), wrong ids

`python -m training` runs every trainer's `train`; `benchmarks/evaluate.py` every `evaluate`.
`training/failure.py` is the reference trainer to copy.
"""

from __future__ import annotations

import importlib
from types import ModuleType

TRAINERS: tuple[str, ...] = ("training.failure", "training.review", "training.proposal")
SEED = 20261202


def trainers() -> list[ModuleType]:
    return [importlib.import_module(name) for name in TRAINERS]
