"""Which linked catalog methods a proposal proposes (analyzers.proposed): short threads
written for these tests."""

from __future__ import annotations

import pytest

from analyzers.papers import link_papers
from analyzers.proposed import in_context, proposed_methods


def proposed(title: str, body: str | None = None, comments: tuple[str, ...] = ()) -> list[str]:
    thread = {"title": title, "body": body,
              "comments": [{"author": "someone", "body": c} for c in comments]}
    linked = {p["method"] for p in link_papers(thread) if p.get("method")}
    return proposed_methods(thread, linked)


@pytest.mark.parametrize(("title", "body", "expected"), [
    # a new method named by the title, GRPO only as the comparison or the place it goes
    ("Add FooPO loss", "FooPO works like GRPO but with a learned baseline.", []),
    ("Add a new advantage estimator to GRPO", "It replaces the group mean.", []),
    ("Implement BarPO (similar to PPO)", None, []),
    ("新算法 BazPO", "与GRPO相比，这个方法更稳定", []),
    # the title names the catalog method it proposes: it wins over the body's context
    ("Support GSPO", "GSPO is better than GRPO on MoE models.", ["gspo"]),
    ("[Feature] Support DAPO", "Compared with GRPO, DAPO is better.", ["clip-higher"]),
    # a title naming no method: the opening post says what it proposes
    ("[Feature] a new estimator", "Please add RLOO. It outperforms PPO.", ["rloo"]),
    ("Request", "I would like to add GSPO to the trainer.", ["gspo"]),
    ("Request", "Could we have the original GRPO-like variant?", []),
])
def test_what_the_title_or_the_opening_post_proposes(title: str, body: str | None,
                                                     expected: list[str]) -> None:
    assert proposed(title, body) == expected


def test_a_method_named_only_in_comments_is_not_proposed() -> None:
    assert proposed("Add a new loss", "Details below.", ("Maybe compare it to RLOO.",
                                                         "RLOO is already there.")) == []


def test_an_arxiv_citation_in_the_opening_post_wins_over_names() -> None:
    # GSPO's paper cited by id; GRPO named in passing (no cue): the citation says it
    assert proposed("Request", "See https://arxiv.org/abs/2507.18071 . We use GRPO now.") \
        == ["gspo"]


def test_nothing_linked_nothing_proposed() -> None:
    assert proposed_methods({"title": "Support GSPO", "body": None}, []) == []


def test_context_cues_stay_in_their_clause_and_next_to_the_name() -> None:
    text = "Like before, GSPO helps"
    assert not in_context(text, text.index("GSPO"), text.index("GSPO") + 4)
    text = "I'd like to add GSPO"
    assert not in_context(text, text.index("GSPO"), text.index("GSPO") + 4)
    text = "similar to the original GRPO"
    assert in_context(text, text.index("GRPO"), text.index("GRPO") + 4)


def test_linear_on_a_64_kib_opening_post() -> None:
    body = ("like GRPO, " * 6000)[:65536]
    assert proposed("Request", body) == []
