"""What a trainer's `evaluate` returns, and how `make eval` prints it."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")

COLUMNS = (
    ("cv7", "grouped CV, 7 frameworks"),
    ("cv_all", "grouped CV, all"),
    ("fitted", "fitted data"),
    ("sealed", "sealed slice"),
)


@dataclass
class Measure:
    """One figure of one field: the grouped-CV value we steer by, next to the others."""

    name: str
    cv7: float | None = None  # pooled out-of-fold predictions on the seven frameworks
    cv_all: float | None = None  # ... and on the related projects' folds too
    fitted: float | None = None  # the shipped model on the data it was fitted on
    sealed: float | None = None  # the shipped model on the sealed slice (scored once)
    note: str = ""  # counts behind the CV figure


@dataclass
class FieldReport:
    name: str
    measures: list[Measure] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # thresholds, confusions, sizes
    wrong: list[str] = field(default_factory=list)  # "<id>: gold ... got ..." (no texts)


def bootstrap_interval(rows: Sequence[T], stat: Callable[[list[T]], float], *, seed: int,
                       draws: int = 1000, level: float = 0.95) -> tuple[float, float]:
    """The `level` percentile interval of `stat` over `rows` drawn again with replacement
    (seeded): how far a figure on this many threads could move by which threads were drawn.
    It says whether the sealed slice and grouped CV disagree beyond the sampling noise of a
    slice of that size; it says nothing of bias (a vocabulary fitted to the CV threads)."""
    if not rows:
        return (float("nan"), float("nan"))
    rng = random.Random(seed)
    values = sorted(stat(rng.choices(rows, k=len(rows))) for _ in range(draws))
    cut = int(round((1 - level) / 2 * draws))
    return values[cut], values[min(draws - 1, draws - 1 - cut)]


def interval_line(name: str, figures: Sequence[tuple[str, float, tuple[float, float]]]) -> str:
    """'name: cv_all 0.902 [0.870, 0.930]; sealed 0.857 [0.70, 0.95]'."""
    return f"  {name}: " + "; ".join(f"{col} {value:.3f} [{lo:.3f}, {hi:.3f}]" for col, value, (lo, hi) in figures)


def render(report: FieldReport, show_wrong: bool = True, sealed: bool = False) -> str:
    cols = [c for c in COLUMNS if sealed or c[0] != "sealed"]
    out = [f"== {report.name}"]
    out.append(f"  {'':<28}" + "".join(f"{title:>26}" for _, title in cols))
    for m in report.measures:
        vals = "".join(
            f"{'-' if getattr(m, key) is None else format(getattr(m, key), '.3f'):>26}" for key, _ in cols
        )
        out.append(f"  {m.name:<28}{vals}" + (f"   {m.note}" if m.note else ""))
    out.extend("  " + line for line in report.lines)
    if show_wrong and report.wrong:
        out.append(f"  wrong in grouped CV ({len(report.wrong)}):")
        out.extend("    " + w for w in report.wrong)
    return "\n".join(out)
