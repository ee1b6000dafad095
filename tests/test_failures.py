"""analyzers.failures: training-failure reports from the title and opening post.

Every thread here is written for this test (English and Chinese, each category, each negative
class); the real threads in ../shared are measured by benchmarks/evaluate.py, not copied."""

from __future__ import annotations

import time

import pytest

from analyzers.failures import CATEGORIES, classify_failure, threshold

POSITIVE = [
    # (title, body, category)
    ("Entropy collapses within 50 steps of GRPO",
     "I noticed during training that the policy entropy drops to almost zero and every sample "
     "looks the same.", "entropy_collapse"),
    ("训练Qwen2.5-7B时出现熵坍塌", "训练到第30步左右熵迅速下降，之后reward不再变化。", "entropy_collapse"),
    ("Entropy keeps increasing and outputs become gibberish",
     "After 200 steps the entropy rises steadily and the model produces random tokens.",
     "entropy_explosion"),
    ("熵持续上升", "训练过程中熵越来越高，输出变成乱码。", "entropy_explosion"),
    ("Loss suddenly becomes NaN and reward drops to 0",
     "Around global step 120 the policy loss became nan and the reward fell to zero.",
     "collapse_or_divergence"),
    ("reward突然下降到0，训练崩溃", "训练到一定步数后reward骤降，grad_norm飙升。", "collapse_or_divergence"),
    ("log_prob and old_log_prob differ in the on-policy setting",
     "With ppo_epochs=1 the two log probs should match but the difference grows every step.",
     "rollout_training_mismatch"),
    ("vLLM与训练端logprob不一致", "发现训推不一致，rollout得到的概率和actor重算的差异很大。",
     "rollout_training_mismatch"),
    ("Response length explodes after 300 steps",
     "The mean response length keeps growing until most responses hit the max length and are "
     "truncated.", "response_length_drift"),
    ("回复长度持续增长直到触顶", "训练后期回复长度暴涨，大量样本被截断。", "response_length_drift"),
    ("Training degrades with stale rollouts in async mode",
     "With fully async rollout the staleness gets too large and training becomes unstable.",
     "stale_rollout_data"),
    ("KL divergence keeps growing during PPO",
     "The reward converges but the KL gets bigger and bigger every step.", "kl_growth"),
    ("kl散度越来越大", "训练过程中kl持续上升，模型输出变差。", "kl_growth"),
    ("Router collapse when training a MoE model",
     "Training Qwen3-30B-A3B, the routing becomes unstable and a few experts take all tokens.",
     "moe_instability"),
    ("All rewards are 0 from the very first step",
     "Every rollout gets reward 0, so the advantage is zero for every group and nothing learns.",
     "groups_without_signal"),
    ("reward一直为0", "训练开始后所有样本的reward都是0，advantage全为0。", "groups_without_signal"),
    ("Training reward does not increase",
     "I trained for two epochs and the task reward does not increase at all; here is my wandb "
     "curve.", "other_failure"),
    ("无法复现论文中的效果", "按照脚本训练后，准确率下降，reward不涨。", "other_failure"),
    ("Low diversity in rollouts", "After 100 steps all samples are identical.", "entropy_collapse"),
    ("回复越来越短", "训练过程中回复越来越短。", "response_length_drift"),
    ("Reward doesn't increase", "I trained for 500 steps with the default recipe.", "other_failure"),
    ("token_mult_prob_error keeps increasing", "It passes 1.1 after 300 steps.", "rollout_training_mismatch"),
]  # fmt: skip

NEGATIVE = [
    # feature requests that name failures
    ("[Feature request] entropy regularization to prevent entropy collapse",
     "It would be great if the trainer could add an entropy bonus."),
    ("Support for routing replay?", "MoE training can be unstable because of router mismatch; "
     "do you have any plans to support routing replay?"),
    ("希望支持熵正则", "希望支持熵正则化，避免熵坍塌。"),
    # crashes, OOM, hangs, install
    ("RuntimeError when computing entropy",
     "```\nTraceback (most recent call last):\n  File \"x.py\", line 3\nRuntimeError: shape\n```"),
    ("CUDA out of memory with KL loss enabled", "error: CUDA out of memory. Tried to allocate 2 GiB"),
    ("Training hangs at step 3 with NCCL timeout", "The job is stuck and the watchdog fires."),
    ("ImportError: cannot import flash_attn", "pip install fails with ImportError."),
    ("安装vllm时报错", "pip install 之后 import 失败"),
    # how-to questions and docs
    ("How to set the KL coefficient?", "How can I set the kl coef for GRPO?"),
    ("Docs: explain entropy_coeff", "The documentation does not say what entropy loss does."),
    ("请问如何设置entropy_coeff", "请问如何设置熵系数？"),
    # plain discussion that mentions metrics
    ("Question about the entropy loss in GRPO",
     "The original GRPO loss has no entropy term; why is entropy_coeff 0.001 by default?"),
    # metric names, settings and remedies are not reports
    ("What does token_mult_prob_error mean?", "I see it in the logs."),
    ("输出长度的配置在哪里", "想修改输出长度"),
    ("怎么避免熵坍塌？", "有什么推荐的参数"),
    ("Train only on high entropy tokens", "The paper keeps the top 20% high-entropy tokens."),
    ("Where is the entropy computed?", "I cannot find the code."),
    # turning a knob up is not the metric going up
    ("Tuning GRPO", "I increased the entropy coeff to 0.01 and raised the kl penalty."),
]  # fmt: skip


