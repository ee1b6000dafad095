"""rules83: the wrong lines of sets AG and AH and the misses of sets AF and AH, read as general
classes. Every text here is a short one written for these tests (none copied from a set)."""

from __future__ import annotations

from tests.test_rules_answers import _facts
from tests.test_rules_classes80 import _statements

# --- wrong lines first ----------------------------------------------------------------------------


def test_a_rule_told_as_the_past_states_nothing() -> None:
    # a practice the project had, told in the past ("we used to ...", "... required X until
    # version N"): history, not what is asked today
    bot = ("# Contributing\n\n## Triage\n\nWe used to have a bot that labelled inactive pull "
           "requests stale and closed them after 45 days. Triage is manual now.\n")
    cla = ("# Contributing\n\n## Legal\n\nThe project required a signed contributor license "
           "agreement until release 2.3. Nothing is signed any more.\n")
    assert not _statements({"CONTRIBUTING.md": bot}, "stale")
    assert not _statements({"CONTRIBUTING.md": cla}, "sign-off")


def test_a_rule_of_today_beside_a_past_one_still_holds() -> None:
    # the present rule in the next sentence, and "is used to" (a tool's use), are no history
    text = ("# Contributing\n\n## Legal\n\nUntil 2023 we asked for a DCO sign-off on each "
            "commit. Contributors must now sign the contributor license agreement.\n\n## "
            "Triage\n\nThe stale workflow is used to close issues after 30 days without "
            "activity.\n")
    assert _statements({"CONTRIBUTING.md": text}, "sign-off") == [
        "Contributors must sign a Contributor License Agreement (CLA)."]
    assert _statements({"CONTRIBUTING.md": text}, "stale")


def test_a_search_of_existing_issues_is_said_of_issues_not_as_a_step_before_a_pr() -> None:
    # an issue form's box and a guide's "search the issues" ask to avoid duplicate issues;
    # they name no PRs and no order of issue and PR
    form = ("name: Crash report\nbody:\n  - type: checkboxes\n    attributes:\n      label: "
            "Before you file\n      options:\n        - label: I searched existing issues for "
            "this crash.\n          required: true\n")
    guide = "# Contributing\n\n* Search existing issues first; your idea may be taken.\n"
    for files in ({".github/ISSUE_TEMPLATE/crash.yml": form}, {"CONTRIBUTING.md": guide}):
        lines = _statements(files, "issue-first")
        assert lines == ["Search the existing issues to avoid duplicates."], lines
    # a text that names PRs keeps the line about issues and PRs
    prs = "# Contributing\n\nPlease search for similar PRs before you open one.\n"
    assert _statements({"CONTRIBUTING.md": prs}, "issue-first") == [
        "Check for existing issues and PRs on the same change before opening a new one."]


def test_a_runtimes_output_compared_in_a_test_is_no_benchmark() -> None:
    # "runtime" the system (an inference runtime), and its output compared with a reference:
    # a correctness test, not speed numbers
    text = ("# Contributing\n\n## Kernels\n\nEach new kernel needs a test that compares the "
            "Triton runtime's output with the eager PyTorch result.\n")
    assert not _statements({"CONTRIBUTING.md": text}, "results")
    speed = ("# Contributing\n\nIf your change touches the kernels, report the runtime before "
             "and after in the PR.\n")
    assert _statements({"CONTRIBUTING.md": speed}, "results")



# --- misses ---------------------------------------------------------------------------------------


def test_a_feature_request_first_is_an_issue_first_rule() -> None:
    # the issue kind named ("a feature request") is where a new feature starts (set E's line
    # was credited only by the duplicate search said as "before opening a new one")
    text = ("# Contributing\n\n## New ideas\n\nDescribe the idea in a feature request first, "
            "and hold off on the code until a maintainer agrees.\n")
    lines = _statements({"CONTRIBUTING.md": text}, "issue-first")
    assert "Open an issue to discuss a new feature or larger change before the PR." in lines, lines


def test_every_component_of_a_kind_needing_a_test_in_a_folder() -> None:
    # "Every <kind of component> needs a test in `tests/<kind>/...`": a test of its own asked of
    # that kind of contribution, said with its folder (set AG's sentence gave only the general
    # line once its wrong results line was gone)
    text = ("# Contributing\n\n## Exporters\n\nEvery exporter needs a test in "
            "`tests/exporters/test_<format>.py` that round-trips a small table.\n")
    lines = _statements({"CONTRIBUTING.md": text}, "tests")
    assert [s for s in lines if "tests/exporters/test_<format>.py" in s], lines
    every_pr = "# Contributing\n\nEvery PR needs a test in `tests/unit/` for the code it changes.\n"
    lines = _statements({"CONTRIBUTING.md": every_pr}, "tests")
    assert not [s for s in lines if "Some kinds of change" in s], lines


def test_a_lead_inviting_contributions_does_not_waive_its_list() -> None:
    # "X are welcome as pull requests:" welcomes the contribution; the items are its rules (a
    # lead that waives says the items are not asked: "Things you do not need to do:")
    text = ("# Engine\n\n## Contributing\n\nPatches to the engine are welcome as normal pull "
            "requests:\n\n- `ruff check .` must be clean.\n- `pytest tests/` must pass.\n"
            "- Engine pull requests need an approving review from one maintainer.\n")
    facts = _facts({"CONTRIBUTING.md": text})
    topics = {f["topic"] for f in facts}
    assert {"lint", "tests", "review"} <= topics, facts


