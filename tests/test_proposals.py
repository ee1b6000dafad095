"""analyzers.proposals: does a thread propose or request adding a training method?
Threads written for this test; papers are passed as link_papers would return them."""

from __future__ import annotations

import pytest

from analyzers.proposals import classify_proposal


def thread(title: str, body: str | None = "", kind: str = "issue") -> dict:
    return {"id": "o/r#1", "repo": "o/r", "number": 1, "kind": kind, "title": title,
            "body": body, "state": "open", "comments": []}


PAPER = [{"arxiv_id": "2503.14476", "title": "t", "method": "clip-higher", "how": "arxiv_id",
          "score": 1.0}]
NAMED = [{"arxiv_id": "2506.13585", "title": "t", "method": "cispo", "how": "method_name",
          "score": 0.8}]

PROPOSALS = [
    (thread("feat: add CISPO loss", "This PR adds the CISPO objective.", "pull_request"), NAMED),
    (thread("Implement XYZPO as a new loss_type", "Related paper: https://arxiv.org/abs/2503.14476"), PAPER),
    (thread("Any plan to support GSPO?", "Do you have any plans to support it?"), []),
    (thread("[Feature] Soft clipping algorithm", "I propose adding this algorithm, see the paper."), PAPER),
    (thread("问下会支持GRPO么？", "如题"), []),
    (thread("Add dynamic sampling to the GRPO trainer", "As described in the DAPO paper.", "pull_request"), PAPER),
    # a bare method name with its paper linked is a request by itself
    (thread("Reinforce++", "https://arxiv.org/abs/2501.03262"), [dict(PAPER[0], arxiv_id="2501.03262")]),
    (thread("[recipe] feat: add a new recipe", "From https://arxiv.org/abs/2503.14476", "pull_request"), PAPER),
    (thread("Would you consider adding VAPO?", ""), []),
    (thread("能不能加上DAPO的动态采样", ""), []),
]  # fmt: skip

NOT_PROPOSALS = [
    (thread("Question about clip_ratio_high in DAPO", "How does clip-higher work here?"), PAPER),
    (thread("fix: typo in GRPO docs", "Fixes a typo.", "pull_request"), NAMED),
    (thread("Will you support TPU?", "Is there any plan to support TPUs?"), []),
    (thread("[platform] add a new hardware backend", "Adds a backend.", "pull_request"), []),
    (thread("GRPO crashes with NaN loss", "Training GRPO gives an error."), NAMED),
    (thread("请问支持多模态模型吗？", "请问是否支持多模态？"), []),
    (thread("Training is slow", None), []),
    # a failure report that names a method asks for nothing
    (thread("GRPO reward is always 0", "My reward is 0 at every step."), NAMED),
    # the author labels the change: docs, not a method
    (thread("docs: add GSPO to the algorithm list", "Docs only.", "pull_request"), NAMED),
    (thread("Add support for SGLang 0.5", "Bump the engine.", "pull_request"), []),
    (thread("Can we have a Docker image for CUDA 12.8?", ""), []),
]  # fmt: skip


@pytest.mark.parametrize("t,papers", PROPOSALS, ids=[p[0]["title"][:30] for p in PROPOSALS])
def test_proposals(t: dict, papers: list) -> None:
    result = classify_proposal(t, papers)
    assert result["is_proposal"], result
    assert 0.5 <= result["confidence"] <= 1.0


@pytest.mark.parametrize("t,papers", NOT_PROPOSALS, ids=[p[0]["title"][:30] for p in NOT_PROPOSALS])
def test_not_proposals(t: dict, papers: list) -> None:
    result = classify_proposal(t, papers)
    assert not result["is_proposal"], result
    assert 0.0 <= result["confidence"] < 0.5


def test_shape_and_missing_keys() -> None:
    assert set(classify_proposal({}, None)) == {"is_proposal", "confidence"}
    assert not classify_proposal({"title": None, "body": None})["is_proposal"]
