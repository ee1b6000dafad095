"""rules76: the classes behind sets X and Y's invented and missed lines, read in general form.
Every text here is a short one written for these tests (none copied from the written sets)."""

from __future__ import annotations

from typing import Any

from analyzers.rules import summarize_rules


def _facts(files: dict[str, str]) -> list[dict[str, Any]]:
    return summarize_rules(files)["facts"]


def _rules(files: dict[str, str]) -> dict[str, dict[str, Any]]:
    return {f["rule"]: f for f in _facts(files)}


def _topics(files: dict[str, str]) -> set[str]:
    return {f["topic"] for f in _facts(files)}


# --- FAQ answers, labelled "A:", that negate or waive ------------------------------------------


def test_a_labelled_answer_that_says_no_states_nothing_of_its_question() -> None:
    text = ("# Heron FAQ\n\n**Q: Do I have to sign a CLA first?**\n"
            "A: No. Heron has none.\n\n**Question: Should my commits carry a `Signed-off-by` line?**\n"
            "Answer: Nope, no trailer is asked for.\n\n**Q: Do tests have to pass?**\n"
            "A: Yes, `pytest` must pass before review.\n")
    facts = _facts({"CONTRIBUTING.md": text})
    assert not [f for f in facts if f["topic"] == "sign-off"], facts
    assert "tests" in {f["topic"] for f in facts}  # a "Yes" answer keeps its rule


def test_an_answer_that_says_no_and_gives_the_reason_states_nothing() -> None:
    # the reason after "No," describes why nothing is asked: no changelog rule, not even a
    # generated one (the answer denies the question's topic)
    text = ("# FAQ\n\n**Q: Should I write a changelog entry?**\n"
            "A: No, the change log is built from the pull request titles at release time.\n")
    assert "docs" not in _topics({"CONTRIBUTING.md": text}), _facts({"CONTRIBUTING.md": text})
    heading = ("# FAQ\n\n### Do I add a line to the changelog?\n\n"
               "No, the change log is built from the pull request titles at release time.\n")
    assert "docs" not in _topics({"CONTRIBUTING.md": heading})


def test_an_answer_that_waives_states_nothing() -> None:
    for answer in ("A: You don't need to.", "A: Not needed, we have no such agreement.",
                   "A: It's optional.", "R: Não."):
        text = f"# FAQ\n\n**Q: Must I sign a CLA?**\n{answer}\n"
        assert "cla_required" not in _rules({"CONTRIBUTING.md": text}), answer


def test_a_no_answer_with_an_exception_keeps_the_exception() -> None:
    text = ("# FAQ\n\n**Q: Do I need an issue for every change?**\n"
            "A: No, but open an issue before starting on a new trainer.\n")
    assert "issue-first" in _topics({"CONTRIBUTING.md": text})


# --- sections whose rules no longer apply --------------------------------------------------------

_CURRENT = ("# Contributing to Alder\n\n## How we work now\n\n"
            "Every commit needs a `Signed-off-by:` line (`git commit -s`).\n\n")


def test_a_section_headed_as_retired_states_nothing() -> None:
    old_rules = ("- you had to sign a Contributor License Agreement (CLA) before your first PR;\n"
                 "- every PR had to add an entry to `CHANGELOG.md`;\n"
                 "- a bot closed pull requests after 21 days without activity.\n")
    for heading in ("## Old rules (deprecated)", "## Legacy process", "## Historical guidelines",
                    "## What we used to ask", "## Before v2.0", "## Obsolete: the 2023 workflow",
                    "### Prior to version 3"):
        facts = _rules({"CONTRIBUTING.md": f"{_CURRENT}{heading}\n\n{old_rules}"})
        assert "signoff_required" in facts, heading  # the current section is read
        assert not {"cla_required", "changelog_update", "stale_text"} & set(facts), (heading, facts)


def test_a_sentence_saying_the_section_no_longer_applies_drops_it() -> None:
    text = (f"{_CURRENT}## Signing\n\nThese rules no longer apply. Every contributor must sign a "
            "CLA through the bot.\n\n## Tests\n\nRun `pytest` before you push.\n")
    facts = _rules({"CONTRIBUTING.md": text})
    assert "cla_required" not in facts
    assert "tests_command" in facts  # the next section is read again


def test_sections_about_deprecating_things_keep_their_rules() -> None:
    # how to deprecate an API is a rule of today; so is a section that only names the old way
    for heading in ("## Deprecation policy", "## Deprecating a public function"):
        text = (f"{_CURRENT}{heading}\n\nEvery PR that removes a public function must add an "
                "entry to `CHANGELOG.md`.\n")
        assert "changelog_update" in _rules({"CONTRIBUTING.md": text}), heading
