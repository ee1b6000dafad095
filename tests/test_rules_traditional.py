"""Guides written in Traditional Chinese (docs/rules.md, "Review rules74"), in wordings written
for these tests, not set W's sentences: the Chinese gloss reads Simplified, so a Traditional
text is read through it after its Traditional characters (and a few Taiwan words: 程式碼, 文件,
訊息, 核准) are mapped to the Simplified spelling the gloss knows. Each test also checks what
is NOT said."""

from __future__ import annotations

from analyzers.rules import gloss_zh
from tests.test_rules_generalise import _rules, _topics


def test_traditional_rules_are_read() -> None:
    md = ("# 貢獻指南\n\n"
          "- 每一個 commit 都必須加上 `Signed-off-by`（`git commit -s`）。\n"
          "- 新功能請先開一個 issue 討論，再發 PR。\n"
          "- PR 需要兩位維護者核准才能合併。\n")
    rules = _rules({"CONTRIBUTING.md": md})
    topics = {f["topic"] for f in rules.values()}
    assert {"sign-off", "issue-first", "review"} <= topics
    assert not topics & {"docs", "stale", "ai-policy"}
    # the evidence is the file's own Traditional sentence, not its Simplified reading
    assert any("維護者" in f["evidence"] for f in rules.values() if f["topic"] == "review")


def test_traditional_waiver_states_nothing() -> None:
    md = "## 授權\n\n本專案不需要簽署 CLA。\n"
    assert "sign-off" not in _topics({"CONTRIBUTING.md": md})


def test_traditional_condition_is_kept() -> None:
    text = "## 更新日誌\n\n如果變更了公開介面，請在 `CHANGELOG.md` 中新增條目。\n"
    facts = [f for f in _rules({"CONTRIBUTING.md": text}).values() if f["topic"] == "docs"]
    assert facts and all("in the cases the guide names" in f["statement"] for f in facts)


def test_the_reading_keeps_offsets_and_leaves_simplified_text_alone() -> None:
    # a Taiwan word shorter in Simplified (程式碼 -> 代码) does not shift the Latin runs after it
    assert gloss_zh("請執行 `ruff` 檢查程式碼，再執行 `pytest`。") == gloss_zh("请执行 `ruff` 检查代码，再执行 `pytest`。")
    # 文件 is "file" in Simplified text: read as documentation only in a Traditional one
    assert "documentation" not in gloss_zh("请把文件放到 `data/` 目录")
    assert "documentation" in gloss_zh("請更新文件")


def test_an_update_of_the_docs_is_a_docs_rule() -> None:
    # 更新 ("update"), in either spelling: "請在同一個 PR 中更新 `docs/config.md`"
    for md in ("新增設定參數時，請在同一個 PR 中更新 `docs/config.md`。\n",
               "新增配置参数时，请在同一个 PR 中更新 `docs/config.md`。\n"):
        topics = _topics({"CONTRIBUTING.md": md})
        assert "docs" in topics, md
        assert not topics & {"sign-off", "stale", "ai-policy"}
