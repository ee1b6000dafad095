"""Measured, not asserted: contribution-rule summaries of projects the extractor was not written
for (../shared/eval/rules-dev/, skipped when absent).

    .venv/bin/python benchmarks/evaluate_rules.py [--verbose] [FOLDER ...]

Without FOLDER it scores every corpus: rules-dev (third-party, the one the extractor was
developed on) and the written sets benchmarks/rules_written/*/ (fictional projects written for
this benchmark, each committed before the extractor was run on it; the first score of each set
is the held-out check of how the extractor generalises; docs/rules.md and
benchmarks/rules_written/README.md list them).

Every project folder holds copies of its contribution files (SOURCE.txt maps copy names to
repository paths) and expected.json lists its facts: `states: true` with a regex that a correct
line of the summary matches, `states: false` topics no line may state. A line is one rendered
bullet: our statement plus the cited file (the "Not stated in the files read" footer is not a
line that states anything). Per project: facts stated / expected, invented topics, the facts
missed; then the same with the stated line also required to cite the expected file.

The rule extractor fits nothing (a lexicon + structure scorer), so there is no
leave-one-project-out figure: the dev figure and the held-out one are the same kind of number.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RULES_DEV = ROOT.parent / "shared" / "eval" / "rules-dev"
RULES_WRITTEN = ROOT / "benchmarks" / "rules_written"
# Sets a, b, c, ..., each written before the extractor was run on it (see their READMEs).
WRITTEN_SETS = sorted(path for path in RULES_WRITTEN.iterdir() if (path / "expected.json").is_file())
# The sets the extractor was changed from after their first score (development sets); any
# other set is held out: scored, never tuned on (its misses are left for the next round).
DEVELOPED_ON = frozenset({"rules-dev", "a", "b", "c", "d", "e", "f", "h", "i", "k", "l", "m",
                          "n", "o", "q", "r", "s", "t", "u", "v", "w",
                          "x", "y", "z", "aa", "ab", "ad", "af", "ah"})
GOAL = 0.85
# Development sets not yet at the goal, with the count of facts stated they must keep (Q
# reached it in rules69; V and W were developed on in rules73, which fixed their invented lines
# first; W reached it in rules74, Traditional Chinese read; V reached it in rules75, 38/44; X
# and Y, developed on in rules76, reached it there; Z, developed on in rules77, reached it there;
# AA and AB, developed on in rules80, were at it from their first score).
BELOW_GOAL_FLOOR: dict[str, int] = {}


def summary_lines(summary: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(line, cited files) per fact: the bullets format_rules_markdown renders."""
    from analyzers.rules import format_rules_markdown

    rendered = format_rules_markdown(summary, heading=False).split("\n")
    bullets = [line[2:] for line in rendered if line.startswith("- ")]
    ordered = []  # the facts in rendering order (by topic, rules before hints)
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for fact in summary["facts"]:
        by_topic.setdefault(fact["topic"], []).append(fact)
    from analyzers.rules import table

    for topic in table().topics:
        ordered += sorted(by_topic.get(topic, []), key=lambda f: f.get("strength") == "hint")
    return [(line, [s for s in [f.get("source")] + list(f.get("sources") or []) if s])
            for line, f in zip(bullets, ordered, strict=True)]


def copy_to_repo_path(folder: Path) -> dict[str, str]:
    from bot.speaking.contribution import _source_map

    return {copy: path.split(" @ ")[0] for copy, path in _source_map(folder).items()}


def score_project(summary: dict[str, Any], facts: list[dict[str, Any]],
                  copies: dict[str, str]) -> dict[str, Any]:
    lines = summary_lines(summary)
    stated, stated_cited, missed, invented = [], [], [], []
    for fact in facts:
        pattern = re.compile(fact["pattern"], re.I)
        hits = [(line, src) for line, src in lines if pattern.search(line)]
        if fact["states"]:
            if hits:
                stated.append(fact["topic"])
                want = copies.get(fact.get("source", ""), fact.get("source", ""))
                if any(want in srcs for _, srcs in hits):
                    stated_cited.append(fact["topic"])
            else:
                missed.append(fact["topic"])
        elif hits:
            invented.append((fact["topic"], hits[0][0]))
    expected = sum(1 for f in facts if f["states"])
    return {"expected": expected, "stated": stated, "stated_cited": stated_cited,
            "missed": missed, "invented": invented}


def evaluate(folder: Path = RULES_DEV) -> dict[str, dict[str, Any]]:
    from analyzers.rules import summarize_rules
    from bot.speaking.contribution import load_folder

    expected = json.loads((folder / "expected.json").read_text(encoding="utf-8"))
    results = {}
    for name, entry in sorted(expected.items()):
        project = folder / name
        summary = summarize_rules(load_folder(project))
        results[name] = score_project(summary, entry["facts"], copy_to_repo_path(project))
        results[name]["summary"] = summary
    return results


def report(folder: Path, verbose: bool) -> None:
    t0 = time.perf_counter()
    results = evaluate(folder)
    elapsed = time.perf_counter() - t0
    total = stated = cited = invented = 0
    below = []
    role = "developed on" if folder.name in DEVELOPED_ON else "HELD OUT: scored, never tuned on"
    print(f"== {folder} ({role})")
    print(f"{'project':24s} stated/expected  cited  invented  missed")
    for name, r in results.items():
        n, s, c = r["expected"], len(r["stated"]), len(r["stated_cited"])
        total, stated, cited, invented = total + n, stated + s, cited + c, invented + len(r["invented"])
        if s < GOAL * n or r["invented"]:
            below.append(name)
        inv = ", ".join(t for t, _ in r["invented"]) or "-"
        share = f"{s / n:5.0%}" if n else "    -"  # a project whose files state nothing
        print(f"{name:24s} {s:3d}/{n:<3d} {share}  {c:3d}    {inv:9s} {', '.join(r['missed']) or '-'}")
        for topic, line in r["invented"]:
            print(f"    invented {topic}: {line[:160]}")
        if verbose:
            from analyzers.rules import format_rules_markdown

            print(format_rules_markdown(r["summary"]))
    share = f"{stated / total:5.0%}" if total else "    -"
    print(f"{'all':24s} {stated:3d}/{total:<3d} {share}  {cited:3d}    {invented} invented")
    print(f"projects below {GOAL:.0%} or inventing: {', '.join(below) or 'none'}")
    print(f"time: {elapsed:.2f} s for {len(results)} projects (spaCy start-up included)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--verbose", action="store_true", help="print each summary")
    parser.add_argument("folders", nargs="*", type=Path,
                        help="corpora to score (default: rules-dev and every set in benchmarks/rules_written/)")
    args = parser.parse_args()
    for folder in args.folders or [RULES_DEV, *WRITTEN_SETS]:
        if not (folder / "expected.json").is_file():
            print(f"{folder}: no expected.json, skipped")
            continue
        report(folder, args.verbose)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
