"""What the study's pages say, word for word against their rules (review study82), on SQLite
and PostgreSQL:

- the published study's headline (1,598 papers, 37 of which reached a framework) is stated,
  with the live figure beside it said to be live and what it counts (catalog methods, not the
  paper's papers), on /study, in /api/study and by `rltracker study`; the live figure links to
  the methods it counts;
- the detected landings' text says what the rule says: a merged pull request that *proposes*
  a catalog method (any, not only a study method), not one that links or names it;
- the timeline draws a mark per dated landing, not per framework where a method landed.
"""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from analyzers.catalog import load_catalog
from analyzers.study import compute_study


@pytest.fixture
async def client(ctx: Any) -> AsyncIterator[TestClient]:
    from bot.app import create_app

    async with TestClient(TestServer(create_app(ctx, worker=False))) as c:
        yield c


def _text(fragment: str) -> str:
    """What a reader reads: the tags out, spaces as one, none before punctuation."""
    spaced = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", fragment)))
    return re.sub(r" ([,.;:)])", r"\1", spaced).strip()


async def test_the_published_headline_is_stated_beside_the_live_figure(client: TestClient) -> None:
    study = compute_study(load_catalog(), [])
    reached = [m["method"] for m in study["methods"] if m["frameworks"]]
    api = await (await client.get("/api/study")).json()
    assert api["published"]["papers"] == 1598 and api["published"]["reached"] == 37
    assert api["reached"] == {"methods": len(reached), "of": len(study["methods"])}
    assert api["sets"]["reached"] == sorted(reached)
    page = await (await client.get("/study")).text()
    headline = re.search(r'<p id="headline">(.*?)</p>', page, re.S)
    assert headline is not None
    said = _text(headline.group(1))
    assert "1,598 papers" in said and "37 of them reached" in said
    assert (f"Live, from the catalog now: {len(reached)} of the {len(study['methods'])} catalog "
            "methods first public in 2025 or later reached") in said
    assert "not the same count" in said
    assert f'href="/study/sets/reached" aria-label="{len(reached)}: ' in headline.group(1)
    listed = await (await client.get("/study/sets/reached")).text()
    assert listed.count("<tr data-method=") == len(reached)
    clip = re.search(r'<tr data-method="clip-higher">(.*?)</tr>', listed, re.S)
    assert clip is not None and "2025-03-19" in clip.group(1)  # its first landing (TRL), 1 day
    assert "<td>1</td>" in clip.group(1)


async def test_the_study_command_states_the_headline(ctx: Any, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio

    from bot.cli import main

    monkeypatch.setenv("DATABASE_URL", ctx.settings.database_url)
    assert await asyncio.to_thread(main, ["study"]) == 0
    out = capsys.readouterr().out
    study = compute_study(load_catalog(), [])
    reached = sum(1 for m in study["methods"] if m["frameworks"])
    assert "published study (2026-10-20): 37 of 1,598 papers reached a framework" in out
    assert f"live: {reached} of {len(study['methods'])} study methods" in out


async def test_detected_landings_are_said_as_the_rule_says(client: TestClient) -> None:
    rules = (await (await client.get("/api/study")).json())["rules"]
    assert "proposes a catalog method" in rules["detected_landing"]
    empty = await (await client.get("/study/sets/detected.verl")).text()
    said = _text(re.search(r'<p class="muted" id="set-empty">(.*?)</p>', empty, re.S).group(1))
    # any catalog method, proposed (not a study method it "brings")
    assert "study method" not in said and "proposes a catalog method" in said, said


async def test_the_detected_table_and_the_timeline_say_what_they_hold(
        ctx: Any, client: TestClient) -> None:
    from tests.test_study import seed_threads

    await seed_threads(ctx)
    page = await (await client.get("/study")).text()
    intro = _text(page.split('id="detected-table"')[0].split('<h3 id="detected">')[1])
    assert "proposing a catalog method" in intro and "linking" not in intro, intro
    landings = _text(page.split('<h2 id="landings">')[1].split("<svg")[0])
    assert "one mark per dated landing" in landings, landings


async def test_an_empty_first_anywhere_set_says_what_would_fill_it(client: TestClient) -> None:
    """NeMo-RL carries 12 study methods, none of them first: its empty `first` set said a
    method appears "when the catalog records it in NeMo-RL", which the catalog already does."""
    api = await (await client.get("/api/study")).json()
    empty = [fid for fid, fw in api["frameworks"].items() if fw["methods"] and not fw["first_anywhere"]]
    assert empty, "no framework with landings and none first in this catalog"
    page = await (await client.get(f"/study/sets/first.{empty[0]}")).text()
    said = _text(re.search(r'<p class="muted" id="set-empty">(.*?)</p>', page, re.S).group(1))
    name = api["frameworks"][empty[0]]["name"]
    assert (f"a study method appears here when {name} is the first framework the catalog records "
            "it in (or shares that first day)") in said, said
