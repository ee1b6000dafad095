"""rules73: the classes behind blind sets V and W's invented lines. Every text here is a short
one written for these tests (not copied from the sets)."""

from __future__ import annotations

from tests.test_rules_generalise import _rules

GUIDE = "CONTRIBUTING.md"


# --- a Korean negation or waiver states nothing ------------------------------------------------


def test_a_korean_waived_cla_is_no_cla_rule() -> None:
    for waiver in ("필요하지 않습니다", "필요 없습니다", "불필요합니다", "하지 않아도 됩니다"):
        text = f"# 기여 안내\n\n이 프로젝트에서는 CLA 서명이 {waiver}.\n"
        assert "cla_required" not in _rules({GUIDE: text}), waiver
    negated = "# 기여 안내\n\n저희는 기여자에게 CLA 서명을 요구하지 않습니다.\n"
    assert "cla_required" not in _rules({GUIDE: negated})


def test_a_korean_cla_request_is_still_a_cla_rule() -> None:
    text = "# 기여 안내\n\nPR을 보내기 전에 CLA에 서명해 주세요.\n"
    assert "cla_required" in _rules({GUIDE: text})


# --- RFC 2119 MAY / OPTIONAL is a permission, no requirement -----------------------------------


def test_a_title_that_may_follow_conventional_commits_is_no_title_rule() -> None:
    may = ("# Contributing\n\nPull request titles MAY use a Conventional Commits prefix such as "
           "`fix:`.\n")
    assert "pr_title_conventional" not in _rules({GUIDE: may})
    lower = "# Contributing\n\nYour PR title may follow Conventional Commits if you like.\n"
    assert "pr_title_conventional" not in _rules({GUIDE: lower})
    optional = ("# Contributing\n\nA Conventional Commits prefix in the PR title is OPTIONAL.\n")
    assert "pr_title_conventional" not in _rules({GUIDE: optional})


def test_a_title_that_must_follow_conventional_commits_is_still_a_rule() -> None:
    must = "# Contributing\n\nPR titles MUST follow Conventional Commits.\n"
    assert "pr_title_conventional" in _rules({GUIDE: must})


def test_may_be_closed_consequences_stay_rules() -> None:
    text = ("# Contributing\n\nPull requests without a linked issue may be closed without "
            "review.\n")
    assert "issue_linked_required" in _rules({GUIDE: text})


# --- "ai" inside a handle, team, repository, path or URL is no AI-tool rule --------------------


def test_an_ai_team_handle_is_no_ai_disclosure_rule() -> None:
    for name in ("@acme-ai/maintainers", "@acme-ai", "acme-ai/trainer",
                 "https://github.com/acme-ai/trainer", "`tools/ai/run.py`"):
        text = f"# Contributing\n\nIf you are stuck, mention {name} on your draft pull request.\n"
        assert "ai_disclose_general" not in _rules({GUIDE: text}), name


def test_mentioning_ai_use_is_still_an_ai_disclosure_rule() -> None:
    text = "# Contributing\n\nMention in the pull request whether you used AI tools.\n"
    assert "ai_disclose_general" in _rules({GUIDE: text})
    slashed = "# Contributing\n\nMention in the pull request whether you used AI/LLM tools.\n"
    assert "ai_disclose_general" in _rules({GUIDE: slashed})


# --- accuracy before and after is no speed benchmark -------------------------------------------


def test_accuracy_before_and_after_is_no_speed_rule() -> None:
    text = ("# Contributing\n\nA pull request that changes a scoring head must report the "
            "accuracy on the `mini-bench` split before and after the change.\n")
    assert "results_perf" not in _rules({GUIDE: text})


def test_throughput_before_and_after_is_still_a_speed_rule() -> None:
    text = ("# Contributing\n\nA pull request that changes the sampler must report the "
            "throughput on the `mini-bench` split before and after the change.\n")
    assert "results_perf" in _rules({GUIDE: text})
    both = text.replace("the throughput", "the accuracy and the throughput")
    assert "results_perf" in _rules({GUIDE: both})


# --- a Do / Don't table: the Don't column asks nothing ----------------------------------------


DO_DONT = """# Contributing

## Finishing

| ✅ Do | ❌ Don't |
|------|---------|
| Use any commit message you like; we squash-merge. | Rebase after review has started. |
| Run `make check` before you push. | Add a changelog entry. |
"""


def test_the_dont_column_of_a_do_dont_table_asks_nothing() -> None:
    rules = _rules({GUIDE: DO_DONT})
    assert "review_merge_after_approval" not in rules
    assert not any(r.startswith("changelog") for r in rules), rules


def test_the_do_column_of_a_do_dont_table_still_asks() -> None:
    text = DO_DONT.replace("Run `make check` before you push.",
                           "Add tests under `tests/` for every bug fix.")
    assert any(r.startswith("tests_") for r in _rules({GUIDE: text}))


def test_a_thumbs_up_on_an_issue_is_no_pr_review_rule() -> None:
    text = ("# Contributing\n\nOpen an issue first and wait for a 👍 from a maintainer on the "
            "approach before you merge your branch into a pull request.\n")
    assert "review_merge_after_approval" not in _rules({GUIDE: text})


def test_telling_reviewers_about_ai_tools_is_a_disclosure_rule() -> None:
    text = DO_DONT.replace("Run `make check` before you push.",
                           "Tell us in the pull request if an AI tool wrote part of the change.")
    assert "ai_disclose_general" in _rules({GUIDE: text})


# --- "open an issue and wait for a maintainer's 👍" is an issue first ---------------------------


def test_open_an_issue_and_wait_for_a_thumbs_up_is_issue_first() -> None:
    text = ("# Contributing\n\nOpen an issue for anything bigger than a typo and wait for a 👍 "
            "from a maintainer on the approach.\n")
    assert "issue-first" in {f["topic"] for f in _rules({GUIDE: text}).values()}


# --- an issue key at the start of the PR title; a tracking issue before the PR ------------------


def test_an_issue_key_at_the_start_of_the_title_is_a_title_rule() -> None:
    text = ("# Contributing\n\nThe ticket key goes at the start of the pull request title, "
            "like `[ACME-12] Fix the loader`.\n")
    fact = _rules({GUIDE: text})["pr_title_issue_key"]
    assert "`[ACME-12]" in fact["statement"], fact["statement"]
    issue_title = "# Contributing\n\nPut the error in the title of your bug report.\n"
    assert "pr_title_issue_key" not in _rules({GUIDE: issue_title})


def test_a_tracking_issue_needed_before_the_pr_is_issue_first() -> None:
    text = ("# Contributing\n\nEvery larger change needs a tracking issue before you open a pull "
            "request.\n")
    assert "issue_first_general" in _rules({GUIDE: text})


# --- PRs closed when their author does not answer are said as PRs, with the wait ---------------


def test_prs_closed_without_an_answer_are_said_as_prs_with_the_wait() -> None:
    text = ("# Contributing\n\nPull requests that wait on their author with no response for 45 "
            "days are closed.\n")
    statement = _rules({GUIDE: text})["no_response_close"]["statement"]
    assert statement == ("Open pull requests waiting for their author's answer are closed (after 45 "
                         "days without a response)."), statement
    issues = "# Contributing\n\nIssues labelled `needs-info` with no response are closed automatically.\n"
    assert _rules({GUIDE: issues})["no_response_close"]["statement"].startswith("Issues")
