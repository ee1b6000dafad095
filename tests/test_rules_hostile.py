"""The contribution-rule extractor and its rendering on 64 KiB hostile contribution files: the
work (Python calls, counted; tests/work.py) of a whole file is compared with that of its first
quarter, so a quadratic scan fails without timing anything."""

from __future__ import annotations

import re

import pytest

from analyzers.rules import format_rules_markdown, summarize_rules
from bot.speaking.render import rules_reply
from bot.speaking.rule_summary import _no_references, within_budget
from tests.work import assert_linear_work

SIZE = 65536


def _fill(unit: str, size: int = SIZE) -> str:
    return (unit * (size // len(unit) + 1))[:size]


CASES = {
    "backticks": _fill("`"),
    "fences": _fill("```\n"),
    "myst-fences": _fill("```{note}\n"),
    "html-comments": _fill("<!--"),
    "details": _fill("<details>"),
    "brackets": _fill("[("),
    "md-links": _fill("[x](javascript:a) "),
    "list-items": _fill("- "),
    "nested-items": _fill("  - a\n"),
    "table-rows": _fill("| a | b |\n"),
    "checkboxes": _fill("- [ ] Did you add tests?\n"),
    "headings": _fill("## Tests\n"),
    "mentions": _fill("@a "),
    "references": _fill("o/r#1 #2 "),
    "newlines": _fill("\n"),
    "long-word": _fill("a"),
    "modal-words": _fill("you must please make sure "),
    "rule-words": _fill("Please add tests and sign off (`git commit -s`). "),
    "lead-items": _fill("You must include:\n- `a`\n- b\n"),
    "cjk": _fill("请在提交前运行测试并签署 DCO。"),
    "cjk-marks": _fill("。"),
    "japanese": _fill("テストを追加してください。"),
    "korean": _fill("테스트를 추가해 주세요. "),
    # rules69: French and Spanish through their gloss, negations, scoped headings
    "french": _fill("Chaque commit doit être signé ; vous ne devez jamais oublier les tests unitaires. "),
    "french-one-sentence": _fill("doit être é "),
    "spanish-names": _fill("Añade `a/b_c.d` con pruebas, LOSSES y IA; ningún cambio sin aprobación "),
    "scoped-headings": _fill("## Pour les membres du laboratoire\n### é\n```\n# x\nDoit être fait.\n"),
    "yes-cells": "| Change | Changelog entry | Docs |\n|---|---|---|\n" + _fill("| a fix | yes, a line | yes |\n"),
    "faq-answered-no": _fill("### Do I need a CLA?\n\nNo.\n\nIs a test needed? No, not here. "),
    # rules71: approval counts under folders, title prefixes, Chinese title formats
    "scoped-approvals": _fill("- **Approvals.** Two approvals from maintainers for anything under `a/b/` or c/d/; "
                              "changes under x/ need two approvals. Request review only once checks pass. "),
    "title-prefix": _fill("- [ ] The title has a `[x]` prefix. 提交信息和 PR 标题须采用 `[模块]` 的格式。"),
    # rules71: conditions in glossed sentences ("的 PR" after a verb of change, 如果, si, cuando)
    "zh-scoped-prs": _fill("新增新增新增算法的 PR 须附上训练曲线与基线对比，如果改动了接口。新增"),
    "latin-conditions": _fill("Si vous modifiez l'interface, vous devez ajouter une entrée ; cuando cambies, debes añadir. "),
    "french-ne-que": _fill("Une PR n'est fusionnée qu'après l'approbation ; ne ne ne n'n' que qu' é "),
    "maintainers-only-headings": _fill("## Maintainers only\n### For maintainers\n```\n# y\nEvery commit must be signed off.\n"),
    # rules74: Traditional Chinese read through the Simplified gloss (a character map, Taiwan words)
    "zh-traditional": _fill("每一個 commit 都必須簽署，如果修改了程式碼，請更新文件。不需要簽署 CLA。訊息核准送出回覆"),
    "design-approved": "## Design proposals\n\n" + _fill('Start the implementation after "a" "approved" it. '
                                                       'I linked the issue where a maintainer agreed. '),
    "bare-waiver-paragraphs": _fill("Post before and after numbers.\n\nNot required.\n\nOptional. "),
    "accent-free-french": _fill("Vous devez ajouter des tests pour tout nouveau code et les docs ; ne que. "),
    "new-kind-results": _fill("A new loss is run: attach the reward and the held-out accuracy curves. "),
    "front-matter": "---\n" + _fill("name: a\n", SIZE - 8) + "\n---\n",
    # rules72: contrasts, wishes, sections for the people who merge or that contributors skip
    "contrasts": _fill("Sign off with the DCO rather than a CLA, instead of instead of rather than a. "),
    "wishes": _fill("We would appreciate imperative commits; numbers are welcome but nice to have. "),
    "condition-lists": _fill("If you change a, b, c, d, e, f, g, h, i, attach the x-loss curve and histogram, accuracy figures. "),
    "japanese-results": _fill("新しい学習手法を追加する場合、ベースラインとの比較結果と評価を記載し、タイトルの形式に従って。"),
    "tests-for-kind": _fill("- [ ] New x only: a fixture in `tests/a/`. Every new env gets a test in `tests/b/`. "),
    "registered-in": _fill("- [ ] New x are registered in `a/b/registry.py` and registered with a/c.py. "),
    "skipped-sections": _fill("## Merging\nContributors can skip it. You may skip this section.\n- Add a label.\n"),
    # rules73: Korean waivers and negations, MAY, AI words inside names, accuracy benchmarks,
    # Do / Don't tables
    "korean-waivers": _fill("CLA 서명은 필요하지 않습니다. 불필요합니다. 리뷰하지 않습니다. 하지 않아도 됩니다. "),
    "may-permissions": _fill("Titles MAY follow Conventional Commits, you may open a PR, maintainers may close it, "
                             "PRs may be closed; may may MAY must. "),
    "ai-in-names": _fill("Mention @a-ai/b-ai/c-ai on x-ai/repo https://a.ai/ai/ai tools/ai/run.py AI/LLM "),
    "ai-in-one-name": _fill("@" + "a-ai/" * 8, SIZE - 80) + " mention AI use.",
    "accuracy-benchmarks": _fill("Report the pairwise accuracy on the `x-bench` split before and after the change. "),
    "issue-key-titles": _fill("The issue key goes at the start of the PR title `[AB-1]` [AB-12] needs a tracking issue. "),
    "do-dont-tables": "| ✅ Do | ❌ Don't |\n|---|---|\n" + _fill("| Run tests. | Force-push after review; merge. |\n"),
    # rules76: labelled FAQ answers, retired sections, German / Portuguese / Vietnamese glosses
    "faq-labelled-answers": _fill("**Q: Do I need a CLA?** A: No, it is generated. Q: a? A: Nope. R: Não. "),
    "retired-sections": _fill("## Old rules (deprecated)\n### Before v0.6\n~~These rules no longer apply.~~\n"
                              "- you had to sign a CLA (legacy)\n"),
    "german": _fill("Jeder Commit muss signiert sein; eröffne bitte zuerst ein Issue, nicht egal. "),
    "portuguese": _fill("Todo PR precisa da aprovação de pelo menos um mantenedor no mesmo PR; não é preciso. "),
    "terse-rules": _fill("- PR title = `a: b` → `x/y/` -> `docs/a.md` => PR closed (`a` → `b`) = = → \n"),
    "checklist-boxes": _fill("## PR checklist\n- [ ] If a x changed: the pass rate is in the description; "
                             "`docs/a.md` is updated; new x are YAML files in `a/b/`.\n"),
    "label-items": _fill("1. Where things go\n   1. a: `x/y/`\n      1. b\n"),
    "approval-from-count": _fill("Pull requests that change a b c need approval from two of the x y owners; "
                                 "PRs that touch need need "),
    "vietnamese": _fill("Mỗi commit phải có dòng `Signed-off-by`; không cần ký CLA và hãy mở một issue trước. "),
    # rules77: notes that replace the rules above, Italian, waiving leads, consequences, provisos,
    # policy blocks
    "replacing-notes": _fill("## A\nSign the CLA. Add an entry to the changelog.\n\nThis note replaces the "
                             "rules above where they disagree. The CLA is gone: sign off every commit.\n"),
    "italian": _fill("Ogni commit deve essere firmato; non serve firmare il CLA, né apri prima una issue. "),
    "waiving-leads": _fill("Things she did not have to do:\n- The PR title did not matter.\n- Sign a CLA.\n"),
    "consequences": _fill("Undocumented heads are not merged. A head is not reviewed until a maintainer "
                          "agreed on its issue. Two approvals are needed. "),
    "provisos": _fill("AI tools are welcome as long as you say so, provided that tests are optional. "),
    "policy-blocks": _fill("```yaml\nreview:\n  approvals: 2\n  approvals_for_paths:\n    a/: 3\n"
                           "signoff: required\nplacement:\n  x: a/b/\n```\n"),
    "policy-block-open": "```toml\n[review]\napprovals = 2\n[commits]\n" + _fill("signoff = 1\n"),
    # rules78: names said to be replaced, retired bold labels, questions as conditions
    "replaced-names": _fill("ruff, black and flake8, isort or mypy are replaced by ruff; we replaced a, b with "
                            "c instead of d, e and f; switched from black to ruff. "),
    "replaced-one-sentence": _fill("black, " * 20 + "flake8 "),
    "retired-labels": _fill("**Deprecated:** Sign the CLA.\n- **Legacy (v1):** add a changelog entry\n"
                            "  continued\n**Note:** keep it.\n\n"),
    "question-conditions": _fill("- Touched `a/b/`? Before/after numbers from `x-bench` in the PR.\n"
                                 "- Found a bug? Open an issue first.\n- Over 200 lines? ? ?\n"),
    "optional-commands": "```\n" + _fill("make docs  # build the docs\n", SIZE // 2) + "```\n"
                         + _fill("Building with `make docs` is optional; `make a b` is not required. "),
    # rules80: sentences opened by the changes they are about, proposals by acronym, naming
    # conventions, changes not accepted without an issue
    "for-changes-to": _fill("For changes to a, the b, or the c, include benchmark numbers before and after; "
                            "for GPU kernel changes, paste them. PRs that add x need two approvals. "),
    "for-changes-one-sentence": "For changes to " + _fill("a, the b ") + ", include benchmark numbers.",
    "proposal-acronyms": _fill("## X Proposals (XEPs)\nChanges need a XEP before any code is reviewed. "
                               "It is accepted when two maintainers approve it.\n"),
    "naming-and-undiscussed": _fill("`snake_case` for functions, `PascalCase` for types; we do not accept "
                                    "changes to the core API without a discussion in an issue. "),
    # rules79: change headings, identifiers named as baselines, committed paths, sizes, sentences
    # pointing back
    "change-headings": _fill("## Changes to the " + "loss and the " * 8 + "sampler\n\nPost the mean return "
                             "in the PR; it must stay within 3% of `main`. Compare it with `a_baseline`.\n"),
    "long-change-heading": "## Changes to " + _fill("a ", SIZE // 2) + "\n\n" + _fill("Post the mean reward in the PR. "),
    "committed-paths": _fill("For those PRs:\n\n1. Commit the config you ran as `a/<b>_<c>/d.yaml`.\n"
                             "2. Save it as a/b/.\n"),
    "issue-sizes": _fill("- Over ~200 changed lines? Open an issue first and get a maintainer's OK. "
                         "More than 99 lines of code need an issue. "),
    "points-back": _fill("She put the accuracy in the PR description. Any change to a head needs that table. "),
    # rules82: counter-examples, other projects' rules, wishes, plans, maintainers' rest of a section
    "counter-examples": _fill("Don't write messages like this:\n\n> Sign the CLA, add tests.\n\n"
                              "An example to avoid:\n\n```\nsigned the CLA\n```\n\n"),
    "counter-example-open": "Bad example:\n\n" + _fill("> Sign the CLA and add a changelog entry.\n"),
    "other-projects": _fill("Many repositories, e.g. big ones, i.e. most, require a CLA, tests, docs; we do not. "),
    "wishes-and-plans": _fill("If you want, you can add a test. Open an issue if you like. We plan to require "
                              "a CLA. If we ever adopt a DCO, sign off. "),
    "choices-extras-reviewing": _fill("- [ ] N/A (docs)\n- [ ] Added to CHANGELOG.md\nBonus points if you also:\n"
                                      "- add docs\nWhen reviewing, check the changelog entry.\n"),
    "dont-without": _fill("| Do | Don't |\n|---|---|\n| a | Add a b c without asking in an issue first |\n"
                          "Never rename x " + "y " * 30 + "without opening an issue first. "),
    "maintainers-rest": _fill("## Merging\n\nThe rest of this section is for maintainers. Add it to the "
                              "changelog.\n\n"),
    # rules83: rules told as the past, each one of a kind needing a test, runtimes' outputs
    "told-as-past": _fill("We used to run a stale bot that closed inactive PRs after 60 days. X required "
                          "a CLA until version 0.6; until 2023 we asked for a sign-off. "),
    "past-one-sentence": "until 2023 " + _fill("required a needed until v1 ") + ".",
    "every-kind-tests": _fill("Every converter needs a test in `tests/a/test_<b>.py` that compares the "
                              "runtime's output. Search existing issues in a feature request first. "),
    "parenthesised-questions": _fill("Two reviews (is it right?) by a maintainer (is it clear?) by an "
                                     "editor. ( a. b. c. Both must approve. "),
    "unclosed-parentheses": _fill("( an open parenthesis. "),
    # rules84: names' dots, other guides quoted, clauses with and without a condition, "only"
    # scopes, FAQ answers, table header conditions, conditions in the sentence before
    "dots-guides-clauses": _fill("The `a.b.c.d/` dir is deprecated; as the x y z guide puts it, \"sign the "
                                 "CLA\", and if you work at a b, sign the CCLA, and add tests. "),
    "only-scopes-answers": _fill("Only a b c d e f g need to sign the CLA. **Q: Do I need a CLA?**\n\n"
                                 "A: Only if you work at " + "a " * 20 + ".\n\nIn that case, add tests. "),
    "header-conditions": _fill("| If you change " + "a " * 30 + "... | do |\n|---|---|\n| x y | add a "
                               "changelog entry |\n"),
    # rules85: offers "but it's not required", FAQ answers ending so, commas before a waiver
    # that never comes, headings over what you need not do
    "not-required-offers": _fill("Do I need an issue first? Feel free to open an issue first, but "
                                 "it's not a requirement; " + ", but it is " * 8 + "x. "),
    "commas-then-no-waiver": _fill(", but it" + "," * 40 + " but that is not"),
    "need-not-headings": _fill("## Things you don't need to do\n\n- Update `CHANGELOG.md`: "
                               "we do, but that's optional.\n"),
}


@pytest.fixture(scope="module")
def warm() -> None:
    summarize_rules({"CONTRIBUTING.md": "Please add tests."})


def _summary_and_rendering(text: str) -> str:
    summary = summarize_rules({"CONTRIBUTING.md": text,
                               ".github/PULL_REQUEST_TEMPLATE.md": text})
    md = within_budget(_no_references(format_rules_markdown(summary, heading=False)), "en")
    return rules_reply(md, None, "en", "https://tracker.example")


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_extraction_work_grows_linearly(name: str, warm: None) -> None:
    assert_linear_work(_summary_and_rendering, CASES[name])


def test_the_reference_guard_is_linear_on_a_long_summary() -> None:
    text = _fill("- o/r#1 `x` @a #2 [y](z) ") + "\n"
    assert_linear_work(lambda t: within_budget(_no_references(t), "zh"), text * 4, text)


# rules64: one 64 KiB guide of every structure at once: headings between nested lists whose
# items are checkboxes, leads ending in ":", bold heads and code spans, nesting ever deeper.
def _nested_guide(size: int = SIZE) -> str:
    parts, i = [], 0
    while sum(map(len, parts)) < size:
        depth = i % 12
        parts.append(f"{'#' * (1 + i % 6)} Tests {i}\n\nYou must include:\n"
                     f"{'  ' * depth}- [ ] **Add tests** for `x{i}`:\n"
                     f"{'  ' * (depth + 1)}- [x] Run `pytest` and sign off\n"
                     f"{'  ' * (depth + 2)}1. Update the docs\n")
        i += 1
    return "".join(parts)[:size]


def _deep_nesting(size: int = SIZE) -> str:
    lines, i = [], 0
    while sum(map(len, lines)) < size:
        lines.append(f"{' ' * (2 * (i % 200))}- [ ] Please add tests {i}:\n")
        i += 1
    return "".join(lines)[:size]


@pytest.mark.parametrize("make", [_nested_guide, _deep_nesting], ids=["mixed", "deep"])
def test_nested_lists_headings_and_checkboxes_are_read_linearly(make, warm: None) -> None:
    assert_linear_work(_summary_and_rendering, make())


_OUTSIDE_CODE = re.compile(r"`[^`\n]*`")


def test_mentions_and_html_of_a_rule_file_do_not_reach_the_comment_raw() -> None:
    """Every place a statement takes text from a file (a bold head, a code span, an extracted
    label, a form's name, stale labels, owners) carries @mentions and HTML: outside code spans
    the comment holds no live mention and no tag."""
    hostile = "@octocat <img src=x onerror=alert(1)> <script>x</script>"
    files = {
        "CONTRIBUTING.md": (
            "## Out of scope\n\n"
            f"- **{hostile} refactoring** — this would add overhead.\n\n"
            "## Testing\n\n"
            f"Run the tests with `pytest {hostile}` before you open a PR.\n\n"
            f"Apply the CI label CI:{hostile} to run the tests.\n\n"
            f"New datasets are not added here: share them on the {hostile} hub instead.\n"
        ),
        ".github/ISSUE_TEMPLATE/bug.yml": (
            f"name: \"{hostile}\"\nbody:\n  - type: textarea\n    attributes:\n"
            f"      label: \"{hostile}\"\n    validations:\n      required: true\n"
        ),
        ".github/workflows/stale.yml": (
            "on:\n  schedule:\n    - cron: '0 0 * * *'\njobs:\n  stale:\n    steps:\n"
            "      - uses: actions/stale@v9\n        with:\n          days-before-stale: 30\n"
            f"          exempt-issue-labels: \"{hostile}\"\n"
        ),
        ".github/CODEOWNERS": "/trainer/ @octocat <b>x</b>\n",
        f"docs/{hostile}.md": "Please add tests for new features.\n",
    }
    summary = summarize_rules(files)
    for lang in ("en", "zh"):
        text = format_rules_markdown(summary, lang)
        outside = _OUTSIDE_CODE.sub(" ", text)
        assert not re.search(r"(?<!\w)@\w", outside), outside
        assert not re.search(r"<[A-Za-z/!]", outside), outside
