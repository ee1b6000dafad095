"""rules71: the miss classes of blind sets R and S (and of the classes left by rules66-70),
each read in general form. Every text here is a short one written for these tests."""

from __future__ import annotations

from analyzers.rules import summarize_rules
from tests.test_rules_generalise import _rules

TEMPLATE = ".github/PULL_REQUEST_TEMPLATE.md"


def test_asking_for_review_only_once_checks_pass_is_the_review_after_ci_rule() -> None:
    text = "## Before review\n\n- [ ] **Green build.** Request review only once every check on the PR passes.\n"
    assert "review_after_ci" in _rules({"CONTRIBUTING.md": text})
    after = "# Guide\n\nAsk for a review only after the CI checks pass.\n"
    assert "review_after_ci" in _rules({"CONTRIBUTING.md": after})


def test_a_feature_that_needs_an_issue_before_the_pr_is_discuss_first() -> None:
    text = "## Plan first\n\nNew samplers need an issue marked `agreed` before a PR is opened.\n"
    assert "issue_first_general" in _rules({"CONTRIBUTING.md": text})


def test_an_approval_count_said_of_one_folder_keeps_that_folder() -> None:
    text = ("# Guide\n\nA code owner must approve every PR; changes under `pkg/io/` need two "
            "approvals because a bug there loses data.\n")
    count = _rules({"CONTRIBUTING.md": text})["review_approvals_count"]["statement"]
    assert "pkg/io/" in count
    # the piece that holds every group's words states it, not the first "needs"
    needs = text.replace("A code owner must approve every PR", "A PR needs a code owner's approving review")
    assert "pkg/io/" in _rules({"CONTRIBUTING.md": needs})["review_approvals_count"]["statement"]
    item = "# Guide\n\n- **Approvals.** Three approvals from maintainers for anything under `pkg/net/`; one elsewhere.\n"
    facts = _rules({"CONTRIBUTING.md": item})
    stated = " ".join(f["statement"] for f in facts.values() if f["topic"] == "review")
    assert "pkg/net/" in stated and "approval of three maintainers" in stated
    assert "approvals from" not in stated


def test_an_unscoped_approval_count_stays_for_every_pr() -> None:
    text = "# Guide\n\nEvery PR needs two approvals before it is merged.\n"
    assert _rules({"CONTRIBUTING.md": text})["review_approvals_count"]["statement"] == (
        "Every PR needs two approving reviews before merging.")


def test_a_title_prefix_asked_in_a_template_or_a_guide_is_a_title_rule() -> None:
    box = "## Checklist\n\n- [ ] The title has a `[module]` prefix.\n"
    assert {f["topic"] for f in _rules({TEMPLATE: box}).values()} >= {"pr-title"}
    guide = "# Guide\n\nPrefix the title of your pull request with the module in square brackets.\n"
    assert {f["topic"] for f in _rules({"CONTRIBUTING.md": guide}).values()} >= {"pr-title"}
    issue = "# Guide\n\nPrefix the title of a bug report with the module name.\n"
    assert "pr-title" not in {f["topic"] for f in _rules({"CONTRIBUTING.md": issue}).values()}


def test_a_chinese_title_format_is_a_title_rule() -> None:
    text = "## 提交信息\n\n提交信息和 PR 标题须采用 `[模块] 描述` 的格式。\n"
    assert "pr-title" in {f["topic"] for f in _rules({"CONTRIBUTING.md": text}).values()}


def test_work_without_reported_results_not_merged_asks_for_results() -> None:
    text = ("# Guide\n\n- **Numbers.** A config's README reports the scores it reached. A config "
            "without reported results is not merged.\n")
    assert {f["topic"] for f in _rules({"CONTRIBUTING.md": text}).values()} >= {"results"}


# --- conditions in glossed sentences (Chinese, Japanese, Korean, French, Spanish) -------------

def test_a_chinese_conditional_changelog_rule_is_said_with_its_condition() -> None:
    text = "## 更新日志\n\n如果改动了公开接口，请在 `CHANGELOG.md` 中添加条目。\n"
    facts = [f for f in _rules({"CONTRIBUTING.md": text}).values() if f["topic"] == "docs"]
    assert facts and all("in the cases the guide names" in f["statement"] for f in facts)
    plain = "## 更新日志\n\n请在 `CHANGELOG.md` 中添加条目。\n"
    facts = [f for f in _rules({"CONTRIBUTING.md": plain}).values() if f["topic"] == "docs"]
    assert facts and not any("cases" in f["statement"] for f in facts)


def test_chinese_results_asked_of_some_prs_are_scoped() -> None:
    text = "## 实验\n\n新增损失函数的 PR 须附上训练曲线，并与基线进行对比。\n"
    rules = _rules({"CONTRIBUTING.md": text})
    assert "results_scoped" in rules and "results_share" not in rules


def test_french_and_spanish_conditions_are_kept() -> None:
    french = ("## Journal\n\nSi vous modifiez l'interface publique, vous devez ajouter une entrée "
              "dans `CHANGELOG.md`.\n")
    facts = [f for f in _rules({"CONTRIBUTING.md": french}).values() if f["topic"] == "docs"]
    assert facts and all("in the cases the guide names" in f["statement"] for f in facts)
    spanish = ("## Registro\n\nCuando cambies la interfaz pública, debes añadir una entrada en "
               "`CHANGELOG.md`.\n")
    facts = [f for f in _rules({"CONTRIBUTING.md": spanish}).values() if f["topic"] == "docs"]
    assert facts and all("in the cases the guide names" in f["statement"] for f in facts)


