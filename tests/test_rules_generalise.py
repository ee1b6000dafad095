"""How the contribution-rule extractor reads wordings and formats it was not written from:
reStructuredText blocks and tables, rules waived in so many words, consequences stated as
rules, passive and heading forms, and statements that claim no more than the text names.
Every text here is a short one written for these tests; the written held-out corpus
(benchmarks/rules_written/) is checked against the goal at the end."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from analyzers.rules import summarize_rules
from analyzers.rules_text import markdown_segments

ROOT = Path(__file__).resolve().parent.parent


def _rules(files: dict[str, str]) -> dict[str, dict[str, Any]]:
    return {f["rule"]: f for f in summarize_rules(files)["facts"]}


def _topics(files: dict[str, str]) -> set[str]:
    return {f["topic"] for f in summarize_rules(files)["facts"]}


# --- reStructuredText and MkDocs blocks -------------------------------------------------------


def test_rst_admonition_body_is_prose_and_directive_body_is_code() -> None:
    rst = """\
Contributing
============

.. important::

   Pull requests are merged only after one approving review.

.. code-block:: bash

   pre-commit install

Run this::

   make lint
"""
    segments = markdown_segments(rst, "CONTRIBUTING.rst")
    kinds = {s.text: s.kind for s in segments}
    assert kinds["Pull requests are merged only after one approving review."] == "sentence"
    assert kinds["pre-commit install"] == "code"  # three-space indent, under a directive
    assert kinds["make lint"] == "code"  # a literal block after "::"
    by_rule = _rules({"CONTRIBUTING.rst": rst})
    assert by_rule["review_merge_after_approval"]["topic"] == "review"
    assert by_rule["precommit_install"]["statement"] == "Install the hooks with `pre-commit install`."


def test_mkdocs_admonition_body_is_prose_and_its_title_is_dropped() -> None:
    md = '# Guide\n\n!!! warning "Read this"\n    Every pull request needs unit tests.\n\nDone.\n'
    texts = [s.text for s in markdown_segments(md, "docs/contributing.md")]
    assert "Every pull request needs unit tests." in texts
    assert not any("Read this" in t for t in texts)


def test_rst_simple_table_rows_are_rows_with_their_cells() -> None:
    rst = """\
================  ==============================
Command           What it does
================  ==============================
``make test``     runs the test suite
``make lint``     ruff and mypy; must be clean
================  ==============================

After the table.
"""
    segments = markdown_segments(rst, "docs/development.rst")
    rows = [s for s in segments if s.kind == "row"]
    assert [r.head for r in rows] == ["Command", "make test", "make lint"]
    assert rows[1].text == "make test — runs the test suite"
    assert rows[1].codes == ["make test"]
    assert segments[-1].kind == "sentence" and segments[-1].text == "After the table."
    assert "`make test`" in _rules({"docs/development.rst": rst})["tests_command"]["statement"]


# --- waived rules -----------------------------------------------------------------------------


def test_a_clause_saying_a_thing_is_not_asked_states_no_rule() -> None:
    text = """\
# Contributing

