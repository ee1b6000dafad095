"""Failure KIND evidence (analyzers/failures.py, the kind rows of failure_patterns.yaml): short
posts written for the project. Grouped-CV figures on the real threads are in benchmarks/."""

from __future__ import annotations

import pytest

from analyzers.failures import CATEGORIES, failure_features, rank_kinds
from analyzers.learned import LinearModel
from tests.work import assert_linear_work


def _sure_of(kind: str) -> LinearModel:
    """A kind model that is sure of `kind` whatever the post says."""
    return LinearModel("kinds", sorted(CATEGORIES), {c: {} for c in CATEGORIES},
                       {c: (5.0 if c == kind else 0.0) for c in CATEGORIES})  # fmt: skip


def _fenced(lines: list[str]) -> str:
    return "My run:\n```\n" + "\n".join(lines) + "\n```"


def test_a_log_of_groups_scoring_alike_names_groups_without_signal() -> None:
    # GUIDELINES: groups with zero advantage. TRL-style logs print it as a reward std of 0 or
    # as the share of groups at zero std; the kind model may be sure of a collapse.
    zero_std = _fenced([f"{{'loss': 0.0, 'reward': 0.0, 'reward_std': 0.0, 'step': {i}}}" for i in range(3)])
    share = _fenced(["{'loss': 0.0, 'reward': 0.97, 'frac_reward_zero_std': 0.9}"])
    for body in (zero_std, share):
        features = failure_features("Reward does not move", body)
        assert features.vector.get("groups_without_signal|log") == 1.0, body
        assert rank_kinds(features, _sure_of("collapse_or_divergence"))[0][0] == "groups_without_signal"
    # Groups that do vary (most stds above 0, few groups at zero std): the model decides.
    varied = _fenced([
        "{'reward': 0.3, 'reward_std': 0.25, 'frac_reward_zero_std': 0.1}",
        "{'reward': 0.3, 'reward_std': 0.0, 'frac_reward_zero_std': 0.2}",
        "{'reward': 0.31, 'reward_std': 0.27, 'frac_reward_zero_std': 0.1}",
    ])  # fmt: skip
    features = failure_features("Reward does not move", varied)
    assert "groups_without_signal|log" not in features.vector
    assert rank_kinds(features, _sure_of("collapse_or_divergence"))[0][0] == "collapse_or_divergence"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("The entropy loss keeps showing an upward trend.", "entropy_explosion"),
        ("The kl loss shows an upward trend after step 200.", "kl_growth"),
        ("The policy learned to exploit the reward model.", "other_failure"),
        ("We see mode collapse after 200 steps.", "entropy_collapse"),
        ("The model stopped exploring and every sample is the same.", "entropy_collapse"),
        ("训练过程中熵一路走高。", "entropy_explosion"),
        ("训练过程中熵持续走低。", "entropy_collapse"),
        ("kl一直在涨，停不下来。", "kl_growth"),
        ("模型学会了钻空子，奖励很高但回答没用。", "other_failure"),
        ("专家负载失衡，loss出现尖峰。", "moe_instability"),
    ],
)
def test_ordinary_wording_of_a_kind_is_evidence_for_it(text: str, kind: str) -> None:
    assert failure_features("Training problem", text).vector.get(f"ev:{kind}"), text


def test_a_remedy_knob_is_no_kl_growth() -> None:
    # "increasing the KL penalty" is a setting changed, not the KL growing.
    vector = failure_features("Entropy rises", "I tried increasing the KL penalty and lowering the lr.").vector
    assert "ev:kl_growth" not in vector


@pytest.mark.parametrize(
    "body",
    ["```\n" + "reward_std: 0.0 " * 4000 + "\n```", "```\n" + "zero_std_ratio=1 " * 4000 + "\n```",
     "```\n" + "reward_std" * 6000 + "\n```", "frac_reward_zero_std: 9" * 2500],
    ids=["zero-stds", "shares", "keys", "unfenced"],
)  # fmt: skip
def test_zero_std_logs_grow_linearly(body: str) -> None:
    assert_linear_work(lambda text: failure_features("Reward flat", text), body)


