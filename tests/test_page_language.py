"""A thread title is GitHub's text in a page written in English: the language and direction a
browser and a screen reader give it. Over real HTTP on the seeded site database (SQLite and
PostgreSQL), and in Chromium where the layout is what matters.

The title's language is known only from its own script: Chinese ideographs (as many as
`analyzers.language` needs to call a title Chinese) are `lang="zh"`, kana `lang="ja"`,
Hangul `lang="ko"`; a title mostly in another script (Arabic, Cyrillic, ...: one script,
several languages) is `lang=""`, HTML's "unknown"; a Latin one keeps the page's English.
"""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

from sqlalchemy import select, update

from tests.browser import chromium  # noqa: F401 - the fixture
from tests.test_site import seed
from tests.test_thread_page import _client

ZH = "GRPO训练时loss突然变成nan"
JA = "学習中にエントロピーが崩壊します"
KO = "학습 중 엔트로피가 붕괴합니다"
AR = "انهيار الإنتروبيا بعد 200 خطوة"
RU = "Энтропия падает после 200 шагов"
EN = "Entropy collapses after 200 steps"
# A mostly English title with two ideographs: English, as analyzers.language reads it.
MIXED = "Support the Qwen3 MoE checkpoints (模型)"


class _Langs(HTMLParser):
    """The language (the nearest `lang` attribute) each text run is read in."""

    VOID = {"br", "img", "input", "meta", "link", "hr", "wbr", "col", "area", "source"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str | None] = []
        self.runs: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in self.VOID:
            self.stack.append(dict(attrs).get("lang"))

    def handle_endtag(self, tag: str) -> None:
        if tag not in self.VOID and self.stack:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        lang = next((x for x in reversed(self.stack) if x is not None), None)
        self.runs.append((data, lang))

    def lang_of(self, text: str) -> set[str | None]:
        return {lang for run, lang in self.runs if text in run}


async def _retitle(ctx: Any, titles: dict[tuple[str, int], str]) -> None:
    from bot.store.models import Thread

    async with ctx.sessionmaker() as session, session.begin():
        for (repo, number), title in titles.items():
            await session.execute(update(Thread).where(Thread.repo == repo, Thread.number == number)
                                  .values(title=title))


async def _verdict_on(ctx: Any, repo: str, number: int) -> None:
    from bot.store.models import Thread, Verdict

    async with ctx.sessionmaker() as session, session.begin():
        thread = await session.scalar(select(Thread).where(Thread.repo == repo, Thread.number == number))
        assert thread is not None
        session.add(Verdict(thread_id=thread.id, is_failure_report=True, category="entropy_collapse",
                            login="someone", role="author", analyzer_version="test",
                            analyzer_is_failure_report=True, analyzer_category="entropy_collapse"))


async def test_a_titles_language_is_marked_where_its_script_tells_it(ctx) -> None:
    """On main every title was read in the page's English (`<html lang="en">`, nothing on the
    title): a screen reader read a Chinese title with an English voice (or spelled it), and
    a browser picked the fonts it picks for English text among CJK glyph variants."""
    client = await _client(ctx)
    cases = {("huggingface/trl", 8): ZH, ("THUDM/slime", 9): AR,
             ("verl-project/verl", 101): JA, ("huggingface/trl", 7): MIXED}
    await _retitle(ctx, cases)
    await _verdict_on(ctx, "huggingface/trl", 8)
    wanted = {ZH: "zh", AR: "", JA: "ja", MIXED: "en"}
    pages = {
        "/": (ZH, AR), "/failures/entropy_collapse": (ZH,), "/failures/kl_growth": (AR,),
        "/proposals": (JA, MIXED), "/methods/gspo": (JA,), "/frameworks/verl": (JA,),
        "/threads/huggingface/trl/8": (ZH,), "/threads/THUDM/slime/9": (AR,),
        "/threads/verl-project/verl/101": (JA,), "/threads/huggingface/trl/7": (MIXED,),
        "/verdicts": (ZH,), "/repos/huggingface/trl/preview": (ZH,),
    }
    try:
        for path, titles in pages.items():
            resp = await client.get(path)
            assert resp.status == 200, (path, resp.status)
            page = _Langs()
            page.feed(await resp.text())
            for title in titles:
                found = page.lang_of(title)
                assert found == {wanted[title]}, (path, title, found)
    finally:
        await client.close()


def test_title_lang_reads_the_script_only() -> None:
    from bot.templating import title_lang

    assert [title_lang(t) for t in (ZH, JA, KO, AR, RU, EN, MIXED)] == \
        ["zh", "ja", "ko", "", "", None, None]
    # nothing to read: no language said (the page's own "(no title)" is English)
    assert [title_lang(t) for t in ("", None, "\u200b", "#1234", "🚀🚀")] == [None] * 5
    # Chinese with a kana particle is Japanese; a Chinese title in Traditional characters too is zh
    assert title_lang("の訓練") == "ja" and title_lang("訓練時損失變成nan") == "zh"




async def test_a_right_to_left_title_reads_right_to_left_in_its_heading(sqlite_ctx: Any,
                                                                       chromium: Any) -> None:  # noqa: F811
    """The thread page's heading was left to right whatever its title (a <bdi> inside an
    <h1> of the page's direction): an Arabic title was set from the left edge, as an
    English one. The heading takes its direction from its title (dir="auto")."""
    from tests.browser import serving

    await seed(sqlite_ctx)
    await _retitle(sqlite_ctx, {("THUDM/slime", 9): AR, ("huggingface/trl", 8): EN})
    async with serving(sqlite_ctx) as server:
        urls = [str(server.make_url(p)) for p in ("/threads/THUDM/slime/9", "/threads/huggingface/trl/8")]
        found = await chromium.evaluate(urls, "return getComputedStyle(document.querySelector('h1')).direction;",
                                        width=1000)
    assert [found[u] for u in urls] == ["rtl", "ltr"], found