- You don't have to sign a CLA.
- Signing off your commits is optional.
- There is no need to add a changelog entry.
- You don't need to update the docs for internal changes.
- Using AI tools is fine; you do not have to disclose it.
"""
    summary = summarize_rules({"CONTRIBUTING.md": text})
    assert summary["facts"] == []
    for topic in ("sign-off", "docs"):
        assert topic in summary["not_stated"]


def test_a_waiver_in_one_clause_keeps_the_rule_of_the_other() -> None:
    text = "# Contributing\n\nA CLA is not required, but every PR must add unit tests.\n"
    topics = _topics({"CONTRIBUTING.md": text})
    assert "tests" in topics
    assert "sign-off" not in topics


# --- consequences, passives and headings ------------------------------------------------------


def test_a_consequence_is_a_request() -> None:
    by_rule = _rules({"CONTRIBUTING.md": "# Contributing\n\nPRs without tests will not be merged.\n"})
    assert by_rule["tests_new_code"]["topic"] == "tests"
    # The same words as a description are not a rule.
    assert _topics({"CONTRIBUTING.md": "# Contributing\n\nWe wrote tests for the parser.\n"}) \
        .isdisjoint({"tests"})


def test_expected_behaviour_is_not_a_request() -> None:
    text = "# Contributing\n\nThis is expected behaviour. A maintainer runs the GPU tests.\n"
    assert "tests_kinds" not in _rules({"CONTRIBUTING.md": text})


def test_issue_first_in_the_passive_and_in_a_heading() -> None:
    passive = ("# Contributing\n\nFor anything beyond a typo, an issue should be opened first "
               "so that the design can be agreed on.\n")
    assert "issue_first_passive" in _rules({"CONTRIBUTING.md": passive})
    heading = ("# Contributing\n\n## Discuss features before implementing them\n\n"
               "We are a small team.\n")
    assert _rules({"CONTRIBUTING.md": heading})["issue_discuss_first"]["topic"] == "issue-first"
    undiscussed = ("# Contributing\n\nPull requests that add a trainer without prior discussion "
                   "are likely to be closed.\n")
    assert "issue_undiscussed_closed" in _rules({"CONTRIBUTING.md": undiscussed})


def test_issue_first_with_larger_change_nouns() -> None:
    text = ("# Contributing\n\nFor a new model family, please open an issue so we can agree on "
            "the interface before you spend time on it.\n")
    assert "issue_first_general" in _rules({"CONTRIBUTING.md": text})
    # Opening an issue for a bug is not a discuss-first rule.
    bug = "# Contributing\n\nBefore you open an issue about a bug, please search the tracker.\n"
    assert "issue-first" not in {f["topic"] for f in summarize_rules(
        {"CONTRIBUTING.md": bug})["facts"] if f["strength"] == "rule"}


# --- results, AI, docs, placement ------------------------------------------------------------


def test_benchmark_numbers_before_and_after_with_the_script() -> None:
    text = ("# Contributing\n\nChanges to the sampler are expected to include throughput numbers "
            "before and after, measured with `scripts/bench.py`.\n")
    statement = _rules({"CONTRIBUTING.md": text})["results_perf"]["statement"]
    assert statement == ("Changes that affect speed or memory need benchmark numbers "
                         "(before and after, from `scripts/bench.py`).")


def test_public_model_results_name_the_models_the_guide_names() -> None:
    text = "# Adding a task\n\nReport the score of at least two open-weight models.\n"
    statement = _rules({"CONTRIBUTING.md": text})["results_public_model"]["statement"]
    assert "at least two open-weight models" in statement


def test_ai_restriction_and_responsibility() -> None:
    text = ("# Contributing\n\nContributions generated by AI tools are not accepted.\n\n"
            "If you use a coding assistant, you are responsible for the code and must review "
            "it yourself.\n")
    by_rule = _rules({"CONTRIBUTING.md": text})
    assert by_rule["ai_restricted"]["topic"] == "ai-policy"
    assert by_rule["ai_responsible"]["topic"] == "ai-policy"
    about = "# About\n\nOur models are trained with AI feedback and reviewed by experts.\n"
    assert "ai-policy" not in _topics({"CONTRIBUTING.md": about})


def test_docs_request_needs_the_verb_near_the_docs() -> None:
    template = "## Checklist\n\n- [ ] I updated the Sphinx docs\n"
    assert "docs_request" in _rules({".github/PULL_REQUEST_TEMPLATE.md": template})
    # Docstrings alone are a code standard, not the docs.
    docstrings = "## Checklist\n\n- [ ] I updated the docstrings\n"
    assert "docs_request" not in _rules({".github/PULL_REQUEST_TEMPLATE.md": docstrings})
    far = ("# Contributing\n\nPlease add an entry that contains the PR URL, even for changes "
           "that touch only docs.\n")
    assert "docs_request" not in _rules({"CONTRIBUTING.md": far})


def test_docstrings_required_is_a_code_standard() -> None:
    text = "# Contributing\n\nPublic functions without a docstring will not pass review.\n"
    fact = _rules({"CONTRIBUTING.md": text})["docstrings_required"]
    assert fact["topic"] == "code-style"


def test_a_table_under_a_where_heading_says_where_code_goes() -> None:
    text = """\
# Contributing

## Where new components go

| Component | Directory |
|---|---|
| environments | `pkg/envs/` |
| algorithms | `pkg/algorithms/` |
"""
    statement = _rules({"CONTRIBUTING.md": text})["layout_table"]["statement"]
    assert statement == ("Where code goes, from the guide's table: environments in `pkg/envs/`; "
                         "algorithms in `pkg/algorithms/`.")
    # The same table under another heading says nothing about placement.
    other = text.replace("Where new components go", "Maintainers")
    assert "layout_table" not in _rules({"CONTRIBUTING.md": other})


def test_a_folder_step_of_an_adding_section_names_the_folder() -> None:
    text = "# Adding a task\n\n1. Create a folder `tasks/<name>/` for the task.\n"
    by_rule = _rules({"CONTRIBUTING.md": text})
    assert "`tasks/<name>/`" in by_rule["adding_section"]["statement"]


# --- statements claim no more than the text names --------------------------------------------


def test_statements_do_not_add_details_the_text_lacks() -> None:
    text = """\
# Contributing

A PR that shows up without a linked discussion may be closed.

Unreviewed AI output will be closed without review.

Commit messages follow Conventional Commits (`feat:`, `fix:`).
"""
    statements = " ".join(f["statement"] for f in summarize_rules({"CONTRIBUTING.md": text})["facts"])
    assert "reproduction" not in statements
    assert "template" not in statements
    assert "hook" not in statements
    assert "Conventional Commits" in statements


# --- the written held-out corpus --------------------------------------------------------------


def _evaluate_rules_module() -> Any:
    spec = importlib.util.spec_from_file_location(
        "evaluate_rules", ROOT / "benchmarks" / "evaluate_rules.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_written_corpus_reaches_the_goal_and_invents_nothing() -> None:
    evaluate_rules = _evaluate_rules_module()
    results = evaluate_rules.evaluate(evaluate_rules.RULES_WRITTEN)
    assert len(results) >= 9
    stated = sum(len(r["stated"]) for r in results.values())
    expected = sum(r["expected"] for r in results.values())
    assert stated >= evaluate_rules.GOAL * expected
    for name, r in results.items():
        assert r["invented"] == [], name
