"""The tracker pages in headless Chromium, served by the real app on a real port (SQLite):
every page renders, and a thread whose title carries HTML and <script> stays inert text."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestServer

from tests.browser import Chromium, chromium, serving  # noqa: F401  (fixture)
from tests.test_site import HOSTILE_TITLE, seed
from tests.test_thread_page import seed_actions

pytestmark = pytest.mark.chromium

PAGES = {
    "/": "RL post-training framework tracker",
    "/methods/clip-higher": "Clip-higher",
    "/failures/entropy_collapse": "Methods that address it",
    "/frameworks/verl": "Contribution rules",
    "/frameworks/trl": "Comments paused on huggingface/trl",
    "/proposals": "Proposals",
    "/proposals?framework=verl&state=open_no_reply": "1 proposal.",
    "/repos/": "Installed repositories",
    "/methods/nope": "Not found",
    "/threads/huggingface/trl/8": "Failure comment: would have posted (dry run)",
    "/threads/verl-project/verl/999": "No such thread",
}


@pytest.fixture
def db_url(sqlite_db_url: str) -> str:
    """SQLite is enough here: the pages' data paths run on both backends in test_site.py."""
    return sqlite_db_url


@pytest.fixture
async def server(ctx) -> Any:
    await seed(ctx)
    await seed_actions(ctx)
    async with serving(ctx) as srv:
        yield srv


def _url(server: TestServer, path: str) -> str:
    return f"http://127.0.0.1:{server.port}{path}"


async def test_pages_render_in_chromium(server, chromium: Chromium) -> None:  # noqa: F811
    for path, expected in PAGES.items():
        dom = await chromium.dump_dom(_url(server, path))
        assert expected in dom, path
        assert "</main>" in dom and "<footer>" in dom, path


async def test_hostile_thread_stays_inert_text(server, chromium: Chromium) -> None:  # noqa: F811
    for path in ("/proposals", "/frameworks/verl", "/methods/gspo", "/threads/verl-project/verl/102"):
        dom = await chromium.dump_dom(_url(server, path))
        # No element was created from the title: the only <img>/<iframe>/<script> would be
        # injected ones, and the page itself has none.
        assert not re.search(r"<(script|iframe|img)\b", dom, re.I), path
        # The text is there, shown as text (serialised with &lt; escapes).
        assert "&lt;script&gt;alert(\"t\")&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in dom
        assert "GSPO &amp; \"quotes\"" in dom
    assert HOSTILE_TITLE.startswith("<script>")
    # A comment body on the thread page: its Markdown became elements, its raw HTML did not.
    dom = await chromium.dump_dom(_url(server, "/threads/huggingface/trl/8"))
    assert not re.search(r"<(script|iframe|img)\b", dom, re.I)
    assert "&lt;script&gt;alert(3)&lt;/script&gt;" in dom and 'href="javascript:' not in dom
    assert "<strong>Very likely" in dom and "<details><summary>Why</summary>" in dom


async def test_phone_screenshot(server, chromium: Chromium, tmp_path: Path) -> None:  # noqa: F811
    out = Path(os.environ.get("RLTRACKER_SCREENSHOT_DIR", tmp_path)) / "framework-trl.png"
    shot = await chromium.screenshot(_url(server, "/frameworks/trl"), out)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


async def test_verdict_pages_keep_logins_and_titles_inert(server, chromium: Chromium, ctx) -> None:  # noqa: F811
    """A verdict with a hostile login on the thread with the hostile title: /verdicts and the
    kind page list it as text; no element comes from either."""
    from sqlalchemy import select

    from bot.store.models import Thread
    from bot.store.verdicts import set_verdict

    async with ctx.sessionmaker() as session:
        thread = await session.scalar(select(Thread).where(Thread.number == 102))
        await set_verdict(session, thread, is_failure_report=True, category="kl_growth",
                          login="<img src=y onerror=alert(4)>", role="maintainer", comment_id=1)
        await session.commit()
    for path in ("/verdicts", "/failures/kl_growth"):
        dom = await chromium.dump_dom(_url(server, path))
        assert not re.search(r"<(script|iframe|img)\b", dom, re.I), path
        assert "&lt;script&gt;alert(\"t\")&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in dom, path
        assert "set by a person (maintainer)" in dom or path == "/verdicts"
    assert "@&lt;img src=y onerror=alert(4)&gt;" in await chromium.dump_dom(_url(server, "/verdicts"))
