"""The project-written thread sets (benchmarks/threads_written/) and how training reads them."""

from __future__ import annotations

import json
from pathlib import Path

from analyzers.failures import CATEGORIES
from training.data import (
    FRAMEWORKS,
    PROJECT_LABELLED,
    SYNTHETIC_FAILURES,
    SYNTHETIC_KINDS,
    WRITTEN,
    WRITTEN_FITTED,
    group_of,
)
from training.failure import written_examples

LABELS = {"is_failure_report", "category", "secondary", "other_kind", "is_proposal"}


def _sets() -> list[Path]:
    return sorted(p for p in WRITTEN.iterdir() if (p / "threads.jsonl").exists())


def test_every_written_thread_is_labelled_per_the_guidelines() -> None:
    assert _sets(), "no written set found"
    for path in _sets():
        ids = set()
        for line in (path / "threads.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            assert row["id"] not in ids and row["id"].startswith(f"written-{path.name}-")
            ids.add(row["id"])
            assert row["repo"] in FRAMEWORKS and row["kind"] in ("issue", "pull_request")
            labels = row["labels"]
            assert set(labels) == LABELS, row["id"]
            if labels["is_failure_report"]:
                assert labels["category"] in CATEGORIES and labels["other_kind"] is None, row["id"]
                assert set(labels["secondary"]) <= set(CATEGORIES) - {labels["category"]}, row["id"]
            else:
                assert labels["category"] is None and labels["secondary"] == [], row["id"]


def test_only_the_listed_sets_are_fitted_and_only_by_the_report_model() -> None:
    fitted = written_examples()
    assert {e.id.split("-")[1] for e in fitted} == set(WRITTEN_FITTED)
    # read like the synthetic threads: the kind model leaves split "synthetic" out
    assert fitted and all(e.split == "synthetic" for e in fitted)
    assert {group_of(e.repo) for e in fitted} <= set(FRAMEWORKS)


def test_every_project_file_fitted_on_is_in_the_training_data_hash() -> None:
    # A model file's training_data_sha256 must change when any file it was fitted on changes.
    fitted_on = {SYNTHETIC_FAILURES, SYNTHETIC_KINDS, *(WRITTEN / name / "threads.jsonl" for name in WRITTEN_FITTED)}
    assert fitted_on <= set(PROJECT_LABELLED)
    assert all(path.is_file() for path in PROJECT_LABELLED)
