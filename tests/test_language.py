"""detect_language: Chinese issues get Chinese comments, English logs in them do not count."""

from __future__ import annotations

import pytest

from analyzers.language import detect_language, prose


@pytest.mark.parametrize(
    ("title", "body", "lang"),
    [
        ("训练过程中出现熵坍塌", "```\nstep 100 entropy 0.01 reward 0.2\n```", "zh"),
        ("Entropy collapse with GRPO", "我在训练时发现 entropy 很快降到 0，请问该怎么处理？", "zh"),
        ("[Bug] GRPO 训练 reward 崩溃", None, "zh"),
        ("Entropy collapse with GRPO", "After 100 steps entropy drops to zero. 谢谢", "en"),
        ("Reward collapses after 300 steps", "```\n熵 0.1\n```\nThe reward collapses.", "en"),
        ("", "", "en"),
    ],
)
def test_detect_language(title: str, body: str | None, lang: str) -> None:
    assert detect_language(title, body) == lang


def test_english_template_with_chinese_prose() -> None:
    body = (
        "<!-- Please describe the bug -->\n### Describe the bug\n"
        "用 verl 跑 GRPO 的时候，训练到两百步之后熵一直往下掉，奖励也不再上升。\n"
        "### Reproduction\n```bash\npython3 -m verl.trainer.main_ppo actor_rollout_ref.actor.clip_ratio_high=0.28\n```"
    )
    assert detect_language("GRPO entropy", body) == "zh"


def test_prose_drops_code_comments_and_urls() -> None:
    text = "见 https://example.com/很长的链接 <!-- 模板 --> `代码` 正文\n```\n日志\n```"
    out = prose(text)
    assert "正文" in out and "日志" not in out and "模板" not in out and "代码" not in out


def test_long_input_linear() -> None:
    detect_language("x", "<!--" * 16384)
    detect_language("x", "`" * 65536)
