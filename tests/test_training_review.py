"""training.review and training.proposal on small synthetic rows written for this test (no
../shared): the trainers fit, cross-validate by repository, choose thresholds and report ids
and labels only. Model files are never written here (train() would replace the shipped ones)."""

from __future__ import annotations

from typing import Any

import pytest

from analyzers.proposals import classify_proposal
from analyzers.review import explain_review
from training import proposal as proposal_trainer
from training import review as review_trainer
from training.data import FRAMEWORKS, Example, make_example

ASKS = [
    "Do you have benchmark results comparing this with the baseline?",
    "Could you share reward curves from a run before we merge?",
    "Any experiments showing an improvement over GRPO?",
]
THANKS = ["Thanks, looks good!", "Great work, merging.", "LGTM, thank you."]
STALE = "Closing this as stale: no activity for a long time."
FIXED = "Fixed in #3, thanks for the report."


def _row(repo: str, n: int, comment: str, state: str, labels: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"{repo}#{n}", "repo": repo, "number": n, "kind": "pull_request",
        "title": "Add a new loss", "body": "This PR adds the loss from the paper.",
        "state": state, "author": "alice", "created_at": "2025-01-01",
        "comments": [{"author": "maint", "body": comment, "created_at": "2025-01-02"}],
        "labels": {"is_proposal": True, "papers": [], "replied_from_other": True, **labels},
    }  # fmt: skip


def synthetic_examples() -> list[Example]:
    repos = [*FRAMEWORKS, "other-org/related-a", "other-org/related-b"]
    rows = []
    n = 0
    for i, repo in enumerate(repos):
        for j in range(4):
            n += 1
            if j == 0:
                rows.append(_row(repo, n, ASKS[i % 3], "open", {"review_state": "open_replied", "concerns": ["evidence"]}))
            elif j == 1:
                rows.append(_row(repo, n, THANKS[i % 3], "merged", {"review_state": "merged", "concerns": []}))
            elif j == 2:
                rows.append(_row(repo, n, STALE, "closed", {"review_state": "lapsed", "concerns": []}))
            else:
                rows.append(_row(repo, n, FIXED, "closed", {"review_state": "closed_other", "concerns": []}))
    return [make_example(r) for r in rows]


@pytest.fixture(scope="module")
def examples() -> list[Example]:
    return synthetic_examples()


def test_review_models_fit_and_are_used_through_the_analyzer(examples: list[Example]) -> None:
    models = review_trainer.fit_models([e for e in examples if not e.sealed])
    asked = explain_review(_row("o/r", 99, "Do you have any benchmark results for this?", "open", {}), models)
    thanked = explain_review(_row("o/r", 98, "Thanks, looks good!", "open", {}), models)
    p_asked = review_trainer.predict(models, make_example(_row("o/r", 99, ASKS[0], "open", {})))
    p_thanked = review_trainer.predict(models, make_example(_row("o/r", 98, THANKS[0], "open", {})))
    assert p_asked.concern_probabilities["evidence"] > p_thanked.concern_probabilities["evidence"]
    assert asked.state == thanked.state == "open_replied"
    # the state model saw only closed threads no fact decides
    assert set(models.state.classes) <= {"lapsed", "closed_other", "declined", "redirected", "closed_by_author"}


def test_review_run_reports_grouped_cv_without_texts(examples: list[Example]) -> None:
    result = review_trainer.run(examples)
    names = [m.name for m in result.report.measures]
    assert names[:3] == ["review-state accuracy", "reply detection", "concern F1 (micro)"]
    for m in result.report.measures:
        for value in (m.cv7, m.cv_all, m.fitted):
            assert value is None or 0.0 <= value <= 1.0
    assert result.report.measures[0].sealed is None  # the sealed slice only when asked
    printed = "\n".join(result.report.lines + result.report.wrong)
    for text in [*ASKS, *THANKS, STALE, FIXED]:
        assert text not in printed
    assert isinstance(result.models.state.meta["use"], bool)
    assert set(result.figures) >= {"grouped_cv_frameworks", "grouped_cv_all", "fitted", "concern_thresholds"}
    ranking = result.figures["concern_average_precision"]
    assert set(ranking) == {"cv7", "cv_all", "train-file"}
    assert all(0.0 <= v <= 1.0 for v in ranking.values())


