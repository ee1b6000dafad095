"""Score people's verdicts (`rltracker verdicts export`) with the CURRENT failure models.

    python benchmarks/evaluate_verdicts.py FILE [--quiet]

FILE holds one labelled thread a line, as `rltracker verdicts export` writes them: the thread as
stored up to the command comment, `labels: {is_failure_report, category}` from the person, and
`verdict` (who, and what the analyzer said when the verdict was given). The threads are scored
exactly as a written set is (evaluate_written.score_examples: failure-report precision / recall
/ F1 at the decision and comment thresholds, kind accuracy on detected reports, comments right
on the kind, every miss), and beside that the file's own record of the analyzer then
(bot.store.verdicts.count_agreement, what /verdicts shows), so the current models and the one
people answered can be compared on the same threads.

Threads of the sealed slice are left out (counted): the integrator scores that slice once. When
the shipped models were fitted with `python -m training --extra` on this very file, the figures
are in-sample, and the script says so.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def load_verdicts(path: Path) -> tuple[list[Any], list[dict[str, Any]], int]:
    """(the labelled threads as training `Example`s, split "verdicts", the sealed slice left
    out; the `verdict` records of those threads; how many sealed threads were left out)."""
    from training.data import make_example

    examples, records, sealed = [], [], 0
    with path.open(encoding="utf-8") as fh:
        for raw in fh:
            if not raw.strip():
                continue
            row = json.loads(raw)
            if "is_failure_report" not in (row.get("labels") or {}):
                continue
            record = row.pop("verdict", None) or {}
            e = make_example(row, "verdicts")
            if e.sealed:
                sealed += 1
                continue
            examples.append(e)
            records.append({**record, "labels": e.labels})
    return examples, records, sealed


def provenance(path: Path) -> str:
    """Whether the shipped failure models were fitted on this file (in-sample figures)."""
    from analyzers.failures import failure_models
    from training.data import SharedDataMissing, data_sha256

    fitted = (failure_models().report.meta or {}).get("training_data_sha256")
    try:
        base, with_file = data_sha256(), data_sha256(extra=(path,))
    except SharedDataMissing:
        return "could not tell whether the models were fitted on this file (no ../shared/eval)"
    if fitted == with_file:
        return "IN-SAMPLE: the shipped models were fitted on this file (python -m training --extra)"
    if fitted == base:
        return "held out: the shipped models were fitted on the shared and project-written threads only"
    return ("the shipped models were fitted with other added files (--extra): if these threads "
            "were among them, the figures are in-sample")


def score_file(path: Path, quiet: bool = False) -> dict[str, Any]:
    """Print the figures for FILE; returns the current models' headline figures
    (evaluate_written.score_examples) with `at_verdict`, the file's record of the analyzer then
    (bot.store.verdicts.count_agreement rows), and `sealed_left_out`."""
    from evaluate_written import score_examples

    from bot.store.verdicts import count_agreement

    examples, records, sealed = load_verdicts(path)
    print(f"{path}: {len(examples)} verdicts scored"
          + (f", {sealed} of the sealed slice left out" if sealed else "")
          + f"; {provenance(path)}")
    out: dict[str, Any] = score_examples(f"verdicts {path.name} (current models)", examples, quiet=quiet)
    then = count_agreement([
        (r.get("analyzer_version"), r.get("analyzer_is_failure_report"), r.get("analyzer_category"),
         bool(r["labels"]["is_failure_report"]), r["labels"].get("category"))
        for r in records])
    print("  the analyzer when each verdict was given (recorded in the file):")
    for a in then:
        name = {"all": "all", None: "no analysis then"}.get(a["version"], a["version"])
        print(f"    {name}: {a['verdicts']} verdicts; called a report {a['called']} (kind right "
              f"{a['kind_right']}, kind wrong {a['kind_wrong']}, not a failure per the person "
              f"{a['not_failure_per_person']}); did not call one {a['not_called']} (a failure per "
              f"the person {a['failure_per_person']}); not analysed {a['not_analysed']}")
    out["at_verdict"] = then
    out["sealed_left_out"] = sealed
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", type=Path, help="the output of `rltracker verdicts export`")
    ap.add_argument("--quiet", action="store_true", help="figures only")
    args = ap.parse_args(argv)
    score_file(args.file, quiet=args.quiet)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
