"""rules77: the classes behind set Z's invented and missed lines, read in general form.
Every text here is a short one written for these tests (none copied from the written sets)."""

from __future__ import annotations

from tests.test_rules_answers import _facts, _rules

# --- a later note that replaces the rules above it ---------------------------------------------


def test_a_note_that_replaces_the_rules_above_retires_the_rules_it_speaks_of() -> None:
    text = ("# Contributing to wren\n\n## Agreement\n\nSign our Contributor License Agreement "
            "before your first PR.\n\n## Tests\n\nEvery change needs a test; run `pytest`.\n\n"
            "## Changelog\n\nAdd an entry to the changelog for each change.\n\n"
            "## Old pull requests\n\nPull requests idle for 60 days are closed by the stale bot.\n\n"
            "**March 2025 note.** The following supersedes the rules above where they conflict. "
            "We dropped the CLA; please sign off every commit with `git commit -s`. "
            "The changelog is written by the release script, so leave it alone. "
            "The stale bot has been switched off.\n")
    rules = _rules({"CONTRIBUTING.md": text})
    topics = {f["topic"] for f in _facts({"CONTRIBUTING.md": text})}
    assert "cla_required" not in rules, rules
    assert not [r for r in rules if r.startswith("stale")], rules
    assert "changelog_update" not in rules, rules
    assert "tests" in topics  # the note says nothing of tests: the older rule stands
    assert "sign-off" in topics, rules  # the note's own rule holds


def test_rules_above_a_note_that_replaces_nothing_stand() -> None:
    text = ("# Contributing\n\n## Agreement\n\nSign our Contributor License Agreement "
            "before your first PR.\n\n**Note.** The CLA bot comments on your PR with a link.\n")
    assert "cla_required" in _rules({"CONTRIBUTING.md": text})


# --- Italian read through a gloss, with its own negations ---------------------------------------


def test_italian_rules_are_read_through_the_gloss() -> None:
    text = ("# Contribuire\n\n## Proposte\n\nPer una nuova funzionalità apri prima una issue e "
            "aspetta il parere di un maintainer.\n\n## Documentazione\n\nOgni nuova opzione va "
            "descritta in `docs/opzioni.md`.\n\n## Revisione\n\nServe l'approvazione di almeno "
            "due maintainer prima del merge.\n")
    topics = {f["topic"] for f in _facts({"CONTRIBUTING.md": text})}
    assert {"issue-first", "docs", "review"} <= topics, _facts({"CONTRIBUTING.md": text})


def test_what_an_italian_guide_says_is_not_needed_states_nothing() -> None:
    text = ("# Contribuire\n\n## Cosa non serve\n\n- Non serve firmare un CLA, né aggiungere "
            "`Signed-off-by` ai commit.\n- Non devi aggiornare il changelog: lo fanno i maintainer.\n")
    rules = _rules({"CONTRIBUTING.md": text})
    assert not [r for r in rules if r.startswith(("cla", "signoff", "changelog"))], rules


# --- a list led by what was not asked -----------------------------------------------------------


def test_items_under_a_lead_that_says_they_were_not_needed_state_nothing() -> None:
    text = ("# How Omar's fix landed\n\nOmar ran `pytest` before pushing.\n\n"
            "A few steps Omar did not have to take:\n\n- The PR title did not matter.\n"
            "- He did not sign a CLA.\n")
    rules = _rules({"CONTRIBUTING.md": text})
    assert not [r for r in rules if r.startswith(("pr_title", "cla"))], rules
    listed = "## Checks\n\nBefore you open the PR:\n\n- Give the PR title a clear summary.\n"
    assert [r for r in _rules({"CONTRIBUTING.md": listed}) if r.startswith(("pr_title", "title"))]


# --- rules told as a consequence inside a worked example ----------------------------------------


def test_consequences_told_in_a_narrative_are_rules() -> None:
    text = ("# How Lena's sampler landed\n\n## Day 1\n\nShe opened an issue first. A new sampler "
            "is not reviewed until a maintainer has agreed on its issue.\n\n## Day 5\n\n"
            "Undocumented samplers are not merged, so she wrote `docs/samplers.md`.\n\n"
            "## Day 9\n\nThree approvals are needed; Lena got hers in a week.\n")
    rules = _rules({"CONTRIBUTING.md": text})
    assert {"issue_gate_until", "docs_required_merge", "review_approvals_count"} <= set(rules), rules
    assert "three" in rules["review_approvals_count"]["statement"]
    waived = "## Docs\n\nTypo fixes without documentation are not merged? No: no need to document them.\n"
    assert "docs_required_merge" not in _rules({"CONTRIBUTING.md": waived})


# --- a policy block (YAML or TOML settings) inside a guide --------------------------------------


def test_a_policy_block_in_a_guide_states_its_settings() -> None:
    yaml_block = ("# Contributing\n\nThe bot enforces this:\n\n```yaml\nreview:\n  approvals: 2\n"
                  "checks:\n  - name: unit\n    run: python -m pytest -x tests/\ncommits:\n"
                  "  dco: required\n  cla: not_required\nlayout:\n  tasks: pkg/tasks/\n```\n")
    rules = _rules({"CONTRIBUTING.md": yaml_block})
    assert {"policy_approvals", "policy_tests", "policy_placement"} <= set(rules), rules
    assert "sign-off" in {f["topic"] for f in rules.values()}, rules
    assert "2 approving reviews" in rules["policy_approvals"]["statement"]
    assert not [r for r in rules if r.startswith("cla")], rules
    toml_block = ("# Contributing\n\n```toml\n[review]\napprovals = 1\n\n[commits]\nsignoff = "
                  "\"required\"\n```\n")
    toml_rules = _rules({"CONTRIBUTING.md": toml_block})
    assert "an approving review" in toml_rules["policy_approvals"]["statement"], toml_rules
    assert "sign-off" in {f["topic"] for f in toml_rules.values()}, toml_rules


def test_a_config_example_in_a_guide_is_no_policy() -> None:
    config = ("# Contributing\n\nA run is configured like this:\n\n```yaml\nmodel: tiny\ntrainer:\n"
              "  approvals: 3\n  run: pytest\ncommits:\n  signoff: required\n```\n")
    assert not [r for r in _rules({"CONTRIBUTING.md": config}) if r.startswith("policy_")]


def test_a_preference_measure_asked_for_some_changes_is_a_results_rule() -> None:
    text = ("<!--\n  * If you change the reference model, paste the win rate on the held-out pairs "
            "for main and for this branch below.\n-->\n\n## Summary\n")
    rules = _rules({".github/pull_request_template.md": text})
    assert "win rate" in rules["results_scoped"]["statement"], rules


def test_a_permission_with_a_proviso_keeps_the_proviso_as_a_rule() -> None:
    text = ("## Tools\n\nPatches drafted with AI tools are welcome as long as you mention the "
            "tool in the PR description.\n")
    assert "ai-policy" in {f["topic"] for f in _facts({"CONTRIBUTING.md": text})}
    plain = ("## Tools\n\nPatches drafted with AI tools are welcome; you do not need to mention "
             "the tool in the PR description.\n")
    assert "ai-policy" not in {f["topic"] for f in _facts({"CONTRIBUTING.md": plain})}
