"""rules67: negative answers and negated lists state nothing of what they deny, and the miss
classes of the written sets N and O read in general form. Every text here is a short one
written for these tests (none copied from the written sets)."""

from __future__ import annotations

from typing import Any

from analyzers.rules import summarize_rules


def _facts(files: dict[str, str]) -> list[dict[str, Any]]:
    return summarize_rules(files)["facts"]


def _rules(files: dict[str, str]) -> dict[str, dict[str, Any]]:
    return {f["rule"]: f for f in _facts(files)}


def _topics(files: dict[str, str]) -> set[str]:
    return {f["topic"] for f in _facts(files)}


# --- FAQ questions answered "No" --------------------------------------------------------------


def test_a_question_heading_answered_no_states_nothing() -> None:
    text = ("# Contributing to Wren\n\n## Questions\n\n### Is a CLA required to contribute?\n\n"
            "No, we have no agreement for you to sign.\n\n### Must my commits be signed off?\n\n"
            "Not required. Neither a DCO trailer nor a signed tag is asked for.\n\n"
            "### Do tests need to pass?\n\nYes: `pytest` must pass before review.\n")
    facts = _facts({"CONTRIBUTING.md": text})
    assert not [f for f in facts if f["topic"] == "sign-off"], facts
    assert "tests" in {f["topic"] for f in facts}  # an answer "Yes" still states its rule


def test_a_question_answered_no_in_one_paragraph_and_in_chinese() -> None:
    english = ("# Contributing\n\nShould I sign the contributor license agreement? No. "
               "Nothing has to be signed here.\n")
    assert "sign-off" not in _topics({"CONTRIBUTING.md": english})
    chinese = "# 贡献指南\n\n### 需要签署 CLA 吗？\n\n不需要。本项目没有贡献者协议。\n"
    assert "sign-off" not in _topics({"CONTRIBUTING.md": chinese})


def test_a_question_answered_yes_keeps_its_rule() -> None:
    text = "# Contributing\n\n### Do I need to sign a CLA?\n\nYes, sign the CLA before your first PR.\n"
    assert "cla_required" in _rules({"CONTRIBUTING.md": text})


# --- negated bullets ------------------------------------------------------------------------


def test_a_negated_bullet_is_no_example_sign_off() -> None:
    text = ("# Contributing\n\n## Not needed here\n\n- **No DCO.** You don't need `Signed-off-by` "
            "trailers, and we keep no contributor agreement either.\n")
    assert "sign-off" not in _topics({"CONTRIBUTING.md": text})


def test_release_notes_from_titles_are_not_called_a_changelog() -> None:
    text = ("# Contributing\n\nThere is no changelog file to edit. Release notes are compiled "
            "from the titles of merged pull requests, so write a clear title.\n")
    by_rule = _rules({"CONTRIBUTING.md": text})
    assert "changelog_from_titles" not in by_rule
    assert by_rule["release_notes_from_titles"]["statement"] == "Release notes are generated from PR titles."


# --- rules said in the present tense, without a modal --------------------------------------


def test_a_changelog_rule_in_the_present_tense() -> None:
    text = ("Contributing\n============\n\nRelease notes\n-------------\n\nBreaking changes get an "
            "entry in ``CHANGES.rst`` under the next version.\n")
    assert "`CHANGES.rst`" in _rules({"CONTRIBUTING.rst": text})["changelog_update"]["statement"]
    every = "# Contributing\n\nEvery pull request that fixes a bug adds a line to the change log.\n"
    assert "changelog_update" in _rules({"CONTRIBUTING.md": every})


def test_docstrings_that_public_code_needs() -> None:
    text = "# Contributing\n\n## Style\n\nPublic modules and methods need docstrings.\n"
    assert "docstrings_required" in _rules({"CONTRIBUTING.md": text})
    # a description with the same words asks nothing
    said = "# Contributing\n\nOur docstrings are rendered by Sphinx.\n"
    assert "docstrings_required" not in _rules({"CONTRIBUTING.md": said})


# --- Korean guides, read through a gloss like the Chinese and Japanese ones ---------------------


def test_a_korean_guide_is_read_through_its_gloss() -> None:
    text = ("# 기여 안내\n\n## 시작하기 전에\n\n큰 변경 사항은 코드를 쓰기 전에 먼저 이슈를 열어 "
            "논의해 주세요.\n\n## 코드\n\n새 모델은 `skate/models/` 디렉터리에 만들고 테스트를 "
            "추가해야 합니다.\n\n모든 커밋에는 DCO 서명이 있어야 합니다.\n")
    by_rule = _rules({"CONTRIBUTING.md": text})
    assert by_rule["issue_first"]["topic"] == "issue-first"
    assert any("`skate/models/`" in f["statement"] for f in by_rule.values() if f["topic"] == "algorithms")
    assert "signoff_required" in by_rule
    # a Korean sentence that asks nothing states nothing
    assert not _facts({"CONTRIBUTING.md": "# 소개\n\n이 프로젝트는 강화학습 환경 모음입니다.\n"})


