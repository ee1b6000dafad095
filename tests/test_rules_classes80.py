"""rules80: sets AA and AB's wrong lines and misses, read as general classes. Every text here is a
short one written for these tests (none copied from the written sets)."""

from __future__ import annotations

from tests.test_rules_answers import _facts, _rules


def _statements(files: dict[str, str], topic: str) -> list[str]:
    return [f["statement"] for f in _facts(files) if f["topic"] == topic]


# --- wrong lines first ----------------------------------------------------------------------------


def test_results_asked_for_some_changes_are_not_asked_of_every_pr() -> None:
    text = ("# Contributing to gannet\n\n## Speed-sensitive work\n\nFor changes to the "
            "attention kernels or the sampler, include throughput numbers in the PR "
            "description, before and after, measured with `bench/speed.py`. Other changes "
            "need no numbers.\n")
    lines = _statements({"CONTRIBUTING.md": text}, "results")
    assert lines, lines
    assert not [s for s in lines if s.startswith("Share evaluation results")], lines
    assert all("attention kernels" in s for s in lines), lines


def test_kernel_changes_scope_said_before_the_noun() -> None:
    text = ("# Contributing\n\n## Performance\n\nFor GPU kernel changes, paste benchmark "
            "numbers from `bench/gemm.py` in the PR. Pure Python changes do not need them.\n")
    lines = _statements({"CONTRIBUTING.md": text}, "results")
    assert lines and all("gpu kernel changes" in s.lower() for s in lines), lines


def test_a_proposals_acceptance_is_no_approval_rule_for_every_pr() -> None:
    text = ("# Contributing to plover\n\n## Design proposals\n\nA proposal is discussed for "
            "ten days. It is accepted when three maintainers approve it and nobody objects.\n\n"
            "## Review\n\nEvery PR needs one approving review from a maintainer.\n")
    lines = _statements({"CONTRIBUTING.md": text}, "review")
    assert not [s for s in lines if "three" in s], lines


def test_approvals_asked_of_one_kind_of_pr_keep_their_scope() -> None:
    text = ("# Contributing\n\n## Review\n\nA maintainer must approve every PR. PRs that add "
            "a dataset need approval from two maintainers.\n")
    lines = _statements({"CONTRIBUTING.md": text}, "review")
    two = [s for s in lines if "two" in s]
    assert two and all("PRs that add a dataset" in s for s in two), lines


def test_governance_decision_rules_are_not_review_rules() -> None:
    text = ("# Governance\n\nThe steering group decides by lazy consensus. If consensus fails, "
            "the maintainers vote and a simple majority wins.\n")
    facts = _facts({"GOVERNANCE.md": text})
    decided = [f for f in facts if f["rule"] in ("lazy_consensus", "majority_vote")]
    assert len(decided) == 2, facts
    assert all(f["topic"] != "review" for f in decided), decided


def test_a_pointer_to_the_full_guide_is_not_where_docs_go() -> None:
    text = ("# Contributing\n\nThe complete contributor guide lives in "
            "[docs/dev/contributing.md](docs/dev/contributing.md). Sign off your commits.\n")
    assert "docs_paths" not in _rules({"CONTRIBUTING.md": text})


def test_a_checks_name_is_not_the_title_format() -> None:
    text = ("# Contributing\n\n## Titles\n\nPR titles follow `<area>: <summary>`, where area is "
            "one of `core`, `io`. The `lint-title` workflow enforces the format.\n")
    lines = _statements({"CONTRIBUTING.md": text}, "pr-title")
    assert not [s for s in lines if "lint-title" in s and "format `" in s], lines


# --- misses -----------------------------------------------------------------------------------------


def test_all_jobs_must_pass_is_a_ci_rule() -> None:
    text = ("# Contributing\n\n## Continuous integration\n\nCI builds the wheels on three "
            "platforms. All jobs must pass before a PR is merged.\n")
    assert _statements({"CONTRIBUTING.md": text}, "ci"), _facts({"CONTRIBUTING.md": text})


def test_a_bot_closing_issues_that_get_no_answer_is_stale_automation() -> None:
    text = ("# Contributing\n\n## Issues\n\nIssues labelled `waiting for reporter` that get no "
            "answer for 21 days are closed automatically.\n")
    assert _statements({"CONTRIBUTING.md": text}, "stale"), _facts({"CONTRIBUTING.md": text})


def test_a_proposal_named_by_its_acronym_under_a_proposals_heading() -> None:
    text = ("# Contributing\n\n## Kestrel Improvement Proposals (KIPs)\n\nChanges to the "
            "storage format need a KIP before any code is reviewed. Copy the template and "
            "open a PR with it.\n")
    lines = _statements({"CONTRIBUTING.md": text}, "issue-first")
    assert [s for s in lines if "proposal" in s.lower()], lines


def test_naming_conventions_are_a_code_standard() -> None:
    text = ("# Contributing\n\n## Pull requests\n\n1. Rust code follows the surrounding "
            "module: `snake_case` for functions and `CamelCase` for types.\n")
    lines = _statements({"CONTRIBUTING.md": text}, "code-style")
    assert [s for s in lines if "snake_case" in s], lines


def test_changes_not_accepted_without_an_issue_discussion_keep_their_scope() -> None:
    text = ("# Contributing\n\nWe usually do not accept changes to the plugin interface "
            "without a discussion in an issue, since many packages build on it.\n")
    lines = _statements({"CONTRIBUTING.md": text}, "issue-first")
    assert [s for s in lines if "plugin interface" in s], lines


def test_evaluation_results_asked_of_some_changes_are_evaluation_results() -> None:
    text = ("# Contributing\n\n## Model code\n\nIf your PR changes the decoding code "
            "(`src/decode/`), please attach evaluation results: run `tools/evaluate.py` before "
            "and after your change and paste the table in the PR.\n")
    lines = _statements({"CONTRIBUTING.md": text}, "results")
    assert [s for s in lines if "evaluation results" in s and "decoding code" in s], lines


def test_a_change_heading_with_a_parenthetical_still_scopes_its_requests() -> None:
    text = ("# Contributing\n\n## Style\n\nRun `make lint`.\n\n## Adding a new scheduler (a new "
            "policy)\n\n1. Implement it in `x/sched/<name>.py`.\n2. Show that it works: include in "
            "the PR training curves from a run of the example script.\n")
    lines = _statements({"CONTRIBUTING.md": text}, "results")
    assert lines and all("new scheduler" in s for s in lines), lines
