"""The study's landing dates and days-to-framework against the shared facts
(../shared/data/catalog.json; skipped when absent): the same first public dates, every landing
dated by the earliest first commit the shared data gives for the method in that framework
(a method that landed twice, under an earlier name, by the earlier one), exact day counts (no
off-by-one), negative days kept, and the paper's own days-to-first-landing where it gives one."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from analyzers.catalog import load_catalog
from analyzers.study import compute_study, public_date

# "<sha> <date>" anywhere in a shared first-commit string: the main one and any earlier
# commit its note names
_SHA_DATE = re.compile(r"\b([0-9a-f]{7,40}) (\d{4}-\d{2}-\d{2})\b")


def shared_options(shared: dict[str, Any]
                   ) -> Iterator[tuple[dict[str, Any], str, date, list[dict[str, Any]]]]:
    """(method, framework, first public date, the options that are the method there) for
    each shared method first public in 2025 or later: an option the shared data does not find
    or calls related (`related ...`, `found (related, ...)`) is none."""
    for m in shared["methods"]:
        start = public_date(m.get("first_public"))
        if start is None or start.year < 2025:
            continue
        for fw, v in m["frameworks"].items():
            yield m, fw, start, [x for x in v["verification"]
                                 if not x["status"].startswith("not found")
                                 and "related" not in x["status"]]


@pytest.fixture(scope="module")
def shared(shared_dir: Path) -> dict:
    return json.loads((shared_dir / "data" / "catalog.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def study() -> dict:
    return compute_study(load_catalog(), [])


def _landings(study: dict) -> dict[tuple[str, str], dict]:
    return {(x["method"], x["framework"]): x for x in study["landings"] if not x["detected"]}


def test_first_public_dates_are_the_shared_ones(shared: dict, study: dict) -> None:
    by_id = {m["id"]: m for m in shared["methods"]}
    for row in study["methods"]:
        assert row["first_public"] == by_id[row["method"]]["first_public"], row["method"]


def test_every_landing_is_dated_by_the_shared_first_commit(shared: dict, study: dict) -> None:
    """Landing = the earliest date the shared data gives for one of the method's options in
    that framework; days = that date minus the first public date, exactly."""
    landings = _landings(study)
    cat = load_catalog()
    seen = 0
    for m, fw, start, present in shared_options(shared):
        if not present:
            assert (m["id"], fw) not in landings
            continue
        main = [date.fromisoformat(_SHA_DATE.match(x["first_commit_with_string"]).group(2))
                for x in present if _SHA_DATE.match(x.get("first_commit_with_string") or "")]
        got = landings[(m["id"], fw)]
        if not main:  # landed, undated: in no day count
            assert (got["date"], got["days"]) == (None, None), (m["id"], fw)
            continue
        earliest = min(main)
        # an earlier commit the note names counts only where the project's catalog says it
        # is the same method under an earlier name (`first_landing`), taken from the note
        for o in cat.methods[m["id"]].options[fw]:
            first_landing = getattr(o, "first_landing", None)
            if first_landing:
                assert first_landing in (o.first_commit or ""), (m["id"], fw)
                earliest = min(earliest, date.fromisoformat(first_landing.split()[1]))
        assert got["date"] == earliest.isoformat(), (m["id"], fw, got["date"], earliest)
        assert got["days"] == (earliest - start).days, (m["id"], fw)
        assert got["before_paper"] == (earliest < start)
        seen += 1
    assert seen > 80


def test_a_method_that_landed_twice_is_dated_by_its_first_landing(shared: dict,
                                                                  study: dict) -> None:
    """TIS reached verl as tis_imp_ratio_cap (b8dc5377c, 2025-08-26) before the rollout_is
    option (21271aabb, 2025-10-13) the catalog lists now: the shared data says so in its note.
    The blog post is dated 2025-08 (the 1st): 25 days, not 73."""
    tis = next(m for m in shared["methods"] if m["id"] == "tis")
    (entry,) = tis["frameworks"]["verl"]["verification"]
    assert "tis_imp_ratio_cap: b8dc5377c 2025-08-26" in entry["first_commit_with_string"]
    verl = _landings(study)[("tis", "verl")]
    assert (verl["date"], verl["days"], verl["commit"]) == ("2025-08-26", 25, "b8dc5377c")
    assert verl["commit_url"] == "https://github.com/verl-project/verl/commit/b8dc5377c"


def test_days_to_first_landing_match_the_paper_where_it_gives_them(shared: dict,
                                                                    study: dict) -> None:
    landings = study["landings"]
    checked = 0
    for m in shared["methods"]:
        said = str((m.get("paper") or {}).get("days_to_first_landing") or "")
        if not said:
            continue
        days = [x["days"] for x in landings if x["method"] == m["id"] and not x["detected"]
                and x["days"] is not None]
        if said.startswith("<="):
            assert min(days) <= int(said[2:]), m["id"]
        else:
            assert min(days) == int(said), (m["id"], min(days), said)
        checked += 1
    assert checked >= 5


def test_code_before_the_paper_keeps_negative_days(study: dict) -> None:
    landings = _landings(study)
    early = landings[("overlong-filtering", "areal")]
    assert (early["date"], early["days"], early["before_paper"]) == ("2025-02-24", -22, True)
    assert landings[("dr-grpo", "trl")]["days"] == -4


def test_an_option_the_shared_data_calls_related_is_no_landing(shared: dict, study: dict) -> None:
    """AReaL's rejection_sampling (action clamp) is "found (related, not counted by paper)"
    for TIS: a near relative, as the paper reads it (TIS in six frameworks). The study counted
    it as TIS landing in AReaL (262 days), in AReaL's methods and its median."""
    tis = next(m for m in shared["methods"] if m["id"] == "tis")
    [entry] = tis["frameworks"]["areal"]["verification"]
    assert entry["status"].startswith("found (related")
    assert tis["paper"]["frameworks_count"] == 6
    assert ("tis", "areal") not in _landings(study)
    row = next(m for m in study["methods"] if m["method"] == "tis")
    assert "areal" not in row["frameworks"] and len(row["frameworks"]) == 6
    assert "tis" not in study["sets"]["landed.areal"]
