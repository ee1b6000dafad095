"""rules70: what a text calls optional or not required is not stated as a requirement. A
heading marked "(optional)", a bare "Not needed." after a request, and "no one will ask you
for" / "if you are curious" waive the request they are about; a mere mention of a timing
folder is no rule. Every text here is a short one written for these tests."""

from __future__ import annotations

from tests.test_rules_generalise import _rules

TEMPLATE = ".github/PULL_REQUEST_TEMPLATE.md"


def test_a_request_followed_by_not_needed_in_a_template_comment_states_nothing() -> None:
    text = ("## Summary\n\nWhat does this change?\n\n## Memory use\n\n<!-- If you profiled memory, "
            "post the before and after numbers below. Not needed. -->\n")
    assert "results_perf" not in _rules({TEMPLATE: text})


def test_a_bare_optional_after_a_list_item_waives_it() -> None:
    text = "## Checks\n\n- Post before and after throughput numbers. Optional.\n- Describe the change.\n"
    assert "results_perf" not in _rules({TEMPLATE: text})


def test_requests_under_a_heading_marked_optional_are_no_rules() -> None:
    text = ("# Contributing\n\n## Speed numbers (optional)\n\nPlease include before and after "
            "throughput numbers for changes to the rollout loop.\n")
    assert "results_perf" not in _rules({"CONTRIBUTING.md": text})
    marked = text.replace("(optional)", "(not required)")
    assert "results_perf" not in _rules({"CONTRIBUTING.md": marked})


def test_nobody_will_ask_and_if_you_are_curious_waive_the_sentence() -> None:
    text = ("# Contributing\n\n## Layout\n\nThe `perf/` directory holds scripts that measure step "
            "time and throughput. Run them if you are curious about speed; no one will ask you "
            "for their output.\n")
    assert "results_perf" not in _rules({"CONTRIBUTING.md": text})
    nobody = ("# Contributing\n\nLatency numbers from `bench/run.py` are welcome in the PR, "
              "but nobody will ask you for them.\n")
    assert "results_perf" not in _rules({"CONTRIBUTING.md": nobody})


def test_a_timing_folder_or_a_performance_heading_alone_is_no_rule() -> None:
    text = ("# Contributing\n\n## Performance impact\n\nThe `benchmarks/` folder holds scripts "
            "that print timings and throughput numbers.\n")
    assert "results_perf" not in _rules({"CONTRIBUTING.md": text})


def test_a_stated_benchmark_rule_survives_a_waiver_about_something_else() -> None:
    stated = ("# Contributing\n\n## Performance\n\nChanges that touch the rollout loop must "
              "include before and after throughput numbers.\n")
    assert "results_perf" in _rules({"CONTRIBUTING.md": stated})
    other = stated.replace("numbers.\n", "numbers. A changelog entry is not required.\n")
    assert "results_perf" in _rules({"CONTRIBUTING.md": other})
    optional_elsewhere = stated + "\n## Screenshots (optional)\n\nAdd one if the UI changes.\n"
    assert "results_perf" in _rules({"CONTRIBUTING.md": optional_elsewhere})


def test_an_optional_label_waives_its_own_sentence_not_the_one_before() -> None:
    text = ("## Checks\n\n- Post before and after throughput numbers. Optional: attach a "
            "profile of the run.\n")
    assert "results_perf" in _rules({TEMPLATE: text})
    labelled = "## Checks\n\n- Describe the change.\n- Optional: post before/after latency numbers.\n"
    assert "results_perf" not in _rules({TEMPLATE: labelled})