def test_french_ne_que_is_only_not_a_negation() -> None:
    only = ("## Relecture\n\nUne pull request n'est fusionnée qu'après l'approbation de deux "
            "mainteneurs.\n")
    assert "review" in {f["topic"] for f in _rules({"CONTRIBUTING.md": only}).values()}
    never = ("## Relecture\n\nUne pull request n'est jamais fusionnée après l'approbation de deux "
             "mainteneurs.\n")
    assert "review" not in {f["topic"] for f in _rules({"CONTRIBUTING.md": never}).values()}


def test_english_sections_for_some_contributors_are_scoped() -> None:
    # rules72: a section for maintainers (the people who merge) states no contributor rule at
    # all (rules71 scoped it like a section for internal contributors)
    for heading in ("Maintainers only", "For maintainers", "Internal contributors"):
        text = (f"# Contributing\n\nOpen a PR against main.\n\n## {heading}\n\nEvery commit must "
                "be signed off with `git commit -s`.\n")
        facts = [f for f in _rules({"CONTRIBUTING.md": text}).values() if f["topic"] == "sign-off"]
        if "aintainers" in heading:
            assert not facts, heading
        else:
            assert facts and all("addressed to" in f["statement"] for f in facts), heading
    everyone = ("# Contributing\n\n## Maintainer notes on review speed\n\nEvery commit must be "
                "signed off with `git commit -s`.\n")
    facts = [f for f in _rules({"CONTRIBUTING.md": everyone}).values() if f["topic"] == "sign-off"]
    assert facts and not any("addressed to" in f["statement"] for f in facts)


def test_linking_the_issue_where_maintainers_agreed_is_discuss_first() -> None:
    box = "## Checklist\n\n- [ ] I linked the issue where a maintainer agreed to the approach.\n"
    assert "issue-first" in {f["topic"] for f in _rules({TEMPLATE: box}).values()}
    fixes = "## Checklist\n\n- [ ] I linked the issue this PR fixes. The PR is merged once approved.\n"
    assert "issue-first" not in {f["topic"] for f in _rules({TEMPLATE: fixes}).values()}


def test_starting_the_implementation_after_approval_of_a_design_issue_is_discuss_first() -> None:
    text = ("# Guide\n\n## Design notes\n\nA design note stays open for a week. Start the "
            "implementation only after a maintainer has approved it.\n")
    assert "issue-first" in {f["topic"] for f in _rules({"CONTRIBUTING.md": text}).values()}
    quoted = text.replace("has approved it", 'has written "approved" on it')
    assert "issue-first" in {f["topic"] for f in _rules({"CONTRIBUTING.md": quoted}).values()}
    elsewhere = ("# Guide\n\n## Releases\n\nStart the implementation of the release notes after "
                 "the tag is approved.\n")
    assert "issue-first" not in {f["topic"] for f in _rules({"CONTRIBUTING.md": elsewhere}).values()}


def test_a_bare_not_required_after_a_request_in_its_own_paragraph_waives_it() -> None:
    asked = ("# Guide\n\n## Speed\n\nPost before and after throughput numbers for changes to the "
             "sampler.\n")
    assert "results_perf" in _rules({"CONTRIBUTING.md": asked})
    assert "results_perf" not in _rules({"CONTRIBUTING.md": asked + "\nNot required.\n"})
    assert "results_perf" not in _rules({"CONTRIBUTING.md": asked.rstrip() + " Optional.\n"})
    # a waiver under another heading is about that section
    assert "results_perf" in _rules({"CONTRIBUTING.md": asked + "\n## Screenshots\n\nNot required.\n"})


def test_french_and_spanish_without_accents_are_read_through_their_gloss() -> None:
    french = ("# Contribuer\n\nVous devez ajouter des tests unitaires pour tout nouveau code. "
              "Chaque commit doit passer les tests avant la fusion.\n")
    summary = summarize_rules({"CONTRIBUTING.md": french})
    assert "tests" in {f["topic"] for f in summary["facts"]}
    assert summary.get("unread_language")  # the note: French is read only in part
    english = ("# Contributing\n\nPlease add unit tests for new code. The sampler follows Le et "
               "al. and the de la Cruz method; see the paper for the details of the loss.\n")
    assert not summarize_rules({"CONTRIBUTING.md": english}).get("unread_language")


def test_results_asked_of_a_kind_of_change_named_as_the_subject_are_scoped() -> None:
    text = ("# Guide\n\n## Baselines\n\nA new loss is run against the baseline config: attach "
            "the reward and the validation accuracy curves of both runs.\n")
    rules = _rules({"CONTRIBUTING.md": text})
    assert "results_share" not in rules
    assert "new loss" in rules["results_scoped"]["statement"]
    assert "accuracy curves" in rules["results_scoped"]["statement"]


def test_an_approval_count_for_changes_to_a_folder_keeps_it() -> None:
    text = ("# Guide\n\nOne approval is enough for most PRs. Changes to `pkg/sync/` (the weight "
            "transfer) need two approvals.\n")
    assert "pkg/sync/" in _rules({"CONTRIBUTING.md": text})["review_approvals_count"]["statement"]


def test_a_chinese_rule_for_some_changes_is_conditional() -> None:
    text = "## 更新日志\n\n对公开接口的改动，请在 `CHANGELOG.md` 中添加一条记录。\n"
    facts = [f for f in _rules({"CONTRIBUTING.md": text}).values() if f["topic"] == "docs"]
    assert facts and all("in the cases the guide names" in f["statement"] for f in facts)