# --- counts after the noun, rates as speed numbers, conditions said as the PRs they are about --


def test_approvals_counted_after_the_noun() -> None:
    text = "# Contributing\n\n- Each pull request needs approvals from three reviewers.\n"
    statement = _rules({"CONTRIBUTING.md": text})["review_approvals_count"]["statement"]
    assert statement == "Every PR needs three approving reviews before merging."


def test_a_rate_before_and_after_for_the_prs_it_is_about() -> None:
    text = ("# Contributing\n\n## Speed\n\nWe rarely ask for numbers. One case is a PR that changes "
            "`tern/decode/`: there, report tokens per second before and after the change.\n")
    statement = _rules({"CONTRIBUTING.md": text})["results_perf"]["statement"]
    assert statement.endswith(", for a PR that changes tern/decode/.")
    assert "before and after" in statement


# --- AI disclosure worded as "which tool" or as what the PR description holds -------------------


def test_ai_disclosure_as_which_tool_and_as_the_description() -> None:
    asked = ("# Contributing\n\n> [!NOTE]\n> Working with an AI assistant? Say in the pull request "
             "which tools helped and where.\n")
    assert "ai-policy" in _topics({"CONTRIBUTING.md": asked})
    agents = ("# AGENTS.md\n\n## Pull requests\n\n- The pull request description says that an AI "
              "agent wrote the patch and names the model.\n")
    assert "ai-policy" in _topics({"AGENTS.md": agents})
    # a description that mentions AI without saying the PR discloses it states nothing
    plain = "# Contributing\n\nThe pull request description explains the change. We study AI agents.\n"
    assert "ai-policy" not in _topics({"CONTRIBUTING.md": plain})


# --- a table of what each kind of change needs ---------------------------------------------------


def test_a_table_of_what_each_kind_of_change_needs() -> None:
    text = ("# Contributing\n\n| Change | Changelog entry | API docs |\n|---|---|---|\n"
            "| New optimizer | yes, under Features | yes: a page in `docs/optim/` |\n"
            "| Fix | yes | no |\n| Typo | no | no |\n")
    by_rule = _rules({"CONTRIBUTING.md": text})
    # two kinds of change need an entry: neither is said alone
    assert by_rule["changelog_update"]["statement"] == (
        "Add an entry to the changelog, in the cases the guide names.")
    docs = [f["statement"] for f in by_rule.values() if f["topic"] == "docs" and "changelog" not in f["statement"]]
    assert docs and all(s.endswith("if the change is new optimizer.") for s in docs), docs


# --- a written proposal accepted before the implementation ----------------------------------


def test_an_accepted_proposal_before_the_implementation() -> None:
    text = ("# Contributing\n\nA new storage backend needs an approved design doc first; send it as a "
            "pull request to `design/`.\n")
    assert "issue_proposal_first" in _rules({"CONTRIBUTING.md": text})
    invited = "# Contributing\n\nDesign proposals are welcome at any time, accepted or not.\n"
    assert "issue-first" not in _topics({"CONTRIBUTING.md": invited})


# --- a veto word of another sentence of the same item --------------------------------------------


def test_a_veto_word_in_the_next_sentence_does_not_silence_the_rule() -> None:
    text = ("# Contributing\n\n- A change is merged only when the CI checks are green. Ask a "
            "maintainer to restart a flaky run.\n")
    assert "ci" in _topics({"CONTRIBUTING.md": text})
    # in the same sentence the veto still holds
    same = "# Contributing\n\n- Flaky CI checks need not be green for a change to be merged.\n"
    assert "ci" not in _topics({"CONTRIBUTING.md": same})


# --- a checklist entry with its sub-boxes -------------------------------------------------------


def test_a_checklist_entry_with_sub_boxes_keeps_its_condition() -> None:
    template = ("## Checklist\n\n- [ ] **Curves** (only if this PR touches the critic)\n"
                "  - [ ] Value and entropy curves for this branch are attached\n")
    statement = _rules({".github/PULL_REQUEST_TEMPLATE.md": template})["results_scoped"]["statement"]
    assert "(if this PR touches the critic)" in statement
    assert "results_share" not in _rules({".github/PULL_REQUEST_TEMPLATE.md": template})
