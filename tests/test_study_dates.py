"""Dates the study reads (review dates64): the catalog's dates are checked when it loads, so a
typo in one is said there, naming the method, instead of a 500 on /study or a method gone."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from analyzers.catalog import CATALOG_DIR, CatalogError, load_catalog_from

V = "verl-project/verl"


def _catalog(d: Path, method: dict[str, Any]) -> Path:
    shutil.copy(CATALOG_DIR / "failures.yaml", d / "failures.yaml")
    (d / "frameworks.yaml").write_text(yaml.safe_dump({"frameworks": [
        {"id": "verl", "name": "verl", "repo": V, "verified_commit": "0" * 40}]}))
    (d / "methods.yaml").write_text(yaml.safe_dump({"methods": [
        dict({"id": "alpha", "name": "Alpha", "aliases": [], "papers": [], "failures": []},
             **method)]}))
    return d


def _opt(**dates: str) -> dict[str, Any]:
    return {"verl": [{"name": "opt", "set_by": "opt=1", "keys": ["opt"], "file": "x.py",
                      "status": "found", **dates}]}


@pytest.mark.parametrize("method, said", [
    # a day no calendar has: compute_study raised ValueError (/study answered 500, the
    # nightly study step failed every night)
    ({"first_public": "2025-03-10", "options": _opt(first_commit="aaaaaaa 2025-02-30")},
     "2025-02-30"),
    ({"first_public": "2025-03-10",
      "options": _opt(first_commit="aaaaaaa 2025-04-01 (renamed)",
                      first_landing="bbbbbbb 2025-13-01")}, "2025-13-01"),
    # a first public date the study cannot read: the method left the study without a word,
    # as if it had no date
    ({"first_public": "2025-3-18"}, "2025-3-18"),
    ({"first_public": "2025-02-30"}, "2025-02-30"),
    ({"first_public": "March 2025"}, "March 2025"),
])
def test_an_unreadable_catalog_date_is_said_when_the_catalog_loads(
        tmp_path: Path, method: dict[str, Any], said: str) -> None:
    with pytest.raises(CatalogError) as raised:
        load_catalog_from(_catalog(tmp_path, method))
    assert "alpha" in str(raised.value) and said in str(raised.value)


@pytest.mark.parametrize("first_public", ["2025", "2025-08", "2025-03-18", None])
def test_a_year_a_month_a_day_or_no_date_loads(tmp_path: Path, first_public: str | None) -> None:
    cat = load_catalog_from(_catalog(tmp_path, {
        "first_public": first_public,
        "options": _opt(first_commit="aaaaaaa 2025-04-01 (note naming 2025-02-30)")}))
    assert cat.methods["alpha"].first_public == first_public


async def test_the_study_page_dates_its_times_as_every_page_does(ctx: Any) -> None:
    """Every page shows a stored time as the minute it fell on in UTC, in a <time> holding the
    instant, followed by "UTC" (templates/site/_time.html); the study page printed its times
    raw ("at 2026-12-04T03:00:04Z"), in no <time>, the detected landings' "first seen" too."""
    import re

    from aiohttp.test_utils import TestClient, TestServer

    from bot.app import create_app
    from bot.site.study import refresh_study
    from tests.test_study import seed_threads

    await seed_threads(ctx)  # a merged OpenRLHF pull request naming CISPO: a detected landing
    await refresh_study(ctx)
    async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
        api = await (await client.get("/api/study")).json()
        page = await (await client.get("/study")).text()
    [landing] = [x for x in api["landings"] if x["detected"]]
    for instant in (api["computed_at"], api["recorded_at"], landing["detected_at"]):
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", instant)
        shown = f'<time datetime="{instant}">{instant[:16].replace("T", " ")}</time> UTC'
        assert shown in page, instant
    assert not re.search(r">[^<]*\d\d:\d\d:\d\dZ", page)  # no raw instant in the text
