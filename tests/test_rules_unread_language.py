"""A summary invents nothing: "no sign-off rule is stated" is a claim about everything the
files say, and a sentence in a language the extractor does not read (French, Spanish, German:
not English and not glossed) may state the rule it cannot see (docs/rules.md, "Review
rules68"). Such a file gives no absence line; an English example still does. The sentences
are written for these tests."""

from __future__ import annotations

from analyzers.rules import summarize_rules, unread_language
from tests.test_rules_generalise import _rules

FRENCH_DCO = ("## Signature\n\nToutes les contributions doivent porter la mention `Signed-off-by` "
              "(utilisez `git commit -s`) ; les demandes sans cette mention seront refusées.\n")
SPANISH_DCO = ("## Firma\n\nCada commit debe incluir la línea `Signed-off-by` que añade "
               "`git commit -s`; no aceptamos cambios sin ella.\n")
ENGLISH_EXAMPLE = ("## Commit messages\n\nA commit message looks like this:\n\n```\n"
                   "Fix the reward scaling\n\nSigned-off-by: Ada <ada@example.org>\n```\n")


def test_no_absence_line_from_a_french_or_spanish_sign_off_sentence() -> None:
    for md in (FRENCH_DCO, SPANISH_DCO):
        summary = summarize_rules({"CONTRIBUTING.md": md})
        lines = [f["statement"] for f in summary["facts"]]
        assert not any(line.startswith("No sign-off rule") for line in lines), lines


def test_no_absence_line_when_an_example_sits_beside_an_unread_rule() -> None:
    # the example is English (a code block) but the file also speaks French about sign-off
    assert "signoff_example" not in _rules({"CONTRIBUTING.md": ENGLISH_EXAMPLE + FRENCH_DCO})


def test_an_english_example_still_gives_the_absence_line() -> None:
    assert "signoff_example" in _rules({"CONTRIBUTING.md": ENGLISH_EXAMPLE})


def test_which_sentences_are_unread() -> None:
    assert unread_language("Chaque contribution doit être relue par un mainteneur avant la fusion.")
    assert unread_language("Los cambios deben incluir pruebas y una entrada en el registro.")
    assert unread_language("Jeder Commit muss mit einer Signatur versehen werden und die Tests bestehen.")
    assert not unread_language("Every commit must be signed off with `git commit -s`.")
    assert not unread_language("Use `git commit -s` to add the line.")  # short, English
    assert not unread_language("每个 commit 都必须签署。")  # Chinese: read through its gloss
    assert not unread_language("Signed-off-by: Ada <ada@example.org>")


def test_a_prose_mention_of_the_trailer_is_not_an_example() -> None:
    # "an example commit message ends with a Signed-off-by line" needs an example (a code
    # block); a sentence that names the trailer may state the rule in words the patterns lack
    prose = ("## Commits\n\nEach commit you push will carry a `Signed-off-by` trailer; commits "
             "lacking it are sent back.\n")
    assert "signoff_example" not in _rules({"CONTRIBUTING.md": prose})
    assert "signoff_example" not in _rules({"CONTRIBUTING.md": ENGLISH_EXAMPLE + prose})
    form = ("name: Port a model\nbody:\n  - type: checkboxes\n    attributes:\n      label: Promise\n"
            "      options:\n        - label: My commits will each have a `Signed-off-by` line.\n"
            "          required: true\n")
    assert "signoff_example" not in _rules({".github/ISSUE_TEMPLATE/port.yml": form})


def test_a_sign_off_request_beside_an_example_is_the_rule_not_its_absence() -> None:
    md = ENGLISH_EXAMPLE + "\n## Sign-off\n\nSign off every commit with `git commit -s`.\n"
    rules = _rules({"CONTRIBUTING.md": md})
    assert "signoff_example" not in rules
    assert rules["signoff_directive"]["statement"] == "Every commit must be signed off (DCO, `git commit -s`)."


# --- issue forms: a required box is a commitment, an optional one is not ----------------------

FORM = """name: Add an environment
description: Propose a new environment wrapper.
body:
  - type: checkboxes
    id: promises
    attributes:
      label: Commitments
      options:
        - label: The wrapper will come with integration tests under `tests/envs/`.
          required: {required}
        - label: Every commit in the pull request will be signed off (`git commit -s`).
          required: {required}
"""


def test_required_boxes_of_an_issue_form_are_read_as_checklist_entries() -> None:
    rules = _rules({".github/ISSUE_TEMPLATE/add_env.yml": FORM.format(required="true")})
    assert rules["tests_kinds"]["statement"] == "Tests the guide asks for: integration tests."
    assert rules["signoff_directive"]["statement"] == "Every commit must be signed off (DCO, `git commit -s`)."
    # the same boxes left optional ask nothing
    optional = _rules({".github/ISSUE_TEMPLATE/add_env.yml": FORM.format(required="false")})
    assert "tests_kinds" not in optional and "signoff_directive" not in optional


def test_a_summary_says_when_some_sentences_were_not_read() -> None:
    from analyzers.rules import format_rules_markdown

    note = ("Some sentences are in a language read here only in part (French, Spanish, German, "
            "Italian, Portuguese and Vietnamese through a short glossary) or not at all: rules "
            "they state may be missing.")  # rules69; rules76 and rules77 added glossed languages
    assert note in format_rules_markdown(summarize_rules({"CONTRIBUTING.md": SPANISH_DCO}))
    assert note not in format_rules_markdown(summarize_rules({"CONTRIBUTING.md": ENGLISH_EXAMPLE}))


def test_links_are_not_words() -> None:
    assert not unread_language("[Search]: https://github.com/o/r/search?q=is%3Aissue [Chat]: https://example.com/c")
