"""Fidelity of the contribution-rule summaries (review rules64): a summary states only what the
files it cites contain. Unit tests use short rule files written for the project; the review of
the seven frameworks and the rules-dev projects reads ../shared and skips when it is absent."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from analyzers.rules import format_rules_markdown, summarize_rules
from analyzers.rules_text import inline, repository_path

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"
FRAMEWORKS = ["areal", "nemo-rl", "openrlhf", "roll", "slime", "trl", "verl"]


def _facts(files: dict[str, str], rule: str | None = None, topic: str | None = None) -> list[dict]:
    return [f for f in summarize_rules(files)["facts"]
            if (rule is None or f["rule"] == rule) and (topic is None or f["topic"] == topic)]


# --- discuss first: an issue, or an issue or a draft PR, as the file says ------------------


def test_an_issue_first_rule_without_a_draft_pr_does_not_say_draft_pr() -> None:
    facts = _facts({"CONTRIBUTING.md": "If you want to add a new trainer, first open an issue "
                    "and describe the method.\n"}, topic="issue-first")
    assert facts, "the rule is stated"
    assert not any("draft" in f["statement"].lower() for f in facts), facts


def test_an_issue_or_draft_pr_first_rule_says_both() -> None:
    facts = _facts({"CONTRIBUTING.md": "For new features, please open an issue or open a draft "
                    "PR to discuss with the core developers before making any changes.\n"},
                   topic="issue-first")
    assert any("draft PR" in f["statement"] and "issue" in f["statement"] for f in facts), facts


def test_each_wording_of_discuss_first_cites_only_its_own_file() -> None:
    files = {"CONTRIBUTING.md": "Please open an issue first to discuss a new feature.\n",
             "docs/governance.md": "For refactoring, open a draft PR to discuss with the core "
                                   "developers before making any changes.\n"}
    for fact in _facts(files, topic="issue-first"):
        if "draft" in fact["statement"]:
            assert fact["sources"] == ["docs/governance.md"], fact
        else:
            assert "docs/governance.md" not in fact["sources"], fact


# --- agent commands: what the guide suggests vs. the PR template's boxes --------------------


AGENT_FILES = {
    "CONTRIBUTING.md": "We suggest applying our provided agent harness command `/create-pr` "
                       "whenever possible.\n",
    ".github/PULL_REQUEST_TEMPLATE.md": "## Checklist\n\n- [ ] Self-reviewed via `/review-pr` "
                                        "command\n- [ ] This PR was created by a coding agent "
                                        "via `/create-pr`\n",
}


def test_the_guides_agent_command_fact_cites_only_the_file_that_suggests_it() -> None:
    (fact,) = _facts(AGENT_FILES, rule="ai_agent_commands")
    assert fact["sources"] == ["CONTRIBUTING.md"], fact
    assert "`/create-pr`" in fact["statement"]


def test_every_agent_command_of_the_files_is_named() -> None:
    text = format_rules_markdown(summarize_rules(AGENT_FILES), heading=False)
    assert "`/review-pr`" in text and "`/create-pr`" in text
    for line in text.splitlines():
        if "PULL_REQUEST_TEMPLATE" in line and "/create-pr" in line:
            assert "/review-pr" in line, line


# --- a collected fact cites the files that gave its values ----------------------------------


def test_a_file_that_only_mentions_labels_is_not_cited_for_the_ci_labels() -> None:
    files = {"CONTRIBUTING.md": "Tests for PRs are triggered when the PR is manually tagged "
                                "with safe-to-test.\n",
             "GOVERNANCE.md": "Maintainers triage issues and add labels to them.\n"}
    (fact,) = _facts(files, rule="ci_labels")
    assert fact["sources"] == ["CONTRIBUTING.md"], fact


# --- the review of the frameworks' and rules-dev projects' files ----------------------------


def _corpora() -> list[tuple[str, Path]]:
    out = [(name, SHARED / "data" / "frameworks" / name) for name in FRAMEWORKS]
    dev = SHARED / "eval" / "rules-dev"
    if dev.is_dir():
        out += [(p.name, p) for p in sorted(dev.iterdir()) if p.is_dir()]
    return [(n, p) for n, p in out if p.is_dir()]


def _flat(text: str) -> str:
    """A file's text as the extractor reads it: markup removed, whitespace collapsed."""
    return " ".join(inline(line.strip().lstrip("#>-*+ ").removeprefix("[ ] ")
                           .removeprefix("[x] "))[0] for line in text.splitlines())


def _load(folder: Path) -> dict[str, str]:
    from bot.speaking.contribution import load_folder

    return {repository_path(p): t for p, t in load_folder(folder).items()}


@pytest.fixture(scope="module")
def corpora() -> list[tuple[str, dict[str, str], dict]]:
    found = _corpora()
    if not found:
        pytest.skip("../shared is absent")
    out = []
    for name, folder in found:
        files = _load(folder)
        framework = name if name in FRAMEWORKS else None
        out.append((name, files, summarize_rules(files, framework=framework)))
    return out


def test_every_cited_file_exists_among_the_files_read(corpora) -> None:
    for name, files, summary in corpora:
        for fact in summary["facts"]:
            if fact.get("observed"):
                continue  # a curated observation names a path of the repository, marked so
            for source in fact["sources"]:
                assert source in files, (name, fact["rule"], source)


