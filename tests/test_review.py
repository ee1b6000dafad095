"""analyzers.review: review state, replies from others, and reviewer concerns.

Every thread here is a short one written for the test; the dev-set check at the end reads
../shared and skips without it."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from analyzers.review import CONCERNS, STATES, explain_review, review_thread


def thread(
    comments: list[dict[str, Any]] | None = None,
    *,
    state: str = "closed",
    author: str | None = "alice",
    kind: str = "issue",
    body: str = "Please add the method from the paper.",
    **extra: Any,
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": "org/repo#1",
        "repo": "org/repo",
        "number": 1,
        "kind": kind,
        "title": "Add a new loss",
        "body": body,
        "state": state,
        "comments": comments or [],
    }
    if author is not None:
        record["author"] = author
    record.update(extra)
    return record


def c(author: str | None, body: str, **extra: Any) -> dict[str, Any]:
    return {"author": author, "body": body, "created_at": "2025-01-01", **extra}


def concerns_of(body: str, author: str = "maint") -> list[str]:
    return review_thread(thread([c(author, body)], state="open"))["concerns"]


# --- shape ---------------------------------------------------------------------------------


def test_output_has_exactly_the_contract_keys() -> None:
    got = review_thread(thread(state="open"))
    assert set(got) == {"state", "replied_from_other", "concerns"}
    assert got["state"] in STATES and got["concerns"] == []


# --- states -------------------------------------------------------------------------------


def test_merged() -> None:
    got = review_thread(thread([c("maint", "Thanks!")], state="merged", kind="pull_request"))
    assert got == {"state": "merged", "replied_from_other": True, "concerns": []}


def test_open_no_reply_and_open_replied() -> None:
    assert review_thread(thread(state="open"))["state"] == "open_no_reply"
    only_author = thread([c("alice", "Any news on this?")], state="open")
    assert review_thread(only_author)["state"] == "open_no_reply"
    answered = thread([c("bob", "I would like this too.")], state="open")
    assert review_thread(answered) == {
        "state": "open_replied",
        "replied_from_other": True,
        "concerns": [],
    }


def test_bot_comments_are_neither_replies_nor_activity() -> None:
    bots = [
        c("github-actions[bot]", "Thanks for opening your first issue here!"),
        c("codecov", "Coverage report: 91% of lines covered."),
        c("CLAassistant", "Please sign the agreement before we can merge."),
        c("rltracker", "<!-- rltracker:failure -->Methods that address this: ..."),
        c("helper-account", "Welcome! A maintainer will look soon.", author_is_bot=True),
    ]
    got = review_thread(thread(bots, state="open"))
    assert got["state"] == "open_no_reply" and got["replied_from_other"] is False
    assert got["concerns"] == []


def test_automation_text_is_a_bot_whoever_posts_it() -> None:
    sweep = c(
        "ops-person",
        "Scheduled cleanup: no public activity for six months, closing this issue.",
    )
    got = review_thread(thread([sweep], state="open"))
    assert got == {"state": "open_no_reply", "replied_from_other": False, "concerns": []}


def test_lapsed_closed_by_a_stale_bot() -> None:
    got = review_thread(thread(closed_by="stale[bot]"))
    assert got["state"] == "lapsed" and got["replied_from_other"] is False


def test_lapsed_from_a_stale_bot_comment_not_counted_as_reply() -> None:
    comments = [
        c(
            "stale[bot]",
            "This issue has been automatically marked as stale because it has not had "
            "recent activity. It will be closed if no further activity occurs.",
        ),
        c("stale[bot]", "Closing due to inactivity."),
    ]
    got = review_thread(thread(comments))
    assert got == {"state": "lapsed", "replied_from_other": False, "concerns": []}


def test_stale_bot_after_a_human_reply_is_still_lapsed() -> None:
    comments = [
        c("maint", "Interesting idea, could you share a training curve?"),
        c("alice", "Will do next week."),
        c("sweeper", "Closing this issue because it has been inactive.", author_is_bot=True),
    ]
    got = review_thread(thread(comments))
    assert got["state"] == "lapsed" and got["replied_from_other"] is True
    assert got["concerns"] == ["evidence"]


def test_lapsed_from_stale_label_and_not_planned() -> None:
    got = review_thread(thread(state_reason="not_planned", labels=["Stale"]))
    assert got["state"] == "lapsed"


def test_lapsed_from_a_maintainers_inactivity_note() -> None:
    got = review_thread(
        thread(
            [c("maint", "Closing as this draft has had no recent progress.")], kind="pull_request"
        )
    )
    assert got["state"] == "lapsed" and got["replied_from_other"] is True


def test_stale_rollouts_are_not_a_stale_thread() -> None:
    body = "The rollout data is one step stale, which is expected with async training."
    assert review_thread(thread([c("maint", body)]))["state"] == "closed_other"


def test_declined_with_a_stated_reason() -> None:
    comments = [
        c(
            "maint",
            "Thanks for the proposal, but we won't add this. We only have two people "
            "maintaining the trainers and this would be a maintenance burden.",
        )
    ]
    got = review_thread(thread(comments))
    assert got["state"] == "declined"
    assert got["concerns"] == ["maintenance_burden"]


def test_declined_from_negative_results() -> None:
    comments = [c("maint", "We tried this internally and it does not work well for us.")]
    got = review_thread(thread(comments))
    assert got["state"] == "declined" and got["concerns"] == ["evidence"]


def test_redirected_to_a_recipe() -> None:
    comments = [
        c(
            "maint",
            "This is a nice algorithm, but it would fit better in the recipe folder than in "
            "the core trainer. Could you move it to recipe/ and open a new PR?",
        )
    ]
    got = review_thread(thread(comments, kind="pull_request"))
    assert got["state"] == "redirected" and "placement" in got["concerns"]


def test_redirected_to_trl_experimental() -> None:
    comments = [c("maint", "Let's land this under `trl.experimental` first, not in core.")]
    got = review_thread(thread(comments, kind="pull_request"))
    assert got["state"] == "redirected" and got["concerns"] == ["placement"]


def test_redirected_to_another_repository() -> None:
    comments = [
        c("maint", "We keep multimodal work in a separate repository: https://example.org/x")
    ]
    got = review_thread(thread(comments))
    assert got["state"] == "redirected" and got["concerns"] == ["placement"]


def test_redirected_to_an_existing_feature() -> None:
    comments = [c("maint", "This is already supported: set `loss_type` to the dr variant.")]
    got = review_thread(thread(comments))
    assert got["state"] == "redirected" and got["concerns"] == ["already_covered"]


def test_lapsed_when_a_still_working_question_goes_unanswered() -> None:
    comments = [c("maint", "@alice are you still working on this?"), c("maint", "Closing.")]
    got = review_thread(thread(comments, kind="pull_request"))
    assert got["state"] == "lapsed"
    # The proposer answered: not lapsed.
    comments.insert(1, c("alice", "Yes, pushing the fix tomorrow."))
    assert review_thread(thread(comments, kind="pull_request"))["state"] == "closed_other"


def test_other_users_asking_for_updates_on_an_issue_is_not_inactivity() -> None:
    comments = [c("bob", "Any update on this? I would love to use it.")]
    assert review_thread(thread(comments))["state"] == "closed_other"


def test_declined_in_other_words() -> None:
    for body in (
        "Thanks for the suggestion, but I don't think this is something we want in the library.",
        "Closing this as not planned.",
        "这个不在我们的计划内，感谢。",
    ):
        assert review_thread(thread([c("maint", body)]))["state"] == "declined", body


def test_redirected_to_a_recipe_in_other_words() -> None:
    for body in (
        "Would you consider contributing this to the recipe folder instead?",
        "可以放到 examples 里面作为示例。",
    ):
        got = review_thread(thread([c("maint", body)], kind="pull_request"))
        assert got["state"] == "redirected" and got["concerns"] == ["placement"], body


def test_closed_by_author_from_closed_by() -> None:
    got = review_thread(thread([c("maint", "Looks interesting.")], closed_by="Alice"))
    assert got["state"] == "closed_by_author"


def test_closed_by_author_from_their_own_comment() -> None:
    comments = [
        c("maint", "Is this still needed?"),
        c("alice", "No, I'll close it, the experiments showed nothing."),
    ]
    assert review_thread(thread(comments))["state"] == "closed_by_author"


def test_closed_by_author_from_the_edited_opening_post() -> None:
    got = review_thread(thread(body="Original text.\n\nSorry, opened by mistake, please ignore."))
    assert got["state"] == "closed_by_author"


def test_pr_closing_keyword_is_not_the_author_closing() -> None:
    got = review_thread(thread(body="Adds the loss.\n\nCloses #12", kind="pull_request"))
    assert got["state"] == "closed_other"


def test_known_closer_overrides_the_authors_words() -> None:
    comments = [c("alice", "I will close this if nobody needs it.")]
    got = review_thread(thread(comments, closed_by="maint"))
    assert got["state"] == "closed_other"


def test_closed_other_when_done_or_unknown() -> None:
    assert (
        review_thread(thread([c("maint", "Fixed in #40, thanks for the report!")]))["state"]
        == "closed_other"
    )
    # Nothing known about who closed it or why: not the author, not declined.
    assert review_thread(thread(author=None))["state"] == "closed_other"
    assert review_thread(thread([c("maint", "Duplicate of #3.")]))["state"] == "closed_other"


def test_missing_optional_keys_mean_unknown() -> None:
    record = {
        "id": "o/r#2",
        "repo": "o/r",
        "number": 2,
        "kind": "issue",
        "title": "x",
        "body": None,
        "state": "closed",
        "comments": [c(None, "Closing for now.")],
    }
    got = review_thread(record)
    # An unknown commenter is a human we cannot tie to the proposer: a reply, not the author.
    assert got == {"state": "closed_other", "replied_from_other": True, "concerns": []}


def test_bare_approval_review_counts_as_reply() -> None:
    review = c("maint", "", kind="review", review_state="approved")
    got = review_thread(thread([review], state="open", kind="pull_request"))
    assert got["state"] == "open_replied"


def test_ci_commands_and_doc_builder_are_not_replies() -> None:
    comments = [
        c("maint", "/ok to test 3f2a9c1"),
        c(
            "HuggingFaceDocBuilderDev",
            "The docs for this PR live here. All your documentation changes will be reflected on that endpoint.",
        ),
    ]
    got = review_thread(thread(comments, state="open", kind="pull_request"))
    assert got == {"state": "open_no_reply", "replied_from_other": False, "concerns": []}


@pytest.mark.parametrize(
    "answer",
    [
        "Try a higher clip ratio; in our runs it is more stable than the default.",
        "The 70B model does not fit on 8 GPUs with this setting; please enable offload.",
        "FP16 does not work well with this model, please use bf16 instead.",
        "We reject samples whose ratio exceeds the threshold before the update.",
        "The gradient direction is dominated by a few long responses.",
        "We use a prioritized replay buffer, and staleness is bounded.",
        "Setting use_kl_loss=True did not help in my case.",
        "This should work with the latest version. Closing, feel free to reopen if it persists.",
        "8 GPUs are enough.",
        "This can be done with the existing `loss_agg_mode` option.",
        "The license of the dataset allows research use only.",
    ],
)
def test_technical_answers_raise_no_concern_and_no_refusal(answer: str) -> None:
    got = review_thread(thread([c("maint", answer)]))
    assert got == {"state": "closed_other", "replied_from_other": True, "concerns": []}


def test_weak_phrasing_counts_beside_a_refusal() -> None:
    body = "We won't add DeepSpeed back: it uses more memory and is slower than FSDP here."
    got = review_thread(thread([c("maint", body)]))
    assert got["state"] == "declined" and got["concerns"] == ["evidence"]


# --- concerns -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (
            "I think a separate flag is awkward; a cleaner approach would be an enum option.",
            "design_or_interface",
        ),
        (
            "Could you add unit tests for the new loss and a short section in the docs?",
            "tests_or_docs",
        ),
        ("Every extra trainer is something we have to maintain long term.", "maintenance_burden"),
        ("Do you have any benchmark results showing it beats the baseline?", "evidence"),
        ("This would fit better as an example script in a separate repository.", "placement"),
        ("So far there is a single request for this; let's gather interest first.", "demand"),
        (
            "You can already do this: it is already supported by the existing option.",
            "already_covered",
        ),
        ("Our priorities this quarter are elsewhere.", "other"),
    ],
)
def test_each_concern_kind_in_english(body: str, kind: str) -> None:
    assert concerns_of(body) == [kind]


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ("这个接口设计需要调整一下。", "design_or_interface"),
        ("请补充单元测试和文档。", "tests_or_docs"),
        ("这个功能维护成本太高了。", "maintenance_burden"),
        ("有实验结果吗？对比一下效果。", "evidence"),
        ("建议放在 recipe 目录下。", "placement"),
        ("目前需求不大。", "demand"),
        ("这个已经支持了。", "already_covered"),
        ("目前优先级不高。", "other"),
    ],
)
def test_each_concern_kind_in_chinese(body: str, kind: str) -> None:
    assert concerns_of(body) == [kind]


def test_chinese_decline_and_redirect() -> None:
    declined = review_thread(thread([c("maint", "暂时不支持，目前主要开发方向是推理。")]))
    assert declined["state"] == "declined" and declined["concerns"] == ["other"]
    moved = review_thread(thread([c("maint", "多模态暂时放在另一个仓库。")]))
    assert moved["state"] == "redirected" and moved["concerns"] == ["placement"]


def test_concerns_ignore_the_proposer_bots_quotes_and_code() -> None:
    comments = [
        c("alice", "I know this needs more tests and documentation."),
        c("github-actions[bot]", "Please add tests: coverage dropped."),
        c("maint", "> I know this needs more tests and documentation\n\nSounds good!"),
        c("bob", "```python\n# TODO: add unit tests and docs\n```\nWorks for me."),
    ]
    got = review_thread(thread(comments, state="open"))
    assert got == {"state": "open_replied", "replied_from_other": True, "concerns": []}


def test_negated_scope_is_not_a_placement_concern() -> None:
    assert concerns_of("It fits our trainer well, so it is not out of scope.") == []


def test_other_is_only_a_fallback() -> None:
    body = "Our direction has changed: this now lives in trl.experimental rather than core."
    assert concerns_of(body) == ["placement"]


def test_rendered_review_thread_splits_speakers() -> None:
    body = (
        "pkg/loss.py:120\n```diff\n+    x = y\n```\n**maint**:\n"
        "The computation is done twice here; gating it behind an else would avoid the dead work.\n\n"
        "**alice** (author):\nGood catch, fixed.\n"
    )
    got = review_thread(thread([c("maint", body)], state="merged", kind="pull_request"))
    assert got["concerns"] == ["design_or_interface"]
    own = "pkg/loss.py:120\n**alice** (author):\nI refactored the interface and added docs."
    assert review_thread(thread([c("alice", own)], state="open"))["concerns"] == []


def test_review_comment_on_docs_is_a_docs_concern() -> None:
    body = "docs/guide.md\n```suggestion\nUse the new option to turn it on.\n```"
    got = review_thread(thread([c("maint", body)], state="open", kind="pull_request"))
    assert got["concerns"] == ["tests_or_docs"]


def test_concern_order_is_canonical() -> None:
    body = (
        "Please add docs. Do you have benchmark results? It adds a new config option that is "
        "hard to maintain."
    )
    got = concerns_of(body)
    assert got == [k for k in CONCERNS if k in got] and len(got) >= 3


def test_explain_gives_reasons() -> None:
    e = explain_review(thread(closed_by="stale[bot]"))
    assert e.state == "lapsed" and e.reasons == ["closed_by_bot"]


# --- hostile input: linear time (generous guard; figures go to benchmarks) -----------------


@pytest.mark.parametrize(
    "chunk",
    [
        "1.2.3.4 ",
        "[[((",
        "测试文档已经支持",
        "please add tests and docs. ",
        "> quoted\n",
        "`",
        "**a**:\n",
    ],
)
def test_large_hostile_comments_finish_quickly(chunk: str) -> None:
    body = (chunk * (65_536 // len(chunk) + 1))[:65_536]
    record = thread([c("maint", body), c("alice", body)], body=body)
    t0 = time.perf_counter()
    review_thread(record)
    assert time.perf_counter() - t0 < 5.0


# --- the shared dev set (skips without ../shared) ------------------------------------------


def test_dev_set_goals(shared_dir: Path) -> None:
    rows = [
        json.loads(line)
        for line in (shared_dir / "eval" / "dev" / "threads.jsonl").read_text("utf-8").splitlines()
    ]
    rows = [r for r in rows if "review_state" in r.get("labels", {})]
    state_ok = reply_ok = tp = fp = fn = 0
    for row in rows:
        got = review_thread(row)
        labels = row["labels"]
        state_ok += got["state"] == labels["review_state"]
        reply_ok += got["replied_from_other"] == labels["replied_from_other"]
        gold, found = set(labels["concerns"]), set(got["concerns"])
        tp, fp, fn = tp + len(gold & found), fp + len(found - gold), fn + len(gold - found)
    f1 = 2 * tp / (2 * tp + fp + fn)
    assert state_ok / len(rows) >= 0.90
    assert reply_ok / len(rows) >= 0.95
    assert f1 >= 0.75
