"""The study page in headless Chromium, served by the real app on a real port (SQLite): the
timeline is drawn with a labelled mark per dated landing, the tables are filled, and every
link on the page resolves."""

from __future__ import annotations

import os
import re
from html import unescape
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from tests.browser import Chromium, chromium, serving  # noqa: F401  (fixture)
from tests.test_study import seed_threads

pytestmark = pytest.mark.chromium


@pytest.fixture
def db_url(sqlite_db_url: str) -> str:
    """SQLite is enough here: the study's queries run on both backends in test_study.py."""
    return sqlite_db_url


@pytest.fixture
async def server(ctx) -> Any:
    await seed_threads(ctx)
    async with serving(ctx) as srv:
        yield srv


async def test_study_page_in_chromium(server: TestServer, chromium: Chromium) -> None:  # noqa: F811
    base = f"http://127.0.0.1:{server.port}"
    async with aiohttp.ClientSession() as http:
        study = await (await http.get(f"{base}/api/study")).json()
        dom = await chromium.dump_dom(f"{base}/study")

        svg = re.search(r'<svg id="timeline".*?</svg>', dom, re.S)
        assert svg is not None and 'role="img"' in svg.group(0)
        marks = re.findall(r'<circle class="mark( detected)?"[^>]*data-method="([^"]+)"[^>]*>\s*<title>([^<]+)</title>',
                           svg.group(0))
        dated = [x for x in study["landings"] if x["days"] is not None and not x["detected"]]
        detected = [x for x in study["landings"] if x["detected"] and x["days"] is not None and x["in_study"]]
        assert len([m for m in marks if not m[0]]) == len(dated) > 50
        assert len([m for m in marks if m[0]]) == len(detected) == 1
        assert any("code before the paper" in m[2] for m in marks)  # AReaL's overlong filtering
        assert len(re.findall(r'<g class="row"', svg.group(0))) == len(study["methods"])

        landings = re.search(r'<table id="landings-table">.*?</table>', dom, re.S)
        assert landings is not None
        assert landings.group(0).count("<tr data-method=") == len(
            [x for x in study["landings"] if not x["detected"]])
        frameworks = re.search(r'<table id="frameworks-table">.*?</table>', dom, re.S)
        assert frameworks is not None and frameworks.group(0).count("<tr data-framework=") == 7
        review = re.search(r'<table id="review-table">.*?</table>', dom, re.S)
        assert review is not None and review.group(0).count('class="num"') == 3 * 11
        assert 'id="concerns-caveat"' in dom  # the concern counts say what they can be trusted for

        # Every link on the page resolves: pages of this app answer 200. Thread pages
        # (/threads/...) belong to the thread-page module; where this app has it, they answer
        # 200 too, and they name a stored thread either way.
        app = server.app
        has_thread_pages = any(r.canonical.startswith("/threads/") for r in app.router.resources())
        stored = {f"/threads/{k.replace('#', '/')}" for k in study["sets"]["review.requests.threads"]
                  + study["sets"]["review.unmerged_prs.threads"] + study["sets"]["review.merged_prs.threads"]}
        hrefs = sorted({unescape(h) for h in re.findall(r'href="([^"#]+)', dom) if h.startswith("/")})
        assert len(hrefs) > 50
        for href in hrefs:
            if href.startswith("/threads/"):
                assert href in stored, href
                if not has_thread_pages:
                    continue
            resp = await http.get(f"{base}{href}")
            assert resp.status == 200, href
        external = set(re.findall(r'href="(https://github\.com/[^"]+/commit/[0-9a-f]+)"', dom))
        assert len(external) > 50  # each dated landing links its commit


async def test_study_phone_screenshot(server: TestServer, chromium: Chromium, tmp_path: Path) -> None:  # noqa: F811
    out = Path(os.environ.get("RLTRACKER_SCREENSHOT_DIR", tmp_path)) / "study.png"
    shot = await chromium.screenshot(f"http://127.0.0.1:{server.port}/study", out)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
