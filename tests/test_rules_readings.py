"""Readings of contribution rules as other projects word them (rules65): each text here is a
short one written for these tests, in a shape projects commonly use (a placement table, a
docstring convention under a "Documentation" heading, "PRs without tests will not be merged",
Conventional Commits under a "Commit messages" heading, an issue-template chooser). Each test
checks a statement the files give, and that nothing is said they do not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.test_rules_generalise import _evaluate_rules_module, _rules


def _chooser(about: str, name: str = "Discussions") -> str:
    return ("blank_issues_enabled: false\ncontact_links:\n"
            f"  - name: {name}\n    url: https://github.com/acme/kit/discussions\n"
            f"    about: {about}\n")


def test_the_discussions_link_is_said_for_what_it_names() -> None:
    """"Questions and ideas are sent to Discussions" was said of every chooser linking to
    Discussions, also of one that names only usage questions."""
    config = ".github/ISSUE_TEMPLATE/config.yml"
    questions = _rules({config: _chooser("Ask usage questions in Discussions.")})
    assert questions["discussions_link"]["statement"] == (
        "Questions are sent to GitHub Discussions instead of issues.")
    both = _rules({config: _chooser("Ask questions, share ideas or discuss features.")})
    assert both["discussions_link"]["statement"] == (
        "Questions and ideas are sent to GitHub Discussions instead of issues.")
    bare = _rules({config: _chooser("Talk to the community.", name="Community")})
    assert bare["discussions_link"]["statement"] == (
        "The issue template chooser links to GitHub Discussions.")


def test_a_docstring_convention_is_a_code_standard_not_a_docs_page() -> None:
    guide = "# Guide\n\n## Documentation\n\nWrite docstrings in NumPy style for every public function.\n"
    by_rule = _rules({"docs/contributing.md": guide})
    assert by_rule["docstrings_style"]["statement"] == "Docstrings follow the NumPy style."
    assert by_rule["docstrings_style"]["topic"] == "code-style"
    assert "docs_section" not in by_rule  # no page is asked for
    # A page asked for under the same heading stays a docs rule.
    page = "## Documentation\n\nDescribe a new option in its docstring; the reference docs are generated from it.\n"
    assert "docs_section" in _rules({"CONTRIBUTING.md": page})


def test_styles_named_but_not_asked_for_are_no_docstring_convention() -> None:
    for text in (
        "Do not convert docstrings to other styles (Google, NumPy, etc.).\n",
        "- [ ] I updated the docstrings and, if needed, the Sphinx docs\n",
    ):
        assert "docstrings_style" not in _rules({"CONTRIBUTING.md": text}), text


def test_approved_by_at_least_two_is_counted() -> None:
    text = "Every PR must be reviewed and approved by at least two maintainers before merging.\n"
    by_rule = _rules({"CONTRIBUTING.md": text})
    assert by_rule["review_approvals"]["statement"].startswith(
        "Every PR needs at least two approvals from maintainers")
    assert "review_required" not in by_rule


def test_prs_without_tests_are_not_merged() -> None:
    for text in ("1. PRs without tests will not be merged.\n",
                 "Pull requests that lack tests will be closed.\n"):
        assert _rules({"CONTRIBUTING.md": text})["tests_required_merge"]["statement"] == (
            "A PR without tests is not merged."), text
    waiver = "Documentation-only PRs without tests will not be rejected for that: no need to add any.\n"
    assert "tests_required_merge" not in _rules({"CONTRIBUTING.md": waiver})


def test_conventional_commits_under_a_commit_heading() -> None:
    guide = ("# Contributing\n\n## Commit messages\n\nWe follow Conventional Commits:\n\n"
             "- `feat:` a new feature\n- `docs:` documentation only changes\n"
             "- `test:` adding missing tests\n")
    by_rule = _rules({"CONTRIBUTING.md": guide})
    assert by_rule["commit_conventional_section"]["statement"] == (
        "Commit messages must follow Conventional Commits.")
    # The type list describes commit kinds: no docs or tests rule is read from it.
    assert not {f["topic"] for f in by_rule.values()} & {"docs", "tests"}
    # The convention named under another heading is not said of commits.
    other = "# Contributing\n\n## History\n\nThe project once followed Conventional Commits.\n"
    assert "commit_conventional_section" not in _rules({"CONTRIBUTING.md": other})


_PLACEMENT = """\
# Contributing

## Where things go

