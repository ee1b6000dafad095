"""left83: the caution splitter (analyzers.catalog.clauses) cut at the full stop of an
abbreviation: grpo's caution "(see Dr. GRPO and token-level loss)" became a clause "See Dr."
and one "GRPO and token-level loss).", and its Chinese was cut to match ("参见 Dr；GRPO").
A comment shows one clause of a caution, so one cut there shows half a sentence."""

from __future__ import annotations

import pytest

from analyzers.catalog import ABBREVIATIONS, clauses, clauses_zh, load_catalog
from bot.speaking.render import first_sentence


@pytest.mark.parametrize("abbreviation", ABBREVIATIONS)
def test_an_abbreviations_full_stop_ends_no_clause(abbreviation: str) -> None:
    """Failed on main for each (ABBREVIATIONS is new: the import failed)."""
    text = f"Turn it on with care, see {abbreviation} 3 of the paper. It needs a KL term."
    assert clauses(text) == [f"Turn it on with care, see {abbreviation} 3 of the paper.",
                             "It needs a KL term."]


@pytest.mark.parametrize("text", ["It needs v0.3. 2 steps later it fails.",
                                  "Fixed in verl v0.4.1. Use it."])
def test_a_version_is_taken_as_the_brief_asks(text: str) -> None:
    # "v0.3." followed by a space: a version, not a sentence end (the catalog's texts write
    # versions inside sentences); a stop after a version ending in a digit and a dot is not
    # told from one, so the catalog writes none there (checked below).
    assert len(clauses(text)) == 1


def test_real_stops_still_cut() -> None:
    assert clauses("A is on. B is off; C is 0.2. dr. no") == ["A is on.", "B is off.",
                                                              "C is 0.2.", "Dr. no."]
    assert clauses("Set x=1. Eq. 9 says why.") == ["Set x=1.", "Eq. 9 says why."]


def test_the_grpo_caution_is_two_clauses_in_both_languages() -> None:
    grpo = load_catalog().methods["grpo"]
    caution = grpo.cautions[0]
    assert clauses(caution.text)[1].endswith("(see Dr. GRPO and token-level loss).")
    assert len(clauses(caution.text)) == 2 == len(clauses_zh(caution.text_zh or ""))
    assert "Dr. GRPO" in clauses_zh(caution.text_zh or "")[1]


def test_a_comment_shows_a_clause_whole_past_an_abbreviation() -> None:
    clause = "TRL's documentation discourages loss_type='grpo' (see Dr. GRPO and token-level loss)."
    assert first_sentence(clause) == clause


def test_no_catalog_clause_ends_at_an_abbreviation() -> None:
    for method in load_catalog().methods.values():
        for caution in method.cautions:
            for clause in clauses(caution.text):
                last = clause.rsplit(" ", 1)[-1]
                assert not any(last.lower() == a.rsplit(" ", 1)[-1].lower() for a in ABBREVIATIONS), clause
