"""General contribution rules: what any project's guide asks, read from requests (modal and
imperative sentences, PR-template checklists), headings, code lines and workflows. The files
below are short ones written for these tests; ../shared/eval/rules-dev (other projects' real
files) is measured by benchmarks/evaluate_rules.py and checked against the goal here."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from analyzers.rules import format_rules_markdown, is_directive, summarize_rules
from analyzers.rules_text import Segment

ROOT = Path(__file__).resolve().parent.parent

CONTRIBUTING = """\
# Contributing to Pebblestat

## Before you start

If you want to add a new feature, please open an issue first so that we can agree on the
design. Bug reports are welcome any time.

## Tests

We use pytest. Every new feature must come with unit tests and, where it touches storage,
an integration test.

```bash
python -m pytest tests/
```

## Documentation

If you add a public function, add a page under `docs/reference/` describing it.

## Examples

Put new examples in `examples/`, one folder per use case.

## Code style

Run the lint scripts before pushing:

```bash
make style
make quality
```

## Changelog

Please add an entry to `CHANGELOG.md` for every user-visible change.

## Legal

We ask that every contributor agree to our Contributor License Agreement; the CLA bot
comments on your first pull request.

## Results

When a change affects accuracy, share evaluation results in the PR and compare them with
the published numbers.
"""

PR_TEMPLATE = """\
## What does this PR do?

<!-- Describe the change. -->

## Checklist

- [ ] I added tests for the new code.
- [ ] Did you update the documentation?
- [ ] I linked the issue this PR addresses.

## AI usage

<!-- Was an AI tool (ChatGPT, Copilot, ...) used to write this PR? Say which and how much. -->
"""

STALE_SCRIPT = """\
name: Stale Bot
on:
  schedule:
    - cron: "0 3 * * *"
jobs:
  close:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: python scripts/close_inactive.py
"""

CLA_WORKFLOW = """\
name: CLA
on: [pull_request_target]
jobs:
  cla:
    runs-on: ubuntu-latest
    steps:
      - uses: contributor-assistant/github-action@v2
"""


def _statements(summary: dict[str, Any]) -> dict[str, list[str]]:
    by_topic: dict[str, list[str]] = {}
    for fact in summary["facts"]:
        by_topic.setdefault(fact["topic"], []).append(fact["statement"])
    return by_topic


def _rules(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["rule"]: f for f in summary["facts"]}


def test_a_guide_written_from_scratch_gives_every_rule_it_states() -> None:
    summary = summarize_rules({
        "CONTRIBUTING.md": CONTRIBUTING,
        ".github/PULL_REQUEST_TEMPLATE.md": PR_TEMPLATE,
        ".github/workflows/stale.yml": STALE_SCRIPT,
    })
    by_rule = _rules(summary)
    topics = _statements(summary)
    # Tests: the kinds asked for, and the command under the Tests heading.
    assert "unit, integration tests" in by_rule["tests_kinds"]["statement"]
    assert "`python -m pytest tests/`" in by_rule["tests_command"]["statement"]
    # Docs: "add a page" is about docs because it sits under the Documentation heading; asked
    # "if you add a public function", it is stated with that condition (rules66).
    assert by_rule["docs_section"]["statement"].endswith(
        "(in `docs/reference/`), if you add a public function.")
    # Where examples go.
    assert "`examples/`" in by_rule["place_paths"]["statement"]
    assert by_rule["place_paths"]["topic"] == "algorithms"
    # Lint scripts, changelog, CLA, issue first, results.
    assert "`make style`, `make quality`" in by_rule["lint_command"]["statement"]
    assert "`CHANGELOG.md`" in by_rule["changelog_update"]["statement"]
    assert "Contributor License Agreement" in by_rule["cla_required"]["statement"]
    assert "issue-first" in topics and "before" in topics["issue-first"][0]
    assert {"results_share", "results_compare"} <= set(by_rule)
    # The PR template's AI section; the custom stale workflow names its script.
    assert by_rule["ai_template_section"]["source"] == ".github/PULL_REQUEST_TEMPLATE.md"
    assert "`scripts/close_inactive.py`" in by_rule["stale_script"]["statement"]
    assert "daily" in by_rule["stale_script"]["statement"]
    # Every fact cites the file it came from.
    assert by_rule["cla_required"]["source"] == "CONTRIBUTING.md"
    assert by_rule["stale_script"]["source"] == ".github/workflows/stale.yml"
    assert not {"tests", "docs", "lint", "sign-off", "issue-first", "stale"} & set(
        summary["not_stated"])
    markdown = format_rules_markdown(summary)
    assert "**Results and benchmarks**" in markdown


def test_cla_from_a_workflow_alone() -> None:
    summary = summarize_rules({".github/workflows/cla.yml": CLA_WORKFLOW})
    by_rule = _rules(summary)
    assert by_rule["wf_cla"]["topic"] == "sign-off"
    assert "CLA" in by_rule["wf_cla"]["statement"]


def test_descriptions_and_denials_are_not_rules() -> None:
    text = """\
