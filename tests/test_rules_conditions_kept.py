"""Classes of rules set M's held-out files showed missed or over-strong (docs/rules.md, "Review
rulesm65"), read here in sentences written for these tests, not set M's: Japanese guides, "we
do not ask for X unless ..." waivers, docs and changelog rules stated under a condition, a
count of approvers, commit-message mood, news fragments without a modal, docstrings said as a
convention, CI named in a merge condition, generated docs to regenerate. Saying less than the
file is better than saying more: a conditional rule keeps its condition."""

from __future__ import annotations

from analyzers.rules import summarize_rules
from tests.test_rules_generalise import _rules, _topics


def _docs(files: dict[str, str]) -> list[str]:
    return [f["statement"] for f in summarize_rules(files)["facts"] if f["topic"] == "docs"]


def test_a_japanese_guide_is_read_through_its_gloss() -> None:
    md = """# 貢献ガイド

## 提案

新しいアルゴリズムを実装する前に、まず Issue を作成して議論してください。

## ルール

- バグ修正には必ずユニットテストを追加してください。
- すべてのコミットにサインオフが必要です（`git commit -s`）。
- 新しいトレーナーは `kit/trainers/` に追加してください。
- AI ツールを使用した場合は、プルリクエストの説明に記載してください。
- CLA への署名は不要です。
"""
    by_rule = _rules({"CONTRIBUTING.md": md})
    topics = {f["topic"] for f in by_rule.values()}
    assert {"issue-first", "tests", "sign-off", "algorithms", "ai-policy"} <= topics, by_rule
    assert "`kit/trainers/`" in by_rule["place_paths"]["statement"]
    assert "cla_required" not in by_rule  # 不要: not needed
    # the evidence stays the file's sentence
    assert by_rule["place_paths"]["evidence"].startswith("新しいトレーナー")


def test_a_waiver_with_an_exception_states_only_the_exception() -> None:
    md = ("We do not ask for evaluation results or timings, unless the pull request says it "
          "makes training faster: then post the timings before and after.\n")
    by_rule = _rules({"CONTRIBUTING.md": md})
    assert "results_share" not in by_rule
    assert by_rule["results_perf"]["statement"].endswith(
        ", if the pull request says it makes training faster.")
    assert "results" not in _topics({"CONTRIBUTING.md": "We don't ask for benchmark numbers.\n"})


def test_docs_and_changelog_rules_keep_their_condition() -> None:
    cases = {
        "When your change alters the command line, update the documentation.\n":
            ", when your change alters the command line.",
        "Add a line to the changelog if users will notice the change.\n":
            ", if users will notice the change.",
        "- [ ] I updated the docs if the config schema changed\n":
            ", if the config schema changed.",
    }
    for md, ending in cases.items():
        name = ".github/pull_request_template.md" if md.startswith("- [") else "CONTRIBUTING.md"
        assert [s[-len(ending):] for s in _docs({name: md})] == [ending], md
    # asked of every change: no condition; "check if" and "if needed" are none
    for md in ("Update the documentation with every change.\n",
               "Please update the documentation if needed.\n",
               "Update the docs, and check if the documentation still builds.\n"):
        assert _docs({"CONTRIBUTING.md": md}) == [
            "Add or update the documentation with the change."], md
    # a rule one file states for every PR and another under a condition: every PR
    both = {"CONTRIBUTING.md": "Update the documentation with every change.\n",
            ".github/pull_request_template.md": "- [ ] I updated the docs if the API changed\n"}
    assert _docs(both) == ["Add or update the documentation with the change."]


def test_a_count_of_approvers_is_a_review_rule() -> None:
    md = "At the moment three committers have to approve a pull request before merging.\n"
    assert _rules({"CONTRIBUTING.md": md})["review_count_approvers"]["statement"] == (
        "Every PR needs the approval of three committers before it is merged.")
    listed = "Two maintainers are listed in MAINTAINERS.md. Ask either of them anything.\n"
    assert "review" not in _topics({"CONTRIBUTING.md": listed})


def test_commit_message_mood_and_length() -> None:
    md = "Commit subjects should use the imperative mood and be at most 50 characters long.\n"
    assert _rules({"CONTRIBUTING.md": md})["commit_subject_style"]["statement"] == (
        'Write commit messages in the imperative mood ("Add ..."), subject lines under 50 characters.')
    # a PR title in the imperative mood is a PR-title rule, not a commit one
    title = "Give your pull request a descriptive title in the imperative mood.\n"
    assert "commit_subject_style" not in _rules({"CONTRIBUTING.md": title})


def test_news_fragments_are_a_changelog_rule_without_a_modal() -> None:
    md = "Each bug fix includes a towncrier fragment in `newsfragments/`.\n"
    assert _rules({"CONTRIBUTING.md": md})["changelog_fragment"]["statement"] == (
        "Add a news fragment for the changelog (in `newsfragments/`).")
    release = "Maintainers compile the news fragments at release time.\n"
    assert "changelog_fragment" not in _rules({"CONTRIBUTING.md": release})


def test_docstrings_said_as_a_convention_and_ci_in_a_merge_condition() -> None:
    md = "## Docs\n\nPublic methods have Google-style docstrings.\n"
    fact = _rules({"CONTRIBUTING.md": md})["docstrings_declarative"]
    assert (fact["topic"], fact["statement"]) == (
        "code-style", "Public methods carry docstrings (Google style).")
    merge = "Pull requests are merged once the checks pass and a maintainer has approved.\n"
    assert "ci" in _topics({"CONTRIBUTING.md": merge})


def test_generated_docs_regenerated_under_their_condition() -> None:
    md = "If you add a CLI flag, rebuild the API reference with `make api-docs` and commit it.\n"
    assert _rules({"CONTRIBUTING.md": md})["docs_regenerate"]["statement"] == (
        "Regenerate the generated documentation (`make api-docs`), if you add a CLI flag.")


def test_a_japanese_paragraph_is_cut_into_sentences() -> None:
    # the request of the second sentence is not read into the first, which asks nothing
    md = "変更履歴はメンテナーが追加します。コードは black で整形してください。\n"
    assert "docs" not in _topics({"CONTRIBUTING.md": md})


def test_what_is_not_a_condition() -> None:
    for md in ("When you open a pull request, update the documentation.\n",
               "Update the documentation that explains what happens when the trainer restarts.\n"):
        assert _docs({"CONTRIBUTING.md": md}) == [
            "Add or update the documentation with the change."], md


def test_the_condition_is_read_in_the_sentence_of_the_request() -> None:
    # a short paragraph is one segment: its other sentences carry no condition of this rule
    md = "Keep the PR small. Update the docs if the CLI changed; run the tests.\n"
    assert _docs({"CONTRIBUTING.md": md}) == [
        "Add or update the documentation with the change, if the CLI changed."]
    other = "If the CLI changed, say so in the PR. Update the docs.\n"
    assert _docs({"CONTRIBUTING.md": other}) == [
        "Add or update the documentation with the change."]
