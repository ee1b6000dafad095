"""rules82: shapes of real ML projects' guides that could make the extractor state a rule the
files do not contain, hunted before a blind set meets them. Every text here is a short one
written for these tests (none copied from any project or written set)."""

from __future__ import annotations

from tests.test_rules_classes80 import _facts, _statements

CONTRIBUTING = "CONTRIBUTING.md"
TEMPLATE = ".github/PULL_REQUEST_TEMPLATE.md"


def _topics(files: dict[str, str]) -> set[str]:
    return {f["topic"] for f in _facts(files) if not f.get("observed")}


# --- plans: what a project means to ask one day is not asked today --------------------------------


def test_a_planned_requirement_is_no_rule() -> None:
    text = ("# Contributing\n\nWe plan to require DCO sign-off on every commit from next year. "
            "In the future we will ask contributors to sign a CLA. We are planning to make "
            "changelog entries mandatory.\n\nPlease add tests for new features.\n")
    assert not _statements({CONTRIBUTING: text}, "sign-off")
    assert not _statements({CONTRIBUTING: text}, "docs")
    assert _statements({CONTRIBUTING: text}, "tests")  # today's rule still said


# --- wishes: "if you want, you can ..." asks nothing ----------------------------------------------


def test_what_a_contributor_may_do_if_they_like_is_no_rule() -> None:
    text = ("# Contributing\n\nIf you want, you can add a unit test for your change. You may also "
            "open an issue first if you like.\n")
    assert not _statements({CONTRIBUTING: text}, "tests")
    assert not _statements({CONTRIBUTING: text}, "issue-first")


def test_a_wish_ending_its_sentence_leaves_the_sentence_before_it() -> None:
    text = "# Contributing\n\nAdd unit tests for new code. Open an issue first if you like.\n"
    assert _statements({CONTRIBUTING: text}, "tests")
    assert not _statements({CONTRIBUTING: text}, "issue-first")


def test_a_condition_about_what_you_want_to_change_is_still_a_condition() -> None:
    text = "# Contributing\n\nIf you want to add a new trainer, open an issue first.\n"
    assert _statements({CONTRIBUTING: text}, "issue-first")


# --- other projects' rules ------------------------------------------------------------------------


def test_a_rule_other_projects_have_is_not_this_projects() -> None:
    text = ("# Contributing\n\nOther projects such as big training frameworks require every commit "
            "to be signed off; we do not.\n")
    assert "sign-off" not in _topics({CONTRIBUTING: text})


# --- steps addressed to the people who merge or release -------------------------------------------


def test_release_managers_and_maintainers_steps_are_no_contributor_rule() -> None:
    text = ("# Contributing\n\nOpen a PR against `main`.\n\n## Releasing\n\nRelease managers must tag "
            "the release and update CHANGELOG.md before publishing to PyPI.\n")
    assert not _statements({CONTRIBUTING: text}, "docs")


def test_a_release_managers_step_under_any_heading_is_no_contributor_rule() -> None:
    text = ("# Contributing\n\n## Versioning\n\nWe follow semantic versioning. The release manager "
            "must update CHANGELOG.md and tag the release.\n")
    assert not _statements({CONTRIBUTING: text}, "docs")


# --- a guide's own history ------------------------------------------------------------------------


def test_a_guides_revision_history_states_no_rule() -> None:
    text = ("# Contributing\n\nOpen a PR.\n\n## Changes to this guide\n\n- 2024-03: dropped the "
            "requirement to sign the CLA.\n- 2023-11: every PR now needs a changelog entry.\n")
    topics = _topics({CONTRIBUTING: text})
    assert "sign-off" not in topics and "docs" not in topics, topics


# --- rules told in the past, switched off or deprecated -------------------------------------------


