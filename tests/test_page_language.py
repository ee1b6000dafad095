"""A thread title is GitHub's text in a page written in English: the language and direction a
browser and a screen reader give it. Over real HTTP on the seeded site database (SQLite and
PostgreSQL), and in Chromium where the layout is what matters.

The title's language is known only from its own script: Chinese ideographs (as many as
`analyzers.language` needs to call a title Chinese) are `lang="zh"`, kana `lang="ja"`,
Hangul `lang="ko"`; a title mostly in another script (Arabic, Cyrillic, ...: one script,
several languages) is `lang=""`, HTML's "unknown"; a Latin one keeps the page's English.
"""

from __future__ import annotations

import re
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path
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


# --- dates: the day an instant fell on, in which zone ----------------------------------------

DATE = re.compile(r"\b(\d{4}-\d\d-\d\d)\b")
INSTANT = re.compile(r"^(\d{4}-\d\d-\d\d)T\d\d:\d\d:\d\dZ$")
# Days the catalog's words name ("Since PR #4795 (2026-01-06) the recipe ..."): text, not a
# stored instant (the seeded threads are of November 2026).
CATALOG_DAYS = {day for name in ("methods.yaml", "frameworks.yaml", "failures.yaml")
                for day in DATE.findall((Path(__file__).parents[1] / "analyzers" / "catalog" / name)
                                        .read_text(encoding="utf-8"))}


class _Dates(HTMLParser):
    """Each date a page shows, with the <time> enclosing it (its datetime attribute, or None)
    and whether the page says its zone: in the header of the date's table column, or in the
    words right after the <time>."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str | None, bool]] = []
        self.headers: list[str] = []
        self.column = -1
        self.th: str | None = None
        self.time: str | None = None
        self.in_time = False
        self.after: int | None = None  # the index in `found` of a date waiting for its zone

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self.headers = []
        elif tag == "tr":
            self.column = -1
        elif tag in ("td", "th"):
            self.column += 1
            if tag == "th":
                self.th = ""
        elif tag == "time":
            self.in_time, self.time = True, a.get("datetime")

    def handle_endtag(self, tag: str) -> None:
        if tag == "th" and self.th is not None:
            self.headers.append(self.th)
            self.th = None
        elif tag == "time":
            self.in_time = False
        elif tag in ("td", "p", "li", "span") and self.after is not None:
            self.after = None

    def handle_data(self, data: str) -> None:
        if self.th is not None:
            self.th += data
        if self.after is not None and not self.in_time:
            text, when, _ = self.found[self.after]
            self.found[self.after] = (text, when, data.lstrip().startswith(("UTC", "(UTC)")))
            self.after = None
        for day in DATE.findall(data):
            in_column = 0 <= self.column < len(self.headers) and "UTC" in self.headers[self.column]
            self.found.append((day, self.time if self.in_time else None, in_column))
            if self.in_time and not in_column:
                self.after = len(self.found) - 1


async def test_a_date_says_which_day_and_zone_it_is(ctx) -> None:
    """The pages cut every stored time (UTC) to its date and said nothing of the zone: a
    thread opened at 07:30 in Beijing on 18 November was 'Opened 2026-11-17' (UTC), a day
    off for the tracker's Chinese readers, with nothing on the page to tell. Each date of
    an instant is in a <time> whose datetime is the instant itself (…Z), and the page says
    UTC: in the column's header, or after the date."""
    from datetime import UTC, datetime

    from bot.store.models import Repository, Thread

    client = await _client(ctx)
    late = datetime(2026, 11, 17, 23, 30, tzinfo=UTC)
    async with ctx.sessionmaker() as session, session.begin():
        await session.execute(update(Thread).where(Thread.repo == "huggingface/trl", Thread.number == 8)
                              .values(created_at=late, closed_at=late, state="closed"))
        await session.execute(update(Repository).where(Repository.full_name == "huggingface/trl")
                              .values(comments_paused=False, resumed_by="@maintainer", resumed_at=late))
    await _verdict_on(ctx, "huggingface/trl", 8)
    try:
        for path in ("/", "/proposals", "/failures/entropy_collapse", "/threads/huggingface/trl/8",
                     "/verdicts", "/repos/", "/frameworks/trl", "/frameworks/verl"):
            resp = await client.get(path)
            assert resp.status == 200, (path, resp.status)
            page = _Dates()
            page.feed(await resp.text())
            assert page.found, path
            for day, when, zoned in page.found:
                if when is None and day in CATALOG_DAYS:
                    continue  # a day the catalog's own words name (an option's note)
                match = INSTANT.match(when or "")
                assert match and match.group(1) == day, (path, day, when)
                assert zoned, (path, day, "no zone said")
        html = await (await client.get("/threads/huggingface/trl/8")).text()
        assert '<time datetime="2026-11-17T23:30:00Z">2026-11-17</time>' in html
    finally:
        await client.close()


