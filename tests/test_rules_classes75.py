"""Classes of rules the developed written sets (Q, T, U, V, W) still missed after rules74
(docs/rules.md, "Review rules75"), read here in wordings written for these tests, not the
sets' sentences. Each test also checks what is NOT said."""

from __future__ import annotations

from analyzers.rules import stated_condition, table
from tests.test_rules_generalise import _rules, _topics


def test_a_before_and_after_request_naming_an_evaluation_measure_says_the_measure() -> None:
    # "outputs" here is what a model produces, not the output of a speed benchmark: the request
    # is an evaluation result and the summary names it (it was "before/after output")
    md = ("If your change can affect what the ranking model predicts (its outputs, its "
          "features), report top-5 accuracy on the validation fold before and after the change.\n")
    rules = _rules({"CONTRIBUTING.md": md})
    assert "results_conditional" not in rules
    assert rules["results_scoped"]["statement"] == (
        "Some changes need evaluation results in the PR; the guide says which (if your change "
        "can affect what the ranking model predicts) and what (top-5 accuracy, before and after).")
    # a speed request without a measure of quality is still the before/after output one
    speed = ("If your change touches the data loader, paste the timings from `bench/load.py` "
             "before and after.\n")
    assert "results_conditional" in _rules({"CONTRIBUTING.md": speed})


def test_results_asked_in_the_present_tense_of_what_a_pr_does_are_a_results_rule() -> None:
    # the rule said as what the PR does ("reports", "attaches"), scoped to the PRs it names
    md = ("Every pull request that modifies a ranker reports its top-1 accuracy on the dev split "
          "in the description.\n")
    assert _rules({"CONTRIBUTING.md": md})["results_scoped"]["statement"] == (
        "Some changes need evaluation results in the PR; the guide says which (that modifies a "
        "ranker) and what (top-1 accuracy).")
    # a description of what a tool reports asks nothing of the contributor
    tool = "The nightly job reports accuracy on the dev split to the dashboard.\n"
    assert "results" not in _topics({"CONTRIBUTING.md": tool})


def test_a_larger_change_that_starts_as_a_forum_thread_is_discussed_first() -> None:
    md = "Larger changes should start as a GitHub Discussion in the Proposals category.\n"
    assert _rules({"CONTRIBUTING.md": md})["issue_first_forum"]["statement"] == (
        "Discuss a new feature or larger change first (in a GitHub Discussion) before the PR.")
    # how the project began, or where questions go, asks nothing first
    for told in ("The project started as a GitHub Discussion about larger reward models.\n",
                 "Questions about larger changes can start as a GitHub Discussion.\n"):
        assert "issue-first" not in _topics({"CONTRIBUTING.md": told}), told


_FORM = """name: Suggest a new sampler
description: Propose a sampler for the library.
body:
  - type: checkboxes
    id: promises
    attributes:
      label: Promises
      options:
        - label: I will wait until this proposal is approved before writing the implementation.
          required: {required}
        - label: The pull request will compare the new sampler with the ancestral baseline.
          required: {required}
"""


def test_a_required_issue_form_box_states_its_proposal_and_results_rules() -> None:
    form = {".github/ISSUE_TEMPLATE/new_sampler.yml": _FORM.format(required="true")}
    rules = _rules(form)
    assert rules["issue_proposal_first"]["statement"] == (
        "Larger changes need an accepted design proposal before the implementation.")
    assert rules["results_compare"]["statement"] == (
        "Compare the results with the ancestral baseline.")
    # the same boxes left optional are offers the author may tick: nothing is asked
    optional = {".github/ISSUE_TEMPLATE/new_sampler.yml": _FORM.format(required="false")}
    assert not {"issue-first", "results"} & _topics(optional)


def test_a_named_pr_template_asks_its_checklist_of_its_own_pull_requests() -> None:
    folder = ".github/PULL_REQUEST_TEMPLATE/"
    files = {
        folder + "new_metric.md": (
            "## Checklist\n\n- [ ] I attached the loss-scale curves and the win rate against "
            "the base model.\n- [ ] The metric is documented in `docs/metrics/`.\n"),
        folder + "typo.md": "## Checklist\n\n- [ ] Only spelling changes.\n",
    }
    rules = _rules(files)
    assert rules["results_share"]["statement"] == (
        "Share evaluation results in the PR (loss-scale curves) (asked in the “new metric” "
        "pull request template only).")
    assert rules["results_share"]["source"] == folder + "new_metric.md"
    # the one default template asks its checklist of every pull request
    default = {".github/PULL_REQUEST_TEMPLATE.md": files[folder + "new_metric.md"]}
    assert _rules(default)["results_share"]["statement"] == (
        "Share evaluation results in the PR (loss-scale curves).")


def test_a_test_file_named_for_some_changes_must_pass_for_them() -> None:
    md = ("If you touch the audio resampler, `tests/audio/test_resample.py` must pass as well.\n")
    assert _rules({"CONTRIBUTING.md": md})["tests_named_file"]["statement"] == (
        "Some changes must also pass the tests the guide names for them "
        "(`tests/audio/test_resample.py`).")
    # a test file shown as an example of where tests live asks nothing of some changes
    layout = "Tests live in files such as `tests/audio/test_resample.py`.\n"
    assert "tests_named_file" not in _rules({"CONTRIBUTING.md": layout})