# Contributing

Improving documentation is always welcome.

GPU tests require access to our cluster and are skipped for forks.

We use pytest for our own experiments on the cluster.

We do not require a Contributor License Agreement, and sign-off is not required.

If you find a bug, open an issue with a reproduction.

Issues are never closed automatically: stale issues stay open.

Our CI runs the integration tests nightly.
"""
    summary = summarize_rules({"CONTRIBUTING.md": text})
    rule_ids = set(_rules(summary))
    assert not rule_ids & {"docs_generic", "docs_section", "tests_kinds", "cla_required",
                           "signoff_required", "issue_first_general", "issue_first",
                           "stale_text", "tests_new_code"}
    for topic in ("docs", "sign-off", "issue-first", "stale"):
        assert topic in summary["not_stated"], topic


def test_placement_needs_a_path_and_a_placement_verb() -> None:
    text = ("# Contributing\n\nSync your fork with `upstream/main` before you start.\n\n"
            "Put new kernels in `csrc/kernels/` and their benchmarks in `benchmarks/`.\n")
    by_rule = _rules(summarize_rules({"CONTRIBUTING.md": text}))
    assert by_rule["place_paths"]["statement"] == (
        "The guide says where such code goes (paths named: `csrc/kernels/`, `benchmarks/`).")


def test_layout_conventions_list_where_code_goes() -> None:
    agents = ("# Agent guide\n\n## Code conventions\n\n"
              "- Reward functions: `src/pkg/rewards/` — one file per reward\n"
              "- Trainers: `src/pkg/trainers/`\n- Config keys: `cfg.model` in YAML\n")
    by_rule = _rules(summarize_rules({"AGENTS.md": agents}))
    assert by_rule["layout_conventions"]["statement"] == (
        "Where code goes, from the guide's conventions: Reward functions in "
        "`src/pkg/rewards/`; Trainers in `src/pkg/trainers/`.")


def test_directive_detection() -> None:
    def seg(text: str, kind: str = "sentence", checkbox: bool = False) -> Segment:
        return Segment(text, "CONTRIBUTING.md", kind, checkbox=checkbox)

    assert is_directive(seg("Add unit tests for new code."), "contributing")
    assert is_directive(seg("Always run the linters before pushing."), "contributing")
    assert is_directive(seg("If you change the API, update the docs."), "contributing")
    assert is_directive(seg("No benchmarks in tests/. Put them in bench/."), "contributing")
    assert is_directive(seg("New code must be tested."), "contributing")
    assert is_directive(seg("I added tests", "item", checkbox=True), "pr_template")
    assert is_directive(seg("Did you update the docs?", "item"), "pr_template")
    assert not is_directive(seg("We use pytest for the test suite."), "contributing")
    assert not is_directive(seg("GPU tests require access to the cluster."), "contributing")
    assert not is_directive(seg("I added tests", "item", checkbox=True), "contributing")


def test_snapshot_paths_drop_the_commit_they_were_read_at() -> None:
    summary = summarize_rules({
        ".github/workflows/stale.yml @ 0fd43d7a420a99bce9a50175720c9f2f5e802899": STALE_SCRIPT,
        ".github/CODEOWNERS @ cf34c18": "* @acme/core\n",
    })
    by_rule = _rules(summary)
    assert by_rule["stale_script"]["source"] == ".github/workflows/stale.yml"
    assert by_rule["codeowners"]["source"] == ".github/CODEOWNERS"
    assert all("@" not in path for path in summary["files"])


def _evaluate_rules_module() -> Any:
    spec = importlib.util.spec_from_file_location(
        "evaluate_rules", ROOT / "benchmarks" / "evaluate_rules.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rules_dev_projects_reach_the_goal(shared_dir: Path) -> None:
    folder = shared_dir / "eval" / "rules-dev"
    if not (folder / "expected.json").is_file():
        pytest.skip("../shared/eval/rules-dev is not present")
    evaluate_rules = _evaluate_rules_module()
    results = evaluate_rules.evaluate(folder)
    assert len(results) >= 8
    for name, r in results.items():
        assert len(r["stated"]) >= evaluate_rules.GOAL * r["expected"], (name, r["missed"])
        assert r["invented"] == [], (name, r["invented"])


def test_pr_template_checklist_items_are_requests() -> None:
    template = (
        "## Checklist\n\n- [ ] Tests added or updated\n- [ ] Docs updated\n"
        "- [ ] Changelog updated\n- [ ] I ran `./scripts/format.sh` and `pytest tests/`\n"
        "- [ ] My commits are signed off (`git commit -s`)\n"
        "- [ ] This change was discussed in an issue before I started\n"
    )
    summary = summarize_rules({".github/PULL_REQUEST_TEMPLATE.md": template})
    by_rule = _rules(summary)
    assert {"tests_new_code", "docs_generic", "changelog_update", "signoff_checklist",
            "issue_discussed_checklist"} <= set(by_rule)
    assert "`./scripts/format.sh`" in by_rule["lint_command"]["statement"]
    assert "`pytest tests/`" in by_rule["tests_command"]["statement"]
    # The same words in a guide's description are not a checklist.
    described = summarize_rules({"CONTRIBUTING.md": "Our commits are signed off by the bot.\n"})
    assert "signoff_checklist" not in _rules(described)


def test_one_rule_in_two_files_is_one_fact_citing_both() -> None:
    guide = "# Contributing\n\n## Documentation\n\nAdd docs for your feature in `docs/`.\n"
    agents = "# Agents\n\nAlways add docs for your feature in `docs/`.\n"
    summary = summarize_rules({"CONTRIBUTING.md": guide, "AGENTS.md": agents})
    docs = [f for f in summary["facts"] if f["topic"] == "docs"]
    assert len(docs) == 1 and docs[0]["sources"] == ["CONTRIBUTING.md", "AGENTS.md"]
    assert "(`CONTRIBUTING.md`; `AGENTS.md`)" in format_rules_markdown(summary)


def test_a_guide_that_only_describes_the_project_states_no_rule() -> None:
    text = """\
