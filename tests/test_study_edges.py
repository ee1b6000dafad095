"""Edge cases a reader of the study meets (review study82), from a catalog written here,
computed by analyzers.study and drawn by the study page's own template (bot.site.study.study_html):

- a first public date given as a year alone (`2025`) counts from 1 January and is said so
  ("year only"), not "month only";
- a landing a day after the paper is "1 day", a day before "1 day ..., code before the paper";
- a median over an even count of negative days is a half (-1.5), shown as it is;
- a framework where no study method landed: 0 landed, 0 first, median "–";
- two frameworks on the same day are each "first anywhere";
- a method with no first public date is in no table;
- the headline's live figure counts the methods with a verified landing.
"""

from __future__ import annotations

import html
import re
import shutil
from typing import Any

import pytest
import yaml

from analyzers.catalog import CATALOG_DIR, Catalog, load_catalog_from
from analyzers.study import compute_study
from bot.site.study import study_html


def _opt(first_commit: str | None) -> dict[str, Any]:
    return {"name": "opt", "set_by": "opt=1", "keys": ["opt"], "file": "x.py", "status": "found",
            "first_commit": first_commit}


METHODS = [
    # a year alone: from 2025-01-01; verl a day after, trl a day before (code before the paper)
    {"id": "yearly", "name": "Yearly", "first_public": "2025",
     "options": {"verl": [_opt("aaaaaaa 2025-01-02")], "trl": [_opt("bbbbbbb 2024-12-31")]}},
    # trl before the paper too: trl's days are -5, -2, -1 and 10 (twin), their median -1.5
    {"id": "early", "name": "Early", "first_public": "2025-05-10",
     "options": {"trl": [_opt("ccccccc 2025-05-08")]}},
    {"id": "earlier", "name": "Earlier", "first_public": "2025-05-10",
     "options": {"trl": [_opt("ccccccc 2025-05-05")]}},
    # verl and trl the same day: first anywhere in both
    {"id": "twin", "name": "Twin", "first_public": "2025-06",
     "options": {"verl": [_opt("ddddddd 2025-06-11")], "trl": [_opt("eeeeeee 2025-06-11")]}},
    # no first public date: in no table, though trl has it
    {"id": "undated", "name": "Undated", "first_public": None,
     "options": {"trl": [_opt("fffffff 2025-02-02")]}},
    # carried by no framework
    {"id": "nowhere", "name": "Nowhere", "first_public": "2025-09-01"},
]


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    d = tmp_path_factory.mktemp("catalog")
    shutil.copy(CATALOG_DIR / "failures.yaml", d / "failures.yaml")
    frameworks = [{"id": fid, "name": name, "repo": repo, "verified_commit": "0" * 40}
                  for fid, name, repo in (("verl", "verl", "verl-project/verl"),
                                          ("trl", "TRL", "huggingface/trl"),
                                          ("slime", "slime", "THUDM/slime"))]
    (d / "frameworks.yaml").write_text(yaml.safe_dump({"frameworks": frameworks}))
    methods = [dict(m, aliases=[], papers=[], failures=[]) for m in METHODS]
    (d / "methods.yaml").write_text(yaml.safe_dump({"methods": methods}))
    return load_catalog_from(d)


@pytest.fixture(scope="module")
def page(catalog: Catalog) -> str:
    study = {**compute_study(catalog, []), "computed_at": "2026-12-05T03:00:00Z",
             "recorded_at": None, "how_to_fill": None}  # (what build_study adds)
    response = study_html(study, catalog)
    assert response.text is not None
    return response.text


def _text(fragment: str) -> str:
    spaced = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", fragment)))
    return re.sub(r" ([,.;:)])", r"\1", spaced).strip()


def _row(page: str, table_id: str, attrs: str) -> str:
    body = re.search(rf'<table id="{table_id}">(.*?)</table>', page, re.S)
    assert body is not None
    found = re.search(rf"<tr {attrs}>(.*?)</tr>", body.group(1), re.S)
    assert found is not None, attrs
    return _text(found.group(1))


def test_a_year_alone_is_said_to_be_a_year(page: str) -> None:
    row = _row(page, "landings-table", 'data-method="yearly" data-framework="verl"')
    assert row == "Yearly 2025 (year only: from 2025-01-01) verl 2025-01-02 1", row
    twin = _row(page, "landings-table", 'data-method="twin" data-framework="verl"')
    assert "2025-06 (month only: from 2025-06-01)" in twin


def test_one_day_either_side_of_the_paper(page: str) -> None:
    assert 'aria-label="1 day: Yearly in verl"' in page
    assert 'aria-label="-1 day, code before the paper: Yearly in TRL"' in page
    assert _row(page, "landings-table", 'data-method="yearly" data-framework="trl"').endswith(
        "2024-12-31 -1 code before the paper")
    assert "Yearly in TRL: 2024-12-31, -1 day, code before the paper" in page


def test_per_framework_ties_empty_and_half_medians(page: str) -> None:
    assert _row(page, "frameworks-table", 'data-framework="trl"') == "TRL 4 4 -1.5 0 0 0 0 0"
    assert _row(page, "frameworks-table", 'data-framework="verl"') == "verl 2 1 5.5 0 0 0 0 0"
    assert _row(page, "frameworks-table", 'data-framework="slime"') == "slime 0 0 – 0 0 0 0 0"
    assert "first anywhere" in _row(page, "landings-table", 'data-method="twin" data-framework="trl"')
    assert "first anywhere" in _row(page, "landings-table", 'data-method="twin" data-framework="verl"')
    assert 'data-method="undated"' not in page


def test_the_live_figure_counts_methods_with_a_landing(page: str) -> None:
    headline = re.search(r'<p id="headline">(.*?)</p>', page, re.S)
    assert headline is not None
    assert ("Live, from the catalog now: 4 of the 5 catalog methods first public in 2025 or "
            "later reached at least one framework") in _text(headline.group(1))


def test_a_detected_landing_of_a_method_with_no_date_says_so(catalog: Catalog) -> None:
    """A merged pull request of verl proposing `undated` (no first public date) is a detected
    landing with no days; its row said "(first public before 2025: not on the timeline)"."""
    from analyzers.study import StudyThread

    merged = StudyThread(repo="verl-project/verl", number=7, kind="pull_request", state="merged",
                         is_proposal=True, review_state="merged", methods=("undated",),
                         closed_at="2025-07-01T00:00:00Z")
    study = {**compute_study(catalog, [merged]), "computed_at": "2026-12-05T03:00:00Z",
             "recorded_at": None, "how_to_fill": None}
    [landing] = [x for x in study["landings"] if x["detected"]]
    assert (landing["days"], landing["in_study"]) == (None, False)
    landing.update(pull_request_url=None, pull_request_page=None)  # (what build_study adds)
    body = study_html(study, catalog).text or ""
    row = _row(body, "detected-table", 'data-method="undated" data-framework="verl"')
    assert "no first public date" in row and "before 2025" not in row, row
