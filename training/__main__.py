"""`make train`: rebuild every fitted model from the labelled threads, reproducibly.

    python -m training [--only NAME] [--extra FILE...]

--extra: labelled threads to fit the failure models on as well (`rltracker verdicts export`:
people's verdicts on real threads, reviewed), never scored; the files are part of the
training-data hash those model files record. Without it nothing changes.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from training import SEED, trainers
from training.data import SharedDataMissing, data_sha256, load_examples, load_extra


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=None, help="run only the trainer with this NAME")
    ap.add_argument("--extra", nargs="+", default=[], type=Path, metavar="FILE",
                    help="labelled threads (JSON lines) the failure models are fitted on too")
    args = ap.parse_args(argv)
    extra_files = tuple(args.extra)
    try:
        examples = load_examples()
        digest = data_sha256()
        extra = load_extra(extra_files)
        extra_digest = data_sha256(extra=extra_files) if extra_files else digest
    except SharedDataMissing as exc:
        print(f"make train needs ../shared/eval: {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:
        print(f"--extra: {exc}", file=sys.stderr)
        return 2
    sealed = sum(e.sealed for e in examples)
    print(f"{len(examples)} labelled threads ({sealed} sealed, never fitted on); data sha256 {digest[:16]}")
    if extra_files:
        print(f"{len(extra)} added labelled threads from {len(extra_files)} file(s) for the failure "
              f"models; their data sha256 {extra_digest[:16]}")
    for module in trainers():
        if args.only and module.NAME != args.only:
            continue
        start = time.perf_counter()
        if getattr(module, "TAKES_EXTRA", False) and extra_files:
            paths = module.train(examples, data_hash=extra_digest, seed=SEED, extra=extra)
        else:
            paths = module.train(examples, data_hash=digest, seed=SEED)
        took = time.perf_counter() - start
        for p in paths:
            print(f"  {module.NAME}: wrote {p} ({p.stat().st_size / 1024:.0f} KiB) in {took:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
