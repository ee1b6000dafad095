"""Labelled threads for fitting and measuring the analyzers.

Reads ../shared/eval/train/threads.jsonl and ../shared/eval/dev/threads.jsonl (third-party
text: read in place, never copied into the project). Each thread becomes an `Example` with
its canonical repository, its CV group (the repository when it is one of the seven
frameworks, "related" otherwise) and whether it belongs to the SEALED slice.

The sealed slice is a seeded split on the thread id: sha256("rltracker-sealed:" + id) in the
lowest 15 %. Sealed threads are never fitted on and never scored in cross-validation; they are
scored once, at the end of a piece of work (`benchmarks/evaluate.py --sealed`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
SPLITS = ("train", "dev")

# Labelled threads the project wrote itself and fits on beside the shared files (see
# training/failure.py for what each holds and which model fits it). They are hashed with the
# shared files, so a model file's `training_data_sha256` names everything it was fitted on.
SYNTHETIC_FAILURES = ROOT / "training" / "synthetic_failures.jsonl"
SYNTHETIC_KINDS = ROOT / "training" / "synthetic_kinds.jsonl"
WRITTEN = ROOT / "benchmarks" / "threads_written"
# Sets of benchmarks/threads_written/ that are fitted on (so no longer held out: see their READMEs).
WRITTEN_FITTED: tuple[str, ...] = ("a",)
WRITTEN_FITTED_FILES: tuple[Path, ...] = tuple(WRITTEN / name / "threads.jsonl" for name in WRITTEN_FITTED)
PROJECT_LABELLED: tuple[Path, ...] = (SYNTHETIC_FAILURES, SYNTHETIC_KINDS, *WRITTEN_FITTED_FILES)

FRAMEWORKS: tuple[str, ...] = (
    "verl-project/verl",
    "huggingface/trl",
    "OpenRLHF/OpenRLHF",
    "NVIDIA-NeMo/RL",
    "alibaba/ROLL",
    "THUDM/slime",
    "areal-project/AReaL",
)
REPO_ALIASES = {"volcengine/verl": "verl-project/verl", "inclusionAI/AReaL": "areal-project/AReaL"}
RELATED = "related"
SEALED_SALT = "rltracker-sealed:"
SEALED_SHARE = 0.15


class SharedDataMissing(RuntimeError):
    """../shared/eval is not present in this checkout."""


def canonical_repo(repo: str | None) -> str:
    repo = repo or ""
    return REPO_ALIASES.get(repo, repo)


def group_of(repo: str | None) -> str:
    """The cross-validation group: one of the seven frameworks, or "related"."""
    repo = canonical_repo(repo)
    return repo if repo in FRAMEWORKS else RELATED


def is_sealed(thread_id: str) -> bool:
    digest = hashlib.sha256((SEALED_SALT + thread_id).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < SEALED_SHARE


@dataclass(frozen=True)
class Example:
    id: str
    repo: str  # canonical
    group: str  # framework repo or "related"
    sealed: bool
    split: str  # "train" or "dev": where the file came from
    thread: dict[str, Any]  # contract thread record (labels removed)
    labels: dict[str, Any]


def make_example(row: dict[str, Any], split: str = "train") -> Example:
    thread = {k: v for k, v in row.items() if k not in ("labels", "complete")}
    tid = str(row["id"])
    repo = canonical_repo(row.get("repo"))
    return Example(
        id=tid, repo=repo, group=group_of(repo), sealed=is_sealed(tid), split=split,
        thread=thread, labels=dict(row.get("labels") or {}),
    )  # fmt: skip


def data_files(shared: Path | None = None) -> list[Path]:
    base = (shared or SHARED) / "eval"
    paths = [base / s / "threads.jsonl" for s in SPLITS]
    missing = [p for p in paths if not p.exists()]
    if missing:
        raise SharedDataMissing(f"labelled threads not found: {', '.join(map(str, missing))}")
    return paths


def load_examples(shared: Path | None = None) -> list[Example]:
    """Every labelled thread of train + dev (sealed ones included, flagged)."""
    out: list[Example] = []
    for split, path in zip(SPLITS, data_files(shared), strict=True):
        with path.open(encoding="utf-8") as fh:
            for raw in fh:
                if raw.strip():
                    out.append(make_example(json.loads(raw), split))
    return out


def data_sha256(shared: Path | None = None, extra: tuple[Path, ...] = ()) -> str:
    """sha256 over the labelled files, in order, the shared ones then the project's own
    (PROJECT_LABELLED), then the `extra` files given to `python -m training --extra`:
    recorded in every model file fitted on them."""
    h = hashlib.sha256()
    for path in (*data_files(shared), *PROJECT_LABELLED, *extra):
        h.update(path.read_bytes())
    return h.hexdigest()


def load_extra(paths: tuple[Path, ...]) -> tuple[Example, ...]:
    """Labelled threads a deployment adds (`rltracker verdicts export`: people's verdicts on
    real threads), split "extra". Fitted, never scored; a thread of the sealed slice is
    dropped (never fitted on), and in cross-validation an extra thread is fitted only in the
    folds that do not score its repository (training.failure). Their ids get an `extra:`
    prefix: the same thread in the shared files keeps its own features and labels."""
    out: list[Example] = []
    for path in paths:
        with path.open(encoding="utf-8") as fh:
            for raw in fh:
                if not raw.strip():
                    continue
                row = json.loads(raw)
                labels = row.get("labels") or {}
                if "is_failure_report" not in labels:
                    continue
                e = make_example(row, "extra")
                if not e.sealed:
                    out.append(replace(e, id=f"extra:{e.id}"))
    return tuple(out)


__all__ = [
    "FRAMEWORKS",
    "RELATED",
    "Example",
    "SharedDataMissing",
    "canonical_repo",
    "data_sha256",
    "group_of",
    "is_sealed",
    "load_examples",
    "load_extra",
    "make_example",
]
