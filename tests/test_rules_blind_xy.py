"""rules76: the classes behind sets X and Y's invented and missed lines, read in general form.
Every text here is a short one written for these tests (none copied from the written sets)."""

from __future__ import annotations

from tests.test_rules_answers import _facts, _rules, _topics

# --- FAQ answers, labelled "A:", that negate or waive ------------------------------------------


def test_a_labelled_answer_that_says_no_states_nothing_of_its_question() -> None:
    text = ("# Heron FAQ\n\n**Q: Do I have to sign a CLA first?**\n"
            "A: No. Heron has none.\n\n**Question: Should my commits carry a `Signed-off-by` line?**\n"
            "Answer: Nope, no trailer is asked for.\n\n**Q: Do tests have to pass?**\n"
            "A: Yes, `pytest` must pass before review.\n")
    facts = _facts({"CONTRIBUTING.md": text})
    assert not [f for f in facts if f["topic"] == "sign-off"], facts
    assert "tests" in {f["topic"] for f in facts}  # a "Yes" answer keeps its rule


def test_an_answer_that_says_no_and_gives_the_reason_states_nothing() -> None:
    # the reason after "No," describes why nothing is asked: no changelog rule, not even a
    # generated one (the answer denies the question's topic)
    text = ("# FAQ\n\n**Q: Should I write a changelog entry?**\n"
            "A: No, the change log is built from the pull request titles at release time.\n")
    assert "docs" not in _topics({"CONTRIBUTING.md": text}), _facts({"CONTRIBUTING.md": text})
    heading = ("# FAQ\n\n### Do I add a line to the changelog?\n\n"
               "No, the change log is built from the pull request titles at release time.\n")
    assert "docs" not in _topics({"CONTRIBUTING.md": heading})


def test_an_answer_that_waives_states_nothing() -> None:
    for answer in ("A: You don't need to.", "A: Not needed, we have no such agreement.",
                   "A: It's optional.", "R: Não."):
        text = f"# FAQ\n\n**Q: Must I sign a CLA?**\n{answer}\n"
        assert "cla_required" not in _rules({"CONTRIBUTING.md": text}), answer


def test_a_no_answer_with_an_exception_keeps_the_exception() -> None:
    text = ("# FAQ\n\n**Q: Do I need an issue for every change?**\n"
            "A: No, but open an issue before starting on a new trainer.\n")
    assert "issue-first" in _topics({"CONTRIBUTING.md": text})


# --- sections whose rules no longer apply --------------------------------------------------------

_CURRENT = ("# Contributing to Alder\n\n## How we work now\n\n"
            "Every commit needs a `Signed-off-by:` line (`git commit -s`).\n\n")


def test_a_section_headed_as_retired_states_nothing() -> None:
    old_rules = ("- you had to sign a Contributor License Agreement (CLA) before your first PR;\n"
                 "- every PR had to add an entry to `CHANGELOG.md`;\n"
                 "- a bot closed pull requests after 21 days without activity.\n")
    for heading in ("## Old rules (deprecated)", "## Legacy process", "## Historical guidelines",
                    "## What we used to ask", "## Before v2.0", "## Obsolete: the 2023 workflow",
                    "### Prior to version 3"):
        facts = _rules({"CONTRIBUTING.md": f"{_CURRENT}{heading}\n\n{old_rules}"})
        assert "signoff_required" in facts, heading  # the current section is read
        assert not {"cla_required", "changelog_update", "stale_text"} & set(facts), (heading, facts)


def test_a_sentence_saying_the_section_no_longer_applies_drops_it() -> None:
    text = (f"{_CURRENT}## Signing\n\nThese rules no longer apply. Every contributor must sign a "
            "CLA through the bot.\n\n## Tests\n\nRun `pytest` before you push.\n")
    facts = _rules({"CONTRIBUTING.md": text})
    assert "cla_required" not in facts
    assert "tests_command" in facts  # the next section is read again


