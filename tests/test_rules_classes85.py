"""rules85: the classes behind sets AJ and AK's flagged lines (an issue offered "but it's not
required", an FAQ answered so, a heading over what contributors need not do, checks that are
local commands read as CI). Every text here is a short one written for these tests (none copied
from any project or written set)."""

from __future__ import annotations

from tests.test_rules_classes80 import _facts

CONTRIBUTING = "CONTRIBUTING.md"


def _rules(text: str) -> set[str]:
    return {f["rule"] for f in _facts({CONTRIBUTING: text})}


# --- "..., but it's not required": the whole sentence before it is not asked ------------------------


def test_an_issue_offered_but_not_required_states_no_issue_first_rule() -> None:
    text = ("# Contributing\n\nIf a plan needs feedback before you start, feel free to open an "
            "issue first, but it's not required; a pull request is fine too.\n")
    assert not {"issue_first", "issue_discuss_first"} & _rules(text)


def test_an_issue_offered_but_optional_states_no_issue_first_rule() -> None:
    text = ("# Contributing\n\nFor a new backend you can open an issue first to discuss it, "
            "though that is optional.\n")
    assert not {"issue_first", "issue_discuss_first"} & _rules(text)


def test_an_faq_answered_but_not_a_requirement_states_no_issue_first_rule() -> None:
    text = ("# Contributing\n\n**Must I open an issue first?**\nFor a big refactor it's wise to "
            "open an issue so we can say whether it fits, but it's not a requirement.\n")
    assert not {"issue_first", "issue_discuss_first"} & _rules(text)


def test_an_issue_first_rule_with_a_but_of_its_own_stays() -> None:
    text = ("# Contributing\n\nOpen an issue first for new features, but keep it short: a few "
            "lines are enough.\n")
    assert "issue_first" in _rules(text)


# --- a heading over what is not asked: its items state no rule --------------------------------------


def test_a_changelog_item_under_a_heading_of_what_you_need_not_do_is_no_rule() -> None:
    text = ("# Contributing\n\n## Things you don't need to do\n\n- Update `CHANGELOG.md`: the "
            "maintainers compile it when they cut a release.\n")
    assert "changelog_update" not in _rules(text)


def test_a_changelog_item_under_a_heading_of_what_to_do_stays() -> None:
    text = ("# Contributing\n\n## Things you need to do\n\n- Update `CHANGELOG.md` with one line "
            "per change.\n")
    assert "changelog_update" in _rules(text)


# --- checks that are local commands are no CI ------------------------------------------------------


def test_local_commands_that_must_pass_before_review_are_no_ci_rule() -> None:
    text = ("# Contributing\n\n## Before you ask for review\n\n```bash\nmake style\nmake unit\n"
            "```\n\nBoth must pass before review.\n")
    assert "review_after_ci" not in _rules(text)


def test_ci_checks_that_must_pass_before_review_stay() -> None:
    text = "# Contributing\n\nThe CI checks must pass before review.\n"
    assert "review_after_ci" in _rules(text)
