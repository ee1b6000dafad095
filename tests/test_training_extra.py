"""`python -m training --extra FILE...`: labelled threads a deployment adds (people's verdicts,
`rltracker verdicts export`) are fitted by the failure models, never scored, never from the
sealed slice, not in the folds that score their repository, and named by the training-data
hash; without them nothing changes."""

from __future__ import annotations

import json
from pathlib import Path

from training.data import data_sha256, is_sealed, load_extra, make_example
from training.failure import _added_for, fit_models

# Short threads written for the project, in the export's shape.
THREADS = [
    {"id": "verl-project/verl#90001", "repo": "verl-project/verl", "number": 90001, "kind": "issue",
     "title": "KL divergence keeps climbing during GRPO",
     "body": "After 300 steps the KL to the reference model climbs past 40 and rewards fall.",
     "comments": [{"author": "b", "created_at": "2026-01-02", "body": "Same with a lower lr."}],
     "labels": {"is_failure_report": True, "category": "kl_growth"},
     "verdict": {"login": "alice", "role": "author"}},
    {"id": "example/related#7", "repo": "example/related", "number": 7, "kind": "issue",
     "title": "How do I set the KL coefficient?", "body": "Which option sets it?", "comments": [],
     "labels": {"is_failure_report": False, "category": None}},
    {"id": "example/related#8", "repo": "example/related", "number": 8, "kind": "issue",
     "title": "no labels", "body": "", "comments": [], "labels": {}},
]


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def sealed_id() -> str:
    return next(f"example/related#{n}" for n in range(1000) if is_sealed(f"example/related#{n}"))


def test_added_threads_are_loaded_with_their_labels(tmp_path: Path) -> None:
    sealed = dict(THREADS[1], id=sealed_id())
    extra = load_extra((write(tmp_path / "v.jsonl", [*THREADS, sealed]),))
    assert [(e.id, e.split, e.labels["is_failure_report"]) for e in extra] == [
        ("extra:verl-project/verl#90001", "extra", True), ("extra:example/related#7", "extra", False)]
    assert extra[0].group == "verl-project/verl" and "labels" not in extra[0].thread


def test_a_fold_fits_no_added_thread_of_a_repository_it_scores(tmp_path: Path) -> None:
    extra = load_extra((write(tmp_path / "v.jsonl", THREADS),))
    trl = make_example({"id": "huggingface/trl#1", "repo": "huggingface/trl", "labels": {}})
    verl = make_example({"id": "verl-project/verl#1", "repo": "verl-project/verl", "labels": {}})
    repos = {"huggingface/trl", "verl-project/verl"}
    # the verl fold (trained on trl only) fits the related thread, not the verl one
    assert [e.repo for e in _added_for([trl], repos, extra)] == ["example/related"]
    assert [e.repo for e in _added_for([trl, verl], repos, extra)] == ["verl-project/verl", "example/related"]
    assert _added_for([trl], repos, ()) == ()


def test_added_threads_change_the_fit_and_the_hash(tmp_path: Path, shared_dir: Path) -> None:
    path = write(tmp_path / "v.jsonl", THREADS)
    extra = load_extra((path,))
    base, added = fit_models([]), fit_models([], added=extra)
    assert base.report.weights != added.report.weights
    digest = data_sha256()
    assert data_sha256(extra=(path,)) != digest
    # without --extra the hash is the one the committed model files record (`make train`
    # writes them byte for byte again)
    models = Path(__file__).resolve().parent.parent / "analyzers" / "models"
    for name in ("failure.json", "failure_kind.json"):
        assert json.loads((models / name).read_text())["meta"]["training_data_sha256"] == digest