# Contributing to Frobnicator

Frobnicator ships with 2,000 unit tests and integration tests that run nightly on our
cluster. Our documentation is built with Sphinx. The CHANGELOG is generated at release time.

We track bugs in GitHub issues; issues that get no answer are not closed automatically.
Reviews are done by whoever has time. Results of our benchmarks are published on the website,
comparing Frobnicator with other libraries. Several maintainers use Copilot in their editors.
"""
    summary = summarize_rules({"CONTRIBUTING.md": text})
    assert summary["facts"] == []
    assert summary["not_stated"] == ["tests", "docs", "lint", "sign-off", "issue-first",
                                     "algorithms", "review", "ci", "stale"]


def test_underlined_headings_and_indented_code_of_rst_and_markdown() -> None:
    text = ("Contributing\n============\n\nTesting\n-------\n\n"
            "Every change needs coverage. Run ``pytest`` before you push:\n\n"
            "    pytest tests/\n\nDocumentation\n~~~~~~~~~~~~~\n\n"
            "Please add a page for each new estimator.\n")
    summary = summarize_rules({"CONTRIBUTING.rst": text})
    by_rule = _rules(summary)
    assert by_rule["tests_section"]["statement"] == "New or changed code needs tests."
    assert by_rule["tests_command"]["statement"] == "Tests run with `pytest`, `pytest tests/`."
    assert "docs_section" in by_rule


def test_a_test_plan_field_in_a_pr_template_is_a_question_not_a_rule() -> None:
    template = ("## How has this been tested?\n\n"
                "<!-- Please describe in detail how you tested your changes. -->\n")
    by_rule = _rules(summarize_rules({".github/PULL_REQUEST_TEMPLATE.md": template}))
    assert by_rule["tests_how_tested"]["strength"] == "hint"
    assert not {"tests_section", "tests_new_code", "tests_add"} & set(by_rule)


def test_other_wordings_of_issue_first_review_placement_and_examples() -> None:
    text = ("# Contributing\n\nPlease discuss major changes in an issue before opening a PR.\n\n"
            "Two approvals are required to merge a pull request.\n\n"
            "New algorithms should be added under `src/rlkit/algorithms/`.\n\n"
            "Add an example script to `examples/` that shows the new feature.\n\n"
            "If you report a bug, provide a minimal example that reproduces it.\n")
    by_rule = _rules(summarize_rules({"CONTRIBUTING.md": text}))
    assert by_rule["issue_first_general"]["topic"] == "issue-first"
    # the count is said (rules65; before, "Every PR needs a review before it is merged")
    assert by_rule["review_approvals_count"]["statement"] == (
        "Every PR needs two approving reviews before merging.")
    assert "`src/rlkit/algorithms/`" in by_rule["place_paths_declarative"]["statement"]
    assert by_rule["examples_add"]["statement"] == "Add an example for the change (in `examples/`)."
    bug_only = summarize_rules({"CONTRIBUTING.md": text.split("\n\n")[-1]})
    assert "examples_add" not in _rules(bug_only)  # an example that reproduces a bug


def test_probot_stale_config() -> None:
    config = "daysUntilStale: 45\ndaysUntilClose: 7\nexemptLabels:\n  - pinned\n  - security\n"
    by_rule = _rules(summarize_rules({".github/stale.yml": config}))
    statement = by_rule["stale_probot"]["statement"]
    assert statement.startswith("The stale bot (Probot) is configured.")
    assert "after 45 days" in statement and "closed 7 days later" in statement
    assert "`pinned`, `security`" in statement


def test_section_words_match_whole_heading_words() -> None:
    latest = "# Guide\n\n## Latest changes\n\nEvery new feature is announced on the blog.\n"
    assert "tests_section" not in _rules(summarize_rules({"CONTRIBUTING.md": latest}))
    slashed = "# Guide\n\n## Tests/Docs\n\nEvery new feature must be covered.\n"
    assert "tests_section" in _rules(summarize_rules({"CONTRIBUTING.md": slashed}))