@pytest.mark.parametrize(
    "text",
    [
        "The pg_loss is negative at most steps and then goes sky-high around step 300.",
        "Why is the policy loss negative? The reward drops after step 300.",
        "The actor loss becomes negative and the reward collapses.",
    ],
)
def test_a_negative_policy_gradient_loss_is_no_impossible_value(text: str) -> None:
    # A policy-gradient loss is advantage-weighted: negative is a value it may take, not
    # other_failure's impossible value (a negative KL or DPO loss); the symptom stays a feature.
    vector = failure_features("Training problem", text).vector
    assert not vector.get("ev:other_failure"), text
    assert vector.get("other_failure|bsigned"), text
    assert vector.get("sym:loss|negative"), text


@pytest.mark.parametrize(
    "text",
    ["The DPO loss is negative after 100 steps.", "The KL becomes negative after step 50.", "We get a negative loss with KTO."],
)
def test_a_loss_that_cannot_be_negative_still_names_other_failure(text: str) -> None:
    assert failure_features("Training problem", text).vector.get("ev:other_failure"), text


def test_a_negative_policy_gradient_loss_in_chinese_is_no_impossible_value() -> None:
    signed = failure_features("训练问题", "训练到300步后pg_loss为负，奖励也在下降。").vector
    assert not signed.get("ev:other_failure") and signed.get("other_failure|bzh_signed")
    dpo = failure_features("训练问题", "训练到300步后dpo的loss为负。").vector
    assert dpo.get("ev:other_failure")


# kind9: plain wording of "which metric moves how", written per kind for the project.
@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("The policy gets very confident and the outputs lose all variety.", "entropy_collapse"),
        ("The samples barely vary any more after step 100.", "entropy_collapse"),
        ("熵一直在降，回答都一样。", "entropy_collapse"),
        ("熵越来越大，模型开始胡言乱语。", "entropy_explosion"),
        ("The reward gets worse every epoch.", "collapse_or_divergence"),
        ("After step 600 the reward crashes.", "collapse_or_divergence"),
        ("训练到一半奖励直接崩掉了。", "collapse_or_divergence"),
        ("Rollout logprobs and training logprobs are far apart even at step 0.", "rollout_training_mismatch"),
        ("vllm算出来的logprob和训练端的不一样。", "rollout_training_mismatch"),
        ("Mean response length doubles every 50 steps.", "response_length_drift"),
        ("The rollouts come from an older policy and training becomes unstable.", "stale_rollout_data"),
        ("Samples are generated by weights several updates behind the trainer.", "stale_rollout_data"),
        ("The batch was produced by a policy many steps old.", "stale_rollout_data"),
        ("rollout数据来自旧策略，训练不稳定。", "stale_rollout_data"),
        ("KL keeps climbing.", "kl_growth"),
        ("The load balancing loss increases every step.", "moe_instability"),
        ("专家负载越来越不均匀。", "moe_instability"),
        ("The policy found a loophole in the verifier.", "other_failure"),
    ],
)  # fmt: skip
def test_plain_wording_of_a_metric_move_is_evidence_for_its_kind(text: str, kind: str) -> None:
    assert failure_features("Training problem", text).vector.get(f"ev:{kind}"), text


def test_a_nan_at_the_end_of_a_sentence_is_read() -> None:
    # spaCy keeps "NaN." one token (a capital before the period).
    assert failure_features("Training problem", "During training the loss is NaN. How can I fix this?").vector.get("sym:loss|nan")


def _unsure() -> LinearModel:
    """A kind model with no weights: every kind equally likely (below KIND_MODEL_SURE)."""
    return LinearModel("kinds", sorted(CATEGORIES), {c: {} for c in CATEGORIES}, {c: 0.0 for c in CATEGORIES})


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("The kl penalty term keeps rising throughout training.", "kl_growth"),
        ("The answers shrink to a few tokens after 100 steps.", "response_length_drift"),
        ("The entropy becomes small within 30 steps.", "entropy_collapse"),
        ("The aux loss of the router keeps increasing and the reward falls.", "moe_instability"),
    ],
)
def test_a_symptom_pair_names_its_kind_when_the_model_is_unsure(text: str, kind: str) -> None:
    # symptom_kinds: a metric's move that names a kind counts in the lexicon's leading kind where
    # the kind's own subjects and changes formed no pair.
    features = failure_features("Training problem", text)
    assert not features.vector.get(f"ev:{kind}"), text
    assert rank_kinds(features, _unsure())[0][0] == kind, text


def test_a_generic_move_names_no_specific_kind() -> None:
    # A reward that drops names no kind by itself: the lead is what the lexicon says.
    features = failure_features("Training problem", "The reward drops after step 300 and the loss is NaN.")
    assert rank_kinds(features, _unsure())[0][0] == "collapse_or_divergence"