def test_a_requirement_the_project_used_to_have_is_no_rule() -> None:
    text = ("# Contributing\n\nWe used to require a CLA, but we no longer do. Contributors previously "
            "had to add a changelog entry.\n")
    topics = _topics({CONTRIBUTING: text})
    assert "sign-off" not in topics and "docs" not in topics, topics


def test_a_bot_that_is_switched_off_asks_nothing() -> None:
    text = "# Contributing\n\nThe CLA bot is currently disabled while the foundation moves.\n"
    assert "sign-off" not in _topics({CONTRIBUTING: text})


# --- CI read from what a PR needs -----------------------------------------------------------------


def test_what_every_pr_needs_is_not_what_ci_runs() -> None:
    text = "# Contributing\n\nEvery PR that fixes a bug must include tests.\n"
    assert not _statements({CONTRIBUTING: text}, "ci")
    text = ("# Contributing\n\nEvery PR that changes behaviour must include tests:\n\n- unit tests "
            "next to the code\n- run `pytest tests/` before pushing\n")
    assert not _statements({CONTRIBUTING: text}, "ci")
    text = "# Contributing\n\nThe slow suite runs nightly (not on every PR) and checks the tests.\n"
    assert not [s for s in _statements({CONTRIBUTING: text}, "ci") if "every PR" in s]


def test_tests_ci_runs_for_every_pr_are_still_said() -> None:
    text = "# Contributing\n\nCI runs the unit tests for every PR, so keep them fast.\n"
    assert [s for s in _statements({CONTRIBUTING: text}, "ci") if "every PR" in s]


# --- examples of what not to write ----------------------------------------------------------------


def test_a_quoted_example_of_what_to_avoid_states_no_rule() -> None:
    text = ("# Contributing\n\n## PR descriptions\n\nSay what changed. An example of a description "
            "to avoid:\n\n> All PRs must include a changelog entry and sign the CLA.\n\n"
            "It says nothing about the change.\n")
    topics = _topics({CONTRIBUTING: text})
    assert "sign-off" not in topics and "docs" not in topics, topics
    text = ("# Contributing\n\n## Commit messages\n\nDon't write commit messages like this:\n\n"
            "```\nfix stuff, added tests, signed the CLA\n```\n")
    assert "sign-off" not in _topics({CONTRIBUTING: text})


# --- what others do, what was removed, what might happen one day ---------------------------------


def test_what_some_contributors_like_to_do_is_no_rule() -> None:
    text = "# Contributing\n\nSome contributors like to open an issue first to discuss the design.\n"
    assert not _statements({CONTRIBUTING: text}, "issue-first")


def test_a_bot_that_was_removed_closes_nothing() -> None:
    text = ("# Contributing\n\nThe stale bot was removed in 2024; issues stay open until someone "
            "closes them.\n")
    assert "stale" not in _topics({CONTRIBUTING: text})


def test_a_rule_other_repositories_have_is_not_this_ones_to_the_end_of_its_sentence() -> None:
    text = ("# Contributing\n\nMany repositories, e.g. large frameworks, require a CLA; we only ask "
            "for a DCO sign-off.\n")
    lines = _statements({CONTRIBUTING: text}, "sign-off")
    # (the DCO line went with it: its "require" was the other repositories' word)
    assert not [s for s in lines if "CLA" in s], lines


def test_like_many_projects_we_require_is_still_a_rule() -> None:
    text = "# Contributing\n\nLike many projects, we require a signed CLA before merging.\n"
    assert [s for s in _statements({CONTRIBUTING: text}, "sign-off") if "CLA" in s]


def test_what_would_happen_if_the_project_ever_adopted_a_rule_is_no_rule() -> None:
    text = "# Contributing\n\nIf we ever adopt a CLA, a bot will ask you to sign it.\n"
    assert "sign-off" not in _topics({CONTRIBUTING: text})


