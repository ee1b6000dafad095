"""rules72: the classes behind blind sets T and U's invented lines and misses. Every text here
is a short one written for these tests (not copied from the sets)."""

from __future__ import annotations

from tests.test_rules_generalise import _rules

GUIDE = "CONTRIBUTING.md"


# --- what "rather than X" / "instead of X" names is what is NOT asked --------------------------


def test_a_cla_named_after_rather_than_or_instead_of_is_not_asked() -> None:
    rather = ("# Contributing\n\nEvery commit needs a `Signed-off-by:` trailer: the project relies "
              "on the Developer Certificate of Origin rather than a Contributor License Agreement, "
              "so there is nothing more to sign.\n")
    assert "cla_required" not in _rules({GUIDE: rather})
    instead = ("# Contributing\n\nEach commit is signed off; we chose that instead of having "
               "people sign a CLA, which keeps things simple.\n")
    assert "cla_required" not in _rules({GUIDE: instead})


def test_a_cla_asked_before_a_rather_than_clause_is_still_asked() -> None:
    text = ("# Contributing\n\nYou must sign the CLA before your first pull request rather than "
            "after the review.\n")
    assert "cla_required" in _rules({GUIDE: text})


def test_instead_of_still_sends_contributions_elsewhere() -> None:
    text = ("# Contributing\n\nPublish new datasets on the Hub instead of adding them to this "
            "repository.\n")
    assert "place_elsewhere" in _rules({GUIDE: text})


# --- a wish ("we would appreciate", "nice to have", "welcome") is no requirement ---------------


def test_an_appreciated_commit_style_is_no_rule() -> None:
    text = ("# Contributing\n\n## Commits\n\nWe would appreciate commit subjects in the "
            "imperative mood, though any wording is accepted.\n")
    assert "commit_subject_style" not in _rules({GUIDE: text})
    short = text.replace("We would appreciate", "We'd appreciate")
    assert "commit_subject_style" not in _rules({GUIDE: short})
    nice = ("# Contributing\n\n## Commits\n\nImperative-mood commit subjects are nice to have.\n")
    assert "commit_subject_style" not in _rules({GUIDE: nice})


def test_numbers_welcome_but_not_required_state_no_benchmark_rule() -> None:
    text = ("# Contributing\n\n## Checklist\n\n1. Run the unit tests.\n2. Explain the change. "
            "Before and after throughput numbers are welcome but not required.\n")
    assert "results_perf" not in _rules({GUIDE: text})
    welcome = ("# Contributing\n\nLatency numbers from the benchmark script are always welcome "
               "in the PR description.\n")
    assert "results_perf" not in _rules({GUIDE: welcome})


def test_a_required_imperative_style_is_still_stated() -> None:
    text = "# Contributing\n\n## Commits\n\nWrite commit subjects in the imperative mood.\n"
    assert "commit_subject_style" in _rules({GUIDE: text})


# --- a section for the people who merge asks nothing of contributors ---------------------------

MERGING = ("- Give the squash commit a Conventional Commits title (`feat: ...`, `fix: ...`).\n"
           "- Add the `perf` label when a pull request changes the scheduler, so the nightly "
           "throughput job benchmarks it.\n")


def test_a_maintainers_only_section_states_no_contributor_rule() -> None:
    for heading in ("Maintainers only", "For maintainers", "Notes for committers"):
        text = f"# Contributing\n\n## Tests\n\nRun `pytest` before you push.\n\n## {heading}\n\n{MERGING}"
        rules = _rules({GUIDE: text})
        assert "pr_title_conventional" not in rules, heading
        assert "results_perf" not in rules, heading
        assert "tests_command" in rules


def test_a_section_contributors_can_skip_states_no_rule() -> None:
    text = (f"# Contributing\n\n## Merging\n\nThis part is for the people who merge. "
            f"Contributors can skip it.\n\n{MERGING}\n## Tests\n\nRun `pytest` before you push.\n")
    rules = _rules({GUIDE: text})
    assert "pr_title_conventional" not in rules
    assert "tests_command" in rules


