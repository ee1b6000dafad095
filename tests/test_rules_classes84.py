"""rules84: the overstatement classes rules82 found in its own fragments and left (docs/rules.md,
"Review rules82", "Left"). Every text here is a short one written for these tests (none copied
from any project or written set)."""

from __future__ import annotations

from tests.test_rules_classes80 import _statements

CONTRIBUTING = "CONTRIBUTING.md"


# --- a name's dot ends no clause: a deprecated place is waived to its name ---------------------


def test_a_deprecated_changelog_folder_states_no_changelog_rule() -> None:
    text = ("# Contributing\n\nThe `changelog.d/` folder is deprecated; do not add entries "
            "there.\n")
    assert not _statements({CONTRIBUTING: text}, "docs")


def test_a_changelog_file_named_with_a_dot_is_still_asked_for() -> None:
    text = "# Contributing\n\nAdd an entry to `CHANGELOG.md` for every user-facing change.\n"
    assert _statements({CONTRIBUTING: text}, "docs")


# --- another guide quoted is that guide's rule -----------------------------------------------------


def test_a_rule_quoted_from_another_guide_is_not_this_projects() -> None:
    text = ("# Contributing\n\nAs the kernel guide puts it, \"every patch must be signed off\". "
            "Please add tests for new features.\n")
    assert not _statements({CONTRIBUTING: text}, "sign-off")
    assert _statements({CONTRIBUTING: text}, "tests")


def test_a_recommended_guide_asks_for_itself() -> None:
    text = ("# Contributing\n\nWe recommend reading the kernel's submitting guide, which asks "
            "every commit to be signed off.\n")
    assert not _statements({CONTRIBUTING: text}, "sign-off")


def test_a_sign_off_rule_of_our_own_stays() -> None:
    text = "# Contributing\n\nEvery commit must be signed off (`git commit -s`).\n"
    assert _statements({CONTRIBUTING: text}, "sign-off")


# --- hedged and descriptive test lines are no requirement -------------------------------------------


def test_ideally_adding_a_test_is_no_requirement() -> None:
    text = "# Contributing\n\nIdeally, add a test for your change.\n"
    assert not _statements({CONTRIBUTING: text}, "tests")


def test_what_most_prs_include_is_no_requirement() -> None:
    text = "# Contributing\n\nMost PRs include tests.\n"
    assert not _statements({CONTRIBUTING: text}, "tests")


def test_a_plain_request_for_tests_stays() -> None:
    text = "# Contributing\n\nAdd a test for your change.\n"
    assert _statements({CONTRIBUTING: text}, "tests")


# --- conditions and scopes of a CLA ------------------------------------------------------------------


def test_a_cla_asked_of_some_contributors_is_said_with_its_condition() -> None:
    text = "# Contributing\n\nSign the CLA if you work at Acme.\n"
    assert _statements({CONTRIBUTING: text}, "sign-off") == [
        "Contributors must sign a Contributor License Agreement (CLA), if you work at Acme."]


def test_a_cla_only_some_contributors_need_is_not_said_of_everyone() -> None:
    text = "# Contributing\n\nOnly employees of Acme need to sign the CLA.\n"
    assert _statements({CONTRIBUTING: text}, "sign-off") == [
        "Contributors must sign a Contributor License Agreement (CLA), for employees of Acme only."]


def test_a_rule_only_some_prs_need_is_said_of_them() -> None:
    text = "# Contributing\n\nOnly changes to the public API need a changelog entry.\n"
    assert _statements({CONTRIBUTING: text}, "docs") == [
        "Add an entry to the changelog, for changes to the public API only."]


def test_a_faq_answer_only_if_keeps_its_condition() -> None:
    text = ("# Contributing\n\n## FAQ\n\n**Q: Do I need to sign the CLA?**\n\n"
            "A: Only if you contribute for your employer.\n")
    assert _statements({CONTRIBUTING: text}, "sign-off") == [
        "Contributors must sign a Contributor License Agreement (CLA), if you contribute for your employer."]


