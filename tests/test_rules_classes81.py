"""rules81: set AD's misses and wrong lines, read as general classes. Every text here is a short
one written for these tests (none copied from the written set)."""

from __future__ import annotations

from tests.test_rules_classes80 import _statements

# --- wrong lines first ----------------------------------------------------------------------------


def test_a_chinese_wish_said_not_required_is_no_results_rule() -> None:
    text = ("# 贡献指南\n\n- 欢迎在 PR 中附上训练曲线的截图，但这不是必须的。\n"
            "- 提交前请运行 `pytest`。\n")
    assert not _statements({"CONTRIBUTING.md": text}, "results")


# --- misses ---------------------------------------------------------------------------------------


def test_a_copyright_header_on_new_files_is_a_code_style_rule() -> None:
    text = ("# Contributing\n\n## Checklist\n\n- [ ] Every new file carries the license "
            "header\n")
    lines = _statements({".github/pull_request_template.md": text}, "code-style")
    assert [s for s in lines if "header" in s], lines


def test_type_hints_said_as_what_public_functions_have() -> None:
    text = ("# Contributing\n\n## Style\n\nAll public methods have complete type hints; "
            "reviewers check this.\n")
    lines = _statements({"CONTRIBUTING.md": text}, "code-style")
    assert [s for s in lines if "Type hints" in s], lines


def test_go_error_wrapping_and_no_panic_are_code_style() -> None:
    text = ("# Contributing\n\n## Conventions\n\n- Wrap returned errors with context "
            "(`fmt.Errorf(\"load: %w\", err)`).\n- Never `panic` in library code; return an "
            "error.\n")
    lines = _statements({"CONTRIBUTING.md": text}, "code-style")
    assert [s for s in lines if "Wrap errors" in s], lines
    assert [s for s in lines if "panic" in s], lines


def test_prow_commands_and_owners_files_are_the_review_rule() -> None:
    text = ("# Contributing\n\n## Merging\n\nA change lands when an approver from the "
            "`OWNERS` file of the directory comments `/approve` and a reviewer comments "
            "`/lgtm`.\n")
    lines = _statements({"CONTRIBUTING.md": text}, "review")
    assert [s for s in lines if "/approve" in s and "OWNERS" in s], lines


def test_a_maintainer_starting_ci_for_first_time_contributors() -> None:
    prow = ("# Contributing\n\n## CI\n\nFor new contributors a maintainer writes "
            "`/ok-to-test` on the PR before the tests run.\n")
    actions = ("# Development\n\n## CI\n\nThe workflows run on every PR. For first-time "
               "contributors a maintainer must approve the workflow run first.\n")
    assert [s for s in _statements({"CONTRIBUTING.md": prow}, "ci") if "/ok-to-test" in s]
    assert [s for s in _statements({"CONTRIBUTING.md": actions}, "ci") if "first-time" in s]


def test_a_title_form_with_slots_said_without_the_word_pr() -> None:
    text = ("# Contributing\n\n## Pull requests\n\n- Titles take the form "
            "`<package>: <summary>`, e.g. `cache: drop stale keys`.\n")
    lines = _statements({"CONTRIBUTING.md": text}, "pr-title")
    assert [s for s in lines if "<package>: <summary>" in s], lines


def test_regenerated_reference_docs_are_committed() -> None:
    text = ("# Contributing\n\n## Docs\n\nNew flags are described in their help text and the "
            "reference is regenerated with `make docs-gen`. Commit the generated page.\n")
    lines = _statements({"CONTRIBUTING.md": text}, "docs")
    assert [s for s in lines if "make docs-gen" in s], lines


def test_one_self_contained_file_per_algorithm() -> None:
    text = ("# tinyrl\n\n## Contributing\n\nNew agents go in a single self-contained file "
            "under `tinyrl/`; copy code rather than importing it.\n")
    lines = _statements({"README.md": text}, "algorithms")
    assert [s for s in lines if "self-contained" in s], lines


def test_prs_made_wholesale_by_ai_tools_and_naming_the_assistant() -> None:
    text = ("# Contributing\n\n## Use of AI\n\nWe close PRs produced entirely by AI tools. "
            "If an assistant wrote part of the change, name the tool in the PR.\n")
    lines = _statements({"CONTRIBUTING.md": text}, "ai-policy")
    assert [s for s in lines if "restricted" in s], lines
    assert [s for s in lines if "Say in the PR" in s], lines


def test_results_needed_from_a_benchmark_against_a_reference_optimizer() -> None:
    text = ("# Contributing\n\n## Results\n\nNew schedulers need results from "
            "`python -m bench --suite tiny`: the final loss and the loss curve against SGD.\n")
    lines = _statements({"CONTRIBUTING.md": text}, "results")
    assert [s for s in lines if "loss curve" in s and "against SGD" in s], lines


def test_scores_reported_for_the_baseline_and_the_change() -> None:
    text = ("# Contributing\n\n## Numbers\n\nIf you add a retriever, report the average "
            "scores on the eval suite for the baseline and your change in the PR.\n")
    lines = _statements({"CONTRIBUTING.md": text}, "results")
    assert [s for s in lines if "baseline" in s], lines