_WORDS = re.compile(r"[\w`/.-]{3,}")


def test_every_quoted_evidence_occurs_in_the_cited_file(corpora) -> None:
    """The sentence a rule was read from is in a file the fact cites (a "lead: items" segment
    is the lead and its items, each found in the file)."""
    for name, files, summary in corpora:
        for fact in summary["facts"]:
            evidence = (fact.get("evidence") or "").rstrip("…")
            if not evidence or fact.get("observed"):
                continue
            # as read (markup removed) and as written (code blocks keep their <placeholders>)
            flats = [(_flat(files[s]) + " " + files[s]).lower() for s in fact["sources"]]
            parts = [_WORDS.findall(part.lower()) for part in re.split(r": |; ", evidence)]
            # every word of the quote is in one cited file (in order is too strict for joins)
            assert any(all(w in flat for words in parts for w in words) for flat in flats), (
                name, fact["rule"], fact["sources"], evidence)


def test_every_cited_file_read_alone_states_the_rule(corpora) -> None:
    """No file is cited for a rule it does not state: each file a fact cites, summarised on its
    own, gives the same rule (or, for two rules merged into one statement, that statement)."""
    for name, files, summary in corpora:
        alone: dict[str, list[dict]] = {}
        for fact in summary["facts"]:
            if fact.get("observed") or fact["rule"] in ("no_contributing", "forms"):
                continue
            for source in fact["sources"]:
                if source not in alone:
                    alone[source] = summarize_rules({source: files[source]})["facts"]
                assert any(f["rule"] == fact["rule"] or f["statement"] == fact["statement"]
                           for f in alone[source]), (name, fact["rule"], source)


# --- a rule made redundant by another is not cited for the other's statement ----------------


def test_a_file_is_not_cited_for_a_more_specific_rule_another_file_states() -> None:
    """`unless` keeps one statement of a rule where one file says more: the other file's rule
    is not put into its mouth. The PR template asks for tests; only CONTRIBUTING says that a PR
    without good tests is not merged. (The template's weaker rule is silent, not restated on
    its own: docs/rules.md, review rules64, says why.)"""
    files = {"CONTRIBUTING.md": "Please add high-coverage tests. PRs with no quality testing "
                                "are not merged.\n",
             ".github/PULL_REQUEST_TEMPLATE.md": "- [ ] Did you write tests for the new code?\n"}
    facts = _facts(files, topic="tests")
    (coverage,) = [f for f in facts if f["rule"] == "tests_coverage"]
    assert coverage["sources"] == ["CONTRIBUTING.md"], coverage


def test_who_reviews_is_said_of_the_file_that_says_it() -> None:
    files = {"CONTRIBUTING.md": "A core maintainer will review your PR.\n",
             ".github/PULL_REQUEST_TEMPLATE.md": "Anyone in the community is free to review "
                                                 "the PR once the tests have passed.\n"}
    for fact in _facts(files, topic="review"):
        if fact["rule"] == "review_anyone":
            assert fact["sources"] == [".github/PULL_REQUEST_TEMPLATE.md"], fact
        else:
            assert fact["sources"] == ["CONTRIBUTING.md"], fact


# --- one framework's details are not said of another's files --------------------------------


@pytest.mark.parametrize(("text", "rule", "foreign"), [
    ("Please add or update tests, or explain why tests are not feasible.\n",
     "tests_or_explain", ["ci workflow"]),
    ("For a new method, first open an issue with a link to the paper describing the algorithm.\n",
     "issue_first_paper", ["implementation", "weights"]),
    ("Our work is focused on bug fixes.\n", "scope_limited", ["optimization"]),
    ("Performance work must come with benchmarks that reviewers can verify.\n",
     "optimization_benchmarks", ["ci", "standard runs"]),
    ("Please validate your change with experiments and share the evaluation results.\n",
     "tests_experiments", ["algorithm implementation", "new model support", "training curve"]),
    # PyTorch Lightning's PR template: "Anyone in the community is welcome to review the PR."
    ("Anyone in the community is welcome to review the PR.\n", "review_anyone", ["tests? pass"]),
    ("Slow GPU tests run nightly; the unit tests run on every PR.\n", "ci_every_pr", ["cpu"]),
    ("Maintainers may merge trivial changes without waiting.\n", "review_admin_bypass",
     ["administrator", "hotfix", "second approval"]),
    ("PRs that ignore the template will be closed without review.\n", "template_or_closed",
     ["checklist", "linked issue"]),
    ("New options must be opt-in.\n", "method_opt_in", ["loss function"]),
])
def test_a_statement_says_no_detail_its_file_does_not_name(text: str, rule: str,
                                                             foreign: list[str]) -> None:
    """Statements written for one framework's sentence carried its details ("in the CI
    workflows", "reference implementation or weights", "general-purpose optimizations", ...)
    to every file the rule fires on."""
    facts = _facts({"CONTRIBUTING.md": text}, rule=rule)
    assert facts, f"{rule} is stated"
    for fact in facts:
        said = fact["statement"].lower()
        assert not [w for w in foreign if re.search(rf"\b{w}", said)], fact["statement"]