@pytest.mark.parametrize("title,body,category", POSITIVE, ids=[p[2] + f"-{i}" for i, p in enumerate(POSITIVE)])
def test_reports_are_recognised_with_their_kind(title: str, body: str, category: str) -> None:
    result = classify_failure(title, body)
    assert result["is_failure_report"], result
    assert result["category"] == category, result
    assert result["categories"][0] == category
    assert result["confidence"] >= threshold()
    assert result["evidence"]


def test_every_category_is_covered_in_both_languages() -> None:
    assert {c for _, _, c in POSITIVE} == set(CATEGORIES)
    chinese = {c for t, _, c in POSITIVE if any("\u4e00" <= ch <= "\u9fff" for ch in t)}
    assert len(chinese) >= 7


@pytest.mark.parametrize("title,body", NEGATIVE, ids=[f"neg-{i}" for i in range(len(NEGATIVE))])
def test_non_reports_are_not_flagged(title: str, body: str) -> None:
    result = classify_failure(title, body)
    assert not result["is_failure_report"], result
    assert result["category"] is None and result["categories"] == []


def test_counter_evidence_names_the_other_class() -> None:
    result = classify_failure("[Feature request] entropy bonus", "Add an entropy bonus.")
    assert any(c.startswith("feature_request") for c in result["counter_evidence"])
    assert all(not e.startswith("feature_request") for e in result["evidence"])


def test_pull_requests_are_never_reports() -> None:
    result = classify_failure("Fix entropy collapse in GRPO", "Entropy collapsed, this fixes it.",
                              kind="pull_request")
    assert not result["is_failure_report"]


def test_abstains_on_weak_evidence() -> None:
    # one vague mention, no observation: below the threshold
    result = classify_failure("Some thoughts", "The entropy term is interesting.")
    assert not result["is_failure_report"]
    assert result["confidence"] < threshold()


def test_negated_change_does_not_count() -> None:
    result = classify_failure("Run summary", "The entropy does not drop and the KL does not grow.")
    assert not result["is_failure_report"]


def test_code_blocks_are_not_prose_but_logs_count() -> None:
    # Words in a pasted config are not cues...
    config = "```yaml\nentropy_collapse_guard: true\nkl_growth_limit: 3\n```"
    assert not classify_failure("My config", config)["is_failure_report"]
    # ...but a logged metric that falls a lot is training evidence.
    log = "\n".join(f"step {i} entropy: {v}" for i, v in enumerate([0.9, 0.5, 0.2, 0.05, 0.01]))
    result = classify_failure("Entropy problem after a few steps", f"My run:\n```\n{log}\n```")
    assert result["is_failure_report"] and result["category"] == "entropy_collapse"


def test_unfenced_config_lines_are_not_prose() -> None:
    body = (
        "My script:\n"
        "    actor_rollout_ref.actor.entropy_coeff=0 \\\n"
        "--use_kl_loss \\\n"
        "kl_loss_type: low_var_kl\n"
        "data.truncation='error'\n"
        "max_response_length: 8192\n"
    )
    assert not classify_failure("My GRPO run", body)["is_failure_report"]


def test_none_and_empty_inputs() -> None:
    for title, body in ((None, None), ("", ""), ("x", None)):
        result = classify_failure(title, body)
        assert not result["is_failure_report"] and result["category"] is None
        assert result["evidence"] == [] and result["confidence"] == 0.0


@pytest.mark.parametrize(
    "body",
    ["9" * 65536, "." * 65536, "[" * 65536, "(" * 32768 + ")" * 32768, "熵" * 65536,
     "entropy " * 8192, "<!--" * 16384, "```\n" * 16384, "entropy: 1." * 5000, "熵下降" * 20000],
    ids=["digits", "dots", "brackets", "parens", "cjk", "words", "comments", "fences", "log", "zh-pairs"],
)  # fmt: skip
def test_hostile_bodies_stay_fast(body: str) -> None:
    start = time.perf_counter()
    classify_failure("Entropy collapse " * 50, body)
    assert time.perf_counter() - start < 5.0  # generous guard; figures in benchmarks/
