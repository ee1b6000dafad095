"""What a trainer's `evaluate` returns, and how `make eval` prints it."""

from __future__ import annotations

from dataclasses import dataclass, field

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