def test_ai_use_disclosed_said_in_the_passive_or_by_ticking_a_box() -> None:
    passive = ("# Contributing\n\n## Using assistants\n\nCode that was mostly written by an AI "
               "assistant must be disclosed in the PR description.\n")
    tick = ("# Contributing\n\n## AI tools\n\nIf an assistant wrote much of the patch, tick the "
            "box in the PR template and say which tool it was.\n")
    for text in (passive, tick):
        assert _statements({"CONTRIBUTING.md": text}, "ai-policy"), text


def test_the_title_said_as_what_the_pull_request_title_is() -> None:
    text = ("# Adding a dataset\n\n## Opening the PR\n\nThe pull request title is "
            "`[dataset] <name>`.\n")
    lines = _statements({"docs/adding.md": text}, "pr-title")
    assert [s for s in lines if "`[dataset] <name>`" in s], lines


def test_a_check_that_must_pass_said_of_it_in_the_next_sentence() -> None:
    # "The `x` workflow checks ... It must pass before ...": the pronoun is the workflow
    text = ("# Submitting\n\n## Checks\n\nThe `check-layout` workflow validates the folder and "
            "the schema. It must pass before a maintainer reviews the PR.\n")
    lines = _statements({"docs/submitting.md": text}, "review")
    assert "A PR is reviewed only once its CI checks pass." in lines, lines


def test_drafts_closed_after_days_without_commits_or_replies_is_a_stale_rule() -> None:
    text = ("# Contributing\n\n## Stalled work\n\nA draft PR with no commits or comments for 60 "
            "days is closed by our cleanup bot.\n")
    lines = _statements({"CONTRIBUTING.md": text}, "stale")
    assert [s for s in lines if "60 days" in s], lines


def test_two_named_reviews_that_must_both_approve() -> None:
    text = ("# Contributing\n\n## Review\n\nEvery new chapter gets two reviews, a technical one "
            "and a language one. Both must approve before merging.\n")
    assert _statements({"CONTRIBUTING.md": text}, "review")


def test_results_from_open_weights_and_a_released_version_of_the_harness() -> None:
    text = ("# Submitting\n\n## Before you run\n\n- Run the suite from a tagged release of the "
            "evaluator; scores from a local branch cannot be reproduced and are not accepted.\n"
            "- The model must be usable by others: open weights, or an API anyone can use.\n")
    lines = _statements({"docs/submitting.md": text}, "results")
    assert [s for s in lines if "release" in s], lines
    assert [s for s in lines if "publicly available model" in s], lines


def test_scores_before_and_after_for_changes_that_could_alter_them() -> None:
    text = ("# Contributing\n\n## Scorer changes\n\nA scorer change that could alter published "
            "numbers must include the scores of the two baseline models before and after.\n")
    lines = _statements({"CONTRIBUTING.md": text}, "results")
    assert [s for s in lines if "before and after" in s], lines


def test_a_folder_tree_under_a_where_heading_says_where_code_goes() -> None:
    text = ("# Contributing\n\n## Where new solvers go\n\n```\nsolvers/<family>/\n"
            "    solver_<name>.py   # the solver\n    __init__.py\n```\n")
    lines = _statements({"CONTRIBUTING.md": text}, "algorithms")
    assert [s for s in lines if "`solvers/<family>/`" in s], lines


def test_ci_that_must_pass_before_merge_after_a_parenthesised_list() -> None:
    text = ("# Development\n\n## Merging\n\n- CI (style, unit tests and the docs build) must pass "
            "before merge.\n")
    assert "CI checks must pass before a PR is merged." in _statements({"docs/dev.md": text}, "ci")


def test_an_evaluation_on_a_public_benchmark_asked_of_a_new_method() -> None:
    text = ("# Contributing\n\n## New samplers\n\nFor a new sampler, include in the PR an "
            "evaluation on at least one public benchmark, with the model and the settings.\n")
    lines = _statements({"CONTRIBUTING.md": text}, "results")
    assert [s for s in lines if "public benchmark" in s], lines


def test_a_rate_reported_in_the_pr_is_a_results_request() -> None:
    text = ("# Contributing\n\n## Results you must report\n\nIn the PR description, report the "
            "success rate on one of the bundled tasks, averaged over 3 seeds.\n")
    lines = _statements({"CONTRIBUTING.md": text}, "results")
    assert [s for s in lines if "success rate" in s and "3 seeds" in s], lines


def test_a_benchmark_rerun_for_its_success_rate_is_no_speed_request() -> None:
    text = ("# Contributing\n\nIf your change alters the default settings of a policy, re-run its "
            "benchmark and report the before/after success rate.\n")
    lines = _statements({"CONTRIBUTING.md": text}, "results")
    assert not [s for s in lines if "speed" in s], lines
    assert [s for s in lines if "success rate" in s], lines


def test_a_question_in_parentheses_does_not_end_the_sentence() -> None:
    # "two reviews: a technical review (does it run?) by a maintainer, and ... Both must approve"
    text = ("# Contributing\n\n## Review\n\nEvery new chapter gets two reviews: a technical review "
            "(does the code run and is it right?) by a maintainer, and a language review (is it "
            "clear?) by an editor. Both must approve before merging.\n")
    lines = _statements({"CONTRIBUTING.md": text}, "review")
    assert [s for s in lines if "two approving reviews" in s], lines


def test_a_pull_request_that_adds_a_folder_under_a_path_is_where_it_goes() -> None:
    text = ("# Catalog\n\n## Contributing\n\nNew datasets reach the catalog through a pull request "
            "that adds a folder under `datasets/`.\n")
    lines = _statements({"README.md": text}, "algorithms")
    assert [s for s in lines if "`datasets/`" in s], lines