def test_a_bug_fix_with_a_test_that_fails_first_is_a_regression_test_rule() -> None:
    md = ("Each bug fix is accompanied by a test which fails on `master` and passes with the "
          "patch.\n")
    assert _rules({"CONTRIBUTING.md": md})["tests_fails_first"]["statement"] == (
        "A bug fix needs a test that fails on master and passes with the fix.")
    # a CI job that fails on master is no test asked of a bug fix
    told = "The nightly job sometimes fails on master; a bug fix for it is welcome.\n"
    assert "tests_fails_first" not in _rules({"CONTRIBUTING.md": told})


def test_the_individual_and_corporate_agreements_are_a_cla() -> None:
    md = ("Before your first merge, sign the ICLA; if your employer owns your work, it signs "
          "the CCLA. The LF EasyCLA check tells you which one is missing.\n")
    assert _rules({"CONTRIBUTING.md": md})["cla_required"]["statement"] == (
        "Contributors must sign a Contributor License Agreement (CLA).")
    waived = "No ICLA or CCLA is needed to contribute here.\n"
    assert "cla_required" not in _rules({"CONTRIBUTING.md": waived})


def test_a_package_guide_asks_its_rules_of_that_package_and_counts_approvals() -> None:
    files = {"CONTRIBUTING.md": "Run `make test` before pushing.\n",
             "libs/tokenizers/CONTRIBUTING.md": (
                 "Changes here need approval from three of the tokenizer maintainers.\n")}
    assert _rules(files)["review_approvals_count"]["statement"] == (
        "Every PR needs three approving reviews before merging (for changes to "
        "“libs/tokenizers/”, as the package guide says).")
    # the same sentence in the project's guide is every PR's rule
    whole = {"CONTRIBUTING.md": files["libs/tokenizers/CONTRIBUTING.md"]}
    assert _rules(whole)["review_approvals_count"]["statement"] == (
        "Every PR needs three approving reviews before merging.")


def test_work_that_must_reproduce_a_published_result_is_a_results_rule() -> None:
    for md, what in (("A new scorer has to reproduce the original implementation on the "
                      "shared inputs.\n", "the original implementation"),
                     ("Every new dataset loader must reproduce the published accuracy.\n",
                      "the published accuracy")):
        assert _rules({"CONTRIBUTING.md": md})["results_reproduce"]["statement"] == (
            f"Some new work should reproduce {what}; the guide says which."), md
    # reproducing a bug is a bug report's step, not a results rule
    bug = "Please include a script that can reproduce the published wheel's crash.\n"
    assert "results" not in _topics({"CONTRIBUTING.md": bug})


def test_a_consequence_in_the_present_tense_asks_what_it_names() -> None:
    md = ("## New plugins\n\nDoes it add a plugin? Plugins without a page in the user guide "
          "are not merged.\n")
    # (said of the changes its heading names since rules79)
    assert _rules({".github/pull_request_template.md": md})["docs_entry"]["statement"] == (
        "Add or update the documentation with the change, for new plugins.")
    # "If yes:" answers the template's question: no condition of its own to repeat
    assert stated_condition("If yes: is it registered with the loader", table().waived, 0) == (
        "in the cases the guide names")
    # what the project does not merge by itself is no request ("Drafts are not merged")
    drafts = "Draft pull requests are not merged; the user guide explains drafts.\n"
    assert "docs" not in _topics({"CONTRIBUTING.md": drafts})


def test_a_list_for_those_pull_requests_keeps_their_scope_and_the_seeds_asked() -> None:
    md = ("## Changes to the optimizer\n\nMost pull requests skip this. For those pull requests:\n\n"
          "1. Train five seeds of your branch and of `main`.\n"
          "2. Attach the loss curves of every run to the pull request description.\n")
    assert _rules({"CONTRIBUTING.md": md})["results_scoped"]["statement"] == (
        "Some changes need evaluation results in the PR (loss curves, five seeds); the guide "
        "says which.")
    # the same list for every pull request is not said of some
    every = md.replace("For those pull requests:", "For every pull request:")
    assert "results_scoped" not in _rules({"CONTRIBUTING.md": every})


def test_one_folder_per_contribution_says_where_it_goes() -> None:
    md = "One folder per benchmark: `suites/<benchmark_name>/` with a `spec.toml`.\n"
    assert _rules({"CONTRIBUTING.md": md})["place_paths_declarative"]["statement"] == (
        "The guide says where such code goes (paths named: `suites/<benchmark_name>/`).")
    # a folder per run written by a tool is not where contributions go
    told = "The trainer writes one folder per run, such as `outputs/<run_id>/`, and logs.\n"
    assert "algorithms" not in _topics({"CONTRIBUTING.md": told})


def test_a_command_block_inside_a_sentence_is_read_with_it() -> None:
    md = ("## Accelerator tests\n\nIf you touch the attention kernels, run\n\n```bash\n"
          "make gpu-test\n```\n\non a machine with a GPU and paste the last line of its output "
          "into the pull request.\n")
    fact = _rules({"CONTRIBUTING.md": md})["tests_gpu_run"]
    assert fact["statement"] == (
        "Some changes must be tested on a GPU by the contributor, with the output pasted in the "
        "PR (`make gpu-test`); the guide says which.")
    # GPU tests run by CI or a maintainer ask nothing of the contributor
    ci = "GPU tests run nightly on our own machines; paste nothing.\n"
    assert "tests_gpu_run" not in _rules({"CONTRIBUTING.md": ci})
