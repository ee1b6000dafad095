"""Classes of rules set K's held-out files stated and the extractor missed (docs/rules.md,
"Review rulesj65", "Review ruleszh65"), read here in wordings written for these tests, not set
K's or set L's sentences: requests written in Chinese (read through an English gloss of known
Chinese phrases, found as substrings: spaCy's blank English pipeline does not cut Chinese into
words), a table whose header asks ("If you touch ... | then also ..."), a discussion forum or an
issue tracker named as the place to go first. Each test also checks what is NOT said."""

from __future__ import annotations

from analyzers.rules import summarize_rules
from tests.test_rules_generalise import _rules, _topics


def test_chinese_requests_are_read() -> None:
    md = ("# 如何贡献\n\n## 提交之前\n\n"
          "- 新增的接口务必附带单元测试。\n"
          "- 所有提交都必须签名（`git commit -s`）。\n"
          "- 代码风格由 `ruff` 检查，提交前请运行 `pre-commit run -a`。\n")
    topics = _topics({"CONTRIBUTING.md": md})
    assert {"tests", "sign-off", "lint"} <= topics
    # nothing on docs, CLA, stale or AI is said
    assert not topics & {"docs", "ai-policy", "stale", "issue-first"}
    facts = summarize_rules({"CONTRIBUTING.md": md})["facts"]
    assert all(f["source"] == "CONTRIBUTING.md" for f in facts)
    # the evidence is the file's own sentence, not the gloss
    assert all("must" not in f["evidence"] for f in facts if f["topic"] == "tests")


def test_chinese_waiver_states_nothing() -> None:
    md = "## 许可\n\n本项目不需要签署 CLA，也不要求 DCO 签名。\n"
    assert "sign-off" not in _topics({"CONTRIBUTING.md": md})


def test_chinese_issue_first_and_stale() -> None:
    md = ("大的功能改动请先开一个 issue 讨论方案。\n\n"
          "超过 60 天无人回复的 PR 会被自动关闭。\n")
    rules = _rules({"CONTRIBUTING.md": md})
    assert any(f["topic"] == "issue-first" for f in rules.values())
    stale = [f for f in rules.values() if f["topic"] == "stale"]
    assert stale and "60 days" in stale[0]["statement"] and "PRs" in stale[0]["statement"]
    # a description in Chinese asks nothing
    assert _topics({"CONTRIBUTING.md": "我们使用 pytest 做单元测试。\n"}) <= {"tests"}
    assert "tests" not in {f["topic"] for f in summarize_rules(
        {"CONTRIBUTING.md": "我们使用 pytest 做单元测试。\n"})["facts"] if f["strength"] == "rule"
        and f["rule"] != "tests_command"}


def test_a_table_whose_header_asks_is_read_as_requests() -> None:
    md = ("## Extra steps\n\n| If you touch | then also |\n|---|---|\n"
          "| the tokenizer | write a regression test in `tests/tok/` |\n"
          "| a public function | update `docs/reference.md` |\n")
    topics = _topics({"CONTRIBUTING.md": md})
    assert {"tests", "docs"} <= topics
    # the same rows under a descriptive header ("Module | Owner") ask nothing
    plain = ("## Owners\n\n| Module | Notes |\n|---|---|\n"
             "| the tokenizer | regression tests live in `tests/tok/` |\n")
    assert "tests" not in _topics({"CONTRIBUTING.md": plain})


def test_a_forum_or_tracker_named_first_is_issue_first() -> None:
    forum = "Before you start on a new feature, open a thread in GitHub Discussions so we agree on the design.\n"
    assert "issue-first" in _topics({"CONTRIBUTING.md": forum})
    tracker = "Larger changes should be raised on the issue tracker before any code is written.\n"
    assert "issue-first" in _topics({"CONTRIBUTING.md": tracker})
    # a forum for questions is no rule about changes
    questions = "Questions are best asked in GitHub Discussions.\n"
    assert "issue-first" not in _topics({"CONTRIBUTING.md": questions})


def test_wrong_statements_of_set_k_are_not_made_in_other_words() -> None:
    # a link put in the PR after a sentence ending in a folder is no placement of code
    md = ("A new policy must match a published score on one of the configs in presets/. "
          "Put the run link in the pull request.\n")
    assert "algorithms" not in _topics({"CONTRIBUTING.md": md})
    # a test marker described is no kind of test asked for; the request itself is read
    marker = "Every change must have tests; slow tests are marked with @pytest.mark.slow.\n"
    rules = _rules({"CONTRIBUTING.md": marker})
    assert "tests_kinds" not in rules and rules["tests_add"]["topic"] == "tests"
    # rejecting code its author cannot explain restricts unexplained code, not AI use
    ai = "If an AI assistant wrote part of it, say so in the PR; we do not accept code you cannot explain.\n"
    rules = _rules({"CONTRIBUTING.md": ai})
    assert "ai_restricted" not in rules and "ai_understand" in rules
    # a folder written without its last slash is named, not only the file inside it
    place = "New solvers are put in pkg/solvers and must be registered in pkg/solvers/index.py.\n"
    assert "`pkg/solvers/`," in _rules({"CONTRIBUTING.md": place})["place_paths"]["statement"]
    # a before/after request said of one component is said of that component
    perf = ("If your change touches the data loader, paste the output of `bench/load.py` from "
            "before and after the change into the pull request.\n")
    fact = _rules({"CONTRIBUTING.md": perf})["results_conditional"]
    assert "the data loader" in fact["statement"] and "speed or memory" not in fact["statement"]


def test_faq_heading_answer_and_descriptive_title() -> None:
    faq = ("## FAQ\n\n### Where do new schedulers go?\n\nInto `sched/impl/`, one file each.\n\n"
           "### Can I use Copilot?\n\nYes, but tell us in the PR which parts it wrote.\n")
    rules = _rules({"CONTRIBUTING.md": faq})
    assert "`sched/impl/`" in rules["place_question"]["statement"]
    assert "ai_disclose_general" in rules
    title = "Please give your pull request a short title in the imperative mood.\n"
    assert _rules({"CONTRIBUTING.md": title})["pr_title_descriptive"]["statement"] == (
        "Give the PR a descriptive title, in the imperative mood.")


def test_gloss_keeps_offsets_when_lowering_lengthens_letters() -> None:
    from analyzers.rules import gloss_zh

    # "İ" lowers to two characters: the phrases after it are still read where they are
    assert gloss_zh("İİİİ 超过 30 天无人回复的 PR 会被自动关闭") == (
        "30 days without activity PRs closed automatically")
    assert gloss_zh("no Chinese here") == ""
