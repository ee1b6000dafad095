"""Over-strong statements set L's held-out files showed (docs/rules.md, "Review ruleszh65"),
read here in wordings written for these tests, not set L's sentences: a file that only marks
inactive issues stale was said to close them; a results request said of some changes only was
stated for every PR; "you remain responsible for AI-assisted code" became "must review it
themselves". Saying less than the file is better than saying more: each test checks the
condition or the scope is kept and the stronger statement is not made."""

from __future__ import annotations

from tests.test_rules_generalise import _rules


def test_a_stale_mark_that_closes_nothing_is_not_said_to_close() -> None:
    md = "Issues that see no activity for 30 days will be labelled stale by a bot.\n"
    by_rule = _rules({"CONTRIBUTING.md": md})
    assert "stale_text" not in by_rule
    assert by_rule["stale_marked"]["statement"] == (
        "Inactive issues are marked stale (after 30 days without activity).")
    zh = "超过 30 天无活动的 issue 会被标记为 stale。\n"
    statement = _rules({"CONTRIBUTING.md": zh})["stale_marked"]["statement"]
    assert "closed" not in statement and "stale" in statement
    # a file that closes still says so
    closes = "Inactive issues are marked stale and closed after 10 days.\n"
    assert "closed" in _rules({"CONTRIBUTING.md": closes})["stale_text"]["statement"]


def test_results_asked_of_some_changes_keep_the_condition() -> None:
    for name, md in (
            ("CONTRIBUTING.md", "Pull requests that modify a policy network must report evaluation results.\n"),
            (".github/pull_request_template.md",
             "- [ ] If this PR changes the value loss, I attached training curves.\n"),
            ("CONTRIBUTING.md", "修改损失函数时，请在 PR 中给出评测结果。\n")):
        by_rule = _rules({name: md})
        assert "results_share" not in by_rule, md
        assert by_rule["results_scoped"]["statement"].startswith(
            "Some changes need evaluation results in the PR; the guide says which"), md
    fact = _rules({"CONTRIBUTING.md": "PRs that touch the sampler must include evaluation results.\n"})
    assert fact["results_scoped"]["statement"].endswith("(that touch the sampler).")
    # a request of every PR is still stated as one
    every = "Every pull request must include evaluation results.\n"
    assert _rules({"CONTRIBUTING.md": every})["results_share"]["statement"] == (
        "Share evaluation results in the PR.")


def test_responsibility_for_ai_code_is_not_a_review_duty() -> None:
    md = "If an LLM wrote part of the patch, say so in the PR; you remain responsible for the code.\n"
    assert _rules({"CONTRIBUTING.md": md})["ai_responsible"]["statement"] == (
        "Authors remain responsible for AI-assisted code.")
    asked = "If you use AI tools, you are responsible for the code and must review it yourself.\n"
    assert _rules({"CONTRIBUTING.md": asked})["ai_responsible"]["statement"] == (
        "Authors are responsible for AI-assisted code and must review it themselves.")
    # the review asked with other words between the verb and the code
    other = "With Copilot you are responsible for the PR; please review every generated line yourself.\n"
    assert _rules({"CONTRIBUTING.md": other})["ai_responsible"]["statement"].endswith(
        "must review it themselves.")


def test_missed_classes_of_set_l_in_other_wordings() -> None:
    # a plural "Titles" of pull requests in Conventional Commits
    titles = "Titles of merge requests and PRs follow Conventional Commits.\n"
    assert "pr_title_conventional" in _rules({"CONTRIBUTING.md": titles})
    # CI named first and "green" several words before the merge
    ci = "Our CI builds the wheels for each PR and it must be green before anyone merges.\n"
    assert _rules({"CONTRIBUTING.md": ci})["ci_green_clause"]["statement"] == (
        "CI checks must pass before a PR is merged.")
    # an approval asked of every PR, with who approves
    review = "One maintainer must approve each pull request.\n"
    assert _rules({"CONTRIBUTING.md": review})["review_approve_every"]["statement"] == (
        "Every PR must be approved by a maintainer.")
    # a test asked in a request table's row, beside where the code goes
    table = ("| If you add | you also need to |\n|---|---|\n"
             "| a scheduler | register it in `ops/sched/`, with a test in `tests/sched/` |\n")
    assert _rules({"CONTRIBUTING.md": table})["tests_with_path"]["statement"] == (
        "New or changed code needs tests (in `tests/sched/`).")
    # and what is not asked is not said: a description of a test file, a green badge
    calm = ("The README badge is green when the nightly build passes.\n"
            "The example ships with a test in `tests/demo/` that you can read.\n")
    by_rule = _rules({"CONTRIBUTING.md": calm})
    assert "ci_green_clause" not in by_rule and "tests_with_path" not in by_rule


def test_an_item_under_a_lead_that_asks_is_a_request() -> None:
    # a Chinese numbered list without a request word in the item, its lead asks
    md = "合并前请确保：\n\n1. 新增功能补充文档（`docs/guide.md`）；\n"
    assert _rules({"CONTRIBUTING.md": md})["docs_generic"]["statement"] == (
        "Add or update the documentation with the change (in `docs/guide.md`).")
    # a lead that only describes asks nothing of its items
    calm = "Our release notes cover:\n\n1. new features and their documentation;\n"
    assert "docs_generic" not in _rules({"CONTRIBUTING.md": calm})
