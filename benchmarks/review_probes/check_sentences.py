"""Read closing notes one by one (benchmarks/review_probes/state9_sentences.txt) and list those the
review rules read wrong. Each line is `KIND|text`: R a pointer elsewhere (redirect signal, or a
placement / already_covered concern), D a refusal (decline_strong, or a closing note with a
concern), L inactivity (lapse), O none of these (done, duplicate, answered). Written by the
state9 pass after its first change: development probes, no result.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/review_probes/check_sentences.py [FILE]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from analyzers.review import _rules, _scan  # noqa: E402

DEFAULT = Path(__file__).with_name("state9_sentences.txt")


def reads_as(kind: str, text: str) -> bool:
    found = _scan(text, _rules())
    sig, con = found.signals, found.concerns
    pointer = "redirect" in sig or bool(con & {"already_covered", "placement"})
    refusal = "decline_strong" in sig or ("closing" in sig and bool(con))
    refusal |= "decline_weak" in sig and bool(con) and "openness" not in sig
    if kind == "R":
        return pointer
    if kind == "D":
        return refusal
    if kind == "L":
        return "lapse" in sig
    return not (pointer or refusal or "lapse" in sig)


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else DEFAULT
    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    wrong = 0
    for line in lines:
        kind, text = line.split("|", 1)
        if not reads_as(kind, text):
            wrong += 1
            print(kind, "MISS", text)
    print(f"{len(lines) - wrong}/{len(lines)} read as labelled")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