def test_average_precision_ranks_before_any_threshold() -> None:
    ap = review_trainer.average_precision
    # positives ranked 1st and 3rd: (1/1 + 2/3) / 2
    assert ap([(0.9, True), (0.8, False), (0.7, True), (0.1, False)]) == pytest.approx(5 / 6)
    # the same ranking at other probabilities gives the same figure: no threshold involved
    assert ap([(0.3, True), (0.2, False), (0.15, True), (0.01, False)]) == pytest.approx(5 / 6)
    # tied pairs enter together: a positive tied with a negative counts at precision 1/2
    assert ap([(0.5, True), (0.5, False)]) == pytest.approx(0.5)
    assert ap([(0.5, True), (0.4, False)]) == pytest.approx(1.0)
    assert ap([(0.2, False)]) == 1.0  # no positives: nothing to rank


def test_rare_kinds_are_fitted_without_the_reviews_shape(examples: list[Example]) -> None:
    # evidence has 9 positives here, fewer than MIN_POSITIVES_FOR_OWN_THRESHOLD: no kind is shaped
    assert review_trainer.shaped_kinds(examples) == frozenset()
    ev = review_trainer._evidence(examples[0])
    plain = review_trainer.concern_row(ev, "evidence", shaped=False)
    full = review_trainer.concern_row(ev, "evidence", shaped=True)
    assert full["evidence|others"] > 0 and "evidence|others" not in plain
    assert plain["evidence|bias"] == 1.0 and plain["strong"] == full["strong"] == 1.0
    assert set(plain) < set(full)
    # a model fitted on plain rows scores the analyzer's full rows the same way
    models = review_trainer.fit_models([e for e in examples if not e.sealed], shaped=frozenset())
    assert not any("|others" in k for k in models.concerns.weights["1"])
    many = [e for e in examples for _ in range(2)]
    assert review_trainer.shaped_kinds(many) == frozenset({"evidence"})


def test_concern_thresholds_from_pooled_probabilities() -> None:
    from analyzers.review import ReviewScores

    def example(i: int, gold: list[str]) -> Example:
        return make_example(_row("o/r", i, "x", "open", {"review_state": "open_replied", "concerns": gold}))

    # evidence: 20 positives at 0.8; demand: 4 positives at 0.4; the rest 0.1 (all negative)
    rows = [example(i, ["evidence"] if i < 20 else ["demand"] if i < 24 else []) for i in range(40)]

    def probability(i: int, kind: str) -> float:
        if kind == "evidence" and i < 20:
            return 0.8
        return 0.4 if kind == "demand" and 20 <= i < 24 else 0.1

    preds = {
        e.id: ReviewScores("open_replied", True, {k: probability(i, k) for k in review_trainer.CONCERNS}, [])
        for i, e in enumerate(rows)
    }  # fmt: skip
    common, own = review_trainer.choose_thresholds(rows, preds)
    assert 0.1 < own["evidence"] <= 0.8  # separates the two groups, its own: 20 positives
    assert set(own) == {"evidence"}  # demand (4 positives) and the rest use the common one
    # chosen on the kinds it applies to, where demand's positives sit at 0.4
    assert 0.1 < common <= 0.4


def test_proposal_trainer_fits_and_scores_through_classify_proposal() -> None:
    rows = []
    for i, repo in enumerate([*FRAMEWORKS, "other-org/related-a"]):
        for j, (title, gold) in enumerate(
            [
                ("Add the XYZPO loss from the paper", True),
                ("Support a new advantage estimator", True),
                ("How do I set the learning rate?", False),
                ("Training crashes with an error", False),
            ]
        ):
            row = _row(repo, 10 * i + j, "ok", "open", {"review_state": "open_replied", "concerns": []})
            row.update(title=title, kind="issue", body="")
            row["labels"]["is_proposal"] = gold
            rows.append(make_example(row))
    model = proposal_trainer.fit_model([e for e in rows if not e.sealed])
    model.threshold = 0.5
    add = {"title": "Add the ABCPO loss from the paper", "body": "", "kind": "issue"}
    ask = {"title": "How do I set the batch size?", "body": "", "kind": "issue"}
    assert classify_proposal(add, [], model=model)["confidence"] > classify_proposal(ask, [], model=model)["confidence"]
    _, report, figures = proposal_trainer.run(rows)
    assert report.measures[0].name == "proposal F1" and 0.0 <= report.measures[0].cv7 <= 1.0
    assert 0.0 < figures["threshold"] < 1.0
