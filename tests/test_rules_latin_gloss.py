"""French and Spanish guides read through a gloss, as Chinese, Japanese and Korean ones are
(docs/rules.md, "Review rules69"), with the two things obligation words alone would lose:
a negated obligation states nothing, and a section addressed to some contributors only keeps
that scope. The sentences are written for these tests."""

from __future__ import annotations

from analyzers.rules import gloss_latin
from tests.test_rules_generalise import _rules

SCOPE_NOTE = "(asked only of the contributors a section of the guide is addressed to)"


def test_french_requests_are_read() -> None:
    md = ("# Contribuer\n\n## Qualité\n\nLe code nouveau doit venir avec des tests "
          "unitaires.\n\n## Journal\n\nToute correction visible doit être notée dans le journal des "
          "modifications (`HISTORIQUE.md`), avec le numéro de la pull request.\n\n## Idées\n\nPour un nouvel "
          "algorithme, ouvrez d'abord une issue avant d'écrire le code.\n")
    rules = _rules({"CONTRIBUTING.md": md})
    assert "tests_kinds" in rules, rules
    assert "changelog_update" in rules, rules
    assert "issue_first" in rules, rules


def test_spanish_requests_are_read() -> None:
    md = ("# Cómo colaborar\n\n## Revisión\n\nToda pull request necesita la aprobación de un "
          "mantenedor antes de fusionarse.\n\n## Herramientas de IA\n\nSi te ayuda, usa "
          "asistentes de IA; indica en la descripción de la pull request qué partes "
          "escribieron.\n")
    rules = _rules({"CONTRIBUTING.md": md})
    assert any(r.startswith("review") for r in rules), rules
    assert "ai_disclose_general" in rules, rules


def test_a_negated_obligation_states_nothing() -> None:
    # the same words asked for, then waived: the waiver states no rule
    asked = "## Journal\n\nVous devez ajouter une entrée au journal des modifications pour chaque correction.\n"
    waived = ("## Journal\n\nVous ne devez pas ajouter d'entrée au journal des modifications pour "
              "une simple faute de frappe.\n")
    assert "changelog_update" in _rules({"CONTRIBUTING.md": asked})
    assert "changelog_update" not in _rules({"CONTRIBUTING.md": waived})
    spanish = ("## Pruebas\n\nNo es necesario añadir pruebas unitarias para los cambios de "
               "documentación.\n\nLos registros de entrenamiento nunca deben ir en `tests/`.\n")
    assert not {r for r in _rules({"CONTRIBUTING.md": spanish}) if r.startswith(("tests", "place"))}
    assert gloss_latin("Les poids des modèles ne doivent jamais être ajoutés au dépôt.") == "."


def test_no_without_asks_for_it() -> None:
    # "no PR is merged without a maintainer's approval" is a requirement, not a negation
    md = ("## Relecture\n\nAucune pull request n'est fusionnée sans l'approbation d'un "
          "mainteneur.\n")
    assert any(r.startswith("review") for r in _rules({"CONTRIBUTING.md": md}))


def test_a_section_for_some_contributors_keeps_its_scope() -> None:
    md = ("# Guía\n\n## Para todos\n\nEjecuta `pytest tests/` antes de enviar la pull request.\n\n"
          "## Solo para el equipo interno\n\n```bash\n# un comentario, no un título\n```\n\n"
          "### Revisión\n\nToda pull request necesita la aprobación de dos mantenedores antes "
          "de fusionarse.\n")
    statements = {r: f["statement"] for r, f in _rules({"CONTRIBUTING.md": md}).items()}
    review = [s for r, s in statements.items() if r.startswith("review")]
    assert review and all(s.endswith(f"{SCOPE_NOTE}.") for s in review), statements
    assert not any(SCOPE_NOTE in s for r, s in statements.items() if r.startswith("tests")), statements


def test_a_rule_stated_for_everyone_too_is_everyones() -> None:
    md = ("## Pour les membres de l'équipe\n\n- Deux mainteneurs doivent approuver chaque pull "
          "request.\n\n## Review\n\nTwo maintainers must approve every pull request.\n")
    statements = {r: f["statement"] for r, f in _rules({"CONTRIBUTING.md": md}).items()}
    assert any(r.startswith("review") for r in statements), statements
    assert not any(SCOPE_NOTE in s for s in statements.values()), statements


def test_english_and_other_languages_are_not_glossed() -> None:
    assert gloss_latin("Every pull request needs the approval of two maintainers.") == ""
    # Swedish is not glossed; German is since rules76 (its own vocabulary: German, Portuguese
    # and Vietnamese joined French and Spanish), Italian since rules77
    assert gloss_latin("Varje commit ska signeras och alla tester ska passera.") == ""
    assert gloss_latin("Jeder Commit muss mit einer Signatur versehen werden und die Tests bestehen.") \
        == "every commit must with tests pass ."
    # a name in capitals stays ("LOSSES"), a word in capitals is glossed ("IA")
    assert gloss_latin("Las nuevas funciones van en `pkg/losses/` y se registran en `LOSSES`.") \
        == "new go in pkg/losses/ in LOSSES ."
    assert gloss_latin("Indica en la descripción si usaste asistentes de IA.").startswith("please state")


# "## Rule N: ..." guides (English numbered rules): what is written under such a heading is
# the rule, in the present tense too; its "*Why:*" rationale and a note after "---" are not.
def test_a_numbered_rule_in_the_present_tense_is_a_request() -> None:
    sentence = "A pull request that fixes a bug adds a bullet to the changelog.\n"
    assert "changelog_update" in _rules({"CONTRIBUTING.md": "## Rule 4: Changelog\n\n" + sentence})
    assert "changelog_update" not in _rules({"CONTRIBUTING.md": "## Changelog\n\n" + sentence})


def test_a_rationale_or_a_note_after_a_break_is_no_rule() -> None:
    why = ("## Rule 4: Releases\n\nTag releases from `main` only.\n\n*Why:* the release notes are "
           "built from each bullet the changelog gets.\n")
    assert "changelog_update" not in _rules({"CONTRIBUTING.md": why})
    note = ("## Rule 5: Lint\n\n`make lint` must pass.\n\n---\n\nNot a rule: a pull request "
            "usually adds a bullet to the changelog.\n")
    assert "changelog_update" not in _rules({"CONTRIBUTING.md": note})