def test_the_rest_of_a_section_for_maintainers_asks_nothing_of_contributors() -> None:
    text = ("# Contributing\n\nOpen a PR.\n\n## Merging\n\nThe rest of this section is for maintainers. "
            "Label the PR, squash-merge it and add it to the changelog.\n")
    assert not _statements({CONTRIBUTING: text}, "docs")


# --- extras, and what reviewers do ----------------------------------------------------------------


def test_items_under_a_lead_of_extras_are_no_rules() -> None:
    text = ("# Contributing\n\nBonus points if you also:\n\n- add a tutorial notebook\n"
            "- update the changelog\n")
    assert not _statements({CONTRIBUTING: text}, "docs")
    text = "# Contributing\n\nIf you have the time:\n\n- add a docs page for the new option\n"
    assert not _statements({CONTRIBUTING: text}, "docs")


def test_what_a_reviewer_checks_is_said_of_every_pr_not_of_reviewing() -> None:
    text = ("# Reviewing\n\nWhen reviewing, check that the PR has tests and a changelog entry, and "
            "that the CLA check is green.\n")
    lines = _statements({CONTRIBUTING: text}, "docs")
    assert lines and not [s for s in lines if "review" in s], lines


def test_a_condition_on_the_state_of_review_is_kept() -> None:
    text = "# Contributing\n\nWhen review comments arrive, add a changelog entry for the final version.\n"
    lines = _statements({CONTRIBUTING: text}, "docs")
    assert lines and all("review comments" in s for s in lines), lines


# --- checkboxes that are choices ------------------------------------------------------------------


def test_boxes_beside_a_not_needed_box_are_choices_not_rules() -> None:
    text = ("## Description\n\n<!-- What does this PR change? -->\n\n## Changelog\n\n"
            "- [ ] Not needed\n- [ ] Added an entry to CHANGELOG.md\n\n## Checklist\n\n"
            "- [ ] I added tests\n")
    assert not _statements({TEMPLATE: text}, "docs")
    assert _statements({TEMPLATE: text}, "tests")  # a checklist without such a box is asked


def test_a_box_that_says_no_to_something_else_is_no_choice() -> None:
    text = "## Checklist\n\n- [ ] No new warnings\n- [ ] I added tests\n"
    assert _statements({TEMPLATE: text}, "tests")


# --- left classes of the developed sets -----------------------------------------------------------


def test_an_issue_asked_for_some_changes_is_said_of_those_changes() -> None:
    # (V hollyhock's shape, in other words: the general line named every new feature)
    text = ("# Contributing\n\nBug fixes can go straight to a PR. For a new quantisation scheme or any "
            "change to the public `Quantizer` interface, open an issue first and wait for a "
            "maintainer's go-ahead.\n")
    lines = _statements({CONTRIBUTING: text}, "issue-first")
    assert lines and all("quantisation scheme" in s for s in lines), lines
    assert not [s for s in lines if "new features or larger changes" in s], lines


def test_an_issue_asked_of_every_change_keeps_the_general_line() -> None:
    text = "# Contributing\n\nPlease open an issue first before you start working on a PR.\n"
    assert _statements({CONTRIBUTING: text}, "issue-first") == [
        "Open an issue to discuss new features or larger changes before writing code."]


def test_what_a_dont_column_forbids_without_an_issue_is_asked_with_one() -> None:
    # (D halcyon's shape, in other words)
    text = ("# Contributing\n\n| ✅ Do | ❌ Don't |\n|---|---|\n| Keep PRs small | Bump a pinned "
            "library without asking in an issue first |\n| Write tests | Force-push after review |\n")
    lines = _statements({CONTRIBUTING: text}, "issue-first")
    assert lines == ["Ask in an issue first before you bump a pinned library."], lines
    assert "review" not in _topics({CONTRIBUTING: text})  # the column's other cells stay unread
    text = "# Contributing\n\nNever rename a public function without opening an issue first.\n"
    assert _statements({CONTRIBUTING: text}, "issue-first") == [
        "Ask in an issue first before you rename a public function."]
