"""analyzers.failures: training-failure reports from the title and opening post.

Every thread here is written for this test (English and Chinese, each category, each negative
class); the real threads in ../shared are measured by benchmarks/evaluate.py (grouped
cross-validation), not copied. The verdicts come from the fitted models in
analyzers/models/: these tests pin what they must get right, not their exact scores."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers import failures, nlp
from analyzers.failures import (
    CATEGORIES,
    MAX_FOLLOW_UP,
    classify_failure,
    failure_features,
    failure_models,
    follow_up_features,
    rank_kinds,
    threshold,
)
from analyzers.learned import LinearModel
from tests.work import assert_linear_work

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
    ("回复长度持续增长直到触顶", "训练后期回复长度暴涨，大量样本被截断。", "response_length_drift"),
    ("KL divergence keeps growing during PPO",
     "The reward converges but the KL gets bigger and bigger every step.", "kl_growth"),
    ("kl散度越来越大", "训练过程中kl持续上升，模型输出变差。", "kl_growth"),
    # "does not improve, cause not named" is collapse_or_divergence (eval/GUIDELINES.md)
    ("Training reward does not increase",
     "I trained for two epochs and the task reward does not increase at all; here is my wandb "
     "curve.", "collapse_or_divergence"),
    ("Reward doesn't increase", "I trained for 500 steps with the default recipe.", "collapse_or_divergence"),
    ("无法复现论文中的效果", "按照脚本训练后，准确率下降，reward不涨。", "other_failure"),
    ("回复越来越短", "训练过程中回复越来越短。", "response_length_drift"),
    ("token_mult_prob_error keeps increasing", "It passes 1.1 after 300 steps.", "rollout_training_mismatch"),
]  # fmt: skip

# Reports of kinds with next to no labelled threads. A named cause (stale rollouts, MoE
# routing) is the kind, however much of a collapse the words also describe (GUIDELINES:
# collapse_or_divergence is a collapse whose cause is not named).
REPORTS_OF_NAMED_CAUSES = [
    ("Training degrades with stale rollouts in async mode",
     "With fully async rollout the staleness gets too large and training becomes unstable.",
     "stale_rollout_data"),
    ("Router collapse when training a MoE model",
     "Training Qwen3-30B-A3B, the routing becomes unstable and a few experts take all tokens.",
     "moe_instability"),
    ("异步模式下过期数据太多，训练崩了", "异步训练时很多样本来自旧策略，策略滞后越来越严重，训练到300步奖励突然下降。",
     "stale_rollout_data"),
    ("MoE训练中路由不一致导致训练不稳定", "推理和训练时选中的专家不一样，路由不一致，训练到150步后loss开始震荡，奖励下降。",
     "moe_instability"),
]  # fmt: skip

# "All rewards are 0" is labelled either groups_without_signal or collapse_or_divergence:
# detection is pinned, the kind is only offered among the categories.
REPORTS_OF_RARE_KINDS = [
    ("All rewards are 0 from the very first step",
     "Every rollout gets reward 0, so the advantage is zero for every group and nothing learns."),
    ("reward一直为0", "训练开始后所有样本的reward都是0，advantage全为0。"),
]  # fmt: skip

# The examples of reports stated in ordinary words (issue 9), none of which names a
# failure: a metric and what it did.
ORDINARY_WORDS = [
    ("GRPO reward does not grow",
     "I ran GRPO on Qwen2.5-3B for 400 steps. The mean reward does not grow at all, it stays "
     "around 0.2 the whole run.", "collapse_or_divergence"),
    ("Large log-prob difference between vLLM and the trainer",
     "During training the difference between the rollout log probs and the recomputed log "
     "probs is large, about 0.5 on average.", "rollout_training_mismatch"),
    ("Response length keeps shrinking",
     "After step 100 the response length keeps shrinking and the answers become one line.",
     "response_length_drift"),
    ("Reward stuck at 0.5", "The reward is stuck at 0.5 from step 20 on, here is my wandb curve.",
     "collapse_or_divergence"),
    ("Loss is zero but rewards vary",
     "The policy loss is exactly zero at every step while the rewards still vary between 0 and 1.",
     None),
    ("训练时reward一直不涨", "用GRPO训练了300步，reward一直不涨，维持在0.1左右。", "collapse_or_divergence"),
    ("回复长度越来越短", "训练到100步之后回复长度越来越短，最后只剩一句话。", "response_length_drift"),
    ("奖励卡在0.5不变", "从第20步开始奖励一直是0.5，没有变化。", "collapse_or_divergence"),
    ("loss一直为0但是reward在变化", "训练过程中loss一直为0，reward却在0和1之间波动。", None),
    ("vLLM和训练引擎的logprob差异很大", "训练中rollout的logprob和actor重新计算的logprob差异很大。",
     "rollout_training_mismatch"),
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


def _decision() -> float:
    return failure_models().report.threshold


@pytest.mark.parametrize("title,body,category", POSITIVE, ids=[p[2] + f"-{i}" for i, p in enumerate(POSITIVE)])
def test_reports_are_recognised_with_their_kind(title: str, body: str, category: str) -> None:
    result = classify_failure(title, body)
    assert result["is_failure_report"], result
    assert result["category"] == category, result
    assert result["categories"][0] == category
    assert result["confidence"] >= _decision()
    assert result["evidence"]


@pytest.mark.parametrize("title,body,category", REPORTS_OF_NAMED_CAUSES, ids=["stale", "moe", "stale-zh", "moe-zh"])
def test_a_named_cause_is_the_kind(title: str, body: str, category: str) -> None:
    result = classify_failure(title, body)
    assert result["is_failure_report"], result
    assert result["category"] == category, result


@pytest.mark.parametrize("title,body", REPORTS_OF_RARE_KINDS, ids=["zero-en", "zero-zh"])
def test_reports_of_rare_kinds_are_recognised(title: str, body: str) -> None:
    result = classify_failure(title, body)
    assert result["is_failure_report"], result
    assert result["category"] in CATEGORIES and result["evidence"]


@pytest.mark.parametrize("title,body,category", ORDINARY_WORDS, ids=[f"ordinary-{i}" for i in range(len(ORDINARY_WORDS))])
def test_reports_in_ordinary_words(title: str, body: str, category: str | None) -> None:
    result = classify_failure(title, body)
    assert result["is_failure_report"], result
    if category:
        assert result["category"] == category, result


def test_symptom_grammar_reads_ordinary_words() -> None:
    def sym(title: str, body: str) -> set[str]:
        vector = failure_features(title, body).vector
        return {k for k in vector if k.startswith("sym:") and "|" in k and not k.startswith("sym:any")}

    assert "sym:reward|not_up" in sym("", "The reward does not grow.")
    assert "sym:reward|not_up" in sym("", "The reward no longer increases after step 30.")
    assert "sym:entropy|not_down" in sym("", "The entropy does not drop.")
    assert "sym:length|down" in sym("", "The response length keeps shrinking.")
    assert "sym:reward|flat" in sym("", "The reward is stuck at 0.5.")
    assert "sym:loss|bad_value" in sym("", "The loss is 0 at every step.")
    assert "sym:reward|flat" in sym("", "训练后reward不上升")
    assert "sym:reward|not_up" in sym("", "训练后reward没上升")
    assert "sym:length|down" in sym("", "回复长度越训越短")
    assert "sym:loss|bad_value" in sym("", "loss一直为0")
    assert sym("", "The reward function is defined in reward.py.") == set()


def test_wrong_values_are_told_apart_and_pooled() -> None:
    def sym(body: str) -> set[str]:
        return {k for k in failure_features("", body).vector if k.startswith("sym:") and not k.startswith("sym:any")}

    assert {"sym:kl|negative", "sym:kl|bad_value"} <= sym("The KL is negative after step 20.")
    assert {"sym:loss|zero", "sym:loss|bad_value"} <= sym("The loss is 0 at every step.")
    assert {"sym:loss|nan", "sym:loss|bad_value"} <= sym("The policy loss becomes nan.")
    assert {"sym:grad|zero"} <= sym("The grad norm stays at zero.")
    assert {"sym:kl|negative"} <= sym("kl散度为负")
    # "error" names a crash, not a wrong value
    assert not any(k.endswith("|bad_value") for k in sym("The training error shows up when I launch it."))
    assert not any(k.endswith("|bad_value") for k in sym("训练出现错误"))


def test_decision_and_comment_thresholds_come_from_the_model_file() -> None:
    report = failure_models().report
    assert 0.0 < report.threshold <= threshold() < 1.0
    assert report.thresholds["comment"] == threshold()
    figures = report.meta["figures"]
    assert figures["threshold"] == report.threshold and figures["comment_threshold"] == threshold()


def test_every_category_is_covered_in_both_languages() -> None:
    covered = {c for _, _, c in POSITIVE}
    assert covered | {"stale_rollout_data", "moe_instability", "groups_without_signal"} == set(CATEGORIES)
    chinese = {c for t, _, c in ORDINARY_WORDS + POSITIVE if c and any("\u4e00" <= ch <= "\u9fff" for ch in t)}
    assert len(chinese) >= 6


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
    # one vague mention, no observation: below the decision threshold
    result = classify_failure("Some thoughts", "The entropy term is interesting.")
    assert not result["is_failure_report"]
    assert result["confidence"] < _decision()


def test_negated_change_does_not_count() -> None:
    result = classify_failure("Run summary", "The entropy does not drop and the KL does not grow.")
    assert not result["is_failure_report"]


def test_code_blocks_are_not_prose_but_logs_count() -> None:
    # Words in a pasted config are not cues...
    config = "```yaml\nentropy_collapse_guard: true\nkl_growth_limit: 3\n```"
    assert not classify_failure("My config", config)["is_failure_report"]
    # ...but a logged metric that falls a lot is training evidence (a feature of both models).
    log = "\n".join(f"step {i} entropy: {v}" for i, v in enumerate([0.9, 0.5, 0.2, 0.05, 0.01]))
    vector = failure_features("Entropy problem after a few steps", f"My run:\n```\n{log}\n```").vector
    assert vector["entropy_collapse|log"] == 1.0 and vector["log:entropy"] == 1.0
    assert "entropy_collapse|log" not in failure_features("My config", config).vector


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


def _speaker(title: str, body: str) -> set[str]:
    return {k for k in failure_features(title, body).vector if k.startswith("speaker:")}


def test_speaker_features_tell_an_own_run_from_a_pitch_a_question_and_a_code_analysis() -> None:
    own = _speaker("Reward falls after a while",
                   "I trained a 7B model with GRPO and after 300 steps the reward drops to zero.")
    assert {"speaker:own_run", "speaker:own_run_and_cue", "speaker:own_run_and_run"} <= own
    assert "speaker:pitch_only" not in own and "speaker:question_title" not in own
    zh = _speaker("奖励下降", "我在训练Qwen的时候，训练到300步奖励突然下降。")
    assert "speaker:own_run_and_cue" in zh
    pitch = _speaker("A regulariser against entropy collapse",
                     "We propose a new loss that keeps the entropy high; the paper is on arXiv.")
    assert {"speaker:pitch", "speaker:pitch_only"} <= pitch and "speaker:own_run" not in pitch
    question = _speaker("Why does the KL grow with this estimator?", "Is that expected? Which one is right?")
    assert {"speaker:question_title", "speaker:question_not_own_run", "speaker:question_marks"} <= question
    # Reading the code is not running it: 3 labelled questions, none a report, said "I tried to understand".
    reading = _speaker("What does this metric mean?", "I am trying to understand how the clip ratio is computed.")
    assert "speaker:own_run" not in reading
    assert "speaker:own_run" in _speaker("Reward is flat", "I tried to train a 7B model with GRPO.")
    code = _speaker("Advantage std looks wrong",
                    "See https://github.com/o/r/blob/main/algos.py#L120: the std is taken over the batch.")
    assert "speaker:code_without_run" in code
    assert "speaker:code_without_run" not in _speaker(
        "Advantage std looks wrong", "After 200 steps the reward is flat; see algos.py line 120.")


def _about(title: str, body: str) -> set[str]:
    return {k for k in failure_features(title, body).vector if k.startswith("about:")}


def test_garbled_output_at_inference_is_told_from_garbled_output_later_in_training() -> None:
    inference = _about("Garbled answers", "Before any training step the rollouts are already garbled text.")
    assert "about:degenerate_at_inference" in inference
    converted = _about("Answers repeat",
                       "After I convert the checkpoint with model_merger.sh the model repeats the question.")
    assert "about:degenerate_at_inference" in converted
    later = _about("Garbled answers",
                   "The answers look normal at the beginning, but after 300 steps they turn into gibberish.")
    assert "about:degenerate_later_in_training" in later and "about:degenerate_at_inference" not in later
    assert "about:degenerate_at_inference" in _about("推理乱码", "还没开始训练，第一次推理就全是乱码。")


def test_a_run_that_went_well_at_first_and_then_changed_is_named() -> None:
    later = "about:normal_then_changed"
    assert later in _about("Training collapsed", "The run proceeded normally up to step 600, after which it suddenly collapsed.")
    assert later in _about("回答变成感叹号", "训练前期一切正常，然后突然所有回答都变成了感叹号。")
    assert later not in _about("Reward curve", "The reward curve looks normal and the answers are fine.")
    assert later not in _about("Fine-tuning question", "I am fine-tuning Qwen, then I evaluate it on GSM8K.")


def test_hangs_meaning_questions_and_exceptions_are_named() -> None:
    hang = _about("Training hangs at step 3", "No logs for 2 hours and no error, GPU utilisation is 0.")
    assert {"about:hang", "about:hang_for_time"} <= hang
    assert "about:hang" not in _about("Reward is stuck at 0.2", "The reward is stuck at 0.2 for 500 steps.")
    assert "about:hang" not in _about("奖励卡在0.5", "从第20步开始奖励一直卡在0.5，没有变化。")  # a value stuck, not a hang
    assert "about:hang" in _about("训练卡在第3步", "训练卡在rollout阶段不动了，没有报错。")
    meaning = _about("pg_clipfrac", "My curves look fine. What does pg_clipfrac mean?")
    assert {"about:meaning_question", "about:meaning_question_no_symptom", "about:asks_without_symptom"} <= meaning
    asks = _about("Reward drops", "After 200 steps the reward drops to zero. Is this normal?")
    assert {"about:asks_with_symptom", "about:meaning_question_and_symptom"} <= asks
    assert "about:failure_verb" in _about("Training collapsion", "Around step 600 it suddenly collapsed.")
    assert "about:failure_verb" in _about("训练问题", "跑到300步就训崩了。")
    assert "about:exception_in_title" in _about("ActorDiedError when starting the trainer", "See the log.")


def test_expected_behaviour_is_a_meaning_question_only_when_asked() -> None:
    assert "about:meaning_question" in _about("Entropy", "The entropy rises. Is this expected behavior?")
    heading = _about("Reward is flat", "### Expected behavior\nThe reward should grow.\n### Actual\nIt stays flat.")
    assert "about:meaning_question" not in heading
    stated = _about("Entropy", "In my run the entropy decreases, which matches the expected behavior of PPO.")
    assert "about:meaning_question" not in stated


def test_asking_how_a_method_is_done_is_told_from_asking_for_a_fix() -> None:
    assert "about:asks_how" in _about("KL scale", "How did you keep the KL divergence that small during training?")
    assert "about:asks_how" in _about("About RL", "Why not just train with a KL term from the start?")
    assert "about:asks_how" in _about("训练曲线", "如何确定当前训练是否稳定？")
    assert "about:asks_how" not in _about("Reward drops", "After 200 steps the reward drops. How do we fix this?")
    assert "about:asks_how" not in _about("Reward drops", "After 200 steps the reward drops to zero.")


def test_a_post_that_names_no_metric_misbehaving_says_so() -> None:
    def flag(title: str, body: str) -> bool:
        return "no_failure_cue" in failure_features(title, body).vector

    assert flag("Loading weights is slow", "My run takes 30 minutes to load the checkpoint.\n\n![img](a.png)")
    assert flag("Run summary", "The entropy does not drop and the KL does not grow.")  # healthy moves only
    assert not flag("Reward drops", "After 200 steps the reward drops to zero.")
    assert not flag("熵坍塌", "训练到100步熵坍塌了。")


def test_how_fast_a_run_goes_is_read_but_is_no_symptom() -> None:
    vector = failure_features(
        "Throughput halves with packing", "After 100 steps the tokens per second drop from 4k to 2k and the step time keeps increasing.",
    ).vector  # fmt: skip
    assert {"sym:speed|down", "sym:speed|up"} <= set(vector)
    assert "no_failure_cue" in vector and "run_and_symptom" not in vector
    assert not any(k.startswith("sym:any|") for k in vector)
    assert "sym:speed|down" in failure_features("rollout 很慢", "rollout 阶段速度越来越慢，GPU 利用率下降。").vector
    # a training metric next to it still counts
    both = failure_features("Slow and broken", "After 100 steps the throughput drops and the reward drops to zero.").vector
    assert "run_and_symptom" in both and "no_failure_cue" not in both


def test_a_nan_in_an_exception_message_is_a_crash_not_a_metric() -> None:
    def pairs(title: str, body: str) -> set[str]:
        return {k for k in failure_features(title, body).vector if k.startswith("sym:")}

    assert pairs("ValueError: reward tensor contains NaN", "The reward function returns None for some samples.") == set()
    categories = failure_features("ValueError: reward tensor contains NaN", "It stops at once.").vector
    assert "collapse_or_divergence|tpair" not in categories and "ev:collapse_or_divergence" not in categories
    assert pairs("Crash", "At the first rollout it fails with RuntimeError: probability tensor contains inf or nan.") == set()
    # a NaN loss told in its own sentence is still one, a crash after it notwithstanding
    assert "sym:loss|nan" in pairs("Loss becomes NaN", "After 300 steps the loss becomes NaN. Then it stops with RuntimeError: CUDA error.")


def test_a_run_with_healthy_moves_only_is_no_run_with_a_symptom() -> None:
    def conjunctions(title: str, body: str) -> set[str]:
        vector = failure_features(title, body).vector
        return {k for k in ("run_and_symptom", "run_and_category_cue", "speaker:own_run_and_cue") if k in vector}

    assert conjunctions("My run", "I trained for 300 steps and the reward rises steadily.") == set()
    assert conjunctions("My run", "I trained for 300 steps and the KL does not grow.") == set()
    assert {"run_and_symptom", "speaker:own_run_and_cue"} <= conjunctions(
        "My run", "I trained for 300 steps and then the reward drops to zero.")
    assert "run_and_category_cue" in conjunctions("My run", "I trained for 300 steps and saw an entropy collapse.")


def test_grammar_reads_where_a_curve_starts_what_is_said_not_to_happen_and_the_nearest_move() -> None:
    def pairs(title: str, body: str) -> set[str]:
        return {k for k in failure_features(title, body).vector if k.startswith("sym:") and not k.startswith("sym:any")}

    # a 0 a curve starts from is no wrong value; a 0 it ends at still is
    assert "sym:kl|zero" not in pairs("KL", "The KL grows from 0 to 0.04 over 300 steps.")
    assert "sym:kl|zero" not in pairs("KL", "KL 从 0 开始慢慢上升。")
    assert "sym:loss|zero" in pairs("Loss", "After 100 steps the loss drops to 0.")
    assert "sym:loss|negative" in pairs("Loss", "The loss is below zero.")
    # a NaN, a spike or an instability said not to happen is no move
    assert not {"sym:grad|unstable", "sym:loss|nan"} & pairs("Run", "There are no spikes in the grad norm and the loss has no NaN.")
    assert "sym:grad|unstable" in pairs("Run", "The grad norm spikes every few steps.")
    # trend words are moves
    assert {"sym:entropy|down", "sym:kl|up"} <= pairs("Trends", "The entropy trends down and the KL shows an upward trend.")
    # Chinese: the move nearest its metric, not the first of the list (熵 falls, the reward rises)
    zh = pairs("熵缓慢下降,奖励稳步上升", "")
    assert {"sym:entropy|down", "sym:reward|up"} <= zh and "sym:entropy|up" not in zh
    assert "sym:reward|up" in pairs("准确率提高了", "")
    assert not pairs("吞吐", "训练阶段正常。请问怎么提高吞吐？")  # what the asker wants is no move


def test_healthy_moves_next_to_an_improving_reward_show_no_symptom() -> None:
    # GUIDELINES: a question over healthy curves is no report. Moves healthy learning makes
    # (entropy down, length up, KL up from 0, loss down) next to a reward that improves, with
    # nothing named wrong, are read (the pairs stay) but show no symptom.
    def read(title: str, body: str) -> dict[str, float]:
        return failure_features(title, body).vector

    healthy = read("Entropy going down bit by bit, fine?",
                   "Over 500 steps the entropy went from 0.9 to 0.7 while the reward rose from 0.3 to 0.5. Fine?")
    assert "sym:entropy|down" in healthy and "sym:reward|up" in healthy
    assert {"no_failure_cue", "about:asks_without_symptom"} <= set(healthy)
    assert not {"run_and_symptom", "run_and_category_cue", "about:asks_with_symptom"} & set(healthy)
    assert "about:asks_without_symptom" in read(
        "Longer answers", "My answers got longer over 400 steps and the accuracy keeps improving. Should I add a length penalty?")
    assert "about:asks_without_symptom" in read("熵在下降", "训练300步，熵从0.8降到0.6，奖励在上升。这样可以吗？")
    # a negated severity word says nothing is wrong
    assert "no_failure_cue" in read("Curves", "The reward rises and the grad norm goes down, with no spikes at all.")
    # a negative policy loss next to an improving reward is the advantage-weighted loss, no
    # impossible value; a negative KL still is one, and so is a negative loss of a reward exploited
    assert "no_failure_cue" in read("Negative loss", "The policy loss is below zero on most steps while the reward goes up. A bug?")
    assert "no_failure_cue" not in read("Negative KL", "The KL is negative on most steps while the reward goes up. A bug?")
    assert "no_failure_cue" not in read(
        "Negative loss", "The loss is negative while the reward goes up: the policy exploits the format reward.")


@pytest.mark.parametrize(
    "title, body",
    [
        # no improvement named: an entropy falling may be a collapse
        ("Entropy going down, fine?", "Over 500 steps the entropy went from 0.9 to 0.7. Fine?"),
        # a severity word, a tenfold move, a run that changed, a failure named, the reward falling
        ("Entropy going down, fine?", "The entropy drops fast while the reward rises. Fine?"),
        ("Entropy going down, fine?", "The entropy went from 0.9 to 0.02 while the reward rose. Fine?"),
        ("KL going up, fine?", "The reward went up at first while the KL increased. Fine?"),
        ("Length going up, fine?", "The reward rises and the length grows until it is truncated. Fine?"),
        ("Entropy going down, fine?", "The reward rises, the entropy decreases and the loss becomes NaN. Fine?"),
        ("熵在下降", "奖励上升，熵下降，准确率下降了。正常吗？"),
    ],
)  # fmt: skip
def test_moves_with_anything_wrong_named_still_show_a_symptom(title: str, body: str) -> None:
    vector = failure_features(title, body).vector
    assert "about:asks_with_symptom" in vector and "no_failure_cue" not in vector


def test_healthy_curve_questions_are_no_reports_and_their_unhealthy_twins_are() -> None:
    for title, body in (
        ("Is the entropy dropping a bit normal?",
         "I train with GRPO for 600 steps: the entropy declines from 1.0 to 0.8 and the reward improves from 0.4 to 0.6. "
         "Is this normal?"),
        ("奖励在涨，熵缓慢降低，正常吗", "训练到400步，奖励从0.3上升到0.5，熵从0.9降到0.75。请问正常吗？"),
    ):  # fmt: skip
        result = classify_failure(title, body)
        assert not result["is_failure_report"] and result["confidence"] < threshold(), title
    twin = classify_failure(
        "Is the entropy dropping normal?",
        "I train with GRPO: after 60 steps the entropy collapses from 1.0 to 0.01 and the reward does not improve. Is this normal?",
    )  # fmt: skip
    assert twin["is_failure_report"]


def test_train_versus_eval_and_groups_scoring_alike() -> None:
    assert "about:train_vs_eval" in _about(
        "Strange results", "The training reward keeps increasing but the validation accuracy goes down.")
    assert "about:train_vs_eval" not in _about("Reward", "The training reward keeps increasing.")
    assert "about:group_same_score" in _about(
        "No signal", "In most groups all responses get the same reward, so nothing is learned.")
    assert "about:group_same_score" in _about("优势为0", "组内回答全对或者全错，奖励都一样。")


def test_a_decimal_is_no_zero_score_of_a_group() -> None:
    # "0.25" and "1.0" are values, not a zero: groups whose reward std is 0.25 do have signal.
    assert "about:group_same_score" not in _about(
        "Reward flat at 0.3", "The reward_std is around 0.25 so the groups do have variance.")
    assert "about:group_same_score" not in _about("Reward 1.0", "Each group reaches a mean reward of 1.0 quickly.")
    assert "about:group_same_score" in _about("No signal", "In every group the reward std is 0.0 after step 100.")
    assert "about:group_same_score" in _about("No signal", "The advantages of each group are 0.")
    assert "about:group_same_score" not in _about("训练问题", "组内奖励为0.8左右。")
    assert "about:group_same_score" in _about("训练问题", "组内奖励都为0。")


def test_a_chinese_decimal_is_no_zero_value() -> None:
    def read(body: str) -> set[str]:
        return {k for k in failure_features("训练问题", body).vector if k.startswith(("sym:", "groups_without_signal|"))}

    assert not any("zero" in k or k.startswith("groups") for k in read("优势一直为0.3左右。"))
    assert "groups_without_signal|bzh_pair" in read("优势一直为0，模型学不到东西。")
    assert "sym:reward|zero" not in read("奖励为0.5。")


def test_outputs_getting_shorter_or_longer_are_the_response_length() -> None:
    def pairs(title: str, body: str) -> set[str]:
        return {k for k in failure_features(title, body).vector if k.startswith("sym:") and not k.startswith("sym:any")}

    assert "sym:length|down" in pairs("Answers get shorter every epoch", "")
    assert "sym:length|up" in pairs("Completions get longer and longer after step 200", "")
    assert "sym:length|down" in pairs("回答越来越短", "训练到200步以后模型只输出最终答案。")
    assert "sym:output|down" in pairs("The outputs degrade after step 300", "")
    assert not any(k.startswith("sym:length") for k in pairs("The outputs degrade after step 300", ""))


def test_the_lexicon_names_the_kind_when_the_kind_model_is_unsure() -> None:
    features = failure_features("GRPO训练熵坍塌", "训练到100步熵降到0.01，奖励也不涨了。")
    lead = next(k[4:] for k in features.vector if k.startswith("top:"))
    assert lead == "entropy_collapse"
    # A kind model with no opinion (every class at the same probability) defers to the lexicon.
    unsure = LinearModel("kinds", sorted(CATEGORIES), {c: {} for c in CATEGORIES}, {c: 0.0 for c in CATEGORIES})
    assert rank_kinds(features, unsure)[0][0] == "entropy_collapse"
    # A sure one is not overruled.
    sure = LinearModel("kinds", sorted(CATEGORIES), {c: {} for c in CATEGORIES},
                       {c: (5.0 if c == "kl_growth" else 0.0) for c in CATEGORIES})
    assert rank_kinds(features, sure)[0][0] == "kl_growth"


def test_follow_ups_are_read_per_speaker_and_an_unanswered_thread_reads_as_its_post() -> None:
    title, body = "Reward stays flat", "I trained GRPO for 300 steps and the reward does not grow."
    comments = [
        {"author": "reporter", "body": "After 600 steps the entropy drops to 0.01 and the reward is still flat."},
        {"author": "maintainer", "body": "Is this normal? What does your config look like?"},
        {"author": "stale-bot", "author_is_bot": True, "body": "The KL keeps growing and the loss is NaN."},
    ]
    follow = follow_up_features("reporter", comments)
    assert "reporter:sym:reward|flat" in follow and "reporter:sym:entropy|down" in follow
    assert "others:about:meaning_question" in follow
    assert not any("kl|" in k or "nan" in k for k in follow)  # bots never count
    assert not any(k.startswith(("reporter:", "others:")) and "#" in k for k in follow)  # no n-grams
    # No replies yet (as when the app decides to comment): exactly the opening post's features.
    assert follow_up_features("reporter", []) == {} == follow_up_features(None, None)
    alone = failure_features(title, body).vector
    assert failure_features(title, body, "issue", "reporter", []).vector == alone
    whole = failure_features(title, body, "issue", "reporter", comments).vector
    assert {k: v for k, v in whole.items() if not k.startswith(("reporter:", "others:"))} == alone
    # Without an author every human reply is someone else's.
    assert all(k.startswith("others:") for k in follow_up_features(None, comments))


def test_follow_ups_read_a_bounded_prefix() -> None:
    # A 64 KiB reply reads like its first MAX_FOLLOW_UP characters, however many replies follow.
    long = "The reward does not grow. " * 2600
    many = [{"author": "someone", "body": long}] * 200
    assert follow_up_features("op", many) == follow_up_features("op", [{"author": "someone", "body": long[:MAX_FOLLOW_UP]}])
    assert_linear_work(lambda replies: classify_failure("Reward stays flat", "My run.", author="op", comments=replies), many)


def test_groups_scoring_alike_name_the_kind() -> None:
    # GUIDELINES: groups with zero advantage are groups_without_signal, even when the post's
    # first words are "reward and loss are 0" and the kind model is sure of a collapse.
    sure = LinearModel("kinds", sorted(CATEGORIES), {c: {} for c in CATEGORIES},
                       {c: (5.0 if c == "collapse_or_divergence" else 0.0) for c in CATEGORIES})
    alike = failure_features("Reward and loss are 0", "In every group all responses get the same reward of 0.")
    assert rank_kinds(alike, sure)[0][0] == "groups_without_signal"
    # A reward stuck at 0 with no group scoring alike and no zero loss named: the model decides.
    other = failure_features("Reward drops to 0", "The reward is 0 from step 10 on.")
    assert rank_kinds(other, sure)[0][0] == "collapse_or_divergence"


def test_a_body_situation_does_not_rename_the_specific_kind_the_title_names() -> None:
    # The title states the main symptom; groups scoring alike told in the body as its
    # consequence leave it first (an entropy collapse whose samples all became identical).
    sure = LinearModel("kinds", sorted(CATEGORIES), {c: {} for c in CATEGORIES},
                       {c: (5.0 if c == "entropy_collapse" else 0.0) for c in CATEGORIES})  # fmt: skip
    entropy = failure_features("Entropy collapse after 100 steps",
                               "Every group now gets the same reward, so nothing is learned.")  # fmt: skip
    assert "about:group_same_score" in entropy.vector
    assert rank_kinds(entropy, sure)[0][0] == "entropy_collapse"
    # A title that names only a collapse (a generic kind) is still renamed by the groups rule.
    generic = failure_features("Training collapses after 100 steps",
                               "Every group now gets the same reward, so nothing is learned.")  # fmt: skip
    assert rank_kinds(generic, sure)[0][0] == "groups_without_signal"


def test_a_named_cause_outranks_a_collapse_the_kind_model_is_sure_of() -> None:
    sure = LinearModel("kinds", sorted(CATEGORIES), {c: {} for c in CATEGORIES},
                       {c: (5.0 if c == "collapse_or_divergence" else 0.0) for c in CATEGORIES})  # fmt: skip
    stale = failure_features("Reward collapses with stale rollouts", "The rollouts are stale and the reward collapses.")
    assert stale.vector.get("ev:stale_rollout_data") and stale.vector.get("ev:collapse_or_divergence")
    assert rank_kinds(stale, sure)[0][0] == "stale_rollout_data"
    # Rollout/training mismatch in a mixture-of-experts run reads as MoE instability.
    moe = failure_features("Training collapses on Qwen3-30B-A3B", "There is a logprob mismatch between vLLM and the trainer.")
    assert moe.moe_context and moe.vector.get("ev:rollout_training_mismatch")
    assert rank_kinds(moe, sure)[0][0] == "moe_instability"
    # No cause named: the collapse stands; a sure specific kind is not touched either.
    plain = failure_features("Reward collapses", "After 300 steps the reward collapses to 0.")
    assert rank_kinds(plain, sure)[0][0] == "collapse_or_divergence"
    sure_kl = LinearModel("kinds", sorted(CATEGORIES), {c: {} for c in CATEGORIES},
                          {c: (5.0 if c == "kl_growth" else 0.0) for c in CATEGORIES})  # fmt: skip
    assert rank_kinds(stale, sure_kl)[0][0] == "kl_growth"


def test_a_zero_loss_in_the_title_names_groups_without_signal() -> None:
    # A loss (or advantage) of exactly 0 as the post's symptom: no advantage to learn from.
    sure = LinearModel("kinds", sorted(CATEGORIES), {c: {} for c in CATEGORIES},
                       {c: (5.0 if c == "collapse_or_divergence" else 0.0) for c in CATEGORIES})
    for title, body in (("GRPO loss is always 0", "From the first step on the loss stays at 0."),
                        ("GRPO的loss一直是0", "跑了200步，loss一直没有变化。")):
        assert rank_kinds(failure_features(title, body), sure)[0][0] == "groups_without_signal", title
    # A zero loss in passing, under another setting, is not the post's symptom.
    nan = failure_features("PPO loss becomes NaN", "With fp16 the loss stayed at 0; with bf16 it becomes NaN after 50 steps.")
    assert rank_kinds(nan, sure)[0][0] == "collapse_or_divergence"


def test_training_up_while_evaluation_goes_down_names_other_failure() -> None:
    rising = (
        ("Train reward rises, eval score falls", "After 300 steps the training reward keeps increasing while the validation accuracy is declining."),
        ("Rewards up, answers worse", "The reward keeps going up but the quality of the answers is going down."),
        ("训练奖励上升", "训练集奖励一直上升，但测试集准确率下降。"),
    )
    sure = LinearModel("kinds", sorted(CATEGORIES), {c: {} for c in CATEGORIES},
                       {c: (5.0 if c == "collapse_or_divergence" else 0.0) for c in CATEGORIES})
    for title, body in rising:
        features = failure_features(title, body)
        assert "about:train_vs_eval" in features.vector, body
        assert rank_kinds(features, sure)[0][0] == "other_failure", body
    # Read per clause: the grad norm rising while train and test reward both drop is a collapse.
    both = failure_features("Collapse at step 400", "At step 400 the grad norm rises sharply, the train and test reward drop to 0.")
    assert "about:train_vs_eval" not in both.vector
    assert rank_kinds(both, sure)[0][0] == "collapse_or_divergence"


def test_a_context_prior_learned_by_training_names_the_kind() -> None:
    dpo = failure_features("DPO: rewards/chosen keeps decreasing", "During DPO training the chosen rewards drop every step.")
    assert "context:preference" in dpo.vector
    assert "context:preference" not in failure_features("GRPO reward drops", "The reward drops every step.").vector
    sure = LinearModel("kinds", sorted(CATEGORIES), {c: {} for c in CATEGORIES},
                       {c: (5.0 if c == "collapse_or_divergence" else 0.0) for c in CATEGORIES},
                       meta={"kind_priors": {"context:preference": "other_failure"}})
    assert rank_kinds(dpo, sure)[0][0] == "other_failure"
    grpo = failure_features("GRPO reward drops", "The reward drops every step.")
    assert rank_kinds(grpo, sure)[0][0] == "collapse_or_divergence"
    # The shipped kind model's priors name known contexts and kinds only.
    for family, kind in failure_models().kind.meta.get("kind_priors", {}).items():
        assert family.startswith(("context:", "about:")) and kind in CATEGORIES


def test_a_remedy_is_not_a_symptom() -> None:
    # "to avoid the entropy dropping" / 避免熵下降 / "how to prevent a collapse" ask for a remedy.
    remedy = failure_features("Tuning", "Which settings help to avoid the entropy dropping too fast?").vector
    assert not any(k.startswith("sym:entropy") for k in remedy)
    assert "sym:entropy|down" in failure_features("Tuning", "The entropy drops too fast.").vector
    assert not any(k.startswith("sym:entropy") for k in failure_features("参数", "如何避免熵下降？").vector)
    assert "sym:entropy|down" in failure_features("参数", "训练时熵下降很快。").vector
    assert "about:failure_verb" not in failure_features("How to prevent a collapse?", "Any advice?").vector
    assert "about:failure_verb" in failure_features("The run collapsed", "After 200 steps it collapsed.").vector


def test_none_and_empty_inputs() -> None:
    for title, body in ((None, None), ("", ""), ("x", None)):
        result = classify_failure(title, body)
        assert not result["is_failure_report"] and result["category"] is None
        assert result["evidence"] == [] and result["confidence"] < _decision()
    assert classify_failure(None, None)["confidence"] == 0.0


@pytest.mark.parametrize(
    "body",
    ["9" * 65536, "." * 65536, "[" * 65536, "(" * 32768 + ")" * 32768, "熵" * 65536,
     "entropy " * 8192, "<!--" * 16384, "```\n" * 16384, "entropy: 1." * 5000, "熵下降" * 20000,
     "stuck at the " * 5000, "after 1 " * 8000 + "garbled", "what does the " * 5000 + "mean", "! " * 32768,
     "garbled after 3 steps " * 3000, "the eval reward of every group " * 2000,
     "normal fine healthy " * 3500 + "until", "正常" * 30000 + "然后",
     "the reward improves and the entropy drops from 1 to " * 1200, "奖励上升，熵从1降到" * 6000],
    ids=["digits", "dots", "brackets", "parens", "cjk", "words", "comments", "fences", "log", "zh-pairs",
         "hang", "later", "meaning", "sentences", "anchors", "gated", "normal-then", "zh-normal-then",
         "healthy-curve", "zh-healthy-curve"],
)  # fmt: skip
def test_hostile_bodies_grow_linearly(body: str) -> None:
    assert_linear_work(lambda text: classify_failure("Entropy collapse " * 50, text), body)


@pytest.mark.parametrize(
    "body",
    ["from 1 to " * 6500, "1 -> " * 13000, "9" * 65536, "no " * 21000 + "spikes", "reward improves " * 4000,
     "从1到" * 20000, "奖励" * 30000 + "提升", "at " * 21000 + "first"],
    ids=["from-to", "arrows", "digits", "negations", "improves", "zh-from-to", "zh-improves", "at-first"],
)  # fmt: skip
def test_the_healthy_curve_reading_grows_linearly(body: str) -> None:
    # A title the reading accepts (a soft move, the reward improving, nothing named wrong), so
    # that every body is read by its patterns to the end.
    title = "Entropy goes down while the reward goes up"
    assert "no_failure_cue" in failure_features(title, "").vector
    assert_linear_work(lambda text: classify_failure(title, text), body)


# --- Chinese lexicon: terms tried only where present, the same evidence ----------------------


def _plain_chinese(text: str, where: str, rules: failures._Rules, ev: failures._Evidence) -> None:
    """failures._chinese with every term tried in turn (what the `in` pre-tests must equal)."""
    low = text.lower()
    window = 10_000 if where == "t" else rules.zh_window
    seen: set[str] = set()
    for term, metric in rules.zh_metrics:
        pos, tries = low.find(term), 0
        while pos >= 0 and tries < 8:
            if failures._zh_after_remedy_word(low, pos):
                pos, tries = low.find(term, pos + 1), tries + 1
                continue
            tail = low[pos + len(term) : pos + len(term) + min(window, 40)]
            hits = [
                (at, i, t, m)
                for i, (t, m) in enumerate(rules.zh_moves)
                if (at := tail.find(t)) >= 0 and not (m == "zero" and failures._decimal_follows(tail, at + len(t)))
            ]
            for at, _, move_term, move in sorted(hits)[:1]:
                if any(w in tail[max(0, at - 3) : at] for w in failures._ZH_ASKING):
                    break
                if move in failures._NEGATABLE and any(ch in failures._ZH_NEGATORS for ch in tail[max(0, at - 3) : at]):
                    move = "not_" + move
                name = f"{failures._output_length(metric, move_term)}|{move}"
                if name not in seen:
                    seen.add(name)
                    ev.symptom(where, name, move)
                    ev.note(term + "…" + move_term)
                break
            pos, tries = low.find(term, pos + 1), tries + 1
    for cat in sorted(rules.categories.values(), key=lambda c: failures._PRIORITY[c.key]):
        if cat.context and any(c in low for c in cat.context):
            ev.context.add("moe")
        found = False
        for phrase in cat.zh_phrases:
            pos = low.find(phrase)
            if pos >= 0:
                remedy = failures._zh_after_remedy_word(low, pos)
                ev.add(cat.key, f"{where}{'zh_remedy' if remedy else 'zh_phrase'}", phrase)
                low = low.replace(phrase, " " * len(phrase))
                found = True
        if found:
            continue
        for subj in cat.zh_subjects:
            pos, tries = low.find(subj), 0
            while pos >= 0 and tries < 8 and not found:
                tail = low[pos + len(subj) : pos + len(subj) + window]
                for change in cat.zh_changes:
                    if change in tail and not (
                        change.endswith("0") and failures._decimal_follows(tail, tail.find(change) + len(change))
                    ):
                        ev.add(cat.key, f"{where}zh_pair", subj + "…" + change)
                        found = True
                        break
                pos, tries = low.find(subj, pos + 1), tries + 1
            if found:
                break


def _zh_pieces() -> list[str]:
    rules = failures._rules()
    terms = [t for t, _ in rules.zh_metrics] + [t for t, _ in rules.zh_moves]
    for cat in rules.categories.values():
        terms += cat.zh_phrases + cat.zh_subjects + cat.zh_changes
    return sorted(set(terms)) + ["避免", "不", "没有", "训练", "，", "。", " ", "a", "MoE", "的"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_zh_pieces()), max_size=30), st.sampled_from(["t", "b"]))
def test_chinese_evidence_equals_trying_every_term(pieces: list[str], where: str) -> None:
    text = "".join(pieces)
    rules = failures._rules()
    fast, plain = failures._Evidence(), failures._Evidence()
    failures._chinese(text, where, rules, fast)
    _plain_chinese(text, where, rules, plain)
    assert (dict(fast.counts), fast.phrases, fast.context) == (dict(plain.counts), plain.phrases, plain.context)


# --- re.ASCII twins: the same matches on text that is ASCII-alike ----------------------------


def _twin_pieces() -> list[str]:
    # Words of the situation patterns in both cases, digits, spaces of every ASCII kind,
    # punctuation and Chinese (a non-ASCII text must keep the Unicode pattern).
    words = ["after", "200", "steps", "Garbled", "repeat", "normal", "then", "until", "stuck", "in", "hangs",
             "5", "minutes", "what", "does", "the", "mean", "is", "this", "expected", "behavior", "eval",
             "test", "reward", "rises", "drops", "but", "train", "training", "group", "all", "samples",
             "same", "zero", "0", "collapsed", "to", "avoid", "ValueError", "RuntimeException", "_", "é"]
    return words + [w.upper() for w in words] + [" ", "  ", "\n", "\t", ".", "?", ",", ":", "-", "'", "正常", "\x1c", "\x1f"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_twin_pieces()), max_size=40))
def test_ascii_twins_find_what_the_patterns_find(pieces: list[str]) -> None:
    text = "".join(pieces)
    ascii = nlp.ascii_alike(text)
    for pattern in failures._ASCII_TWINS_OF:
        twin = failures._twin(pattern, ascii)
        assert (twin is not pattern) == ascii
        assert [m.span() for m in twin.finditer(text)] == [m.span() for m in pattern.finditer(text)]
        assert twin.split(text) == pattern.split(text)


def test_the_control_spaces_keep_the_unicode_patterns() -> None:
    # Unicode's \s holds "\x1c".."\x1f", ASCII's does not: such a text is not ASCII-alike.
    text = "repeat\x1cafter 3 steps"
    assert text.isascii() and not nlp.ascii_alike(text)
    assert failures._SENTENCE_END.search("end.\x1c") and not failures._twin(failures._SENTENCE_END, True).search("end.\x1c")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab _/-–\n熵", max_size=40))
def test_joiners_read_as_spaces(text: str) -> None:
    # What a translation table mapping each joiner to a space gives (the replaces are faster).
    assert failures._prepare(text) == text.translate(str.maketrans({"_": " ", "/": " ", "-": " "}))


@pytest.mark.parametrize(
    "text",
    ["The entropy  collapses.\n\nThen the KL  keeps growing ", "x" * 200 + " entropy drops", "é and 熵坍塌 ",
     "reward drops " * 2000],
    ids=["plain", "long-run", "non-ascii", "past-max-chars"],
)  # fmt: skip
def test_span_texts_are_the_spans_text(text: str) -> None:
    # Sliced from the text by offsets where the document holds the text unchanged; through
    # Spans where nlp.lemmatized changed it (a long run broken up, text past MAX_CHARS cut).
    document = failures.nlp.lemmatized(text)
    span_text = failures._span_texts(document, text)
    n = len(document)
    for start in range(0, n, max(1, n // 40)):
        for end in (start + 1, min(n, start + 3), min(n, start + 30)):
            assert span_text(start, end) == document[start:end].text


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["entropy", "kl", "actor/kl_loss", "response_length", "response length", "grad_norm",
                                 "grad norm", "_mean", ": ", "=", " ", "0.5", "-1e-3", "12", "\n", "'"]), max_size=25))  # fmt: skip
def test_every_log_match_holds_its_key(pieces: list[str]) -> None:
    # A log text without the key string is not scanned for that metric: every match holds it.
    text = "".join(pieces)
    for metric, pattern in failures._LOG_VALUE.items():
        for m in pattern.finditer(text):
            assert failures._LOG_KEYS[metric] in m.group(0)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", ".", "!", "?", ";", "。", "！", "？", "；", "\n", " ", "\t", "\x1c", "0.5", "é", "x"]), max_size=30))
def test_sentence_ends_are_those_of_the_plain_alternation(pieces: list[str]) -> None:
    # _SENTENCE_END starts with one character class (re skips ahead to it): the same ends.
    import re

    text = "".join(pieces)
    for flags in (0, re.ASCII):
        plain = re.compile(r"[.!?;](?=\s|$)|[。！？；\n]", flags)
        ends = re.compile(failures._SENTENCE_END.pattern, flags)
        assert [m.span() for m in ends.finditer(text)] == [m.span() for m in plain.finditer(text)]


def test_matcher_gate_lets_through_every_text_the_matcher_finds_something_in() -> None:
    # _english runs the phrase matcher only on a text holding the first lemma of some phrase:
    # every phrase of the vocabulary, inflected and in a sentence, passes the gate and is
    # found; a text the gate stops holds no match.
    rules = failures._rules()
    for label_docs in nlp.pattern_docs({"x": ["entropy collapse", "reward go down", "kl"]}).values():
        for d in label_docs:
            assert d[0].lemma in rules.first_lemmas
    for text in ("The entropy collapsed after 200 steps.", "KL keeps growing", "rewards went down"):
        document = nlp.tokens(text)
        lemmas = nlp.doc_lemmas(document)
        assert not rules.first_lemmas.isdisjoint(lemmas)
        assert rules.matcher(nlp.set_lemmas(document, lemmas))
    for text in ("Thanks, merged!", "", "   "):
        document = nlp.tokens(text)
        lemmas = nlp.doc_lemmas(document)
        assert rules.first_lemmas.isdisjoint(lemmas)
        assert not rules.matcher(nlp.set_lemmas(document, lemmas))
    assert nlp.doc_lemmas(nlp.tokens("")) == []
    document = nlp.tokens("Rewards dropped")
    assert [t.lemma_ for t in nlp.set_lemmas(document, nlp.doc_lemmas(document))] == [
        t.lemma_ for t in nlp.lemmatized("Rewards dropped")
    ] == ["reward", "drop"]


def test_a_setting_written_as_key_equals_value_is_read_as_words() -> None:
    # "max_staleness=8" is the staleness setting: "=" joins no word (as "_" and "/" do not).
    lead = {k for k in failure_features("max_staleness=8 makes training unstable", "").vector if k.startswith("top:")}
    assert lead == {"top:stale_rollout_data"}
    assert "ev:kl_growth" not in failure_features("kl_coef=0.5 increases nothing", "").vector
