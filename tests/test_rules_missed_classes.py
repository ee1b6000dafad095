"""Classes of rules set I's held-out files stated and the extractor missed or over-stated
(docs/rules.md, "Review rules65"), read here in wordings written for these tests, not set I's
sentences: a docs entry asked for without an "add" verb, an AI trailer in commit messages, a
question answered by the next sentence, a PR without an associated issue, a stale policy in
prose said of what it names, a docs folder that is not where new methods go, CI named after the
merge, and paths written without code spans. Each test also checks what is NOT said."""

from __future__ import annotations

from analyzers.rules import summarize_rules
from tests.test_rules_generalise import _rules, _topics


def test_a_docs_entry_asked_without_an_add_verb_is_a_docs_rule() -> None:
    md = "## Reference\n\nEvery new CLI flag must have an entry in the user guide (`docs/cli.md`).\n"
    fact = _rules({"CONTRIBUTING.md": md})["docs_entry"]
    assert fact["topic"] == "docs"
    assert fact["statement"] == "Add or update the documentation with the change (in `docs/cli.md`)."
    # a pointer to the docs asks nothing
    pointer = "Set up your environment as documented in the user guide (`docs/setup.md`).\n"
    assert "docs" not in _topics({"CONTRIBUTING.md": pointer})


def test_an_ai_commit_trailer_is_an_ai_policy_and_a_dco_line_is_not() -> None:
    md = "- Coding agents must end each commit message with `Generated-by: <model>`.\n"
    fact = _rules({"AGENTS.md": md})["ai_trailer"]
    assert fact["topic"] == "ai-policy"
    assert fact["statement"] == (
        "Commits made with an AI tool say so in a commit trailer (such as `Generated-by: <model>`).")
    dco = "- Agents add `Signed-off-by: Your Name <you@example.com>` with `git commit -s`.\n"
    assert "ai_trailer" not in _rules({"AGENTS.md": dco})


def test_a_short_question_is_read_with_its_answer() -> None:
    md = ("## Using assistants\n\nDid ChatGPT or Copilot help with your patch? Mention it in the "
          "pull request description. We review every line the same way.\n")
    fact = _rules({"CONTRIBUTING.md": md})["ai_disclose_general"]
    assert fact["statement"] == "Say in the PR whether and how AI tools were used."
    # a question answered by a description asks nothing
    faq = "Are AI tools allowed? Many of us use them.\n"
    assert "ai-policy" not in _topics({"CONTRIBUTING.md": faq})


def test_a_pr_without_an_associated_issue_is_an_issue_first_rule() -> None:
    for md in ("Pull requests that are not linked to an issue are closed without review.\n",
               "Every PR must reference an issue that a maintainer has triaged.\n"):
        fact = _rules({"CONTRIBUTING.md": md})["issue_linked_required"]
        assert fact["topic"] == "issue-first", md
    # linking the issue a PR fixes, when there is one, is not an issue-first rule
    hint = "If your PR fixes a bug, mention the issue number in the description.\n"
    assert "issue_linked_required" not in _rules({"CONTRIBUTING.md": hint})


def test_a_stale_policy_in_prose_is_said_of_what_it_names() -> None:
    prs = "Pull requests with no activity for 45 days are closed automatically.\n"
    assert _rules({"CONTRIBUTING.md": prs})["stale_text"]["statement"] == (
        "Inactive pull requests are closed (after 45 days without activity).")
    issues = "Inactive issues get the `stale` label and are closed after two weeks of silence.\n"
    assert _rules({"CONTRIBUTING.md": issues})["stale_text"]["statement"] == (
        "Inactive issues are marked stale and closed after a while.")
    both = "Issues and PRs without activity for 3 months are closed by a bot.\n"
    assert _rules({"CONTRIBUTING.md": both})["stale_text"]["statement"] == (
        "Inactive issues and PRs are closed (after 3 months without activity).")


def test_a_docs_folder_is_where_docs_go_not_new_methods() -> None:
    md = ("The handbook lives in `doc/handbook/`. New samplers go in `kit/samplers/` and must "
          "be registered.\n")
    by_rule = _rules({"CONTRIBUTING.md": md})
    assert by_rule["place_paths"]["statement"] == (
        "The guide says where such code goes (paths named: `kit/samplers/`).")
    assert by_rule["docs_paths"]["statement"] == (
        "The guide says where documentation goes (paths named: `doc/handbook/`).")


def test_ci_named_after_the_merge_is_read() -> None:
    md = "To be merged, a change has to pass the CI pipeline on all three platforms.\n"
    fact = _rules({"CONTRIBUTING.md": md})["ci_must_pass_merge_first"]
    assert fact["statement"] == "CI checks must pass before a PR is merged."
    assert "ci" not in summarize_rules({"CONTRIBUTING.md": md})["not_stated"]
    # a merge and CI in one sentence that asks nothing of the PR
    told = "We merged the CI pipeline into one workflow last year.\n"
    assert "ci" not in _topics({"CONTRIBUTING.md": told})


def test_paths_without_code_spans_are_read_as_placement() -> None:
    md = "New reward models should be placed in kit/rewards/ and/or a subfolder of it.\n"
    fact = _rules({"CONTRIBUTING.md": md})["place_paths"]
    assert fact["statement"] == "The guide says where such code goes (paths named: `kit/rewards/`)."
    # slash pairs of prose and URLs are not paths
    prose = "Input/output formats should go in the wiki at https://example.org/kit/wiki.\n"
    assert "place_paths" not in _rules({"CONTRIBUTING.md": prose})