def test_sections_about_deprecating_things_keep_their_rules() -> None:
    # how to deprecate an API is a rule of today; so is a section that only names the old way
    for heading in ("## Deprecation policy", "## Deprecating a public function"):
        text = (f"{_CURRENT}{heading}\n\nEvery PR that removes a public function must add an "
                "entry to `CHANGELOG.md`.\n")
        assert "changelog_update" in _rules({"CONTRIBUTING.md": text}), heading


# --- German, Brazilian Portuguese and Vietnamese read through a gloss ----------------------------

GERMAN = """# Mitwirken an Fjord

Schön, dass du mithelfen willst! Hier steht, was wir von jedem Beitrag erwarten.

## Vorschläge

Bevor du einen neuen Sampler schreibst, eröffne bitte zuerst ein Issue und warte auf die Antwort.

## Tests

Jeder neue Sampler braucht Unit-Tests in `tests/samplers/`. `pytest` muss grün sein.

## Commits

Jeder Commit muss mit `git commit -s` signiert sein (DCO).

## Changelog

Jede Änderung an der API bekommt einen Eintrag in `CHANGES.md`.

## Review

Ein Pull Request wird erst gemergt, wenn zwei Maintainer ihn freigegeben haben.

## Lizenz

Eine CLA brauchen wir nicht, und das Format der Commit-Nachrichten ist uns egal.
"""

PORTUGUESE = """# Como colaborar com o Rio

Obrigado pelo interesse! Este guia diz o que esperamos de cada PR.

## Ideias novas

Para uma nova funcionalidade, abra primeiro uma issue e espere a resposta de um mantenedor.

## Testes

Todo código novo vem com testes em `tests/`. `pytest` precisa passar.

## Documentação

Opções novas são documentadas em `docs/opcoes.md` no mesmo PR.

## Resultados

Se o seu PR muda o otimizador, inclua na descrição a acurácia antes e depois da mudança.

## Commits

Não é preciso assinar os commits e não existe CLA.
"""

VIETNAMESE = """# Hướng dẫn đóng góp cho Mê Kông

Cảm ơn bạn đã quan tâm! Tài liệu này mô tả những gì chúng tôi cần ở mỗi PR.

## Trước khi viết code

Với tính năng mới, hãy mở một issue trước và chờ người bảo trì đồng ý.

## Kiểm thử

Mọi tính năng mới phải có test trong thư mục `tests/`. `pytest` phải chạy thành công.

## Commit

Mỗi commit phải có dòng `Signed-off-by` (DCO), dùng `git commit -s`.

## Review

Mỗi PR cần ít nhất hai lượt phê duyệt trước khi merge.

## Không bắt buộc

Không cần ký CLA và không cần sửa `CHANGELOG.md`.
"""


def test_a_german_guide_is_read_and_its_negations_state_nothing() -> None:
    rules = _rules({"CONTRIBUTING.md": GERMAN})
    assert {"issue_first", "tests_add", "tests_command", "signoff_required", "changelog_update"} <= set(rules), rules
    assert any(f["topic"] == "review" for f in rules.values()), rules
    topics = _topics({"CONTRIBUTING.md": GERMAN})
    assert "cla_required" not in rules and "pr-title" not in topics, rules


def test_a_portuguese_guide_is_read_and_its_negations_state_nothing() -> None:
    rules = _rules({"CONTRIBUTING.md": PORTUGUESE})
    assert {"issue_first", "tests_command", "docs_file_named", "results_scoped"} <= set(rules), rules
    assert "accuracy" in rules["results_scoped"]["statement"]
    assert "sign-off" not in _topics({"CONTRIBUTING.md": PORTUGUESE}), rules


def test_a_vietnamese_guide_is_read_and_its_negations_state_nothing() -> None:
    rules = _rules({"CONTRIBUTING.md": VIETNAMESE})
    assert {"signoff_required", "review_approvals"} <= set(rules), rules
    assert any(f["topic"] == "issue-first" for f in rules.values()), rules
    assert "at least two approvals" in rules["review_approvals"]["statement"]
    assert any(f["topic"] == "tests" for f in rules.values()), rules
    assert "cla_required" not in rules and "changelog_update" not in rules, rules