async def test_a_calendar_date_of_the_catalog_is_a_date(ctx) -> None:
    """A method's first public version is a day as its source gives it (the catalog has no
    time): a <time> of that day, with no zone to say."""
    client = await _client(ctx)
    try:
        html = await (await client.get("/methods/gspo")).text()
    finally:
        await client.close()
    from analyzers.catalog import load_catalog

    day = load_catalog().methods["gspo"].first_public
    assert day and f'First public: <time datetime="{day}">{day}</time>' in html


# --- the thread page's <title>: the tab, the history, what a screen reader announces first ----

FSI, PDI, RLO = "\u2068", "\u2069", "\u202e"


async def test_the_thread_pages_title_names_the_thread(ctx) -> None:
    """The thread page's <title> was 'huggingface/trl#8 · rltracker': every tab, bookmark and
    history entry of a thread page read as a number, and a screen reader announced the page
    by it. It names the thread's title first. A <title> holds no markup, so the title is
    isolated there by FSI ... PDI (its own direction controls taken out, so none of them can
    end the isolate or reorder the words after it)."""
    import html as html_lib

    client = await _client(ctx)
    try:
        page = await (await client.get("/threads/huggingface/trl/8")).text()
        assert f"<title>{FSI}{EN}{PDI} · huggingface/trl#8 · rltracker</title>" in page
        await _retitle(ctx, {("huggingface/trl", 8): f"Entropy {RLO}collapse{PDI}{PDI} \u200b"})
        page = await (await client.get("/threads/huggingface/trl/8")).text()
        title = html_lib.unescape(page.split("<title>")[1].split("</title>")[0])
        assert title == f"{FSI}Entropy collapse \u200b{PDI} · huggingface/trl#8 · rltracker", title
        await _retitle(ctx, {("huggingface/trl", 8): "\u200b "})
        page = await (await client.get("/threads/huggingface/trl/8")).text()
        assert "<title>(no title) · huggingface/trl#8 · rltracker</title>" in page
    finally:
        await client.close()


async def test_labels_and_a_discussions_category_carry_their_language(ctx) -> None:
    """A label and a discussion's category are GitHub's text too, often Chinese in these
    repositories ('性能问题', '问答'): on the thread page they were read in the page's
    English, as titles were."""
    from bot.store.models import Thread

    client = await _client(ctx)
    async with ctx.sessionmaker() as session, session.begin():
        await session.execute(update(Thread).where(Thread.repo == "huggingface/trl", Thread.number == 8)
                              .values(labels=["性能问题", "bug", "Ошибка"], category="问答"))
    try:
        page = _Langs()
        page.feed(await (await client.get("/threads/huggingface/trl/8")).text())
    finally:
        await client.close()
    assert [page.lang_of(x) for x in ("性能问题", "bug", "Ошибка", "问答")] == \
        [{"zh"}, {"en"}, {""}, {"zh"}]


async def test_the_study_sets_and_the_nightly_report_mark_a_titles_language(ctx) -> None:
    """The study's set pages and the night's report page showed titles in a bare <bdi>: a
    Chinese title there was read in the page's English, as on every page before the
    `title_text` macro. They use the one macro now (a report lists a key with no stored
    title, a thread since made private, with nothing after its links, as before)."""
    from bot.site.report import run_report
    from tests.test_report import DAY1, DAY2, T, V, at
    from tests.test_report import seed as seed_proposal
    from tests.test_study import seed_threads

    await seed_threads(ctx)
    await _retitle(ctx, {("verl-project/verl", 501): ZH, ("verl-project/verl", 502): AR})
    await seed_proposal(ctx, T, 12, created=at(DAY1) - timedelta(days=9), title=KO)
    await run_report(ctx, DAY1)
    await seed_proposal(ctx, T, 13, created=at(DAY2, 1), title=JA)
    await seed_proposal(ctx, V, 14, created=at(DAY2, 2), title=EN)
    await run_report(ctx, DAY2)
    client = await _client(ctx)
    try:
        pages = {"/study/sets/proposals.verl.declined": {ZH: "zh", AR: ""},
                 f"/reports/{DAY2}": {KO: "ko", JA: "ja", EN: "en"}}
        for path, wanted in pages.items():
            resp = await client.get(path)
            assert resp.status == 200, (path, resp.status)
            page = _Langs()
            page.feed(await resp.text())
            for title, lang in wanted.items():
                assert page.lang_of(title) == {lang}, (path, title, page.lang_of(title))
    finally:
        await client.close()