def test_an_faq_answer_only_for_a_folder_keeps_its_scope() -> None:
    text = ("# Contributing\n\n## FAQ\n\n### Do I need to sign the CLA?\n\n"
            "Only for changes to `csrc/`.\n")
    assert _statements({CONTRIBUTING: text}, "sign-off") == [
        "Contributors must sign a Contributor License Agreement (CLA), for changes to csrc/."]


def test_a_labelled_question_paragraph_answered_no_states_nothing() -> None:
    # the question in a paragraph of its own ("**Q: ...?**"), its answer in the next one
    text = "# Contributing\n\n## FAQ\n\n**Q: Do I need to sign the CLA?**\n\nA: No.\n"
    assert not _statements({CONTRIBUTING: text}, "sign-off")


def test_a_cla_asked_of_everyone_beside_a_corporate_condition_stays_unconditional() -> None:
    # the condition is its own clause's (the corporate agreement), not the individual one's
    text = ("# Contributing\n\nIndividuals sign the ICLA, and if you contribute for your "
            "employer, your company signs the CCLA.\n")
    assert _statements({CONTRIBUTING: text}, "sign-off") == [
        "Contributors must sign a Contributor License Agreement (CLA)."]


def test_this_guides_own_words_quoted_stay_a_rule() -> None:
    text = "# Contributing\n\nAs this guide says, every commit must be signed off (`git commit -s`).\n"
    assert _statements({CONTRIBUTING: text}, "sign-off")


# --- hooks offered are not hooks asked to pass ---------------------------------------------------


def test_hooks_a_contributor_can_install_are_not_asked_to_pass() -> None:
    text = "# Contributing\n\nYou can run `pre-commit install` to set up the hooks.\n"
    assert not [s for s in _statements({CONTRIBUTING: text}, "lint") if "must pass" in s]


def test_hooks_asked_to_pass_stay_a_rule() -> None:
    text = "# Contributing\n\nMake sure the pre-commit hooks pass before you open a PR.\n"
    assert [s for s in _statements({CONTRIBUTING: text}, "lint") if "must pass" in s]


# --- a condition stated before the request: the table's header, the sentence before ----------------


def test_a_table_header_condition_holds_for_its_rows() -> None:
    text = ("# Contributing\n\n| If your PR changes the public API | What to do |\n|---|---|\n"
            "| Changelog | Add an entry to CHANGELOG.md |\n")
    assert _statements({CONTRIBUTING: text}, "docs") == [
        "Add an entry to the changelog, if your PR changes the public API."]


def test_a_request_conditioned_by_the_sentence_before_is_not_said_of_every_pr() -> None:
    for text in ("# Contributing\n\nSometimes you change the public API. In that case, add an entry "
                 "to the changelog.\n",
                 "# Contributing\n\nDoes your PR change the public API? If so, add an entry to the "
                 "changelog.\n"):
        assert _statements({CONTRIBUTING: text}, "docs") == [
            "Add an entry to the changelog, in the cases the guide names."]


def test_a_table_without_a_condition_asks_its_rows_of_every_pr() -> None:
    text = ("# Contributing\n\n| Step | What to do |\n|---|---|\n"
            "| Changelog | Add an entry to CHANGELOG.md |\n")
    assert _statements({CONTRIBUTING: text}, "docs") == ["Add an entry to the changelog."]


def test_a_header_condition_ending_in_an_ellipsis_is_ended_by_each_row() -> None:
    text = ("# Contributing\n\n| If you change ... | you also need to ... |\n|---|---|\n"
            "| anything user-facing | add a news fragment in `newsfragments/` |\n")
    assert _statements({CONTRIBUTING: text}, "docs") == [
        "Add an entry to the changelog (`newsfragments/`), if you change anything user-facing."]