def test_what_a_change_carries_in_the_same_pr_is_asked() -> None:
    text = "# Contributing\n\nNew CLI flags are documented in `docs/cli.md` in the same PR.\n"
    assert "docs" in _topics({"CONTRIBUTING.md": text})
    described = "# Contributing\n\nThe CLI flags are documented in `docs/cli.md`.\n"
    assert "docs" not in _topics({"CONTRIBUTING.md": described})


# --- a PR checklist inside the guide, its boxes said as the state the PR leaves -------------------


def test_checklist_boxes_said_as_states_are_read() -> None:
    text = ("# Contributing\n\n## Before you ask for review\n\nTick each box in your PR body.\n\n"
            "- [ ] If a config option was renamed: `docs/options.md` is updated.\n"
            "- [ ] If a grader in `kit/graders/` changed: the pass rate on the `kit-40` suite before "
            "and after is in the description.\n"
            "- [ ] New graders are Python modules in `kit/graders/`, one grader per module.\n")
    rules = _rules({"CONTRIBUTING.md": text})
    assert "if a config option was renamed" in rules["docs_file_named"]["statement"], rules
    assert "pass rate" in rules["results_scoped"]["statement"], rules
    assert "`kit/graders/`" in rules["place_paths_declarative"]["statement"], rules


def test_a_roadmap_of_boxes_asks_nothing() -> None:
    text = ("# Contributing\n\n## Roadmap\n\nWhat we plan for the next release:\n\n"
            "- [ ] If a config option was renamed: `docs/options.md` is updated.\n"
            "- [x] New graders are Python modules in `kit/graders/`.\n")
    assert "docs" not in _topics({"CONTRIBUTING.md": text})


# --- a numbered pre-PR list of make targets, its rules said in the present tense -----------------


def test_a_numbered_list_before_opening_a_pr_is_a_checklist() -> None:
    text = ("# Contributing\n\nEverything runs through `make`.\n\n## Before you open a PR\n\n"
            "1. `make verify` passes.\n"
            "2. Each commit is signed off with `git commit -s` (DCO).\n"
            "3. If you touched `kit/decode/`, run `make perf` on main and on your branch and paste "
            "both samples/s tables into the PR.\n")
    rules = _rules({"CONTRIBUTING.md": text})
    assert "signoff_directive" in rules or "signoff_required" in rules, rules
    assert "kit/decode/" in rules["results_perf"]["statement"], rules
    # the same list under a heading that is no checklist describes a history
    history = text.replace("## Before you open a PR", "## How the project started")
    assert "sign-off" not in _topics({"CONTRIBUTING.md": history})


# --- terse rules: one bullet per rule, without verbs ---------------------------------------------


def test_terse_bullets_with_arrows_and_equals_are_rules() -> None:
    text = ("# Contributing\n\n- Small PRs.\n- PR title = merge commit subject: `area: what changed`.\n"
            "- New samplers → `kit/samplers/`.\n- New config key → `docs/config.md`.\n"
            "- Author silent for 30 days → PR closed.\n")
    rules = _rules({"CONTRIBUTING.md": text})
    assert "`area: what changed`" in rules["pr_title_general"]["statement"], rules
    assert "`kit/samplers/`" in rules["place_paths_arrow"]["statement"], rules
    assert "`docs/config.md`" in rules["docs_paths_arrow"]["statement"], rules
    # an arrow inside a description names no place ("(`ci.yml` → `tests` job)")
    described = ("# Contributing\n\n## CI\n\n- **Tests** (`ci.yml` → `tests` job): builds the image, "
                 "uploads it and runs `kit/checks/run.py` on one GPU with a 45-minute timeout.\n")
    assert "algorithms" not in _topics({"CONTRIBUTING.md": described})