def test_the_same_requests_for_contributors_are_stated() -> None:
    text = f"# Contributing\n\n## Pull requests\n\n{MERGING}"
    assert "pr_title_conventional" in _rules({GUIDE: text})
    conditional = ("# Contributing\n\n## Pull requests\n\nIf you only change docs, you can skip "
                   f"this section.\n\n{MERGING}")
    assert "pr_title_conventional" in _rules({GUIDE: conditional})


# --- results asked in other words: figures, accuracy, a histogram, a single curve --------------


def test_speed_figures_from_a_named_script_are_a_benchmark_rule() -> None:
    text = ("# Contributing\n\n## Speed\n\nIf your change touches the sampler, run "
            "`python scripts/bench_sampler.py` on main and on your branch and paste both "
            "samples-per-second figures into the PR.\n")
    facts = _rules({GUIDE: text})
    assert "results_perf" in facts
    assert "bench_sampler" in facts["results_perf"]["statement"]


def test_accuracy_before_and_after_for_some_changes_is_a_scoped_results_rule() -> None:
    text = ("# Contributing\n\nIf your change can alter the classifier head, report top-1 "
            "accuracy on the validation split before and after the change in the PR description.\n")
    facts = _rules({GUIDE: text})
    assert "results_scoped" in facts
    assert "accuracy" in facts["results_scoped"]["statement"]
    assert "before and after" in facts["results_scoped"]["statement"]


def test_a_histogram_and_a_single_curve_for_some_changes_are_asked() -> None:
    text = ("# Contributing\n\n- If you change the gating network, attach the token-routing "
            "histogram and the z-loss curve from `bash scripts/tiny.sh` for main and your branch.\n")
    facts = _rules({GUIDE: text})
    assert "results_scoped" in facts
    statement = facts["results_scoped"]["statement"]
    assert "histogram" in statement or "z-loss curve" in statement


def test_japanese_results_comparison_for_new_methods_and_title_format() -> None:
    text = ("# コントリビューションガイド\n\n## 評価\n\n新しい学習手法を追加するプルリクエストでは、"
            "ベースラインとの比較結果をプルリクエストの説明に記載してください。\n\n## タイトル\n\n"
            "プルリクエストのタイトルは `feat: 〜`、`fix: 〜` の形式にしてください。\n")
    facts = _rules({GUIDE: text})
    assert {f["topic"] for f in facts.values()} >= {"results", "pr-title"}


# --- a test of its own asked for a kind of change, in a named tests folder ---------------------


def test_a_test_folder_asked_for_a_kind_of_change_is_stated() -> None:
    every = ("# Agent notes\n\n1. Every new solver gets a test in `tests/solvers/` that runs "
             "ten iterations and checks the residual.\n")
    facts = _rules({"AGENTS.md": every})
    assert any("tests/solvers/" in f["statement"] for f in facts.values() if f["topic"] == "tests")
    box = ("## Checklist\n\n- [ ] New tokenizers only: I added a fixture of five strings to "
           "`tests/fixtures/`.\n")
    facts = _rules({".github/PULL_REQUEST_TEMPLATE.md": box})
    assert any("tests/fixtures/" in f["statement"] for f in facts.values() if f["topic"] == "tests")
    changes = ("# Contributing\n\nChanges to a kernel in `pkg/kernels/` also need a numerical test "
               "against the reference in `tests/golden/`.\n")
    facts = _rules({GUIDE: changes})
    assert any("tests/golden/" in f["statement"] for f in facts.values() if f["topic"] == "tests")


def test_tests_in_the_tests_folder_for_all_code_are_not_said_of_some_changes() -> None:
    text = "# Contributing\n\nAdd tests in `tests/` for new code.\n"
    assert not any("some changes" in f["statement"].lower() for f in _rules({GUIDE: text}).values())


# --- where new code is registered --------------------------------------------------------------


def test_where_new_code_is_registered_is_stated() -> None:
    box = ("## Checklist\n\n- [ ] New metrics are registered in `kit/metrics/catalog.py` and listed "
           "in `docs/metrics.md`.\n")
    facts = _rules({".github/PULL_REQUEST_TEMPLATE.md": box})
    assert any("kit/metrics/catalog.py" in f["statement"] for f in facts.values())
    described = "# Contributing\n\nThe registry in `kit/metrics/catalog.py` maps names to classes.\n"
    assert not any("kit/metrics/catalog.py" in f["statement"] for f in _rules({GUIDE: described}).values())
