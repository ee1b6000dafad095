"""`make train`: rebuild every fitted model from the labelled threads, reproducibly.

    python -m training [--only NAME]
"""

from __future__ import annotations

import argparse
import sys
import time

from training import SEED, trainers
from training.data import SharedDataMissing, data_sha256, load_examples


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=None, help="run only the trainer with this NAME")
    args = ap.parse_args(argv)
    try:
        examples = load_examples()
        digest = data_sha256()
    except SharedDataMissing as exc:
        print(f"make train needs ../shared/eval: {exc}", file=sys.stderr)
        return 2
    sealed = sum(e.sealed for e in examples)
    print(f"{len(examples)} labelled threads ({sealed} sealed, never fitted on); data sha256 {digest[:16]}")
    for module in trainers():
        if args.only and module.NAME != args.only:
            continue
        start = time.perf_counter()
        paths = module.train(examples, data_hash=digest, seed=SEED)
        took = time.perf_counter() - start
        for p in paths:
            print(f"  {module.NAME}: wrote {p} ({p.stat().st_size / 1024:.0f} KiB) in {took:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
