"""rules79: classes of misses left in the developed sets, read in general form. Every text here
is a short one written for these tests (none copied from the written sets)."""

from __future__ import annotations

from tests.test_rules_answers import _facts


def _results_lines(files: dict[str, str]) -> list[str]:
    return [f["statement"] for f in _facts(files) if f["topic"] == "results"]


# --- a results request scoped only by its section heading ----------------------------------------


def test_a_baseline_named_only_as_an_identifier_is_the_comparison_under_its_heading() -> None:
    text = ("# Contributing to wren\n\n## Tests\n\nRun `pytest` before you push.\n\n"
            "## New schedulers\n\n- Put the scheduler in `wren/sched/`.\n"
            "- In the PR, give the validation loss on `toy-lm` next to the loss of the "
            "`cosine_baseline` schedule, with the same seed.\n")
    lines = _results_lines({"CONTRIBUTING.md": text})
    assert any("cosine_baseline" in line and "for new schedulers" in line for line in lines), lines


def test_a_results_request_under_a_changes_heading_keeps_that_heading_as_its_condition() -> None:
    text = ("# Contributing to finch\n\n## Tests\n\nRun `pytest` before you push.\n\n"
            "## Changes to the replay buffer\n\nThe smoke run takes ten minutes on a laptop. "
            "Post the mean return after 50 episodes in the PR; it must stay within 3% of `main`.\n")
    lines = _results_lines({"CONTRIBUTING.md": text})
    assert "Share evaluation results in the PR (mean return), for changes to the replay buffer." in lines
    assert "Results must stay within 3% of main, for changes to the replay buffer." in lines


def test_a_results_request_under_a_plain_heading_is_asked_of_every_pr() -> None:
    text = ("# Contributing to finch\n\n## Pull requests\n\n"
            "Post the mean return after 50 episodes in the PR.\n")
    lines = _results_lines({"CONTRIBUTING.md": text})
    assert lines and not any("for " in line.split("PR", 1)[-1] for line in lines), lines


# --- a file a list of requests commits, and where it goes ----------------------------------------


def test_the_path_a_contribution_commits_a_file_as_is_where_it_goes() -> None:
    text = ("# Contributing to tern\n\n## Changes to the optimiser\n\nFor those pull requests:\n\n"
            "1. Save the exact settings you used as `runs/<date>_<name>/settings.toml`.\n"
            "2. Run two seeds of your branch and of `main`.\n")
    lines = [f["statement"] for f in _facts({"CONTRIBUTING.md": text}) if f["topic"] == "algorithms"]
    assert lines == ["The guide says where such files go (paths named: `runs/<date>_<name>/settings.toml`), "
                     "for changes to the optimiser."], lines


def test_commit_messages_written_as_a_path_name_no_place() -> None:
    text = ("# Contributing\n\n## Commits\n\nCommit messages are written as `area/sub: summary`; "
            "keep them short.\n")
    assert not [f for f in _facts({"CONTRIBUTING.md": text}) if f["topic"] == "algorithms"]


# --- the size from which an issue comes first -----------------------------------------------------


def test_an_issue_first_from_a_size_keeps_that_size() -> None:
    items = ("# Contributing to plover\n\n- Keep each PR to one topic.\n"
             "- More than 400 changed lines? Open an issue first and wait for a maintainer's approval.\n"
             "- `pytest` green.\n")
    lines = [f["statement"] for f in _facts({"CONTRIBUTING.md": items}) if f["topic"] == "issue-first"]
    assert ("Changes of more than 400 changed lines need an issue first, and a maintainer's approval, "
            "before the PR.") in lines, lines
    prose = "# Contributing\n\nPull requests over 1000 lines of code need an issue agreed first.\n"
    lines = [f["statement"] for f in _facts({"CONTRIBUTING.md": prose}) if f["topic"] == "issue-first"]
    assert "Changes of over 1000 lines of code need an issue first, before the PR." in lines, lines


def test_lines_without_a_size_name_no_size() -> None:
    text = "# Contributing\n\nOpen an issue first; keep lines under 100 characters.\n"
    lines = [f["statement"] for f in _facts({"CONTRIBUTING.md": text}) if f["topic"] == "issue-first"]
    assert lines and not any("Changes " in line for line in lines), lines


# --- a rule that points back at what a story told -------------------------------------------------


def test_a_rule_pointing_back_at_a_story_asks_what_the_story_told() -> None:
    text = ("# How a change lands in heron\n\n## Day 2\n\nTom ran the eval suite on main and on "
            "his branch and put the top-1 accuracy for both in the PR description. Any change "
            "to a tokenizer or a sampler needs that table.\n")
    lines = _results_lines({"CONTRIBUTING.md": text})
    assert any("any change to a tokenizer or a sampler" in line and "top-1 accuracy" in line
               for line in lines), lines


def test_a_story_alone_asks_nothing() -> None:
    text = ("# How a change lands in heron\n\n## Day 2\n\nTom ran the eval suite on main and on "
            "his branch and put the top-1 accuracy for both in the PR description. The reviewers "
            "liked that table.\n")
    assert not _results_lines({"CONTRIBUTING.md": text})


# --- "For a new X, ..." and the numbers results stand next to ------------------------------------


def test_results_next_to_reported_numbers_for_a_new_thing() -> None:
    text = ("# Contributing\n\n## Pull requests\n\n- Run `pytest` before you push.\n"
            "- For a new vision backbone, include top-1 accuracy on the val split next to the "
            "numbers reported by the paper's authors.\n")
    lines = _results_lines({"CONTRIBUTING.md": text})
    assert ("Compare the results with the numbers reported by the paper's authors, "
            "for a new vision backbone.") in lines, lines


def test_a_size_said_is_the_issue_first_rule_and_other_lines_are_no_size() -> None:
    text = "# Contributing\n\n- Over 300 changed lines? Open an issue first.\n"
    lines = [f["statement"] for f in _facts({"CONTRIBUTING.md": text}) if f["topic"] == "issue-first"]
    assert lines == ["Changes of over 300 changed lines need an issue first, before the PR."], lines
    logs = "# Contributing\n\nIn an issue, paste logs over 500 lines as a file attachment.\n"
    assert not any("Changes of" in f["statement"] for f in _facts({"CONTRIBUTING.md": logs}))


def test_an_issue_forms_text_asks_results_from_an_open_model() -> None:
    form = ("name: New environment\ndescription: Propose an environment\nbody:\n"
            "  - type: markdown\n    attributes:\n      value: |\n"
            "        Accepted environments must ship reference returns for at least one open model.\n"
            "  - type: input\n    attributes:\n      label: Environment name\n")
    lines = _results_lines({".github/ISSUE_TEMPLATE/new_env.yml": form})
    assert "Results should come from at least one open model, so others can check them." in lines, lines


def test_what_is_not_merged_undocumented_is_said_not_every_change() -> None:
    text = "# Contributing\n\n## Docs\n\nEach new sampler gets a page. Undocumented samplers are not merged.\n"
    docs = [f["statement"] for f in _facts({"CONTRIBUTING.md": text}) if f["topic"] == "docs"]
    assert "Samplers without documentation are not merged." in docs, docs
    every = "# Contributing\n\nPull requests without documentation will not be merged.\n"
    docs = [f["statement"] for f in _facts({"CONTRIBUTING.md": every}) if f["topic"] == "docs"]
    assert "A change without its documentation is not merged." in docs, docs
