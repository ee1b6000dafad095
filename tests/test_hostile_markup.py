"""GitHub's text made of markup, in every field a page, a feed or the JSON API shows (a
thread's title, labels, author, a discussion's category and who chose its answer, a linked
paper's title, the analyzer's cue spans, a verdict's login, a skip reason quoting labels):
no element and no attribute of it reaches what a browser or a feed reader parses
(security71's sweep: the paths were found safe; this keeps them so). Over real HTTP on the
seeded site database, SQLite and PostgreSQL."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from typing import Any

from sqlalchemy import select

from bot.store.models import Action, Analysis, Thread
from tests.test_thread_page import _client

# An element, an attribute breaking out of a quoted value, a comment and CDATA end, a
# template expression, and an entity: each must come out as the characters typed.
MARKUP = ('<img src=x onerror=alert(1)><script>alert(2)</script>" onmouseover="alert(3)" '
          "' autofocus onfocus='alert(4)' <!-- ]]> {{ 7*7 }} &amp; <svg/onload=alert(5)>")
PAGES = ("/", "/failures/entropy_collapse", "/threads/huggingface/trl/8", "/proposals",
         "/repos/huggingface/trl/preview", "/verdicts", "/study")


class _Elements(HTMLParser):
    """Every start tag and attribute name a browser would see."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes.update(name for name, _ in attrs)


async def _markup_everywhere(ctx: Any) -> None:
    async with ctx.sessionmaker() as session, session.begin():
        thread = await session.scalar(select(Thread).where(Thread.repo == "huggingface/trl",
                                                           Thread.number == 8))
        assert thread is not None
        thread.title = f"Entropy {MARKUP}"
        thread.labels = [MARKUP[:50], "bug"]
        thread.author = MARKUP[:39]
        thread.category = MARKUP[:40]
        thread.answer_chosen_by = MARKUP[:39]
        analysis = await session.scalar(select(Analysis).where(Analysis.thread_id == thread.id))
        assert analysis is not None
        analysis.result = {**analysis.result, "papers": [
            {"arxiv_id": "2507.18071", "title": f"GSPO {MARKUP}", "method": "gspo",
             "how": "arxiv_id", "score": 1.0}],
            "failure": {**analysis.result["failure"], "evidence": [f"entropy {MARKUP}"]}}
        session.add(Action(repo="huggingface/trl", number=8, kind="failure_comment",
                           status="skipped", dedupe_key="t8:markup",
                           reason=f"the issue is already labelled ({MARKUP[:50]})"))


async def test_no_markup_of_githubs_text_reaches_a_page_a_feed_or_the_api(ctx: Any) -> None:
    client = await _client(ctx)
    try:
        await _markup_everywhere(ctx)
        for path in PAGES:
            resp = await client.get(path)
            assert resp.status == 200, path
            page = _Elements()
            page.feed(await resp.text())
            assert not {"img", "script"} & page.tags, (path, page.tags)  # (/study draws its own svg)
            assert not {"onerror", "onmouseover", "onfocus", "autofocus", "onload"} & page.attributes, path
        thread_page = await (await client.get("/threads/huggingface/trl/8")).text()
        assert "{{ 7*7 }}" in thread_page and "49" not in thread_page.split("Entropy", 1)[1][:200]
        for path in ("/failures/entropy_collapse.atom", "/proposals.atom"):
            resp = await client.get(path)
            assert resp.status == 200, path
            root = ET.fromstring((await resp.text()).encode())  # well-formed XML
            titles = [e.text or "" for e in root.iter("{http://www.w3.org/2005/Atom}title")]
            if path.startswith("/failures"):
                assert any(MARKUP in t for t in titles), titles  # the characters, as typed
        resp = await client.get("/api/threads/huggingface/trl/8")
        assert resp.status == 200 and resp.content_type == "application/json"
        assert (await resp.json())["thread"]["title"] == f"Entropy {MARKUP}"  # as typed
    finally:
        await client.close()