| Contribution | Location | Notes |
|---|---|---|
| New algorithm | `kit/algos/` | one file per algorithm |
| Example scripts | `examples/` | must run in under 10 minutes on CPU |
"""


def test_a_placement_table_lists_one_folder_paths_and_asks_nothing_of_examples() -> None:
    by_rule = _rules({"CONTRIBUTING.md": _PLACEMENT})
    table = by_rule["layout_table"]
    assert table["statement"] == ("Where code goes, from the guide's table: New algorithm in "
                                  "`kit/algos/`; Example scripts in `examples/`.")
    # the header row fills no item: it is not the evidence
    assert "Contribution" not in table["evidence"]
    # "must run in under 10 minutes" is about the examples, not "try your feature on them"
    assert "results_examples" not in by_rule
    tip = "Tip: if you add an experimental feature, try it on the existing examples first.\n"
    assert "results_examples" in _rules({"CONTRIBUTING.md": tip})


def test_lint_tools_are_every_tool_named_once() -> None:
    two = "Code is linted with flake8 and formatted with black; CI fails otherwise.\n"
    assert _rules({"CONTRIBUTING.md": two})["lint_tools"]["statement"] == (
        "Lint and format tools named: flake8, black.")
    hooks = "The hooks run ruff, ruff-format and a spell checker.\n"
    assert _rules({"CONTRIBUTING.md": hooks})["lint_tools"]["statement"] == (
        "Lint and format tools named: ruff.")
    comment = "The variable is set at the top of the module, before the `# isort: off` block.\n"
    assert "lint_tools" not in _rules({"CONTRIBUTING.md": comment})


def test_who_reviewers_are_and_invitations_to_review_are_no_review_rule() -> None:
    for text in (
        "Reviewers are individuals who contribute to the project and are willing to "
        "participate in the code review of new contributions.\n",
        "Reviews from community members are always appreciated, and any maintainer can "
        "help you land your change.\n",
        "We'd love help with code reviews: if you want to review, leave comments on open PRs.\n",
    ):
        assert "review_by_maintainers" not in _rules({"CONTRIBUTING.md": text}), text
    rule = "Someone from the core team will review your PR, usually within a week.\n"
    assert "review_by_maintainers" in _rules({"CONTRIBUTING.md": rule})


def test_how_to_write_a_test_is_no_rule_that_code_needs_tests() -> None:
    howto = ("## Writing a new test\n\n1. Add the test under `tests/test_*.py`, following "
             "nearby patterns.\n2. Mark it `slow` if it needs a GPU.\n")
    assert not {"tests_new_code", "tests_section"} & set(_rules({"docs/ci.md": howto}))
    rule = "## Writing a new test\n\nEvery new feature must add a test covering it.\n"
    assert "tests" in {f["topic"] for f in _rules({"docs/ci.md": rule}).values()}


def test_the_benchmark_scores_a_project_that_states_nothing(tmp_path: Path, capsys: Any) -> None:
    """A project whose files ask for nothing (only "not stated" facts) divided by zero."""
    project = tmp_path / "quiet"
    project.mkdir()
    (project / "CONTRIBUTING.md").write_text("# Contributing\n\nThanks for your interest!\n")
    (project / "SOURCE.txt").write_text(
        "repository: acme/quiet\nfiles (copy <- path in repository):\n"
        "  CONTRIBUTING.md <- CONTRIBUTING.md\n")
    (tmp_path / "expected.json").write_text(json.dumps({"quiet": {"repo": "acme/quiet", "facts": [
        {"topic": "tests", "states": False, "pattern": "tests?", "fact": "none", "source": "none"}]}}))
    _evaluate_rules_module().report(tmp_path, verbose=False)
    out = capsys.readouterr().out
    assert "quiet" in out and "0/0" in out and "0 invented" in out


def test_rst_auto_numbered_items_are_list_items() -> None:
    rst = ("Contributing\n============\n\n#. Fork the repository.\n#. Add tests for your change.\n"
           "#. Run ``tox``.\n")
    by_rule = _rules({"CONTRIBUTING.rst": rst})
    assert by_rule["tests_add"]["evidence"] == "Add tests for your change."
    assert by_rule["tests_command"]["statement"] == "Tests run with `tox`."


def test_a_page_asked_for_in_a_one_folder_path_is_a_docs_request() -> None:
    text = ("If your change adds a user-facing feature, add a section to docs/ and, where it "
            "helps, a tutorial notebook.\n")
    assert "docs" in {f["topic"] for f in _rules({"CONTRIBUTING.md": text}).values()}


def test_a_question_in_an_faq_asks_nothing() -> None:
    faq = "# FAQ\n\nDo I need to update the docs for a typo fix? No.\n"
    assert "docs" not in {f["topic"] for f in _rules({"CONTRIBUTING.md": faq}).values()}
    answer = "# FAQ\n\nWhat about new options? Please update the docs for them.\n"
    assert "docs" in {f["topic"] for f in _rules({"CONTRIBUTING.md": answer}).values()}


def test_a_request_under_a_changelog_heading_is_a_changelog_rule() -> None:
    guide = "# Contributing\n\n## Changelog\n\nAdd a file to `newsfragments/` describing your change.\n"
    assert _rules({"CONTRIBUTING.md": guide})["changelog_section"]["statement"] == (
        "Add an entry to the changelog (`newsfragments/`).")
    release = "# Contributing\n\n## Release notes\n\nMaintainers update the release notes when cutting a release.\n"
    assert "docs" not in {f["topic"] for f in _rules({"CONTRIBUTING.md": release}).values()}


def test_pep8_is_the_code_style_named_not_the_linters() -> None:
    by_rule = _rules({"CONTRIBUTING.md": "Please follow the PEP 8 style guide.\n"})
    assert by_rule["style_pep8"]["statement"] == "Code follows PEP 8."
    assert "lint_generic" not in by_rule
    naming = _rules({"CLAUDE.md": "- Use PEP 8 naming (snake_case for functions).\n"})
    assert naming["style_pep8"]["statement"] == "Names follow the PEP 8 naming conventions."


def test_rows_of_a_requirements_table_are_requests() -> None:
    guide = ("# Requirements\n\n| Requirement | Applies to |\n|---|---|\n| Unit tests | all PRs |\n"
             "| Changelog entry | all PRs |\n")
    topics = {f["topic"] for f in _rules({"CONTRIBUTING.md": guide}).values()}
    assert {"tests", "docs"} <= topics
    # the same table under another heading describes
    other = guide.replace("# Requirements", "# What CI covers")
    assert "tests_new_code" not in _rules({"CONTRIBUTING.md": other})


def test_claiming_an_issue_says_who_assigns_only_when_the_file_does() -> None:
    text = "Leave a comment on the issue saying you'd like to work on it.\n"
    assert _rules({"CONTRIBUTING.md": text})["issue_claim"]["statement"] == (
        "Comment on an issue to claim it before working on it.")
    assigned = "Comment on the issue and a maintainer assigns it to you; then work on it.\n"
    assert "(a maintainer assigns it)" in _rules({"CONTRIBUTING.md": assigned})["issue_claim"]["statement"]


def test_pure_agent_prs_ask_what_the_file_asks() -> None:
    text = "Pure code-agent PRs are not allowed. A human must understand and defend the change.\n"
    assert "review" not in _rules({"CONTRIBUTING.md": text})["ai_no_pure_agent"]["statement"]


def test_public_apis_documented_in_a_reference_page_is_no_docstring_rule() -> None:
    text = "New public APIs must be documented in the API reference.\n"
    by_rule = _rules({"CONTRIBUTING.md": text})
    assert "docstrings_public" not in by_rule and "docs_generic" in by_rule
    assert "docstrings_public" in _rules({"CLAUDE.md": "- Public APIs must have docstrings\n"})


def test_approvals_counted_without_at_least_an_lgtm_and_code_owners() -> None:
    two = _rules({"CONTRIBUTING.md": "PRs require two approving reviews.\n"})
    assert two["review_approvals_count"]["statement"] == "Every PR needs two approving reviews before merging."
    lgtm = _rules({"CONTRIBUTING.md": "A PR can be merged once it has an LGTM from a maintainer.\n"})
    assert "review_merge_after_approval" in lgtm
    owners = "Changes to files owned by a team in CODEOWNERS need that team's approval.\n"
    assert _rules({"CONTRIBUTING.md": owners})["review_codeowners"]["topic"] == "review"
    listed = "CODEOWNERS lists who approves changes in each area.\n"
    assert "review_codeowners" not in _rules({"CONTRIBUTING.md": listed})


def test_ci_must_pass_and_the_docs_must_build_cleanly() -> None:
    ci = _rules({"CONTRIBUTING.md": "Your PR must pass all CI checks before it can be merged.\n"})
    assert ci["ci_must_pass"]["statement"] == "CI checks must pass before a PR is merged."
    docs = "Make sure the docs build without warnings (`make -C docs html`).\n"
    assert "docs_build_clean" in _rules({"CONTRIBUTING.md": docs})
    howto = "To build the docs locally, run `make -C docs html`.\n"
    assert "docs_build_clean" not in _rules({"CONTRIBUTING.md": howto})
