"""Cross-validation grouped by repository.

Folds (sealed threads are in none of them):
- one per framework: fit on the other six frameworks and on every related project, score
  that framework. Pooled over the seven, these predictions are THE figure we steer by
  ("grouped CV, seven frameworks").
- `RELATED_FOLDS` more folds over the related projects, grouped by repository (a project's
  threads are never split between fitting and scoring): fit on everything else, score them.
  Their predictions are pooled with the seven for a second, larger figure ("grouped CV, all")
  and for choosing thresholds, which need more examples than 7 frameworks give.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from training.data import FRAMEWORKS, RELATED, Example

RELATED_FOLDS = 4
M = TypeVar("M")
P = TypeVar("P")


@dataclass(frozen=True)
class Fold:
    name: str  # the framework repo, or "related-<k>"
    train: list[Example]
    test: list[Example]

    @property
    def framework(self) -> bool:
        return not self.name.startswith(RELATED)


def _related_assignment(examples: Iterable[Example], k: int) -> dict[str, int]:
    """Related repositories -> fold number: largest repositories first, each to the fold
    with the fewest threads so far (ties by crc32 of the name: stable, seed-free)."""
    sizes = Counter(e.repo for e in examples if e.group == RELATED)
    loads = [0] * k
    out: dict[str, int] = {}
    for repo in sorted(sizes, key=lambda r: (-sizes[r], zlib.crc32(r.encode()), r)):
        i = min(range(k), key=lambda j: (loads[j], j))
        out[repo] = i
        loads[i] += sizes[repo]
    return out


def grouped_folds(examples: list[Example], related_folds: int = RELATED_FOLDS) -> list[Fold]:
    """Framework folds (in FRAMEWORKS order) then related folds; sealed examples excluded."""
    pool = [e for e in examples if not e.sealed]
    folds: list[Fold] = []
    for fw in FRAMEWORKS:
        test = [e for e in pool if e.group == fw]
        if test:
            folds.append(Fold(fw, [e for e in pool if e.group != fw], test))
    if related_folds:
        assignment = _related_assignment(pool, related_folds)
        for k in range(related_folds):
            test = [e for e in pool if e.group == RELATED and assignment[e.repo] == k]
            if test:
                held = {e.repo for e in test}
                folds.append(Fold(f"{RELATED}-{k}", [e for e in pool if e.repo not in held], test))
    return folds


def cross_val_predict(
    examples: list[Example],
    fit: Callable[[list[Example]], M],
    predict: Callable[[M, Example], P],
    related_folds: int = RELATED_FOLDS,
) -> tuple[dict[str, P], dict[str, str]]:
    """Out-of-fold predictions for every non-sealed example, and the fold each came from.
    `fit` sees only the fold's training examples; `predict` only its test examples."""
    predictions: dict[str, P] = {}
    fold_of: dict[str, str] = {}
    for fold in grouped_folds(examples, related_folds):
        model = fit(fold.train)
        for e in fold.test:
            predictions[e.id] = predict(model, e)
            fold_of[e.id] = fold.name
    return predictions, fold_of


__all__ = ["RELATED_FOLDS", "Fold", "cross_val_predict", "grouped_folds"]