def test_an_faq_where_question_and_a_new_things_issue_rule_are_read() -> None:
    text = ("# FAQ\n\n**Q: Where does a new scorer go?**\nA: In `kit/scorers/<name>/`, one folder per "
            "scorer. Don't put scorer code in `kit/base/`.\n\n**Q: Can I just open a PR for a new "
            "scorer?**\nA: Please don't. New scorers need an issue first, where a maintainer agrees "
            "the scorer fits.\n")
    rules = _rules({"CONTRIBUTING.md": text})
    assert rules["place_question"]["statement"].endswith("(paths named: `kit/scorers/<name>/`)."), rules
    assert "kit/base" not in str(rules), rules  # where code does not go is no place
    assert any(f["topic"] == "issue-first" for f in rules.values()), rules


# --- nested numbered lists: a short parent item heads its children --------------------------------


def test_a_nested_list_under_a_label_item_is_read_under_that_label() -> None:
    text = ("# Contributing\n\n1. Tests\n   1. `pytest -q` passes.\n2. Where things go\n"
            "   1. New scorers: `kit/scorers/<name>/`, one class per module.\n"
            "   2. New datasets: `kit/data/<name>/`.\n")
    rules = _rules({"CONTRIBUTING.md": text})
    statement = rules["layout_conventions"]["statement"]
    assert "`kit/scorers/<name>/`" in statement and "`kit/data/<name>/`" in statement, rules
    # a parent item that is a sentence is no label
    sentence = text.replace("2. Where things go", "2. We reorganised the folders last year, see the notes.")
    assert "layout_conventions" not in _rules({"CONTRIBUTING.md": sentence})


def test_an_ai_section_asks_for_the_tool_and_an_understood_change() -> None:
    text = ("# Contributing\n\n## LLM-assisted patches\n\nYou may use AI assistants, but you must have "
            "read and understood every line. Name in the PR description which tool you used.\n\n"
            "## Tests\n\nName in the PR description which tool you used to profile.\n")
    rules = _rules({"CONTRIBUTING.md": text})
    assert {"ai_understand", "ai_disclose_section"} <= set(rules), rules
    # the same words under another heading are about something else
    other = "# Contributing\n\n## Tests\n\nName in the PR description which tool you used to profile.\n"
    assert "ai-policy" not in _topics({"CONTRIBUTING.md": other})


def test_a_tool_switched_away_from_is_not_named() -> None:
    text = "# Contributing\n\nWe moved from pylint to ruff last year: `ruff check` must pass.\n"
    assert _rules({"CONTRIBUTING.md": text})["lint_tools"]["statement"] == "Lint and format tools named: ruff."


def test_an_approval_count_said_after_the_approval_keeps_its_scope() -> None:
    text = ("# Contributing\n\nPull requests that change the sampler need approval from two of the "
            "sampling owners listed in `OWNERS`.\n")
    rules = _rules({"CONTRIBUTING.md": text})
    # (the count itself is rules75's reading, review_approvals_count; the scope is this pass's)
    assert rules["review_approvals_count"]["statement"] == (
        "Every PR needs two approving reviews before merging, "
        "for pull requests that change the sampler."), rules
    # "this package" is the file's own scope: no narrower condition
    own = text.replace("the sampler", "this package")
    assert _rules({"CONTRIBUTING.md": own})["review_approvals_count"]["statement"] == (
        "Every PR needs two approving reviews before merging.")


def test_the_apache_cla_forms_are_a_cla() -> None:
    text = ("# Contributing\n\nThe bot on your first PR links to the signing page: individuals sign "
            "the ICLA, and a company signs the CCLA.\n")
    assert "cla_required" in _rules({"CONTRIBUTING.md": text})


def test_a_folder_as_the_subject_scopes_its_approval_count() -> None:
    text = "# Contributing\n\n- `kit/core/` needs 2 approvals. Everything else: 1.\n"
    assert _rules({"CONTRIBUTING.md": text})["review_approvals_count"]["statement"] == (
        "Every PR needs 2 approving reviews before merging, for changes under kit/core/.")
